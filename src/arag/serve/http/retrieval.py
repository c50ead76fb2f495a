"""The index and its tools over HTTP: ``/info``, ``/search/keyword``, ``/search/semantic``, ``/read``,
``/tools/NAME`` (a tool's observation, a context tracker per session), ``/chunks/ID``, ``/export``."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from arag.citations import locate
from arag.index import Index
from arag.serve.http.bodies import KeywordQuery, ReadQuery, SemanticQuery
from arag.serve.http.served import ServedIndex, where
from arag.tools.arguments import MAX_QUERY_CHARS
from arag.tools.sessions import ToolkitSessions
from arag.tools.view import CLIENT_VIEW

MAX_SESSIONS = 1024  # HTTP tool sessions kept (least recently used forgotten)


def router(served: ServedIndex) -> APIRouter:
    """The routes of one index's retrieval."""
    router = APIRouter()
    sessions = ToolkitSessions(served.index, keep=MAX_SESSIONS, view=CLIENT_VIEW)

    @router.get("/info")
    async def info(request: Request) -> dict[str, Any]:
        """The index manifest, as ``arag info`` prints it, and the metadata fields a filter can use (for a token
        that reads some documents only, counted over those)."""
        return await served.bounded(served.view(request).described)

    @router.post("/search/keyword")
    async def keyword(body: KeywordQuery, request: Request) -> list[dict[str, Any]]:
        keywords = [k for k in body.keywords if k.strip()]
        if not keywords:
            raise HTTPException(422, "the keyword list is empty")
        index = served.view(request)
        hits = await served.bounded(index.keyword_search, keywords, body.top_k, where(body.where))
        return [h.to_dict() for h in hits]

    @router.post("/search/semantic")
    async def semantic(body: SemanticQuery, request: Request) -> list[dict[str, Any]]:
        if not body.query.strip():
            raise HTTPException(422, "the query is empty")
        scope, index = where(body.where), served.view(request)
        hits = await served.bounded(lambda: index.semantic_search(body.query, body.top_k, where=scope))
        return [h.to_dict() for h in hits]

    @router.post("/read")
    async def read(body: ReadQuery, request: Request) -> JSONResponse:
        """The chunks found, as ``arag read --json`` prints them (with where each comes from); ids not found (or
        outside the filter) are listed in the ``X-Missing-Chunk-Ids`` header (JSON), as the CLI lists them on
        stderr."""
        scope, index = where(body.where), served.view(request)

        def read_located() -> tuple[list[dict[str, Any]], list[str]]:
            found, missing = index.read(body.chunk_ids, scope)
            rows = [
                {"chunk_id": r.chunk_id, "text": r.text, "prev_id": r.prev_id, "next_id": r.next_id,
                 "source": locate(index, r, body.claim).to_dict()}
                for r in found
            ]  # fmt: skip
            return rows, missing

        rows, missing = await served.bounded(read_located)
        return JSONResponse(rows, headers={"X-Missing-Chunk-Ids": json.dumps(missing)} if missing else None)

    @router.post("/tools/{name}")
    async def tool(name: str, arguments: dict[str, Any], request: Request) -> JSONResponse:
        """A tool as the model sees it — its observation text — with the context tracker of this HTTP session:
        send back the ``X-Session-Id`` the first reply carries, and a chunk already read returns a notice."""
        session_id = request.headers.get("x-session-id", "")[:64] or secrets.token_urlsafe(16)
        toolkit = sessions.get(session_id, served.view(request))
        result = await served.bounded(toolkit.call, name[:64], arguments)
        body = {"tool": result.name, "ok": result.ok, "observation": result.observation,
                "retrieved_tokens": result.retrieved_tokens, "chunk_ids": result.chunk_ids}  # fmt: skip
        return JSONResponse(body, headers={"X-Session-Id": session_id})

    @router.get("/chunks/{chunk_id:path}")
    async def chunk(
        chunk_id: str, request: Request, claim: str | None = Query(None, max_length=MAX_QUERY_CHARS)
    ) -> dict[str, Any]:
        """A chunk, where it comes from, and (with ``claim``) its sentence that best supports the claim: the web
        page opens a citation with that sentence highlighted."""
        index = served.view(request)
        found, _ = await served.bounded(index.read, [chunk_id[:MAX_QUERY_CHARS]])
        if not found:
            raise HTTPException(404, f"no chunk {chunk_id!r}")
        source = await served.bounded(locate, index, found[0], claim)
        return {**_chunk_dict(index, found[0]), "source": source.to_dict()}

    @router.get("/export")
    async def export(request: Request) -> StreamingResponse:
        """Every chunk this token may read (JSON Lines: chunk_id, doc_id, text), from one snapshot of the index."""
        index = served.view(request)

        def lines() -> Iterator[bytes]:
            for record in index.iter_chunks():
                row = {"chunk_id": record.chunk_id, "doc_id": record.doc_id, "text": record.text}
                yield (json.dumps(row, ensure_ascii=False) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return router


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
