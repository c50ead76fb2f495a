"""search_first: the first action must be a search."""

from __future__ import annotations

from arag.harness.contract import Allow, Base, Policy, RunView
from arag.harness.registry import register


@register
class SearchFirst(Policy):
    """Before anything was searched there is nothing to read or to answer from: a small model otherwise answered
    from memory, or read an id it made up. Once the loop has searched for it (opening_search) the model may read or
    answer at once: made to act first, it read on and on (on 10 Medical questions 7 ended at the step limit, against
    1 when it could answer). Only for JSON actions, which enforce it (native tool calls are offered every tool, as
    the paper does)."""

    name = "search_first"
    summary = "the first action is a search: no answer from memory, no read of an id made up"

    def allow(self, run: RunView, base: Base) -> Allow | None:
        if run.steps != 0 or run.searches or not base.constrained or base.forced:
            return None
        self.acted()
        # a table query before anything was listed would name a table id made up, as a read would a chunk id
        made_up = frozenset({"chunk_read", "table_query"}) & frozenset(base.tools)
        return Allow(without=made_up if len(base.tools) > len(made_up) else frozenset(), answer=False)
