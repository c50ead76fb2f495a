"""switch_search: a fruitless repeated search makes the next action answer or use the other search tool."""

from __future__ import annotations

from arag.harness.contract import Allow, Base, Policy, Refuse, RunView
from arag.harness.reads import SENTENCE_CHARS, closest_sentences
from arag.harness.registry import register
from arag.tools.toolkit import ToolCall

OTHER_SEARCH = {"keyword_search": "semantic_search", "semantic_search": "keyword_search"}
SWITCH_SEARCH = {
    # no example query: a small model answered with the example's entity ("Ana Ruiz", from the prompt's example)
    "semantic_search": "{tool} with a few words describing the fact you still need.",
    "keyword_search": "{tool} for a name or title from what you read.",
}
SEARCH_ANOTHER_WAY = "Search another way now: {how}"
ANSWER_OR_SWITCH = (
    'Closest to the question in what you read: "{sentence}" [chunk {chunk_id}]. If this answers the question, give '
    "the final answer now; if not, search another way: {how}"
)


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

    def start(self, run: RunView) -> None:
        self.blocked: str | None = None  # the tool the next action may not use

    def allow(self, run: RunView, base: Base) -> Allow | None:
        blocked, self.blocked = self.blocked, None  # for one action
        if not blocked or base.forced:
            return None
        return Allow(without=frozenset({blocked}))

    def on_repeat(self, run: RunView, call: ToolCall) -> Refuse | None:
        tool = run.toolkit.canonical(call.name)
        other = OTHER_SEARCH.get(tool, "")
        if other not in run.toolkit.enabled:
            return None
        self.blocked = tool
        self.acted()
        how = SWITCH_SEARCH[other].format(tool=run.toolkit.names[other])
        closest = closest_sentences(run, sorted(run.read_ids)) if run.read_ids else []
        if not closest:
            return Refuse(SEARCH_ANOTHER_WAY.format(how=how))
        sentence, chunk_id = closest[0].shown(SENTENCE_CHARS), closest[0].chunk_id
        return Refuse(ANSWER_OR_SWITCH.format(sentence=sentence, chunk_id=chunk_id, how=how))
