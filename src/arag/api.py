"""The Python API: what the CLI, the MCP server and the HTTP server do, for library users.

    import arag

    index = arag.open_index("my-index")                     # once; share it between threads
    hits = index.keyword_search(["Lothair II"], top_k=5)     # the three tools, as data
    hits = index.semantic_search("who was his mother", top_k=5)
    records, missing = index.read(["notes.md#0"])
    toolkit = arag.Toolkit(index)                            # the tools as the model sees them (one tracker)
    print(toolkit.call("chunk_read", {"chunk_ids": ["notes.md#0"]}).observation)
    result = arag.ask(index, "When did Lothair II's mother die?")   # an AgentResult
    chat = arag.conversation(index)                               # follow-ups in context, one tracker
    chat.ask("Who was Lothair II's mother?"); chat.ask("And when did she die?")
    for event in arag.stream(index, "When did Lothair II's mother die?"):
        print(event["type"], event)                           # "step" events as they happen, then "result"

The model is the configured endpoint (``ARAG_BASE_URL`` / ``ARAG_MODEL``, or ``settings.llm``), else the
embedded local model.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arag.agent import Agent, AgentResult, Conversation, Step, check_question
from arag.filters import parse_filter
from arag.harness.profiles import policy_configs
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import Settings, load_settings


def open_index(path: str | Path, settings: Settings | None = None) -> Index:
    """Open an index directory or ``postgresql://…?index=NAME`` URL once, with the search settings of ``settings``
    (threads, IVF probes, HNSW ef_search, statement timeout; default: the environment's)."""
    return Index.open_with(path, (settings or load_settings()).index)


def make_agent(
    index: Index, settings: Settings | None = None, model: ChatModel | None = None, local_model: str | None = None
) -> Agent:
    """An agent over ``index`` with the configured model (or ``model``)."""
    from arag.models.choice import chat_model

    settings = settings or load_settings()
    policy_configs(settings.agent)  # a policy's settings are checked before a model is loaded, not after
    if model is None:
        model = chat_model(settings, local_model=local_model, threads=settings.index.threads)[0]
    return Agent(index, model, settings.agent)


def ask(
    index: Index,
    question: str,
    settings: Settings | None = None,
    model: ChatModel | None = None,
    where: str | None = None,
) -> AgentResult:
    """Answer one question with the A-RAG agent (from the documents ``where`` lets through, when given)."""
    return make_agent(index, settings, model).run(question, where)


def conversation(
    index: Index,
    settings: Settings | None = None,
    model: ChatModel | None = None,
    where: str | None = None,
) -> Conversation:
    """A conversation over ``index``: its questions follow one another (earlier turns in context, one context
    tracker), bounded by ``settings.conversation.max_tokens``; ``where`` scopes all of its questions."""
    settings = settings or load_settings()
    return Conversation(make_agent(index, settings, model), settings.conversation.max_tokens, parse_filter(where))


def step_event(step: Step, number: int) -> dict[str, Any]:
    return {"type": "step", "number": number, **asdict(step)}


def stream(
    index: Index,
    question: str,
    settings: Settings | None = None,
    model: ChatModel | None = None,
    agent: Agent | None = None,
    stop: threading.Event | None = None,
    where: str | None = None,
    conversation: Conversation | None = None,
) -> Iterator[dict[str, Any]]:
    """The agent's steps as events while it works: ``{"type": "step", ...}`` per tool call, then
    ``{"type": "result", ...}`` (the whole :class:`AgentResult`), or ``{"type": "error", "message": ...}``.
    Closing the iterator early stops waiting (the question ends at its next step or its time budget). In a
    ``conversation``, the question follows its earlier turns (and its agent answers)."""
    question = check_question(question)
    scope = parse_filter(where)  # a malformed filter is the caller's error, before any work
    agent = conversation.agent if conversation is not None else agent or make_agent(index, settings, model)
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    counter = iter(range(1, 1_000_000))
    agent.on_step = lambda step: events.put(step_event(step, next(counter)))
    if stop is not None:
        agent.cancelled = stop.is_set

    def work() -> None:
        try:
            if conversation is not None:
                with conversation.lock:
                    result = agent.run(question, scope if scope is not None else conversation.where, conversation)
            else:
                result = agent.run(question, scope)
            events.put({"type": "result", **result.to_dict()})
        except Exception as exc:  # delivered as an event: the consumer may be another thread or a web client
            events.put({"type": "error", "message": str(exc) or type(exc).__name__})

    worker = threading.Thread(target=work, name="arag-ask", daemon=True)
    worker.start()
    while True:
        if stop is not None and stop.is_set():
            return
        try:
            event = events.get(timeout=0.25)
        except queue.Empty:
            continue
        yield event
        if event["type"] in ("result", "error"):
            return
