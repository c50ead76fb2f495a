"""repeat_reads: a repeated search whose hits may still be read shows them in full instead."""

from __future__ import annotations

from arag.harness.contract import Policy, ReadInstead, RunView
from arag.harness.reads import HARNESS_READS, reads_left, unread_hits
from arag.harness.registry import register
from arag.tools.toolkit import ToolCall


@register
class RepeatReads(Policy):
    """A repeated call, while the latest search has unread hits within its read allowance, reads them for the
    model (all the allowance has left, at once) instead of refusing: the model repeated a search instead of
    reading its hits in many runs (docs/results.md), and one hit per repeat cost it a model call per hit."""

    name = "repeat_reads"
    summary = "a repeated call reads the latest search's unread hits instead (what its allowance has left)"

    def on_repeat(self, run: RunView, call: ToolCall) -> ReadInstead | None:
        unread = unread_hits(run)
        if not unread:
            return None
        left = reads_left(run)  # never 0 here: a search with no reads left has no unread hits
        ids = unread[: HARNESS_READS if left is None else left]
        self.acted()
        best = "here is the best hit" if len(ids) == 1 else f"here are the best {len(ids)} hits"
        return ReadInstead(tuple(ids), f"Instead, {best} you have not read yet:")
