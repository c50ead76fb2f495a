"""One served index as the routes see it: the index, the server's settings and its bound on questions at once, how
an agent is made for a question, and the helpers every route of the index shares."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

from arag.errors import ARagError
from arag.filters import Filter, FilterError, parse_filter
from arag.index import Index
from arag.serve.access import caller_view
from arag.settings import Settings


@dataclass
class Agents:
    """How the server makes an agent per question: ``factory(max_steps, index)`` when given (tests, other models),
    else the configured model, loaded once on the first question and shared by every index; and the one bound on
    questions answered at once for the whole server."""

    settings: Settings
    factory: Callable[[int | None, Index], Any] | None = None
    asks: threading.BoundedSemaphore = field(init=False)
    _model: list[Any] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.asks = threading.BoundedSemaphore(self.settings.server.max_concurrent_asks)

    def new(self, index: Index, max_steps: int | None) -> Any:
        from arag.api import make_agent
        from arag.models.choice import chat_model

        if self.factory is not None:
            return self.factory(max_steps, index)
        settings = self.settings.model_copy(deep=True)
        if max_steps:
            settings.agent.max_steps = max_steps
        with self._lock:  # the embedded model is loaded once, on the first question
            if not self._model:
                self._model.append(chat_model(self.settings, threads=self.settings.index.threads)[0])
        return make_agent(index, settings, model=self._model[0])


@dataclass
class ServedIndex:
    """An index behind the API, with what its routes share."""

    index: Index
    agents: Agents

    @property
    def settings(self) -> Settings:
        return self.agents.settings

    def view(self, request: Request) -> Index:
        """The index as the request's token reads it (arag.serve.access: its groups' documents and the open ones;
        every document for a token that reads all): every route and tool of the request runs on this view, and the
        documents it is refused by name go to the request's audit line."""
        return caller_view(self.index, request.scope)

    def new_agent(self, index: Index, max_steps: int | None) -> Any:
        """An agent for one question on ``index`` (the request's view)."""
        return self.agents.new(index, max_steps)

    async def bounded(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` in a worker thread, on one generation of the index (whatever a sync commits
        meanwhile), within the request timeout; an a-rag error is the client's 400."""
        timeout = self.settings.server.request_timeout_s

        def in_one_generation() -> Any:
            with self.index.snapshot():
                return function(*args)

        try:
            with anyio.fail_after(timeout):
                return await anyio.to_thread.run_sync(in_one_generation)
        except TimeoutError:
            raise HTTPException(504, f"no result within {timeout:g} s") from None
        except ARagError as exc:
            raise HTTPException(400, str(exc)) from None


def where(text: str | None) -> Filter | None:
    """A request's metadata filter; a malformed one is a 400 with the parser's reason."""
    try:
        return parse_filter(text)
    except FilterError as exc:
        raise HTTPException(400, str(exc)) from None


def question_of(text: str) -> str:
    """A request's question, checked as every surface checks it (422 with the reason)."""
    from arag.agent import check_question

    try:
        return check_question(text)
    except ARagError as exc:
        raise HTTPException(422, str(exc)) from None


def busy() -> JSONResponse:
    """429: the server answers as many questions at once as it may."""
    return JSONResponse(
        {"detail": "too many questions at once; retry shortly"}, status_code=429, headers={"Retry-After": "5"}
    )


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One Server-Sent Event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
