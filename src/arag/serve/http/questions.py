"""Questions to the agent over HTTP: ``/ask`` (the result as ``arag ask --json`` prints it) and ``/ask/stream``
(Server-Sent Events), and the event stream conversations use too."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse

from arag.agent import Conversation
from arag.errors import ARagError
from arag.serve.http.bodies import AskQuery
from arag.serve.http.served import ServedIndex, busy, question_of, sse, where
from arag.tracing import parent_from


def router(served: ServedIndex) -> APIRouter:
    """The question routes of one index."""
    router = APIRouter()

    @router.post("/ask")
    async def ask(body: AskQuery, request: Request) -> Any:
        question = question_of(body.question)
        if not served.agents.asks.acquire(blocking=False):
            return busy()
        try:
            scope = where(body.where)
            agent = await anyio.to_thread.run_sync(served.new_agent, served.view(request), body.max_steps)
            agent.trace_parent = parent_from(request.headers)  # the caller's traceparent, if any
            result = await until_the_client_leaves(request, agent, lambda: agent.run(question, scope))
        except ARagError as exc:
            raise HTTPException(400, str(exc)) from None
        finally:
            served.agents.asks.release()
        return result.to_dict()

    @router.post("/ask/stream")
    async def ask_stream(body: AskQuery, request: Request) -> Any:
        """Server-Sent Events: ``step`` per tool call as it happens, then ``answer``, then ``done``;
        an ``error`` event if the question cannot be answered."""
        question = question_of(body.question)
        where(body.where)  # a malformed filter is a 400 before the stream starts
        return ask_events(served, question, body.where, request, max_steps=body.max_steps)

    return router


def still_allowed(request: Request) -> Callable[[], bool]:
    """Whether the request's token still allows it (arag.serve.http.guard: it rereads the token file): a question
    that runs on stops when its token is revoked."""
    check = request.scope.get("arag.still_allowed")
    return check if callable(check) else lambda: True


async def until_the_client_leaves(request: Request, agent: Any, answer: Callable[[], Any]) -> Any:
    """``answer()`` in a worker thread; a client that disconnects meanwhile stops the agent at its next step (one
    model call at most), instead of the question running on to its step limit for nobody."""
    stop = threading.Event()
    agent.cancelled = stop.is_set
    allowed = still_allowed(request)

    async def watch() -> None:
        while not stop.is_set():
            if await request.is_disconnected() or not allowed():  # gone, or its token revoked meanwhile
                stop.set()
                return
            await anyio.sleep(0.2)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        try:
            return await anyio.to_thread.run_sync(answer)
        finally:
            stop.set()  # ends the watch
            tasks.cancel_scope.cancel()


def ask_events(
    served: ServedIndex,
    question: str,
    scope: str | None,
    request: Request,
    max_steps: int | None = None,
    conversation: Conversation | None = None,
) -> Any:
    """The agent's steps on ``question`` as Server-Sent Events (``step``…, ``answer``, ``done``; or ``error``),
    alone or as the next turn of ``conversation``; the question stops at its next step when the client leaves."""
    from arag.api import stream

    if not served.agents.asks.acquire(blocking=False):
        return busy()
    stop = threading.Event()
    view = served.view(request)

    async def events() -> AsyncIterator[bytes]:
        try:
            try:
                agent = None if conversation else await anyio.to_thread.run_sync(served.new_agent, view, max_steps)
                (agent or conversation.agent).trace_parent = parent_from(request.headers)  # type: ignore[union-attr]
            except ARagError as exc:
                yield sse("error", {"message": str(exc)})
                return
            iterator = stream(view, question, agent=agent, stop=stop, where=scope, conversation=conversation)
            allowed = still_allowed(request)
            while True:
                event = await anyio.to_thread.run_sync(next, iterator, None)
                if event is None or await request.is_disconnected():
                    break
                if not allowed():
                    yield sse("error", {"message": "the token was revoked: the question stops here"})
                    break
                kind = event["type"]
                payload = {k: v for k, v in event.items() if k != "type"}
                if kind == "result" and conversation is not None:
                    payload["turn"] = len(conversation.turns)
                yield sse("answer" if kind == "result" else kind, payload)
                if kind in ("result", "error"):
                    break
            yield sse("done", {})
        finally:
            stop.set()  # a client that went away ends the agent at its next step
            served.agents.asks.release()

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
