"""A conversation: questions that follow one another, with one context tracker.

Each question is a run of the paper's loop whose conversation starts with the earlier turns (their questions, tool
steps and answers), so a follow-up ("and when did she die?") is read in context, and the tracker is the
conversation's, so a chunk read for an earlier question is not read again (the tracker's notice, as in the paper).

Bounded by ``conversation.max_tokens`` (the earlier turns' messages, counted as the tools count tokens): before a
question, while the earlier turns are over it, the oldest whole turn is compacted to its question and answer (its
tool steps leave the context, so the tracker forgets the chunks that turn read: they may be read again), and when
every turn is compacted and still over, the oldest turn is dropped. A cancelled or failed question leaves no turn.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arag.corpus.chunking import count_tokens
from arag.tools.tracker import ContextTracker

if TYPE_CHECKING:
    from arag.agent.loop import Agent
    from arag.agent.state import AgentResult, RunState
    from arag.filters import Filter

DEFAULT_MAX_TOKENS = 8000


@dataclass
class Turn:
    """One question of a conversation, as the model's context keeps it."""

    question: str
    result: AgentResult
    messages: list[dict[str, Any]]  # the question, the tool steps, the answer
    reads: set[str] = field(default_factory=set)  # the chunks first read for this question
    compacted: bool = False  # only its question and answer are kept

    def tokens(self) -> int:
        return sum(count_tokens(_text(m)) for m in self.messages)


class Conversation:
    """Questions to one agent that follow one another (see the module's docstring for the budget rule)."""

    def __init__(self, agent: Agent, max_tokens: int = DEFAULT_MAX_TOKENS, where: str | Filter | None = None) -> None:
        self.agent, self.max_tokens, self.where = agent, max_tokens, where
        self.tracker = ContextTracker()
        self.turns: list[Turn] = []
        self.lock = threading.Lock()  # one question at a time

    def ask(self, question: str, where: str | Filter | None = None) -> AgentResult:
        """Answer a follow-up in the context of the earlier turns (``where``: this question's scope, else the
        conversation's)."""
        with self.lock:
            return self.agent.run(question, where if where is not None else self.where, conversation=self)

    def history(self) -> list[dict[str, Any]]:
        """The earlier turns' messages, as the next question's run starts with them (within the budget)."""
        self._fit()
        return [message for turn in self.turns for message in turn.messages]

    def record(self, run: RunState, result: AgentResult) -> None:
        """A finished question becomes a turn (one that was cancelled or failed does not: what it read is
        forgotten, since its text is not kept)."""
        reads = set(result.read_chunks)
        if result.stop_reason in ("cancelled", "error", "time_budget") or not result.answer:
            self.tracker.read_ids.difference_update(reads)
            return
        self.turns.append(Turn(run.question, result, run.turn_messages(), reads))

    def reset(self) -> None:
        """Start over: no turns, nothing read."""
        self.turns.clear()
        self.tracker = ContextTracker()

    def sources(self) -> list[dict[str, Any]]:
        """Every chunk the conversation's answers cited or its questions read, with where it comes from."""
        from arag.citations import locate

        index = self.agent.index
        out: dict[str, dict[str, Any]] = {}
        for number, turn in enumerate(self.turns, start=1):
            for source in turn.result.sources:
                if source.get("verified"):
                    out.setdefault(source["chunk_id"], {**source, "turn": number, "cited": True})
            records, _missing = index.read([c for c in turn.result.read_chunks if c not in out])
            for record in records:
                out[record.chunk_id] = {**locate(index, record).to_dict(), "turn": number, "cited": False}
        return list(out.values())

    def _fit(self) -> None:
        while self.turns and sum(turn.tokens() for turn in self.turns) > self.max_tokens:
            oldest = next((turn for turn in self.turns if not turn.compacted), None)
            if oldest is None:
                self.turns.pop(0)
                continue
            oldest.messages = [
                {"role": "user", "content": f"Question: {oldest.question}"},
                {"role": "assistant", "content": f"Answer: {oldest.result.answer}"},
            ]
            oldest.compacted = True
            self.tracker.read_ids.difference_update(oldest.reads)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    calls = message.get("tool_calls") or []
    return str(content) + "".join(str(call.get("function", "")) for call in calls)
