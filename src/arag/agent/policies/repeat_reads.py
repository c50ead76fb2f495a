"""repeat_reads: a repeated search whose hits may still be read shows them in full instead."""

from __future__ import annotations

from arag.agent.actions import ToolCall
from arag.agent.policies.base import Policy, register
from arag.agent.policies.read_before_answer import HARNESS_READS
from arag.agent.prompts import READ_INSTEAD
from arag.agent.state import RunState
from arag.tools.toolkit import ToolResult


@register
class RepeatReads(Policy):
    """A repeated call, while the latest search has unread hits within its read allowance, reads them for the
    model (all the allowance has left, at once) instead of refusing: the model repeated a search instead of
    reading its hits in many runs (docs/results.md), and one hit per repeat cost it a model call per hit."""

    name = "repeat_reads"
    summary = "a repeated call reads the latest search's unread hits instead (what its allowance has left)"

    def on_repeat(self, run: RunState, call: ToolCall) -> ToolResult | None:
        unread = run.unread_hits()
        if not unread:
            return None
        left = run.reads_left()  # never 0 here: a search with no reads left has no unread hits
        ids = unread[: HARNESS_READS if left is None else left]
        self.acted(run)
        result = run.harness_read(ids)
        best = "here is the best hit" if len(ids) == 1 else f"here are the best {len(ids)} hits"
        result.observation = f"{READ_INSTEAD}{best} you have not read yet:\n{result.observation}"
        return result
