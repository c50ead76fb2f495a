"""What one question's run accumulates — the conversation, the trajectory, the searches made, the budgets — and
the result it ends with. :class:`RunState` is the only place that appends to any of it; the harness's policies read
it (it is their :class:`~arag.harness.RunView`) and never write to it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from arag.agent.actions import Action
from arag.agent.prompts import REPEATED
from arag.citations import cited_ids
from arag.citations import resolve as resolve_citations
from arag.harness.contract import Limits, Search
from arag.models.endpoint import ChatTurn, Usage
from arag.settings import AgentSettings
from arag.text import says_not_found
from arag.tools.arguments import safe_arguments
from arag.tools.toolkit import ToolCall, Toolkit, ToolResult
from arag.tracing import QuestionTrace

# "model_calls": the loop's own bound on model calls was reached (agent.max_model_calls), whatever held the answers
STOP_REASONS = ("answered", "max_steps", "token_budget", "time_budget", "stalled", "cancelled", "model_calls", "error")


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
    # the fields the harness asked the model's action for, as it wrote them (a plan, a confidence)
    fields: dict[str, Any] = field(default_factory=dict)


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
    # "model", or what the harness answered instead of a reply that was no answer ("the closest sentence read")
    answer_from: str = "model"
    policies_acted: dict[str, int] = field(default_factory=dict)  # how often each policy changed something
    # each citation resolved to its source: file, pages, heading path, the sentence supporting the answer
    sources: list[dict[str, Any]] = field(default_factory=list)
    # agent.verify_answers: each claim of the answer and the sentence read that supports it, if any
    verification: dict[str, Any] | None = None
    # what each policy records of the run, by its name (a plan stated; an answer a reread changed: "reread")
    policy_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the answer says the documents do not hold what was asked ("Not in the documents: …")
    not_found: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.to_dict()
        return data


class RunState:
    """One question's run. The loop and the policies read it; only its methods change it, and only the loop calls
    those."""

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
        earlier: list[tuple[str, str]] | None = None,
    ) -> None:
        self.question, self.toolkit, self.settings = question, toolkit, settings
        self.earlier = list(earlier or [])  # a conversation's earlier questions and their answers, oldest first
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
        self.repeats = 0  # repeated calls in the run, whatever was shown instead
        self.limits = Limits(stall_limit=settings.stall_limit)  # with the harness's on top (Agent._start)
        self.answer_chars: int | None = None  # the longest answer the latest action allowed
        self.stop_reason: str | None = None
        self.answer, self.answer_from = "", "model"
        self.rereads: list[dict[str, str]] = []  # each answer a reread changed: the policy, before, after
        self.error: str | None = None
        self.started, self.deadline = time.perf_counter(), time.monotonic() + settings.time_budget_s
        self._observe, self._on_step = observe, on_step

    # ------------------------------------------------------------------ what the run knows
    @property
    def read_ids(self) -> set[str]:
        return self.toolkit.tracker.read_ids

    @property
    def last_search(self) -> Search | None:
        return self.searches[-1] if self.searches else None

    def call_key(self, call: ToolCall) -> str:
        return self.toolkit.call_key(call.name, safe_arguments(call.arguments))

    def is_repeat(self, call: ToolCall) -> bool:
        return self.call_key(call) in self.done

    def read_this_question(self) -> list[str]:
        """The chunks read for this question (not a conversation's earlier ones), in the order they were shown."""
        new = self.read_ids - self._before[1]
        return [c for c in self.offered if c in new] + sorted(new - self.offered.keys())

    def citations(self, answer: str) -> list[dict[str, Any]]:
        """Chunk ids cited in the answer, each verified against the chunks this run actually returned."""
        seen = self.toolkit.tracker.seen_ids
        return [{"chunk_id": c, "verified": c in seen} for c in cited_ids(answer, seen)]

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

    def call_tool(self, call: ToolCall, header: str | None = None) -> ToolResult:
        """A call the model made, as it runs (``header``: the first words of its result, where the harness changed
        the call and says so)."""
        return self._run_tool(call.name, call.arguments, header)

    def harness_call(self, call: ToolCall) -> ToolResult:
        """A call the loop makes for the model (the same call from the model is then a repeat)."""
        self.remember(call)
        return self._run_tool(call.name, call.arguments, by_model=False)

    def harness_read(self, chunk_ids: list[str], focus: str = "") -> ToolResult:
        """A read the loop makes for the model (for a policy); ``focus``: what a view that shows part of a long
        chunk chooses its sentences for, in place of the question (the question resolved to a next hop)."""
        question = self.toolkit.focus_query
        self.toolkit.focus_query = focus or question
        try:
            return self._run_tool(self.toolkit.names["chunk_read"], {"chunk_ids": chunk_ids})
        finally:
            self.toolkit.focus_query = question

    def _run_tool(self, name: str, arguments: Any, header: str | None = None, by_model: bool = True) -> ToolResult:
        read_before = frozenset(self.read_ids)
        with self.trace.tool(str(name), arguments, by_model) as traced:
            result = self.toolkit.call(name, arguments)
            if header is not None:
                result = self.toolkit.retitle(result, header)
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
            {} if harness or not self.actions else dict(self.actions[-1].fields),
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

    def answer_instead(self, source: str) -> None:
        """Record that the answer is the harness's, not the model's reply (``source``: what it comes from)."""
        self.answer_from = source

    def turn_messages(self) -> list[dict[str, Any]]:
        """This question's messages: the question, the tool steps, the answer (a conversation keeps them)."""
        messages = self.messages[1 + self._history :]
        last_reply_answers = (
            bool(messages)
            and messages[-1].get("role") == "assistant"
            and self.answer_from == "model"
            and bool(self.actions)
            and not self.actions[-1].calls
            and not self.rereads  # not turned into another answer by a reread
        )
        if self.answer and not last_reply_answers:
            # the loop answered for the model, or an answer it held earlier stands: the context says which
            messages = [*messages, {"role": "assistant", "content": f"Answer: {self.answer}"}]
        return messages

    def result(
        self,
        cost: Callable[[Usage], float | None],
        acted: dict[str, int] | None = None,
        records: dict[str, dict[str, Any]] | None = None,
    ) -> AgentResult:
        """The run's result (``acted``: how often each policy changed something; ``records``: what each recorded,
        to which the answers its rereads changed are added)."""
        records = {name: dict(record) for name, record in (records or {}).items()}
        for reread in self.rereads:
            records.setdefault(reread["policy"], {})["reread"] = {"before": reread["before"], "after": reread["after"]}
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
            dict(acted or {}),
            resolve_citations(self.toolkit.index, self.answer, self.citations(self.answer)),
            policy_records=records,
            not_found=says_not_found(self.answer),
        )
