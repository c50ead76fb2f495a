"""plan: the first action states the searches needed; an answer before them is held once."""

from __future__ import annotations

from arag.agent.actions import ActionSpec, ToolCall
from arag.agent.policies.base import Hold, Policy, Stands, register
from arag.agent.prompts import PLAN_NOT_DONE
from arag.agent.state import RunState
from arag.tools.toolkit import ToolResult


@register
class Plan(Policy):
    """The first action starts with a plan: one search per fact to find (a multi-hop question needs two or
    three), whether it is a call or already an answer. An answer given before the plan's searches were made is
    held once (a small model answered a multi-hop question with its first hop), and if the model then only
    repeats a call, the held answer stands. Every search counts, the loop's too; one whose hits 1 and 2 matched
    different keywords (one for each of two names) counts as two of the plan's searches."""

    name = "plan"
    summary = "the first action states a plan of searches; an answer before they were made is held once"

    def start(self, run: RunState) -> None:
        self.held = ""  # the answer held back for the plan's next search
        self.nudged = False

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        spec.plan = run.steps == 0 and not spec.final
        spec.plan_on_answer = spec.plan and self.settings.policy.plan.on_answer
        if spec.plan:
            self.acted(run)

    def on_answer(self, run: RunState, answer: str) -> Hold | None:
        searches = [s for s in run.searches if s.by_model or self.settings.policy.plan.on_answer]
        plan, done = run.plan, sum(2 if search.pair else 1 for search in searches)
        if self.nudged or len(plan) <= done:
            return None
        self.nudged, self.held = True, answer
        self.acted(run)
        steps = "; ".join(f"{i}. {item}" for i, item in enumerate(plan, start=1))
        return Hold(
            PLAN_NOT_DONE.format(answer=answer[:200], steps=steps, done=done, next=done + 1, next_step=plan[done])
        )

    def on_repeat(self, run: RunState, call: ToolCall) -> Stands | None:
        # told to search on or to repeat its answer, it repeated a call: the answer stands (on the README's
        # question the hold had turned a right answer into a stall)
        if not self.held:
            return None
        self.acted(run)
        return Stands(self.held)

    def after_tool(self, run: RunState, call: ToolCall, result: ToolResult) -> None:
        self.held = ""  # a new call: what it finds may change the answer
