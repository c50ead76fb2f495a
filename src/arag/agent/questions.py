"""What the agent reads off a question before it starts: is it empty, is it either-or, is it yes/no; whether a
sentence of the corpus is itself a question (a heading like "What is CML?", which answers nothing); and whether an
answer only repeats the question's words."""

from __future__ import annotations

import re

from arag.citations import without_citations
from arag.errors import InputError
from arag.verification import key_terms

MAX_QUESTION_CHARS = 20_000

# "Which film came out first, Blue Lake or Red Sky?": the options follow the question's last comma
_CHOICE = re.compile(r",\s*([^,?]{1,150}?)\s+or\s+([^,?]{1,150}?)\s*\?\s*$", re.I)
# a question opened by an auxiliary verb expects yes or no ("Are both films American?", "Did she win?")
_YES_NO = re.compile(
    r"^(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|should|shall|may|might|must)\s", re.I
)

# a sentence whose last clause asks something: "About bone cancer 5 What is bone cancer?", "Is it cancer?" — but not
# a statement that happens to end in "?" ("… is a song by DJ Clue?")
_ASKS = re.compile(
    r"(?:\b(?:what|how|which|who|whom|whose|when|where|why)\b[^.!?]*\?\s*$)"
    r"|(?:^(?:is|are|was|were|do|does|did|can|could|should|will|would|has|have)\b[^.!?]*\?\s*$)",
    re.I,
)


def check_question(question: str) -> str:
    """The question, stripped; an empty or oversized one is rejected before any model is loaded."""
    if not isinstance(question, str) or not question.strip():
        raise InputError('the question is empty: ask something, e.g. arag ask "Who wrote Hamlet?" --index DIR')
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return question


def choice_options(question: str) -> list[str]:
    """The two options of an either-or question ("…, A or B?"), else none."""
    match = _CHOICE.search(question.removeprefix("Question:").strip())
    if match is None:
        return []
    first, second = (" ".join(g.split()) for g in match.groups())
    if first.lower() == second.lower() or " or " in f" {first.lower()} {second.lower()} ":
        return []
    return [first, second]


def yes_no_question(question: str) -> bool:
    """True for a yes/no question. One that offers alternatives ("Did A or B win?") is not: its answer is one of
    them."""
    text = question.removeprefix("Question:").strip()
    return bool(_YES_NO.match(text)) and " or " not in f" {text.lower()} "


def asks_a_question(sentence: str) -> bool:
    """Whether a sentence is a question (a guide's heading "What is bone cancer?"): never evidence for an answer."""
    return bool(_ASKS.search(sentence.strip()))


def restates_question(answer: str, question: str) -> bool:
    """Whether every word of an answer that carries content (its citations aside) is a word of the question:
    "Metastatic breast cancer (MBC)" for "What is the definition of metastatic breast cancer (MBC)?" names nothing
    the question did not. An empty answer is not judged here."""
    words = key_terms(without_citations(answer))
    asked = set(key_terms(question))
    return bool(words) and all(word in asked for word in words)
