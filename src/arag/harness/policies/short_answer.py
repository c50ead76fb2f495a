"""short_answer: the answer is a few words; one cut at the cap keeps its whole sentences."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from arag.harness.contract import Constraint, Offer, Policy, Revised, RunView
from arag.harness.registry import register
from arag.harness.text import CAP_MARGIN, whole_sentences


class ShortAnswerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_chars: int = Field(
        200,
        ge=20,
        le=10_000,
        description="Longest answer (constrained decoding); a cut answer keeps its whole sentences. A 1.5B model "
        "that began to repeat itself otherwise filled the token limit (~35 s on 2 cores).",
    )


@register
class ShortAnswer(Policy):
    """The answer is at most ``agent.policy.short_answer.max_chars`` characters (constrained decoding): a 1.5B
    model that began to repeat itself otherwise filled the token limit (~35 s on 2 cores). An answer the cap cut
    mid-sentence keeps its whole sentences (or whole words and an ellipsis), so a cut word is never read as the
    answer."""

    name = "short_answer"
    summary = "the answer is at most 200 characters; one cut there keeps its whole sentences"
    Settings = ShortAnswerSettings
    config: ShortAnswerSettings

    def constrain(self, run: RunView, offer: Offer) -> Constraint:
        return Constraint(answer_chars=self.config.max_chars)

    def revise(self, run: RunView, answer: str) -> Revised | None:
        cap = self.config.max_chars
        if len(answer) < cap - CAP_MARGIN:
            return None
        self.acted()  # the cap was reached: without it the answer would have gone on
        return Revised(whole_sentences(answer, cap))
