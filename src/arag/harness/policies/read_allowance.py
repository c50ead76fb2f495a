"""read_allowance: at most two hits of one search are read; then the model searches again or answers."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from arag.harness.contract import Constraint, Limits, Offer, Policy, RunView, Start
from arag.harness.reads import reads_left
from arag.harness.registry import register


class ReadAllowanceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reads_per_search: int = Field(
        2, ge=1, le=100, description="Hits of one search the model may read; then it must search again or answer."
    )


@register
class ReadAllowance(Policy):
    """Once ``agent.policy.read_allowance.reads_per_search`` of the latest search's hits were read since it ran
    (hits read before it do not count), its other hits can no longer be read. A small model otherwise read hit
    after hit of its first search past the answer, spending the steps a second hop needs. (JSON actions enforce
    it; the reads the loop makes for the model, repeat_reads' and read_before_answer's, keep within it too: the
    allowance is a run limit.)"""

    name = "read_allowance"
    summary = "at most 2 hits of one search can be read; then search again or answer"
    Settings = ReadAllowanceSettings
    config: ReadAllowanceSettings

    def start(self, run: RunView) -> Start:
        return Start(Limits(reads_per_search=self.config.reads_per_search))

    def constrain(self, run: RunView, offer: Offer) -> Constraint | None:
        last = run.last_search
        if last is None or reads_left(run) != 0:
            return None
        self.acted()
        # a read may name only ids shown outside the closed search (a hit number would name one of its hits)
        return Constraint(readable=tuple(c for c in run.offered if c not in last.hits))
