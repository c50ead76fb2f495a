from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client

from arag import __version__
from arag.corpus.build import build_index
from arag.index import Index
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from conftest import FIXTURES, FUZZ_SCALE, fake_settings
from support.strategies import json_values


def test_mcp_round_trip(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], idx, fake_settings())
    expected = {s["function"]["name"]: s["function"] for s in Toolkit(Index.open(idx), enabled=TOOL_NAMES).schemas()}

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
            fused = await client.call_tool("search", {"query": "Waldrada Lothair", "top_k": 2})
            assert not fused.is_error and fused.content[0].text.startswith('search "Waldrada Lothair" (by meaning')
            outline = await client.call_tool("document_outline", {"doc_id": "Waldrada"})
            assert not outline.is_error and "Waldrada#s1 " in outline.content[0].text
            section = await client.call_tool("section_read", {"section_id": "Waldrada#s1"})
            assert "already read earlier in this session" in section.content[0].text  # its chunk was read above

    anyio.run(session)


# ------------------------------------------------------------------ every JSON-RPC request gets an answer
class RawSession:
    """`arag mcp` spoken to line by line, so that malformed messages can be sent."""

    def __init__(self, index_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "arag", "mcp", "--index", str(index_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 10**6

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def replies_until_ping(self, expected: Any = None) -> list[Any]:
        """Every reply until both a ping sent now and ``expected`` (an id) are answered; tool calls run in
        threads, so replies may come out of order. Bounded: a missing reply fails after 20 s."""
        self.next_id += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "ping"}))
        replies: list[Any] = []
        pinged = False
        while not pinged or (expected is not None and expected not in _ids(replies)):
            try:
                reply = json.loads(self.lines.get(timeout=20))
            except queue.Empty:
                return replies
            if isinstance(reply, dict) and reply.get("id") == self.next_id:
                pinged = True
            else:
                replies.append(reply)
        return replies

    def initialize(self) -> dict[str, Any]:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
        reply = json.loads(self.lines.get(timeout=60))
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return reply

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def raw_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawSession]:
    idx = tmp_path_factory.mktemp("mcp") / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], idx, fake_settings())
    session = RawSession(idx)
    init = session.initialize()
    assert init["result"]["serverInfo"] == {"name": "a-rag", "version": __version__}
    yield session
    session.close()


def _ids(replies: list[Any]) -> list[Any]:
    flat = [r for reply in replies for r in (reply if isinstance(reply, list) else [reply])]
    return [r.get("id") for r in flat if isinstance(r, dict)]


@pytest.mark.parametrize(
    "line,expected_id",
    [
        ('{"jsonrpc": "2.0", "id": 2}', 2),
        ('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ["a"]}', 3),
        ('[{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]', 4),
        (
            '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"keyword_search","arguments":{"keywords":["\\ud800"]}}}',
            5,
        ),
        (
            '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"keyword_search","arguments":{"keywords":["x"],"top_k":'
            + "9" * 5000
            + "}}}",
            6,
        ),
        (
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chunk_read","arguments":'
            + "[" * 5000
            + "]" * 5000
            + "}}",
            7,
        ),
        ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {}}', 8),
        ('{"jsonrpc": "2.0", "id": 9, "method": 12}', 9),
        ('{"jsonrpc": "1.0", "id": 10, "method": "tools/list"}', 10),
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', None),
        ("{not json", None),
        ('"just a string"', None),
    ],
)
def test_malformed_requests_get_an_error_reply(raw_session: RawSession, line: str, expected_id: Any) -> None:
    raw_session.send(line)
    replies = raw_session.replies_until_ping(expected_id)
    assert expected_id in _ids(replies), replies


ids = st.integers(-(2**40), 2**40) | st.text(max_size=8)
request_like = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]), "id": ids},
    optional={
        "method": st.sampled_from(["tools/call", "tools/list", "ping", "resources/list", "x/y"]) | json_values,
        "params": json_values
        | st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(["keyword_search", "semantic_search", "chunk_read"]) | json_values,
                "arguments": json_values,
            },
        ),
    },
)


@settings(max_examples=150 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=request_like | json_values)
def test_fuzzed_messages_always_get_an_answer(raw_session: RawSession, message: Any) -> None:
    raw_session.send(json.dumps(message))
    has_method = isinstance(message, dict) and "method" in message
    replies = raw_session.replies_until_ping(message["id"] if has_method else None)
    if has_method:
        assert message["id"] in _ids(replies), (message, replies)
    assert raw_session.proc.poll() is None  # still serving


def test_mcp_serves_after_a_reindex(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], idx, fake_settings())
    session = RawSession(idx)
    try:
        session.initialize()
        build_index([FIXTURES / "guide.md"], idx, fake_settings(), rebuild=True)
        for call_id, (name, arguments) in enumerate(
            [
                ("keyword_search", {"keywords": ["Waldrada"]}),
                ("chunk_read", {"chunk_ids": ["Waldrada#0"]}),
                ("semantic_search", {"query": "Lothair"}),
            ],
            start=1,
        ):
            session.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": call_id,
                        "method": "tools/call",
                        "params": {"name": name, "arguments": arguments},
                    }
                )
            )
            reply = json.loads(session.lines.get(timeout=30))
            # tool calls run in new threads: each opens its own SQLite connection to the generation it serves
            assert reply["id"] == call_id and not reply["result"]["isError"], reply
            assert "Waldrada" in reply["result"]["content"][0]["text"]
    finally:
        session.close()
