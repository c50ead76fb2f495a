"""The ASGI app: every served index's routers under ``/api/indexes/NAME`` (the default one also under ``/api``), its
MCP over streamable HTTP, the runs, the page, and the guard in front of them all."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from arag.errors import ConfigError
from arag.index import Index
from arag.serve.access import ANONYMOUS, NAME, Access, AuditLog, Caller
from arag.serve.http import conversations, documents, embeddings, page, questions, retrieval, runs, tables
from arag.serve.http.guard import Guard
from arag.serve.http.served import Agents, ServedIndex
from arag.settings import Settings
from arag.version import __version__

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def create_app(
    index: Index | Mapping[str, Index],
    settings: Settings,
    runs_dir: Path | None = None,
    agent_factory: Callable[[int | None, Index], Any] | None = None,
    access: Access | None = None,
    audit: AuditLog | None = None,
) -> FastAPI:
    """The ASGI app over shared indexes: one (served as "default") or several by name, the first being the one
    the routes without an index name (``/api/search/…``, ``/mcp``) serve. ``agent_factory(max_steps, index)``
    makes an agent per question (default: the configured model, loaded once on first use, shared by every
    index). ``access``: the tokens (default: ``server.token`` only); ``audit``: the request log."""
    indexes = {"default": index} if isinstance(index, Index) else dict(index)
    if not indexes:
        raise ConfigError("no index to serve")
    for name in indexes:
        if not NAME.match(name):
            raise ConfigError(f"index name {name!r}: letters, digits, '_', '.', '-' (at most 64)")
    default_name = next(iter(indexes))
    agents = Agents(settings, agent_factory)  # one model and one bound on questions for the whole server
    mcp_managers: list[Any] = []

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
    app.add_exception_handler(RequestValidationError, _invalid_request)
    for name, served in indexes.items():
        mcp_managers.append(_include_index(app, name, ServedIndex(served, agents), default=name == default_name))

    app.include_router(_caller_router(indexes, default_name))
    app.include_router(runs.router(runs_dir))
    app.include_router(page.router())
    server_settings = settings.server
    if server_settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware, allow_origins=server_settings.cors_origins, allow_methods=["*"], allow_headers=["*"]
        )
    access = access or Access([], server_settings.token, server_settings.jwt)
    app.add_middleware(
        Guard,
        access=access,
        default_index=default_name,
        max_body=server_settings.max_body_bytes,
        audit=audit,
        read_timeout_s=server_settings.read_timeout_s,
    )
    return app


def _caller_router(indexes: dict[str, Index], default_name: str) -> Any:
    """``/api/indexes`` (the indexes a token may use, with the documents it reads in each) and ``/api/me``."""
    from fastapi import APIRouter

    router = APIRouter()

    @router.get("/api/indexes")
    async def list_indexes(request: Request) -> list[dict[str, Any]]:
        """The indexes this token may use (all, without tokens), the default one first."""
        caller: Caller = request.scope.get("arag.caller", ANONYMOUS)

        def listed() -> list[dict[str, Any]]:
            return [
                {"name": name, "default": name == default_name, "documents": _documents_read(served, caller)}
                for name, served in indexes.items()
                if caller.sees(name)
            ]

        return await anyio.to_thread.run_sync(listed)

    @router.get("/api/me")
    async def me(request: Request) -> dict[str, Any]:
        """Who this request's token is: its name, scope, indexes and the groups whose documents it reads (``null``:
        every document). The web page shows it."""
        caller: Caller = request.scope.get("arag.caller", ANONYMOUS)
        reader = caller.reader
        return {
            "name": caller.name,
            "scope": caller.scope,
            "indexes": None if caller.indexes is None else sorted(caller.indexes),
            "groups": None if reader is None else sorted(reader.groups),
        }

    return router


def _documents_read(index: Index, caller: Caller) -> int | None:
    """How many documents of the index the caller may read (every one: the manifest's count)."""
    if caller.reader is None:
        return index.manifest.counts.get("documents")
    return len(index.as_principal(caller.reader).documents())


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """422 with where and why each part of the request is invalid, never the input itself: FastAPI's own handler
    echoed it, and an input that cannot be written back (a lone surrogate, NaN, 1e999) made every route a 500."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []

    def safe(value: object, limit: int) -> str:  # a location or message that quotes the input is written safely too
        return str(value)[:limit].encode("utf-8", "replace").decode("utf-8")

    detail = [
        {"loc": [safe(part, 100) for part in error.get("loc", ())], "msg": safe(error.get("msg", ""), 300),
         "type": safe(error.get("type", ""), 60)}
        for error in errors[:20]
    ]  # fmt: skip
    return JSONResponse({"detail": detail}, status_code=422)


def uvicorn_config(app: Any, host: str, port: int, read_timeout_s: float) -> Any:
    """uvicorn's configuration for the app: a deadline for each request's headers (uvicorn has none)."""
    import uvicorn

    from arag.serve.http.protocol import protocol_with

    return uvicorn.Config(app, host=host, port=port, log_level="warning", http=protocol_with(read_timeout_s))


def _include_index(app: FastAPI, name: str, served: ServedIndex, default: bool) -> Any:
    """One index's routes under ``/api/indexes/NAME`` and its MCP under ``…/mcp`` (the default index's also under
    ``/api`` and ``/mcp``); returns its MCP session manager, which runs for the app's lifetime."""
    from fastapi import APIRouter
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from arag.serve.mcp import build_server, per_session_toolkits

    router = APIRouter()
    for resource in (retrieval, documents, tables, embeddings, questions, conversations):
        router.include_router(resource.router(served))
    sessions = StreamableHTTPSessionManager(app=build_server(per_session_toolkits(served.index)), json_response=False)

    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await sessions.handle_request(scope, receive, send)

    # the schema (/openapi.json) shows the default index's routes only: it must not list the other indexes
    app.include_router(router, prefix=f"/api/indexes/{name}", include_in_schema=False)
    app.mount(f"/api/indexes/{name}/mcp", mcp_endpoint)
    if default:
        app.include_router(router, prefix="/api")
        app.mount("/mcp", mcp_endpoint)
    return sessions


def serve(indexes: Index | Mapping[str, Index], settings: Settings, runs_dir: Path | None = None) -> None:
    import uvicorn

    from arag.serve.access import default_tokens_file

    server_settings = settings.server
    access = Access.load(
        server_settings.tokens_file or default_tokens_file(), server_settings.token, server_settings.jwt
    )
    if server_settings.host not in LOOPBACK and not access.enabled:
        raise ConfigError(
            f"binding {server_settings.host} exposes the index beyond this machine: set a token (--token or "
            "ARAG_SERVER__TOKEN, at least 16 characters), create scoped ones (arag token add) or accept JWTs "
            "(server.jwt.jwks_file)"
        )
    audit = AuditLog(server_settings.audit_log, server_settings.audit_questions) if server_settings.audit_log else None
    app = create_app(indexes, settings, runs_dir, access=access, audit=audit)
    config = uvicorn_config(app, server_settings.host, server_settings.port, server_settings.read_timeout_s)
    try:
        asyncio.run(uvicorn.Server(config).serve())
    finally:
        if audit is not None:
            audit.close()
