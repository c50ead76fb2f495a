"""The paper's comparison: Direct, Naive RAG, A-RAG (Naive), A-RAG (Full), and ablations.

Every method answers from the same settings and reports the same fields. Without ``chunk_read`` the search
tools return each hit's full chunk text instead of snippets (otherwise the agent could never see more than
sentences); that is how ``arag-no-read`` is defined.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, get_args

from arag.agent import Agent
from arag.corpus.chunking import count_tokens
from arag.harness.text import SHORT_PHRASE
from arag.index import Index
from arag.models.endpoint import ChatModel, Usage
from arag.settings import AgentSettings, ToolName
from arag.text import says_not_found

ALL_TOOLS: list[ToolName] = ["keyword_search", "semantic_search", "chunk_read"]
METHODS: dict[str, list[ToolName] | None] = {
    "direct": None,
    "naive-rag": None,
    "arag-naive": ["semantic_search"],
    "arag-full": ALL_TOOLS,
    "arag-tables": [*ALL_TOOLS, "table_list", "table_query"],
    "arag-documents": [*ALL_TOOLS, "list_documents", "document_outline", "section_read", "grep"],
    "arag-extended": list(get_args(ToolName)),  # every tool
    "arag-fused": ["chunk_read", "search"],  # one fused search instead of the two
    "arag-search": [*ALL_TOOLS, "search"],  # the fused search beside the two
    "arag-no-keyword": ["semantic_search", "chunk_read"],
    "arag-no-semantic": ["keyword_search", "chunk_read"],
    "arag-no-read": ["keyword_search", "semantic_search"],
}
ANSWER_PROMPT = SHORT_PHRASE
NAIVE_PROMPT = ANSWER_PROMPT + " Use the retrieved chunks."


@dataclass
class MethodOutput:
    prediction: str
    stop_reason: str
    steps: int = 0
    retrieved_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    retrieved_chunks: list[str] = field(default_factory=list)  # every chunk whose content the method saw
    read_chunks: list[str] = field(default_factory=list)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    answer_from: str = "model"  # or what the agent's loop answered instead of a reply that was no answer
    policies_acted: dict[str, int] = field(default_factory=dict)
    verification: dict[str, Any] | None = None  # agent.verify_answers
    # what each policy recorded, by name (a plan stated; an answer a reread changed: "reread")
    policy_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_found: bool = False  # the answer says the documents do not hold what was asked


class Method:
    name: str
    system_prompt: str = ANSWER_PROMPT  # recorded by hash in the run's config
    tool_names: tuple[str, ...] = ()  # the names the model sees
    actions = "text"  # how the model acts: "text" (an answer), "native" tool calls, "json" or "flat json" actions
    policies: tuple[str, ...] = ()  # the agent's policies (arag/harness/policies)

    def answer(self, question: str) -> MethodOutput:
        raise NotImplementedError


class DirectMethod(Method):
    name = "direct"

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def answer(self, question: str) -> MethodOutput:
        turn = self.model.complete(
            [{"role": "system", "content": ANSWER_PROMPT}, {"role": "user", "content": question}]
        )
        answer = turn.content.strip()
        return MethodOutput(
            answer, "answered", usage=turn.usage, cost=self.model.cost(turn.usage), not_found=says_not_found(answer)
        )


class NaiveRAGMethod(Method):
    """Top-k chunks by semantic search, pasted into one prompt (the paper's Naive RAG)."""

    name = "naive-rag"

    def __init__(self, index: Index, model: ChatModel, top_k: int = 5) -> None:
        self.index, self.model, self.top_k = index, model, top_k
        self.system_prompt = NAIVE_PROMPT

    def answer(self, question: str) -> MethodOutput:
        started = time.perf_counter()
        hits = self.index.semantic_search(question, self.top_k)
        records = self.index.store.chunks(h.row for h in hits)
        context = "\n\n".join(f"[chunk {h.chunk_id}]\n{records[h.row].text.strip()}" for h in hits)
        turn = self.model.complete(
            [
                {"role": "system", "content": NAIVE_PROMPT},
                {"role": "user", "content": f"Retrieved chunks:\n{context}\n\nQuestion: {question}"},
            ]
        )
        ids = [h.chunk_id for h in hits]
        step = {
            "tool": "semantic_search",
            "arguments": {"query": question, "top_k": self.top_k},
            "observation": context,
            "retrieved_tokens": count_tokens(context),
            "latency_s": round(time.perf_counter() - started, 4),
        }
        return MethodOutput(
            turn.content.strip(),
            "answered",
            1,
            count_tokens(context),
            turn.usage,
            self.model.cost(turn.usage),
            ids,
            ids,
            [step],
            not_found=says_not_found(turn.content),
        )


class AgentMethod(Method):
    def __init__(
        self, name: str, index: Index, model: ChatModel, settings: AgentSettings, json_actions: bool | None = None
    ) -> None:
        tools = METHODS[name]
        assert tools is not None
        self.name = name
        self.agent = Agent(index, model, settings.model_copy(update={"tools": tools}), json_actions=json_actions)
        self.system_prompt = self.agent.system_prompt
        self.tool_names = tuple(settings.tool_names.get(t, t) for t in tools)
        self.actions = self.agent.actions_label
        self.policies = tuple(self.agent.bundle.policy_names)

    def answer(self, question: str) -> MethodOutput:
        result = self.agent.run(question)
        return MethodOutput(
            result.answer,
            result.stop_reason,
            result.steps,
            result.retrieved_tokens,
            result.usage,
            result.cost,
            result.seen_chunks,
            result.read_chunks,
            [asdict(step) for step in result.trajectory],  # every field a step records
            result.error,
            result.model_calls,
            result.answer_from,
            result.policies_acted,
            result.verification,
            result.policy_records,
            result.not_found,
        )


def make_method(
    name: str, index: Index, model: ChatModel, settings: AgentSettings, json_actions: bool | None, naive_top_k: int = 5
) -> Method:
    if name not in METHODS:
        from arag.errors import ConfigError

        raise ConfigError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    if name == "direct":
        return DirectMethod(model)
    if name == "naive-rag":
        return NaiveRAGMethod(index, model, naive_top_k)
    return AgentMethod(name, index, model, settings, json_actions)
