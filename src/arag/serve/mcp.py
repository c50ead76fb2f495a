"""The three tools over MCP (official SDK, stdio). A stdio server serves one session, so it owns one
context tracker; the schemas and descriptions are the same ones the agent sends.

The SDK silently drops a line it cannot validate, so a client that sent a malformed request would wait
for its answer forever. Every line is therefore checked before the SDK sees it: a request that is not
valid JSON-RPC gets a JSON-RPC error here, and valid ones reach the SDK cleaned (lone surrogates
replaced, integers bounded).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from arag.index import Index
from arag.jsonsafe import clean_json_value, json_depth, loads_bounded
from arag.serve.access import DENIALS, caller_view
from arag.tools.sessions import ToolkitSessions
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from arag.tools.view import CLIENT_VIEW
from arag.version import __version__

MAX_LINE_CHARS = 4 * 1024 * 1024
MAX_DEPTH = 32
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def build_server(toolkit_for: Callable[[Any], Toolkit]) -> Server:
    """The MCP server; ``toolkit_for(request_context)`` gives each MCP session its toolkit (its own context
    tracker); it is called with None for the tool list."""
    tools = [
        types.Tool(
            name=s["function"]["name"],
            description=s["function"]["description"],
            input_schema=s["function"]["parameters"],
        )
        for s in toolkit_for(None).schemas()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        toolkit = toolkit_for(ctx)
        result = await anyio.to_thread.run_sync(toolkit.call, params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.observation)], is_error=not result.ok
        )

    return Server("a-rag", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def per_session_toolkits(index: Index) -> Callable[[Any], Toolkit]:
    """One toolkit per MCP session over HTTP, by the session id the transport assigns (``mcp-session-id``), over
    the index as the request's token reads it (arag.serve.access: the server's guard names the caller)."""
    sessions = ToolkitSessions(index, view=CLIENT_VIEW)

    def toolkit_for(ctx: Any) -> Toolkit:
        request = getattr(ctx, "request", None)
        if request is None:
            return sessions.get(None)
        view = caller_view(index, request.scope)
        denied = request.scope.get("arag.denied")
        if isinstance(denied, list):  # the session's task runs this call: its denials go to the request carrying it
            DENIALS.set(denied)
        return sessions.get(request.headers.get("mcp-session-id"), view)

    return toolkit_for


def serve(index: Index) -> None:
    toolkit = Toolkit(index, enabled=TOOL_NAMES, view=CLIENT_VIEW)  # a stdio server serves one session
    server = build_server(lambda session: toolkit)

    async def main() -> None:
        wire = _Wire(anyio.wrap_file(_stdout()))
        lines = _CheckedLines(anyio.wrap_file(_stdin()), wire)
        async with stdio_server(stdin=lines, stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def _stdin() -> Any:
    import io
    import sys

    return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")


def _stdout() -> Any:
    import io
    import sys

    return io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="replace", write_through=True)


class _Wire:
    """stdout, shared by the SDK's replies and the errors answered here: one whole line at a time."""

    def __init__(self, file: Any) -> None:
        self.file = file
        self.lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self.lock:
            await self.file.write(text if text.endswith("\n") else text + "\n")
            await self.file.flush()

    async def flush(self) -> None:
        pass


class _CheckedLines:
    """The lines of stdin that are valid JSON-RPC messages; the others are answered with an error."""

    def __init__(self, source: Any, wire: _Wire) -> None:
        self.source = source
        self.wire = wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            clean, errors = check_message(line)
            if errors:
                reply = errors if isinstance(errors, list) else [errors]
                await self.wire.write(json.dumps(reply if len(reply) > 1 or isinstance(errors, list) else reply[0]))
            if clean is not None:
                yield clean


_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _guess_id(line: str) -> int | str | None:
    """The id of a request that could not be parsed, if one can be seen, so the client gets its answer."""
    match = _ID.search(line[:4096])
    if not match:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) else None


def _error(message_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message}}


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_message(line: str) -> tuple[str | None, dict[str, Any] | list[dict[str, Any]] | None]:
    """``(line for the SDK, None)`` for a valid message, ``(None, error reply)`` for an invalid one,
    ``(None, None)`` for a blank line or an invalid notification (nothing to answer)."""
    if not line.strip():
        return None, None
    if len(line) > MAX_LINE_CHARS:
        return None, _error(_guess_id(line), INVALID_REQUEST, f"message longer than {MAX_LINE_CHARS} characters")
    try:
        message = loads_bounded(line)
    except (ValueError, RecursionError):
        return None, _error(_guess_id(line), PARSE_ERROR, "Parse error: the message is not valid JSON")
    if isinstance(message, list):
        ids = [m.get("id") for m in message if isinstance(m, dict) and _valid_id(m.get("id"))]
        reason = "Invalid Request: batches are not supported by MCP; send one message per line"
        return None, [_error(i, INVALID_REQUEST, reason) for i in ids] or [_error(None, INVALID_REQUEST, reason)]
    if not isinstance(message, dict):
        return None, _error(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    has_id = "id" in message
    message_id = message.get("id")
    if has_id and not _valid_id(message_id):
        return None, _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    reply_id = message_id if has_id else None
    if json_depth(message, MAX_DEPTH) > MAX_DEPTH:
        return None, _error(reply_id, INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels")
    if message.get("jsonrpc") != "2.0":
        return None, _error(reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "method" not in message:
        if has_id and ("result" in message or "error" in message):
            return _dumps(message), None  # a response to a server request: the SDK's to handle
        return None, _error(reply_id, INVALID_REQUEST, "Invalid Request: no method") if has_id else None
    if not isinstance(message["method"], str):
        return None, _error(reply_id, INVALID_REQUEST, "Invalid Request: method must be a string")
    if "params" in message and not isinstance(message["params"], dict):
        return None, _error(reply_id, INVALID_PARAMS, "Invalid params: params must be an object")
    message = clean_json_value(message)
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        if has_id and message["method"] in _KNOWN_METHODS:
            types.client_request_adapter.validate_python(
                {k: v for k, v in message.items() if k in ("method", "params")}, by_name=False
            )
    except ValueError as exc:
        detail = " ".join(str(exc).split())[:300]
        return None, _error(reply_id, INVALID_PARAMS, f"Invalid params: {detail}") if has_id else None
    return _dumps(message), None


def _dumps(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False)


def _known_methods() -> frozenset[str]:
    methods: set[str] = set()
    import typing

    for request_type in typing.get_args(types.ClientRequest):
        field = request_type.model_fields.get("method")
        annotation = getattr(field, "annotation", None)
        methods.update(getattr(annotation, "__args__", ()))
    return frozenset(m for m in methods if isinstance(m, str))


_KNOWN_METHODS = _known_methods()
