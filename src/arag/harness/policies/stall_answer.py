"""stall_answer: a repeated call with nothing new goes straight to the final answer."""

from __future__ import annotations

from arag.harness.contract import Limits, Policy, RunView, Start
from arag.harness.registry import register
from arag.tools.toolkit import ToolCall


@register
class StallAnswer(Policy):
    """The paper's loop refuses a repeated call and forces the answer after ``agent.stall_limit`` of them in a
    row; a small model that repeats a call with nothing new to show repeats it again, so the first such repeat
    ends the search (stop reason ``stalled``, or ``max_steps`` on the last step) and saves the steps."""

    name = "stall_answer"
    summary = "a repeated call with nothing new ends the search at once (the forced answer)"

    def start(self, run: RunView) -> Start:
        return Start(Limits(stall_limit=1))

    def on_repeat(self, run: RunView, call: ToolCall) -> None:
        # asked only when no policy before it had anything to show instead: a refusal, so a stall
        if run.stalls + 1 < self.settings.stall_limit:
            self.acted()  # the paper's limit would have let the run go on
