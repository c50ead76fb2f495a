"""A question before the agent starts: empty or oversized ones are rejected before any model is loaded."""

from __future__ import annotations

from arag.errors import InputError

MAX_QUESTION_CHARS = 20_000


def check_question(question: str) -> str:
    """The question, stripped; an empty or oversized one is rejected before any model is loaded."""
    if not isinstance(question, str) or not question.strip():
        raise InputError('the question is empty: ask something, e.g. arag ask "Who wrote Hamlet?" --index DIR')
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return question
