"""plan: the first action states the searches needed; an answer before them is held once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arag.harness import contract
from arag.harness.contract import Constraint, Hold, Offer, Policy, RunView, Stands
from arag.harness.registry import register
from arag.jsonsafe import as_text
from arag.tools.toolkit import ToolCall, ToolResult

PLAN_SCHEMA = {
    "type": "array",
    "items": {"type": "string"},
    "minItems": 1,
    "maxItems": 3,
    "description": "The searches needed, in order: one per fact to find (a multi-hop question needs two or three).",
}
COMPARISON_PLAN = (
    '\nA comparison needs one search per item: for "Who was born first, Ann Lee or Bo Chan?" the plan is '
    '["birth date of Ann Lee", "birth date of Bo Chan"].'
)
PLAN_NOT_DONE = (
    'You answered "{answer}" after {done} search(es), but your plan was: {steps}. If that is only an intermediate '
    'fact, continue with step {next} ("{next_step}"): keyword_search for the name you found in the text you read. '
    "If it already answers the whole question, give the same final answer again."
)


class PlanSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    on_answer: bool = Field(
        False,
        description="An answer given as the first action states the plan too, and the loop's own searches count as "
        "the plan's (else only a first call states it, and only the model's searches count).",
    )


@register
class Plan(Policy):
    """The first action starts with a plan: one search per fact to find (a multi-hop question needs two or
    three), whether it is a call or already an answer. An answer given before the plan's searches were made is
    held once (a small model answered a multi-hop question with its first hop), and if the model then only
    repeats a call, the held answer stands. Every search counts, the loop's too; one whose hits 1 and 2 matched
    different keywords (one for each of two names) counts as two of the plan's searches."""

    name = "plan"
    summary = "the first action states a plan of searches; an answer before they were made is held once"
    Settings = PlanSettings
    config: PlanSettings

    def fields(self) -> Sequence[contract.Field]:
        return [
            contract.Field(
                "plan",
                PLAN_SCHEMA,
                place="first",
                on_answer=self.config.on_answer,
                intro="Your first reply starts with your plan, one search per fact to find.",
                example=["who wrote Hamlet", "where was that author born"],
                trailer=COMPARISON_PLAN,
            )
        ]

    def start(self, run: RunView) -> None:
        self.held = ""  # the answer held back for the plan's next search
        self.nudged = False

    def constrain(self, run: RunView, offer: Offer) -> Constraint | None:
        if run.steps != 0 or offer.forced:
            return None
        self.acted()
        return Constraint(fields=("plan",))

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        searches = [s for s in run.searches if s.by_model or self.config.on_answer]
        plan, done = stated_plan(run), sum(2 if search.pair else 1 for search in searches)
        if self.nudged or len(plan) <= done:
            return None
        self.nudged, self.held = True, answer
        self.acted()
        steps = "; ".join(f"{i}. {item}" for i, item in enumerate(plan, start=1))
        return Hold(
            PLAN_NOT_DONE.format(answer=answer[:200], steps=steps, done=done, next=done + 1, next_step=plan[done])
        )

    def on_repeat(self, run: RunView, call: ToolCall) -> Stands | None:
        # told to search on or to repeat its answer, it repeated a call: the answer stands (on the README's
        # question the hold had turned a right answer into a stall)
        if not self.held:
            return None
        self.acted()
        return Stands(self.held)

    def after_tool(self, run: RunView, call: ToolCall, result: ToolResult) -> None:
        self.held = ""  # a new call: what it finds may change the answer

    def record(self, run: RunView) -> dict[str, Any] | None:
        plan = stated_plan(run)
        return {"plan": plan} if plan else None


def stated_plan(run: RunView) -> list[str]:
    """The plan of searches the model's first action stated (empty without one): at most three, none blank."""
    for action in run.actions:
        raw = action.fields.get("plan")
        plan = [as_text(p) for p in raw[:3] if as_text(p).strip()] if isinstance(raw, list) else []
        if plan:
            return plan
    return []
