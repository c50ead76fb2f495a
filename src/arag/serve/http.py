"""``arag serve``: the HTTP API, the web page and MCP over HTTP, on FastAPI + uvicorn.

A thin layer: every endpoint calls :class:`~arag.index.Index`, :mod:`arag.api` (the agent) or reads the
run folders that ``arag eval run`` writes. JSON shapes are the CLI's ``--json`` shapes.

Safety: loopback by default; any other address requires a token, checked on every request (API, event
stream, MCP, page); bodies and arguments are bounded; CORS is off unless origins are configured; the page
renders every corpus and model text as text; no endpoint reads a file outside the index and the runs folder.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import anyio
import numpy as np
from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from arag.agent import Conversation
from arag.citations import locate
from arag.errors import ARagError, ConfigError
from arag.filters import MAX_FILTER_CHARS, Filter, FilterError, parse_filter
from arag.index import Index
from arag.serve.access import ANONYMOUS, NAME, Access, AuditLog, Principal, route_of
from arag.settings import Settings
from arag.tools.arguments import MAX_QUERY_CHARS
from arag.tools.sessions import ToolkitSessions
from arag.tools.toolkit import MAX_KEYWORDS, MAX_READ, MAX_TOP_K
from arag.tools.view import CLIENT_VIEW
from arag.tracing import parent_from
from arag.version import __version__

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_SESSIONS = 1024  # HTTP tool sessions kept (least recently used forgotten)
WEB = "web"


# ------------------------------------------------------------------ request bodies (bounded)
_WHERE = Field(None, max_length=MAX_FILTER_CHARS, description="A filter on document metadata (arag.filters).")


class KeywordQuery(BaseModel):
    keywords: list[str] = Field(min_length=1, max_length=MAX_KEYWORDS)
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    where: str | None = _WHERE


class SemanticQuery(BaseModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    where: str | None = _WHERE


class ReadQuery(BaseModel):
    chunk_ids: list[str] = Field(min_length=1, max_length=MAX_READ)
    where: str | None = _WHERE
    claim: str | None = Field(None, max_length=MAX_QUERY_CHARS, description="Name each chunk's sentence that best "
                              "supports this text.")  # fmt: skip


MAX_EMBEDDING_INPUTS = 2048  # OpenAI's own bound per request
MAX_EMBEDDING_CHARS = 20_000  # per input; the embedders truncate long texts anyway


class EmbeddingsQuery(BaseModel):
    """OpenAI's embeddings request, for text inputs (token-id inputs are refused)."""

    input: str | list[str] = Field(
        description=f"A text or a list of at most {MAX_EMBEDDING_INPUTS} texts, none empty, each at most "
        f"{MAX_EMBEDDING_CHARS} characters."
    )
    model: str = Field(min_length=1, max_length=256, description="The index's embedder (GET …/v1/models names it).")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1, description="Only the embedder's own dimension is accepted.")
    user: str | None = Field(None, max_length=256)

    def texts(self) -> list[str]:
        texts = [self.input] if isinstance(self.input, str) else self.input
        if not 1 <= len(texts) <= MAX_EMBEDDING_INPUTS:
            raise HTTPException(422, f"input: between 1 and {MAX_EMBEDDING_INPUTS} texts")
        if any(not text or len(text) > MAX_EMBEDDING_CHARS for text in texts):
            raise HTTPException(
                422, f"input: every text must be non-empty and at most {MAX_EMBEDDING_CHARS} characters"
            )
        return texts


class AskQuery(BaseModel):
    question: str = Field(min_length=1, max_length=20_000)
    max_steps: int | None = Field(None, ge=1, le=50)
    where: str | None = _WHERE


class NewConversation(BaseModel):
    where: str | None = _WHERE  # every question of the conversation stays within it
    max_steps: int | None = Field(None, ge=1, le=50)


class FollowUp(BaseModel):
    question: str = Field(min_length=1, max_length=20_000)
    where: str | None = _WHERE  # this question only (else the conversation's)


