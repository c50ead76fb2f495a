"""opening_search: before the model's first action, the loop searches the question itself by meaning."""

from __future__ import annotations

from arag.harness.contract import Policy, RunView
from arag.harness.registry import register
from arag.harness.text import standalone
from arag.tools.toolkit import ToolCall


@register
class OpeningSearch(Policy):
    """A question that names no document (no document title occurs in it) has no name to search for:
    semantic_search(question) is then the one search that needs no reasoning, and its snippets (each hit's
    sentences closest to the question) held the key terms of most GraphRAG-Bench Medical dev answers within three
    hits, where a 1.5B model's own first keyword search mostly picked a phrase no chunk contains or a word
    every chunk does. The loop makes that search for the model, as a step of its own that takes none of the model's
    steps, and the model goes on from its result. A question that names a document (a Wikipedia title, as most 2Wiki
    questions do) is left to the model, whose keyword search for the name finds that document: searched for it by
    meaning, the model answered the first hop of two-hop questions (figures: docs/results.md, agent policies).
    A follow-up in a conversation that points back ("Who leads it?") is searched with what the earlier turn was
    about (its names and answer, ``harness.text.standalone``), names or not: its own words do not say what "it" is."""

    name = "opening_search"
    summary = "the loop first searches the question itself by meaning; the model starts from those hits"

    def opening(self, run: RunView) -> ToolCall | None:
        if "semantic_search" not in run.toolkit.enabled:
            return None
        query = standalone(run.question, run.earlier)
        if query == run.question and run.toolkit.index.titles_named_in(run.question):
            return None
        self.acted()
        return ToolCall(run.toolkit.names["semantic_search"], {"query": query})
