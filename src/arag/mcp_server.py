"""The three tools over MCP (official SDK, stdio). A stdio server serves one session, so it owns one
context tracker; the schemas and descriptions are the same ones the agent sends."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from arag.index import Index
from arag.tools import Toolkit


def build_server(toolkit: Toolkit) -> Server:
    tools = [
        types.Tool(
            name=s["function"]["name"],
            description=s["function"]["description"],
            input_schema=s["function"]["parameters"],
        )
        for s in toolkit.schemas()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(toolkit.call, params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.observation)], is_error=not result.ok
        )

    return Server("a-rag", on_list_tools=list_tools, on_call_tool=call_tool)


def serve(index: Index) -> None:
    toolkit = Toolkit(index)
    server = build_server(toolkit)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
