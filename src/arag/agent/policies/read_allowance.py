"""read_allowance: at most two hits of one search are read; then the model searches again or answers."""

from __future__ import annotations

from arag.agent.actions import ActionSpec
from arag.agent.policies.base import Policy, register
from arag.agent.state import RunState


@register
class ReadAllowance(Policy):
    """Once ``agent.policy.read_allowance.reads_per_search`` of the latest search's hits were read since it ran
    (hits read before it do not count), its other hits can no longer be read. A small model otherwise read hit
    after hit of its first search past the answer, spending the steps a second hop needs. (JSON actions enforce
    it; the repeat_reads and read_before_answer policies read within it.)"""

    name = "read_allowance"
    summary = "at most 2 hits of one search can be read; then search again or answer"

    def start(self, run: RunState) -> None:
        run.reads_per_search = self.settings.policy.read_allowance.reads_per_search

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        last = run.last_search
        if last is None or run.reads_left() != 0:
            return
        self.acted(run)
        if spec.readable is None:
            spec.readable = [c for c in run.offered if c not in last.hits]
        else:
            spec.readable = [r for r in spec.readable if not r.startswith("hit ") and r not in last.hits]
