"""read_before_answer: an answer given from a search's snippets gets the top hits read first."""

from __future__ import annotations

from arag.harness.contract import Hold, Policy, RunView
from arag.harness.reads import HARNESS_READS, unread_hits
from arag.harness.registry import register

READ_BEFORE_ANSWER = (
    "You answered without reading any chunk in full, and snippets often miss the answer. The best hits are "
    "shown in full below. Answer from them (short, with [chunk ID]), or search again if they do not hold it."
)


@register
class ReadBeforeAnswer(Policy):
    """An answer given right after a search whose top hit is unread is held once per search: the top two unread
    hits are read for the model (the snippets of a search often miss the fact), and it answers again from them.
    A small model answered from snippets, or from memory, in most such cases."""

    name = "read_before_answer"
    summary = "an answer from snippets gets the search's top two hits read for the model (once per search)"

    def start(self, run: RunView) -> None:
        self.held: set[int] = set()  # the searches (by number) whose hits were read for an answer

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        unread, last = unread_hits(run), run.last_search
        from_snippets = bool(run.trajectory) and run.trajectory[-1].tool != run.toolkit.names["chunk_read"]
        if not (from_snippets and last and unread and unread[0] == last.hits[0]) or len(run.searches) in self.held:
            return None
        self.held.add(len(run.searches))
        self.acted()
        return Hold(READ_BEFORE_ANSWER, read=unread[:HARNESS_READS], why="before its answer from snippets")