class Conversations:
    """The open conversations: ids a client cannot guess (``secrets.token_urlsafe``), forgotten after
    ``idle_expiry_s`` without a question, and the least recently used beyond ``max_open``."""

    def __init__(self, idle_expiry_s: float, max_open: int) -> None:
        self.idle_expiry_s, self.max_open = idle_expiry_s, max_open
        self._open: OrderedDict[str, tuple[Conversation, float]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, conversation: Conversation) -> str:
        conversation_id = secrets.token_urlsafe(24)
        with self._lock:
            self._expire()
            self._open[conversation_id] = (conversation, time.monotonic())
            while len(self._open) > self.max_open:
                self._open.popitem(last=False)
        return conversation_id

    def get(self, conversation_id: str) -> Conversation:
        with self._lock:
            self._expire()
            found = self._open.pop(conversation_id, None)
            if found is None:
                raise HTTPException(404, "no such conversation (it may have expired)")
            self._open[conversation_id] = (found[0], time.monotonic())
            return found[0]

    def remove(self, conversation_id: str) -> bool:
        with self._lock:
            return self._open.pop(conversation_id, None) is not None

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (_c, used) in self._open.items() if now - used > self.idle_expiry_s]:
            del self._open[key]


# ------------------------------------------------------------------ middleware
class Guard:
    """On every request: who it comes from (arag.serve.access: a token in the header, ``?token=`` or the cookie
    the page sets), whether that token may use the route (401 without a valid token; 404 for an index it may not
    see, as for one that does not exist; 403 for a scope it lacks), a body-size cap, and a line in the audit log."""

    def __init__(
        self, app: ASGIApp, access: Access, default_index: str, max_body: int, audit: AuditLog | None = None
    ) -> None:
        self.app, self.access, self.default_index, self.max_body, self.audit = (
            app,
            access,
            default_index,
            max_body,
            audit,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        route = route_of(scope.get("path", ""), self.default_index)
        principal = self.access.principal(_offered_tokens(scope, headers))
        status = [0]
        question: list[str] = []
        logged = [False]

        def log() -> None:
            if self.audit is None or logged[0]:
                return
            logged[0] = True
            entry = {
                "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
                "token": principal.name if principal else None,
                "method": scope.get("method"),
                "route": scope.get("path", "")[:512],  # never the query string: it may carry a token
                "index": route.index,
                "status": status[0],
                "ms": round(1000 * (time.perf_counter() - started), 1),
            }
            if question and question[0]:
                entry["question"] = question[0]
            self.audit.write(entry)

        async def logged_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                log()  # before the last byte leaves: a client that has its answer finds its line in the log
            await send(message)

        try:
            refusal = self._refusal(principal, route)
            if refusal is not None:
                await JSONResponse({"detail": refusal[1]}, refusal[0])(scope, receive, logged_send)
                return
            scope["arag.principal"] = principal
            length = headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                detail = {"detail": f"request body larger than {self.max_body} bytes"}
                await JSONResponse(detail, 413)(scope, receive, logged_send)
                return
            received, kept = [0], bytearray()
            keep_body = self.audit is not None and self.audit.questions and route.scope == "ask"

            async def bounded_receive() -> Any:
                message = await receive()
                body = message.get("body", b"")
                received[0] += len(body)
                if received[0] > self.max_body:
                    raise HTTPException(413, f"request body larger than {self.max_body} bytes")
                if keep_body:
                    kept.extend(body)
                    if not message.get("more_body"):
                        question.append(_question_of(bytes(kept)))
                return message

            await self.app(scope, bounded_receive, logged_send)
        finally:
            log()  # a request that ended without a complete response (an error, a client gone) is logged too

    def _refusal(self, principal: Principal | None, route: Any) -> tuple[int, str] | None:
        if principal is None:
            return 401, "missing or wrong token"
        if route.index is not None and not principal.sees(route.index):
            return 404, "Not Found"  # the same answer as for an index that does not exist
        if not principal.may(route.scope, route.index):
            return 403, f"this token's scope ({principal.scope}) does not allow this ({route.scope} needed)"
        return None


def _offered_tokens(scope: Scope, headers: dict[str, str]) -> list[str]:
    from urllib.parse import parse_qs

    offered = []
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        offered.append(auth[7:].strip())
    offered += parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])[:1]
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "arag_token":
            offered.append(value)
    return offered


def _question_of(body: bytes) -> str:
    try:
        question = json.loads(body).get("question")
    except (ValueError, AttributeError):
        return ""
    return question[:2000] if isinstance(question, str) else ""


