"""switch_search: the first fruitless repeated search makes the next action use the other search tool."""

from __future__ import annotations

from arag.agent.actions import ActionSpec, ToolCall
from arag.agent.policies.base import Policy, register
from arag.agent.prompts import REPEATED, SWITCH_SEARCH
from arag.agent.state import RunState
from arag.tools.toolkit import ToolResult

OTHER_SEARCH = {"keyword_search": "semantic_search", "semantic_search": "keyword_search"}


@register
class SwitchSearch(Policy):
    """The first repeated search with nothing new to show (once per question) is answered with advice to search
    the other way, and the repeated tool is left out of the next action: the model, copying its last action,
    repeated a search whose hits it had read instead of searching for the next fact."""

    name = "switch_search"
    summary = "the first fruitless repeated search: the next action must use the other search tool"

    def start(self, run: RunState) -> None:
        self.switched = False
        self.blocked: str | None = None  # the tool the next action may not use

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        if self.blocked and not spec.final:
            spec.tools = [t for t in spec.tools if t != self.blocked]
        self.blocked = None  # for one action

    def on_repeat(self, run: RunState, call: ToolCall) -> ToolResult | None:
        tool = run.toolkit.canonical(call.name)
        other = OTHER_SEARCH.get(tool, "")
        if self.switched or other not in run.toolkit.enabled:
            return None
        self.switched, self.blocked = True, tool
        self.acted(run)
        text = SWITCH_SEARCH[other].format(repeated=REPEATED, tool=run.toolkit.names[other])
        return run.refusal(call, text)
