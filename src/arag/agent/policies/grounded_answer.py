"""grounded_answer: an answer is never a placeholder, and its citations name chunks the run was shown."""

from __future__ import annotations

import re

from arag.agent.policies.base import Hold, Policy, register
from arag.agent.prompts import NOT_AN_ANSWER
from arag.agent.questions import yes_no_question
from arag.agent.state import RunState
from arag.citations import CITED, ids_in
from arag.eval.metrics import normalize_answer

# what a small model wrote where an answer belonged (the note's placeholder, refusals, the format's own words)
PLACEHOLDERS = frozenset(
    normalize_answer(text)
    for text in (
        "nothing yet",
        "nothing",
        "unknown",
        "not known",
        "not found",
        "none",
        "no answer",
        "n/a",
        "not mentioned",
        "not specified",
        "not stated",
        "not provided",
        "not available",
        "no information",
        "no data",
        "i don't know",
        "i do not know",
        "cannot determine",
        "cannot be determined",
        "not enough information",
        "insufficient information",
        "yes/no",
        "yes or no",
        "answer",
        "final answer",
        "...",
    )
)
_REFUSAL = re.compile(
    r"^(?:i (?:do not|don't|cannot|can't)|there is no|the (?:text|documents?|chunks?) (?:does|do) not)\b", re.I
)


@register
class GroundedAnswer(Policy):
    """A 1.5B model answered "nothing yet" (the note's placeholder), "unknown" or "yes/no", and cited chunks by ids
    it garbled ("Medical#125#0" for "Medical#125"). An answer that says nothing is held once with the advice to
    answer from what was read; at the step limit, or the second time, the loop answers instead with the sentence
    read that is closest to the question (recorded as such: ``answer_from``). A citation of a chunk the run was
    not shown is mended to the chunk it garbles, or left out."""

    name = "grounded_answer"
    summary = 'no answer is a placeholder ("nothing yet"): held once, else the closest sentence read; citations mended'

    def start(self, run: RunState) -> None:
        self.held = False
        self.yes_no = yes_no_question(run.question)

    def revise(self, run: RunState, answer: str) -> str:
        mended = mend_citations(answer, run.toolkit.tracker.seen_ids)
        if mended != answer:
            self.acted(run)
        answer = mended
        if not says_nothing(answer, self.yes_no) or (run.stop_reason is None and not self.held):
            return answer  # an answer, or one the model gets another chance at (on_answer)
        closest = run.closest_sentences(sorted(run.read_ids)) or run.closest_sentences(
            list(run.last_search.hits) if run.last_search else []
        )
        if not closest:
            return answer
        best = closest[0]
        self.acted(run)
        return run.answer_instead(f"{best.sentence.strip()} [chunk {best.chunk_id}]", "the closest sentence read")

    def on_answer(self, run: RunState, answer: str) -> Hold | None:
        if self.held or not says_nothing(answer, self.yes_no):
            return None
        self.held = True
        self.acted(run)
        return Hold(NOT_AN_ANSWER.format(answer=answer[:100]))


def says_nothing(answer: str, yes_no: bool = True) -> bool:
    """Whether an answer, its citations aside, is empty, a placeholder or a refusal; a bare yes or no too, unless
    the question is a yes/no question."""
    text = CITED.sub("", answer).strip()
    normalized = normalize_answer(text)
    bare = not yes_no and normalized in ("yes", "no")
    return not normalized or normalized in PLACEHOLDERS or bare or bool(_REFUSAL.match(text))


def mend_citations(answer: str, shown: set[str]) -> str:
    """``answer`` with each cited id that the run did not show replaced by the one shown id it garbles (an id
    with a suffix added, "Medical#125#0" → "Medical#125"), or left out."""

    def mend(match: re.Match[str]) -> str:
        mended = [m for m in (_mended(chunk_id, shown) for chunk_id in ids_in(match.group(1))) if m]
        return "".join(f" [chunk {m}]" for m in dict.fromkeys(mended))

    if not CITED.search(answer):
        return answer
    return CITED.sub(mend, answer).strip()


def _mended(cited: str, shown: set[str]) -> str | None:
    if cited in shown:
        return cited
    prefixes = [s for s in shown if cited.startswith(s) and not cited[len(s) : len(s) + 1].isalnum()]
    return max(prefixes, key=len) if prefixes else None