# ------------------------------------------------------------------ the app
def create_app(
    index: Index | Mapping[str, Index],
    settings: Settings,
    runs_dir: Path | None = None,
    agent_factory: Any = None,
    access: Access | None = None,
    audit: AuditLog | None = None,
) -> FastAPI:
    """The ASGI app over shared indexes: one (served as "default") or several by name, the first being the one
    the routes without an index name (``/api/search/…``, ``/mcp``) serve. ``agent_factory(max_steps, index)``
    makes an agent per question (default: the configured model, loaded once on first use, shared by every
    index). ``access``: the tokens (default: ``server.token`` only); ``audit``: the request log."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from arag.api import make_agent
    from arag.models.choice import chat_model
    from arag.serve.mcp import build_server, per_session_toolkits

    indexes = {"default": index} if isinstance(index, Index) else dict(index)
    if not indexes:
        raise ConfigError("no index to serve")
    for name in indexes:
        if not NAME.match(name):
            raise ConfigError(f"index name {name!r}: letters, digits, '_', '.', '-' (at most 64)")
    default_name = next(iter(indexes))
    server_settings = settings.server
    asks = threading.BoundedSemaphore(server_settings.max_concurrent_asks)  # one bound for the whole server
    model_lock = threading.Lock()
    shared_model: list[Any] = []
    mcp_managers: list[Any] = []

    def new_agent(index: Index, max_steps: int | None) -> Any:
        if agent_factory is not None:
            return agent_factory(max_steps, index)
        agent_settings = settings.model_copy(deep=True)
        if max_steps:
            agent_settings.agent.max_steps = max_steps
        with model_lock:  # the embedded model is loaded once, on the first question
            if not shared_model:
                shared_model.append(chat_model(settings, threads=settings.index.threads)[0])
        return make_agent(index, agent_settings, model=shared_model[0])

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for manager in mcp_managers:
                await stack.enter_async_context(manager.run())
            yield

    app = FastAPI(
        title="a-rag",
        version=__version__,
        description="Agentic retrieval over hierarchical retrieval interfaces (keyword, semantic, chunk read).",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads its assets from a CDN; /api/docs serves a page that needs none
        redoc_url=None,
    )

    def index_routes(index: Index) -> APIRouter:
        """Every route of one index (paths under /api or /api/indexes/NAME)."""
        router = APIRouter()

        def in_one_generation(function: Any, *args: Any) -> Any:
            with index.snapshot():  # a request reads one generation, whatever a sync commits meanwhile
                return function(*args)

        async def bounded(function: Any, *args: Any) -> Any:
            try:
                with anyio.fail_after(server_settings.request_timeout_s):
                    return await anyio.to_thread.run_sync(in_one_generation, function, *args)
            except TimeoutError:
                raise HTTPException(504, f"no result within {server_settings.request_timeout_s:g} s") from None
            except ARagError as exc:
                raise HTTPException(400, str(exc)) from None

        def where(text: str | None) -> Filter | None:
            try:
                return parse_filter(text)
            except FilterError as exc:
                raise HTTPException(400, str(exc)) from None

        @router.get("/info")
        async def info() -> dict[str, Any]:
            """The index manifest, as ``arag info`` prints it, and the metadata fields a filter can use."""
            fields = await anyio.to_thread.run_sync(index.metadata_fields)
            return {**asdict(index.manifest), "metadata_fields": fields}

        @router.post("/search/keyword")
        async def keyword(body: KeywordQuery) -> list[dict[str, Any]]:
            keywords = [k for k in body.keywords if k.strip()]
            if not keywords:
                raise HTTPException(422, "the keyword list is empty")
            hits = await bounded(index.keyword_search, keywords, body.top_k, where(body.where))
            return [h.to_dict() for h in hits]

        @router.post("/search/semantic")
        async def semantic(body: SemanticQuery) -> list[dict[str, Any]]:
            if not body.query.strip():
                raise HTTPException(422, "the query is empty")
            scope = where(body.where)
            hits = await bounded(lambda: index.semantic_search(body.query, body.top_k, where=scope))
            return [h.to_dict() for h in hits]

        @router.post("/read")
        async def read(body: ReadQuery) -> JSONResponse:
            """The chunks found, as ``arag read --json`` prints them (with where each comes from); ids not found (or
            outside the filter) are listed in the ``X-Missing-Chunk-Ids`` header (JSON), as the CLI lists them on
            stderr."""
            scope = where(body.where)

            def read_located() -> tuple[list[dict[str, Any]], list[str]]:
                found, missing = index.read(body.chunk_ids, scope)
                rows = [
                    {"chunk_id": r.chunk_id, "text": r.text, "prev_id": r.prev_id, "next_id": r.next_id,
                     "source": locate(index, r, body.claim).to_dict()}
                    for r in found
                ]  # fmt: skip
                return rows, missing

            rows, missing = await bounded(read_located)
            return JSONResponse(rows, headers={"X-Missing-Chunk-Ids": json.dumps(missing)} if missing else None)

        sessions = ToolkitSessions(index, keep=MAX_SESSIONS, view=CLIENT_VIEW)

        @router.post("/tools/{name}")
        async def tool(name: str, arguments: dict[str, Any], request: Request) -> JSONResponse:
            """A tool as the model sees it — its observation text — with the context tracker of this HTTP session:
            send back the ``X-Session-Id`` the first reply carries, and a chunk already read returns a notice."""
            session_id = request.headers.get("x-session-id", "")[:64] or secrets.token_urlsafe(16)
            result = await bounded(sessions.get(session_id).call, name[:64], arguments)
            body = {"tool": result.name, "ok": result.ok, "observation": result.observation,
                    "retrieved_tokens": result.retrieved_tokens, "chunk_ids": result.chunk_ids}  # fmt: skip
            return JSONResponse(body, headers={"X-Session-Id": session_id})

        @router.get("/chunks/{chunk_id:path}")
        async def chunk(chunk_id: str, claim: str | None = Query(None, max_length=MAX_QUERY_CHARS)) -> dict[str, Any]:
            """A chunk, where it comes from, and (with ``claim``) its sentence that best supports the claim: the web
            page opens a citation with that sentence highlighted."""
            found, _ = await bounded(index.read, [chunk_id[:MAX_QUERY_CHARS]])
            if not found:
                raise HTTPException(404, f"no chunk {chunk_id!r}")
            source = await bounded(locate, index, found[0], claim)
            return {**_chunk_dict(index, found[0]), "source": source.to_dict()}

        def served_model() -> dict[str, Any]:
            return {"id": index.manifest.embedder["name"], "object": "model", "owned_by": "a-rag",
                    "created": 0, "fingerprint": index.manifest.embedder.get("fingerprint")}  # fmt: skip

        @router.get("/v1/models")
        async def models() -> dict[str, Any]:
            """OpenAI-compatible: the one model served here, the embedder that built this index."""
            return {"object": "list", "data": [served_model()]}

        @router.post("/v1/embeddings")
        async def embeddings(body: EmbeddingsQuery) -> dict[str, Any]:
            """OpenAI-compatible embeddings with the embedder that built this index (so a client embeds exactly as
            the index did: ``openai:MODEL`` with this URL up to ``/v1`` as its base URL). L2-normalised vectors, as
            floats or as base64 of little-endian float32; ``usage`` is not counted (0). Every text is embedded as a
            document: an asymmetric model's query prompt (e5, Qwen3-Embedding) is not applied."""
            texts = body.texts()
            served = served_model()
            if body.model not in (served["id"], served["fingerprint"]):
                raise HTTPException(
                    404, f"model {body.model[:256]!r} is not served here: this index's embedder is {served['id']!r}"
                )
            dims = int(index.manifest.embedder["dims"])
            if body.dimensions is not None and body.dimensions != dims:
                raise HTTPException(422, f"dimensions: this embedder gives {dims}, and does not shorten its vectors")
            vectors = await bounded(lambda: index.embedder.embed_documents(texts))
            rows = np.asarray(vectors, dtype="<f4")
            data = [
                {"object": "embedding", "index": i,
                 "embedding": base64.b64encode(row.tobytes()).decode() if body.encoding_format == "base64"
                 else row.tolist()}
                for i, row in enumerate(rows)
            ]  # fmt: skip
            return {
                "object": "list",
                "data": data,
                "model": served["id"],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }

        @router.get("/export")
        async def export() -> StreamingResponse:
            def lines() -> Iterator[bytes]:
                for record in index.store.iter_chunks():
                    row = {"chunk_id": record.chunk_id, "doc_id": record.doc_id, "text": record.text}
                    yield (json.dumps(row, ensure_ascii=False) + "\n").encode()

            return StreamingResponse(lines(), media_type="application/x-ndjson")

        @router.post("/ask")
        async def ask(body: AskQuery, request: Request) -> Any:
            question = _question(body.question)
            if not asks.acquire(blocking=False):
                return _busy()
            try:
                scope = where(body.where)
                agent = await anyio.to_thread.run_sync(new_agent, index, body.max_steps)
                agent.trace_parent = parent_from(request.headers)  # the caller's traceparent, if any
                result = await anyio.to_thread.run_sync(agent.run, question, scope)
            except ARagError as exc:
                raise HTTPException(400, str(exc)) from None
            finally:
                asks.release()
            return result.to_dict()

        @router.post("/ask/stream")
        async def ask_stream(body: AskQuery, request: Request) -> Any:
            """Server-Sent Events: ``step`` per tool call as it happens, then ``answer``, then ``done``;
            an ``error`` event if the question cannot be answered."""
            question = _question(body.question)
            where(body.where)  # a malformed filter is a 400 before the stream starts
            return ask_events(question, body.where, request, max_steps=body.max_steps)

        def ask_events(
            question: str,
            scope: str | None,
            request: Request,
            max_steps: int | None = None,
            conversation: Conversation | None = None,
        ) -> Any:
            from arag.api import stream

            if not asks.acquire(blocking=False):
                return _busy()
            stop = threading.Event()

            async def events() -> AsyncIterator[bytes]:
                try:
                    try:
                        agent = None if conversation else await anyio.to_thread.run_sync(new_agent, index, max_steps)
                        (agent or conversation.agent).trace_parent = parent_from(request.headers)  # type: ignore[union-attr]
                    except ARagError as exc:
                        yield _sse("error", {"message": str(exc)})
                        return
                    iterator = stream(index, question, agent=agent, stop=stop, where=scope, conversation=conversation)
                    while True:
                        event = await anyio.to_thread.run_sync(next, iterator, None)
                        if event is None or await request.is_disconnected():
                            break
                        kind = event["type"]
                        payload = {k: v for k, v in event.items() if k != "type"}
                        if kind == "result" and conversation is not None:
                            payload["turn"] = len(conversation.turns)
                        yield _sse("answer" if kind == "result" else kind, payload)
                        if kind in ("result", "error"):
                            break
                    yield _sse("done", {})
                finally:
                    stop.set()  # a client that went away ends the agent at its next step
                    asks.release()

            return StreamingResponse(
                events(),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            )

        # ------------------------------------------------------------------ conversations
        conversations = Conversations(settings.conversation.idle_expiry_s, settings.conversation.max_open)

        def conversation_view(conversation_id: str, conversation: Conversation) -> dict[str, Any]:
            turns = [
                {
                    "question": t.question,
                    "answer": t.result.answer,
                    "sources": t.result.sources,
                    "compacted": t.compacted,
                }
                for t in conversation.turns
            ]
            return {"id": conversation_id, "turns": turns, "expires_after_idle_s": conversations.idle_expiry_s}

        @router.post("/conversations", status_code=201)
        async def new_conversation(body: NewConversation | None = None) -> dict[str, Any]:
            """Open a conversation: its questions follow one another, with one context tracker (docs: README,
            Conversations). Returns its id, to send with each question; it expires when idle."""
            body = body or NewConversation()
            scope = where(body.where)
            agent = await bounded(new_agent, index, body.max_steps)
            conversation = Conversation(agent, settings.conversation.max_tokens, scope)
            return conversation_view(conversations.add(conversation), conversation)

        @router.get("/conversations/{conversation_id}")
        async def get_conversation(conversation_id: str) -> dict[str, Any]:
            """The conversation's turns so far (question, answer, resolved citations) and every source it used."""
            conversation = conversations.get(conversation_id[:64])
            view = conversation_view(conversation_id, conversation)
            return {**view, "sources": await bounded(conversation.sources)}

        @router.delete("/conversations/{conversation_id}", status_code=204)
        async def delete_conversation(conversation_id: str) -> Response:
            if not conversations.remove(conversation_id[:64]):
                raise HTTPException(404, "no such conversation (it may have expired)")
            return Response(status_code=204)

        def follow_up(conversation_id: str, body: FollowUp) -> tuple[Conversation, str, Filter | None]:
            conversation = conversations.get(conversation_id[:64])
            if conversation.lock.locked():
                raise HTTPException(409, "this conversation is answering a question; wait for its answer")
            return conversation, _question(body.question), where(body.where)

        @router.post("/conversations/{conversation_id}/ask")
        async def converse(conversation_id: str, body: FollowUp, request: Request) -> Any:
            """The next question of the conversation; its answer as /api/ask gives it, with ``turn`` (from 1)."""
            conversation, question, scope = follow_up(conversation_id, body)
            if not asks.acquire(blocking=False):
                return _busy()
            try:
                conversation.agent.trace_parent = parent_from(request.headers)
                result = await anyio.to_thread.run_sync(conversation.ask, question, scope)
            except ARagError as exc:
                raise HTTPException(400, str(exc)) from None
            finally:
                asks.release()
            return {**result.to_dict(), "turn": len(conversation.turns)}

        @router.post("/conversations/{conversation_id}/ask/stream")
        async def converse_stream(conversation_id: str, body: FollowUp, request: Request) -> Any:
            """The next question, its steps as Server-Sent Events as /api/ask/stream sends them."""
            conversation, question, _scope = follow_up(conversation_id, body)
            return ask_events(question, body.where, request, conversation=conversation)

        return router

    for name, served in indexes.items():
        router = index_routes(served)
        mcp_sessions = StreamableHTTPSessionManager(app=build_server(per_session_toolkits(served)), json_response=False)
        mcp_managers.append(mcp_sessions)

        async def mcp_endpoint(scope: Scope, receive: Receive, send: Send, sessions: Any = mcp_sessions) -> None:
            await sessions.handle_request(scope, receive, send)

        # the schema (/openapi.json) shows the default index's routes only: it must not list the other indexes
        app.include_router(router, prefix=f"/api/indexes/{name}", include_in_schema=False)
        app.mount(f"/api/indexes/{name}/mcp", mcp_endpoint)
        if name == default_name:
            app.include_router(router, prefix="/api")
            app.mount("/mcp", mcp_endpoint)

    @app.get("/api/indexes")
    async def list_indexes(request: Request) -> list[dict[str, Any]]:
        """The indexes this token may use (all, without tokens), the default one first."""
        principal: Principal = request.scope.get("arag.principal", ANONYMOUS)
        return [
            {"name": name, "default": name == default_name, "documents": served.manifest.counts.get("documents")}
            for name, served in indexes.items()
            if principal.sees(name)
        ]

    # ------------------------------------------------------------------ evaluation runs
    def run_path(name: str) -> Path:
        if runs_dir is None:
            raise HTTPException(404, "no runs folder (start with --runs DIR)")
        root = runs_dir.resolve()
        path = (root / name).resolve()
        if path.parent != root or not (path / "results.jsonl").is_file():
            raise HTTPException(404, f"no run {name!r}")
        return path

    @app.get("/api/runs")
    async def runs() -> list[dict[str, Any]]:
        if runs_dir is None:
            return []
        return await anyio.to_thread.run_sync(_list_runs, runs_dir)

    @app.get("/api/runs/{name}")
    async def run(name: str) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(_run_detail, run_path(name))

    @app.get("/api/runs/{name}/questions/{question_id}")
    async def run_question(name: str, question_id: str) -> dict[str, Any]:
        from arag.eval.runs import RESULTS, read_results

        records = await anyio.to_thread.run_sync(read_results, run_path(name) / RESULTS)
        if question_id not in records:
            raise HTTPException(404, f"no question {question_id!r} in run {name!r}")
        return records[question_id]

    @app.get("/api/compare")
    async def compare(a: str = Query(max_length=200), b: str = Query(max_length=200)) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(_compare, run_path(a), run_path(b))

    # ------------------------------------------------------------------ the page
    web = Path(str(resources.files("arag.serve").joinpath(WEB)))

    @app.get("/", include_in_schema=False)
    async def page(token: str | None = None) -> Response:
        response = FileResponse(web / "index.html", headers={"Cache-Control": "no-store"})
        if token:  # the page's own requests (scripts, API calls) then carry it
            response.set_cookie("arag_token", token, httponly=True, samesite="strict")
        return response

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> FileResponse:
        if name not in {p.name for p in web.iterdir()} or name == "index.html":
            raise HTTPException(404, "not found")
        return FileResponse(web / name)

    @app.get("/api/docs", include_in_schema=False)
    async def docs() -> FileResponse:
        return FileResponse(web / "docs.html")

    if server_settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware, allow_origins=server_settings.cors_origins, allow_methods=["*"], allow_headers=["*"]
        )
    access = access or Access([], server_settings.token)
    app.add_middleware(
        Guard, access=access, default_index=default_name, max_body=server_settings.max_body_bytes, audit=audit
    )
    return app


