"""search_first: the first action must be a search."""

from __future__ import annotations

from arag.agent.actions import ActionSpec
from arag.agent.policies.base import Policy, register
from arag.agent.state import RunState


@register
class SearchFirst(Policy):
    """Before anything was searched there is nothing to read or to answer from: a small model otherwise answered
    from memory, or read an id it made up. Once the loop has searched for it (opening_search) the model may read or
    answer at once: made to act first, it read on and on (on 10 Medical questions 7 ended at the step limit, against
    1 when it could answer). Only for JSON actions, which enforce it (native tool calls are offered every tool, as
    the paper does)."""

    name = "search_first"
    summary = "the first action is a search: no answer from memory, no read of an id made up"

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        if run.steps == 0 and not run.searches and spec.constrained and not spec.final:
            spec.answer = False
            if len(spec.tools) > 1:
                spec.tools = [t for t in spec.tools if t != "chunk_read"]
            self.acted(run)
