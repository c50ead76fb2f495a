"""switch_search: a fruitless repeated search makes the next action answer or use the other search tool."""

from __future__ import annotations

from arag.agent.actions import ActionSpec, ToolCall
from arag.agent.policies.base import Policy, register
from arag.agent.policies.closest_sentence import SENTENCE_CHARS
from arag.agent.prompts import ANSWER_OR_SWITCH, REPEATED, SEARCH_ANOTHER_WAY, SWITCH_SEARCH
from arag.agent.state import RunState
from arag.tools.toolkit import ToolResult
from arag.tools.view import shorten

OTHER_SEARCH = {"keyword_search": "semantic_search", "semantic_search": "keyword_search"}


@register
class SwitchSearch(Policy):
    """A repeated search with nothing new to show is answered with the sentence closest to the question among
    everything read so far and the choice to give the final answer from it or to search the other way, and the
    repeated tool is left out of the next action: the model, copying its last action, repeated a search whose
    hits it had read instead of answering or searching for the next fact. Every such repeat is answered this
    way, so a repeat leads on instead of ending the run as a stall (with ten steps, a third of 2Wiki questions
    stalled once a one-time switch was spent)."""

    name = "switch_search"
    summary = "a fruitless repeated search: the closest sentence read, then answer or use the other search tool"

    def start(self, run: RunState) -> None:
        self.blocked: str | None = None  # the tool the next action may not use

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        if self.blocked and not spec.final:
            spec.tools = [t for t in spec.tools if t != self.blocked]
        self.blocked = None  # for one action

    def on_repeat(self, run: RunState, call: ToolCall) -> ToolResult | None:
        tool = run.toolkit.canonical(call.name)
        other = OTHER_SEARCH.get(tool, "")
        if other not in run.toolkit.enabled:
            return None
        self.blocked = tool
        self.acted(run)
        how = SWITCH_SEARCH[other].format(tool=run.toolkit.names[other])
        closest = run.closest_sentences(sorted(run.read_ids)) if run.read_ids else []
        if not closest:
            return run.refusal(call, SEARCH_ANOTHER_WAY.format(repeated=REPEATED, how=how))
        sentence, chunk_id = shorten(closest[0].sentence, SENTENCE_CHARS), closest[0].chunk_id
        return run.refusal(
            call, ANSWER_OR_SWITCH.format(repeated=REPEATED, sentence=sentence, chunk_id=chunk_id, how=how)
        )
