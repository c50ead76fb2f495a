"""supported_answer: an answer whose claims no sentence read states is sent back once for another search."""

from __future__ import annotations

from arag.harness.contract import Hold, Policy, RunView
from arag.harness.registry import register
from arag.verification import verify_answer

UNSUPPORTED_ANSWER = (
    'No text you read states "{claim}". Search for what would show it and read it, then answer; or answer only '
    "what the text you read supports, with [chunk ID]."
)


@register
class SupportedAnswer(Policy):
    """Entity confusion and answers from the model's own memory are the commonest wrong answers once retrieval
    works: the answer names something the text read does not say. Each claim of the answer is checked against the
    sentences of the chunks read (arag.verification: key terms and sentence vectors, no model call); an answer
    with an unsupported claim is sent back once, naming the claim, with the advice to search for it or answer from
    what was read. In no profile by default: it changes the paper's protocol (``--policy +supported_answer``)."""

    name = "supported_answer"
    summary = "an answer with a claim no sentence read states is sent back once, naming the claim"

    def start(self, run: RunView) -> None:
        self.held = False

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        if self.held or run.stop_reason is not None:
            return None
        checked = sorted(run.read_ids) or sorted(run.toolkit.tracker.seen_ids)
        verification = verify_answer(run.toolkit.index, answer, checked)
        if verification.supported or not verification.claims:
            return None
        self.held = True
        self.acted()
        claim = verification.unsupported[0].claim
        return Hold(UNSUPPORTED_ANSWER.format(claim=claim[:200]))
