"""What one question's run accumulates — the conversation, the trajectory, the searches made, the budgets — and
the result it ends with. :class:`RunState` is the only place that appends to any of it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from arag.agent.actions import Action, ToolCall
from arag.agent.prompts import REPEATED
from arag.agent.questions import asks_a_question
from arag.citations import cited_ids
from arag.citations import resolve as resolve_citations
from arag.errors import ARagError
from arag.models.endpoint import ChatTurn, Usage
from arag.settings import AgentSettings
from arag.tools.arguments import parse_arguments
from arag.tools.toolkit import Toolkit, ToolResult
from arag.tracing import QuestionTrace

STOP_REASONS = ("answered", "max_steps", "token_budget", "time_budget", "stalled", "cancelled", "error")


@dataclass
class Step:
    tool: str
    arguments: dict[str, Any]
    observation: str
    retrieved_tokens: int
    latency_s: float
    thought: str = ""
    # "harness": a call the loop made for the model (a policy's read), not one the model asked for; ``why`` says
    # when ("in place of its repeated call")
    origin: Literal["model", "harness"] = "model"
    why: str = ""
    # how sure the model said it was with this call (confident_stop asks): recorded so that a run shows where each
    # threshold would have stopped it
    confidence: float | None = None


@dataclass
class AgentResult:
    question: str
    answer: str
    citations: list[dict[str, Any]]
    stop_reason: str
    steps: int
    trajectory: list[Step]
    usage: Usage
    cost: float | None
    retrieved_tokens: int
    latency_s: float
    error: str | None = None
    read_chunks: list[str] = field(default_factory=list)
    seen_chunks: list[str] = field(default_factory=list)
    model_calls: list[dict[str, Any]] = field(default_factory=list)  # usage and latency of each model call
    # "model", or what the loop answered instead of a reply that was no answer ("the closest sentence read")
    answer_from: str = "model"
    plan: list[str] = field(default_factory=list)  # the plan of searches the model stated, if asked for one
    policies_acted: dict[str, int] = field(default_factory=dict)  # how often each policy changed something
    # each citation resolved to its source: file, pages, heading path, the sentence supporting the answer
    sources: list[dict[str, Any]] = field(default_factory=list)
    # agent.verify_answers: each claim of the answer and the sentence read that supports it, if any
    verification: dict[str, Any] | None = None
    # each answer a reread changed (phrase_answer): the policy, the answer before it and after
    rereads: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.to_dict()
        return data


@dataclass(frozen=True)
class Evidence:
    """A sentence of a chunk the model was shown, and its cosine with the question."""

    score: float
    sentence: str
    chunk_id: str


@dataclass(frozen=True)
class Search:
    """A search that ran: its hits in rank order, and what had been read before it."""

    tool: str
    hits: tuple[str, ...]
    read_before: frozenset[str]
    pair: bool  # hits 1 and 2 matched different keywords
    by_model: bool = True  # False: the loop made it (a policy's opening search)


class RunState:
    """One question's run. The loop and the policies read it; only its methods change it."""

    def __init__(
        self,
        question: str,
        system: str,
        toolkit: Toolkit,
        settings: AgentSettings,
        observe: Callable[[ToolCall, str], dict[str, Any]],
        on_step: Callable[[Step], None] | None = None,
        history: list[dict[str, Any]] | None = None,
        trace: QuestionTrace | None = None,
    ) -> None:
        self.question, self.toolkit, self.settings = question, toolkit, settings
        self.trace = trace or QuestionTrace(question, {})  # spans of the question (arag.tracing; off: no-ops)
        self._history = len(history or [])  # a conversation's earlier turns come before the question
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            *(history or []),
            {"role": "user", "content": f"Question: {question}"},
        ]
        # what the tracker held before this question (a conversation's tracker outlives its questions)
        tracker = toolkit.tracker
        self._before = (tracker.retrieved_tokens, set(tracker.read_ids), set(tracker.seen_ids))
        self.trajectory: list[Step] = []
        self.actions: list[Action] = []  # every parsed reply of the model, in order
        self.searches: list[Search] = []
        self.offered: dict[str, None] = {}  # every chunk id shown as a hit or a neighbour, in the order shown
        self.done: set[str] = set()  # the calls made, by call_key
        self.usage, self.model_calls = Usage(), list[dict[str, Any]]()
        self.steps = 0  # tool steps taken (a held answer takes none)
        self.stalls = 0  # repeated calls in a row that showed nothing new
        self.stall_limit = settings.stall_limit
        self.reads_per_search: int | None = None  # a policy's cap on the hits of one search the model may read
        self.acted: dict[str, int] = {}  # how often each policy changed something
        self.stop_reason: str | None = None
        self.answer, self.answer_from = "", "model"
        self.rereads: list[dict[str, str]] = []
        self.error: str | None = None
        self.started, self.deadline = time.perf_counter(), time.monotonic() + settings.time_budget_s
        self._observe, self._on_step = observe, on_step

    # ------------------------------------------------------------------ what the run knows
    @property
    def plan(self) -> list[str]:
        """The plan of searches the model's first action stated (empty without one)."""
        return next((a.plan for a in self.actions if a.plan), [])

    @property
    def read_ids(self) -> set[str]:
        return self.toolkit.tracker.read_ids

    @property
    def last_search(self) -> Search | None:
        return self.searches[-1] if self.searches else None

    def reads_left(self) -> int | None:
        """How many more of the latest search's hits may be read (None: no cap, or no search yet)."""
        last = self.last_search
        if self.reads_per_search is None or last is None:
            return None
        done = sum(c in self.read_ids and c not in last.read_before for c in last.hits)
        return max(0, self.reads_per_search - done)

    def unread_hits(self) -> list[str]:
        """The latest search's hits not read yet, while its read allowance lasts."""
        last = self.last_search
        if last is None or "chunk_read" not in self.toolkit.enabled or self.reads_left() == 0:
            return []
        return [c for c in last.hits if c not in self.read_ids]

    def call_key(self, call: ToolCall) -> str:
        return self.toolkit.call_key(call.name, safe_arguments(call.arguments))

    def keywords_of(self, call: ToolCall) -> list[str] | None:
        """A keyword_search call's keywords as the tool takes them (stripped; one string is one keyword), else
        None."""
        if self.toolkit.canonical(call.name) != "keyword_search":
            return None
        keywords = safe_arguments(call.arguments).get("keywords")
        keywords = [keywords] if isinstance(keywords, str) else keywords
        if not isinstance(keywords, list):
            return None
        return [k.strip() for k in keywords if isinstance(k, str) and k.strip()]

    def is_repeat(self, call: ToolCall) -> bool:
        return self.call_key(call) in self.done

    def read_this_question(self) -> list[str]:
        """The chunks read for this question (not a conversation's earlier ones), in the order they were shown."""
        new = self.read_ids - self._before[1]
        return [c for c in self.offered if c in new] + sorted(new - self.offered.keys())

    def read_text(self) -> str:
        """The text of every chunk read so far, lower-cased, whitespace folded."""
        records, _ = self.toolkit.index.read(sorted(self.read_ids))
        return " ".join(" ".join(r.text.lower().split()) for r in records)

    def closest_sentences(self, chunk_ids: list[str], k: int = 1) -> list[Evidence]:
        """The ``k`` sentences of these chunks closest to the question (best first; ties in the order given).
        Sentences that are questions themselves — a guide's headings, "What is bone cancer?", close to any question
        about it — come only when nothing else is left: they were offered, and returned as answers, in their place."""
        records, _ = self.toolkit.index.read(list(dict.fromkeys(chunk_ids)))
        found: list[Evidence] = []
        for record in records:
            try:
                sentences, scores = self.toolkit.question_scores(record)
            except ARagError:  # an embedding endpoint that fails costs the evidence, not the run
                return []
            found += [
                Evidence(float(score), text, record.chunk_id) for text, score in zip(sentences, scores, strict=True)
            ]
        found.sort(key=lambda e: -e.score)
        statements = [e for e in found if not asks_a_question(e.sentence)]
        return (statements or found)[:k]

    def citations(self, answer: str) -> list[dict[str, Any]]:
        """Chunk ids cited in the answer, each verified against the chunks this run actually returned."""
        return [{"chunk_id": c, "verified": c in self.toolkit.tracker.seen_ids} for c in cited_ids(answer)]

    # ------------------------------------------------------------------ what the run records
    def tell(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def record_turn(self, turn: ChatTurn, latency_s: float, rejected: bool, model: str = "") -> None:
        self.trace.model_call(model, latency_s, turn.usage, turn.finish_reason)
        self.usage.add(turn.usage)
        self.model_calls.append(
            {
                "prompt_tokens": turn.usage.prompt_tokens,
                "completion_tokens": turn.usage.completion_tokens,
                "cached_tokens": turn.usage.cached_tokens,
                "latency_s": round(latency_s, 4),
                **turn.timings,
                **({"grammar_rejected": True} if rejected else {}),
            }
        )
        self.messages.append(turn.message)

    def record_action(self, action: Action) -> None:
        self.actions.append(action)

    def remember(self, call: ToolCall) -> None:
        """A call the model made, as it made it (a policy may change what runs): the same call again is a repeat."""
        self.done.add(self.call_key(call))

    def call_tool(self, call: ToolCall) -> ToolResult:
        return self._run_tool(call.name, call.arguments, call.header)

    def harness_call(self, call: ToolCall) -> ToolResult:
        """A call the loop makes for the model (the same call from the model is then a repeat)."""
        self.remember(call)
        return self._run_tool(call.name, call.arguments, call.header, by_model=False)

    def harness_read(self, chunk_ids: list[str]) -> ToolResult:
        """A read the loop makes for the model (a policy's)."""
        return self._run_tool(self.toolkit.names["chunk_read"], {"chunk_ids": chunk_ids})

    def _run_tool(self, name: str, arguments: Any, header: str | None = None, by_model: bool = True) -> ToolResult:
        read_before = frozenset(self.read_ids)
        with self.trace.tool(str(name), arguments, by_model) as traced:
            result = self.toolkit.call(name, arguments, header=header)
            traced(result)
        if result.ok and self.toolkit.canonical(name) != "chunk_read":
            search = Search(self.toolkit.canonical(name), tuple(result.hits), read_before, result.pair, by_model)
            self.searches.append(search)
        self.offered.update((c, None) for c in [*result.hits, *result.neighbours])
        return result

    def refusal(self, call: ToolCall, text: str = "") -> ToolResult:
        """The result of a repeated call that runs nothing."""
        return ToolResult(call.name, safe_arguments(call.arguments), text or REPEATED, 0, 0.0, False)

    def observe(self, call: ToolCall, result: ToolResult, note: str = "", harness: str = "") -> None:
        """A tool result into the trajectory and the conversation (after ``note``: a policy's message). A call the
        loop made for the model says ``harness``: when it was made."""
        step = Step(
            result.name,
            result.arguments,
            result.observation,
            result.retrieved_tokens,
            round(result.latency_s, 6),
            self.actions[-1].note if self.actions else "",
            "harness" if harness else "model",
            harness,
            None if harness or not self.actions else self.actions[-1].stated_confidence(),
        )
        self.trajectory.append(step)
        if self._on_step:
            self._on_step(step)
        if note:
            self.tell(f"{note}\n\n{result.observation}")
        else:
            self.messages.append(self._observe(call, result.observation))

    def finish(self, answer: str, reason: str | None) -> None:
        self.answer, self.stop_reason = answer, reason

    def fail(self, reason: str, error: str) -> None:
        self.stop_reason, self.error = reason, error

    def reread_answer(self, policy: str, before: str, after: str) -> str:
        """Record a reread that changed the answer (a policy's extra model call); ``after`` is the answer now."""
        if after != before:
            self.rereads.append({"policy": policy, "before": before, "after": after})
        return after

    def answer_instead(self, answer: str, source: str) -> str:
        """Record that the loop gave ``answer`` instead of the model's reply (``source``: what it comes from)."""
        self.answer_from = source
        return answer

    def turn_messages(self) -> list[dict[str, Any]]:
        """This question's messages: the question, the tool steps, the answer (a conversation keeps them)."""
        messages = self.messages[1 + self._history :]
        last_reply_answers = (
            bool(messages)
            and messages[-1].get("role") == "assistant"
            and self.answer_from == "model"
            and bool(self.actions)
            and not self.actions[-1].calls
            and not self.rereads  # not turned into another answer by a reread (phrase_answer)
        )
        if self.answer and not last_reply_answers:
            # the loop answered for the model, or an answer it held earlier stands: the context says which
            messages = [*messages, {"role": "assistant", "content": f"Answer: {self.answer}"}]
        return messages

    def result(self, cost: Callable[[Usage], float | None]) -> AgentResult:
        tokens_before, read_before, seen_before = self._before
        tracker = self.toolkit.tracker
        return AgentResult(
            self.question,
            self.answer,
            self.citations(self.answer),
            self.stop_reason or "max_steps",
            len(self.trajectory),
            self.trajectory,
            self.usage,
            cost(self.usage),
            tracker.retrieved_tokens - tokens_before,
            round(time.perf_counter() - self.started, 3),
            self.error,
            sorted(tracker.read_ids - read_before),
            sorted(tracker.seen_ids - seen_before),
            self.model_calls,
            self.answer_from,
            self.plan,
            dict(self.acted),
            resolve_citations(self.toolkit.index, self.answer, self.citations(self.answer)),
            rereads=list(self.rereads),
        )


def safe_arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as a dict; ones the tools would refuse as their raw text (for keys and records)."""
    try:
        return parse_arguments(arguments)
    except Exception:
        return {"_raw": str(arguments)}
