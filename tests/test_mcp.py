from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from arag.index import Index
from arag.indexing import build_index
from arag.tools import Toolkit
from conftest import FIXTURES, fake_settings


def test_mcp_round_trip(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], idx, fake_settings())
    expected = {s["function"]["name"]: s["function"] for s in Toolkit(Index.open(idx)).schemas()}

    async def session() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "arag", "mcp", "--index", str(idx)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = (await client.list_tools()).tools
            assert {t.name: (t.description, t.input_schema) for t in tools} == {
                name: (fn["description"], fn["parameters"]) for name, fn in expected.items()
            }
            found = await client.call_tool("keyword_search", {"keywords": ["Waldrada"], "top_k": 2})
            assert not found.is_error and "chunk Waldrada#0" in found.content[0].text
            first = await client.call_tool("chunk_read", {"chunk_ids": ["Waldrada#0"]})
            assert "Pope Nicholas I." in first.content[0].text
            again = await client.call_tool("chunk_read", {"chunk_ids": ["Waldrada#0"]})
            assert "already read" in again.content[0].text  # one tracker per session
            bad = await client.call_tool("semantic_search", {"query": ""})
            assert bad.is_error and "query is empty" in bad.content[0].text

    anyio.run(session)
