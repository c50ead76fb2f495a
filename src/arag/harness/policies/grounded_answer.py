"""grounded_answer: an answer is never a placeholder, and its citations name chunks the run was shown."""

from __future__ import annotations

import re

from arag.citations import CITED, ids_in
from arag.harness.contract import Hold, Policy, Revised, RunView
from arag.harness.reads import closest_sentences
from arag.harness.registry import register
from arag.harness.text import says_nothing, yes_no_question
from arag.text import says_not_found

NOT_AN_ANSWER = (
    '"{answer}" is not an answer. Give the answer that the text you read supports, in a few words, with [chunk ID]; '
    "if the text does not hold it, search again."
)


@register
class GroundedAnswer(Policy):
    """A 1.5B model answered "nothing yet" (the note's placeholder), "unknown" or "yes/no", and cited chunks by ids
    it garbled ("Medical#125#0" for "Medical#125"). An answer that says nothing is held once with the advice to
    answer from what was read; at the step limit, or the second time, the loop answers instead with the sentence
    read that is closest to the question (recorded as such: ``answer_from``) — unless it says the documents do not
    hold the answer ("unknown", "not in the documents"): held once like a placeholder, it then stands. A citation
    of a chunk the run was not shown is mended to the chunk it garbles, or left out."""

    name = "grounded_answer"
    summary = 'no answer is a placeholder ("nothing yet"): held once, else the closest sentence read; citations mended'

    def start(self, run: RunView) -> None:
        self.held = False
        self.yes_no = yes_no_question(run.question)

    def revise(self, run: RunView, answer: str) -> Revised:
        mended = mend_citations(answer, run.toolkit.tracker.seen_ids)
        if mended != answer:
            self.acted()
        if not says_nothing(mended, self.yes_no) or (run.stop_reason is None and not self.held):
            return Revised(mended)  # an answer, or one the model gets another chance at (on_answer)
        if says_not_found(mended):
            return Revised(mended)  # a refusal held once (searched again) stands: the documents may not hold it
        last = run.last_search
        closest = closest_sentences(run, sorted(run.read_ids)) or closest_sentences(
            run, list(last.hits) if last else []
        )
        if not closest:
            return Revised(mended)
        best = closest[0]
        self.acted()
        return Revised(f"{best.sentence.strip()} [chunk {best.chunk_id}]", "the closest sentence read")

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        if self.held or not says_nothing(answer, self.yes_no):
            return None
        self.held = True
        self.acted()
        return Hold(NOT_AN_ANSWER.format(answer=answer[:100]))


def mend_citations(answer: str, shown: set[str]) -> str:
    """``answer`` with each cited id that the run did not show replaced by the one shown id it garbles (an id
    with a suffix added, "Medical#125#0" → "Medical#125"), or left out."""

    def mend(match: re.Match[str]) -> str:
        mended = [m for m in (_mended(chunk_id, shown) for chunk_id in ids_in(match.group(1), shown)) if m]
        return "".join(f" [chunk {m}]" for m in dict.fromkeys(mended))

    if not CITED.search(answer):
        return answer
    return CITED.sub(mend, answer).strip()


def _mended(cited: str, shown: set[str]) -> str | None:
    if cited in shown:
        return cited
    prefixes = [s for s in shown if cited.startswith(s) and not cited[len(s) : len(s) + 1].isalnum()]
    return max(prefixes, key=len) if prefixes else None
