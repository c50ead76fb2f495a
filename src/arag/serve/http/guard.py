"""The middleware in front of every route: who a request comes from, whether it may, how large its body may be,
and its line in the audit log."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import anyio
from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arag.serve.access import DENIALS, Access, AuditLog, Caller, route_of


class Guard:
    """On every request: who it comes from (arag.serve.access: a token in the header, ``?token=`` or the cookie
    the page sets), whether that token may use the route (401 without a valid token; 404 for an index it may not
    see, as for one that does not exist; 403 for a scope it lacks), a body-size cap, and a line in the audit log."""

    def __init__(
        self,
        app: ASGIApp,
        access: Access,
        default_index: str,
        max_body: int,
        *,
        audit: AuditLog | None = None,
        read_timeout_s: float = 10.0,
    ) -> None:
        self.app, self.access, self.default_index, self.max_body = app, access, default_index, max_body
        self.audit, self.read_timeout_s = audit, read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        route = route_of(scope.get("path", ""), self.default_index)
        offered = _offered_tokens(scope, headers)
        caller = self.access.caller(offered)
        status = [0]
        question: list[str] = []
        denied: list[str] = []  # the routes add the documents a request named and may not read
        logged = [False]

        def log() -> None:
            if self.audit is None or logged[0]:
                return
            logged[0] = True
            entry = {
                "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
                "token": caller.name if caller else None,
                "method": scope.get("method"),
                "route": scope.get("path", "")[:512],  # never the query string: it may carry a token
                "index": route.index,
                "status": status[0],
                "ms": round(1000 * (time.perf_counter() - started), 1),
            }
            if question and question[0]:
                entry["question"] = question[0]
            if denied:  # documents named that this token may not read (answered as not found)
                entry["denied"] = sorted(set(denied))[:20]
            self.audit.write(entry)

        async def logged_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                log()  # before the last byte leaves: a client that has its answer finds its line in the log
            await send(message)

        try:
            refusal = self._refusal(caller, route)
            if refusal is not None:
                await JSONResponse({"detail": refusal[1]}, refusal[0])(scope, receive, logged_send)
                return
            scope["arag.caller"], scope["arag.denied"] = caller, denied  # MCP's calls run in another task: the scope
            DENIALS.set(denied)  # this request's task and the worker threads it starts
            # for what runs on after the reply began (an event stream, a long question): is the token still good?
            scope["arag.still_allowed"] = lambda: self._refusal(self.access.caller(offered), route) is None
            length = headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                detail = {"detail": f"request body larger than {self.max_body} bytes"}
                await JSONResponse(detail, 413)(scope, receive, logged_send)
                return
            received, kept = [0], bytearray()
            keep_body = self.audit is not None and self.audit.questions and route.scope == "ask"

            body_done = [False]

            async def bounded_receive() -> Any:
                if body_done[0]:  # after the body: a wait for the client to leave, which may last the whole stream
                    return await receive()
                try:
                    with anyio.fail_after(self.read_timeout_s):
                        message = await receive()
                except TimeoutError:
                    raise HTTPException(408, f"the request body stalled for {self.read_timeout_s:g} s") from None
                if message.get("type") != "http.request" or not message.get("more_body"):
                    body_done[0] = True
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

    def _refusal(self, caller: Caller | None, route: Any) -> tuple[int, str] | None:
        if caller is None:
            return 401, "missing or wrong token"
        if route.index is not None and not caller.sees(route.index):
            return 404, "Not Found"  # the same answer as for an index that does not exist
        if not caller.may(route.scope, route.index):
            return 403, f"this token's scope ({caller.scope}) does not allow this ({route.scope} needed)"
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