def _question(question: str) -> str:
    from arag.agent import check_question

    try:
        return check_question(question)
    except ARagError as exc:
        raise HTTPException(422, str(exc)) from None


def _busy() -> JSONResponse:
    return JSONResponse(
        {"detail": "too many questions at once; retry shortly"}, status_code=429, headers={"Retry-After": "5"}
    )


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _chunk_dict(index: Index, record: Any) -> dict[str, Any]:
    begin, end = index.store.doc_chunk_range(record.doc_id)
    return {
        "chunk_id": record.chunk_id,
        "doc_id": record.doc_id,
        "text": record.text,
        "prev_id": record.prev_id,
        "next_id": record.next_id,
        "position": record.row - begin + 1,
        "of": end - begin,
    }


def _list_runs(runs_dir: Path) -> list[dict[str, Any]]:
    from arag.eval.runs import load_runs

    out = []
    for path in sorted(p for p in runs_dir.iterdir() if (p / "results.jsonl").is_file()):
        try:
            [run] = load_runs([path])
        except ARagError:
            continue
        out.append(_run_summary(path, run))
    return out


def _run_summary(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    from arag.eval.stats import accuracy

    records = run.pop("records")
    return {
        "name": path.name,
        **{k: v for k, v in run.items() if k != "run_dir"},
        "contain_acc_ci95": accuracy([r.get("contain_acc") for r in records]).to_dict() if records else None,
        "llm_acc_ci95": accuracy([r.get("llm_acc") for r in records]).to_dict()
        if any(r.get("llm_acc") is not None for r in records)
        else None,
    }


def _run_detail(path: Path) -> dict[str, Any]:
    from arag.eval.analyze import tag_record
    from arag.eval.runs import load_runs

    [run] = load_runs([path])
    records = list(run["records"])
    method = run.get("method")
    questions = [
        {
            "id": r["id"],
            "question": r.get("question"),
            "gold": r.get("gold"),
            "prediction": r.get("prediction"),
            "contain_acc": r.get("contain_acc"),
            "llm_acc": r.get("llm_acc"),
            "stop_reason": r.get("stop_reason"),
            "steps": r.get("steps"),
            "tag": tag_record(r, method)["tag"],
        }
        for r in records
    ]
    return {"summary": _run_summary(path, run), "questions": questions}


def _compare(a: Path, b: Path) -> dict[str, Any]:
    """Two runs on their shared questions, the ones where they differ first."""
    left, right = _run_detail(a), _run_detail(b)
    by_id = {q["id"]: q for q in right["questions"]}
    rows = [
        {"id": q["id"], "question": q["question"], "gold": q["gold"], "a": q, "b": by_id[q["id"]]}
        for q in left["questions"]
        if q["id"] in by_id
    ]
    rows.sort(key=lambda row: row["a"]["contain_acc"] == row["b"]["contain_acc"])
    return {"a": left["summary"], "b": right["summary"], "questions": rows}


def serve(indexes: Index | Mapping[str, Index], settings: Settings, runs_dir: Path | None = None) -> None:
    import uvicorn

    from arag.serve.access import default_tokens_file

    server_settings = settings.server
    access = Access.load(server_settings.tokens_file or default_tokens_file(), server_settings.token)
    if server_settings.host not in LOOPBACK and not access.enabled:
        raise ConfigError(
            f"binding {server_settings.host} exposes the index beyond this machine: set a token (--token or "
            "ARAG_SERVER__TOKEN, at least 16 characters) or create scoped ones (arag token add)"
        )
    audit = AuditLog(server_settings.audit_log, server_settings.audit_questions) if server_settings.audit_log else None
    app = create_app(indexes, settings, runs_dir, access=access, audit=audit)
    config = uvicorn.Config(app, host=server_settings.host, port=server_settings.port, log_level="warning")
    try:
        asyncio.run(uvicorn.Server(config).serve())
    finally:
        if audit is not None:
            audit.close()
