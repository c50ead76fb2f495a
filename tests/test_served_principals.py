"""Per-document access on ``arag serve`` (issue 51): a token with groups sees, on every route of its index — info,
keyword and semantic search, reads, chunks, export, tool calls, documents, outlines, sections, questions (plain and
streamed), conversations, MCP — exactly what a token reading everything sees on an index built from only the
documents the first may read; a document it is refused by name is answered as missing and the audit log records it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.serve.access import Access, AuditLog, TokenFile
from arag.serve.http import create_app
from arag.settings import AgentSettings, LLMSettings, Settings
from conftest import FUZZ_SCALE, fake_settings
from support.access_corpus import DOCUMENTS, GROUPS, readable_lines, write_documents
from support.live_server import LiveServer
from support.scripted_server import ScriptedServer, completion, tool_call

OPEN_DOCUMENT = ("The travel policy review covers salary and leave in Portland.", None)  # never an empty reference
QUESTION_CALLS = [
    tool_call("keyword_search", {"keywords": ["salary", "Portland"], "top_k": 20}),
    tool_call("list_documents", {"top_k": 50}, "call_2"),
    tool_call("chunk_read", {"chunk_ids": ["doc1#0", "doc2#0"]}, "call_3"),
]


class Team:
    """One server with two indexes: ``all`` (every generated document) read by a token of some groups, and ``own``
    (only the documents those groups may read) read by a token that reads everything: the reference."""

    def __init__(
        self,
        root: Path,
        documents: list[tuple[str, list[str] | None]],
        groups: list[str],
        all_location: str | None = None,
        serve_as: Callable[[str], str] | None = None,
    ) -> None:
        """``all_location``: where the index of every document is written (default: a folder; a PostgreSQL URL
        puts it there, the reference staying on files); ``serve_as(location)``: the location the server opens it by,
        once written (another role's URL, under row-level security)."""
        write_documents(root / "all", documents)
        chunking = fake_settings(chunker={"chunk_tokens": 24})
        location = all_location or str(root / "all-idx")
        build_index([root / "all" / "docs.jsonl"], location, chunking, rebuild=True)
        own = readable_lines(root / "all" / "docs.jsonl", documents, groups)
        (root / "own").mkdir()
        (root / "own" / "docs.jsonl").write_text("\n".join(own) + "\n", encoding="utf-8")
        build_index([root / "own" / "docs.jsonl"], root / "own-idx", chunking)
        self.indexes = {
            "all": Index.open(serve_as(location) if serve_as else location, threads=1),
            "own": Index.open(root / "own-idx", threads=1),
        }
        file = TokenFile(root / "tokens.json")
        self.tokens = {
            "all": file.add("reader", "ask", ["all"], groups),
            "own": file.add("ref", "ask", ["own"], [], True),
        }
        self.llm = ScriptedServer()
        llm_settings = LLMSettings(base_url=self.llm.base_url, model="m", max_retries=0, timeout_s=30, api_key="k")

        def agent(max_steps: int | None, served: Index) -> Agent:
            return Agent(served, ChatModel(llm_settings), AgentSettings(max_steps=max_steps or 5))

        access = Access.load(file.path, None)
        self.audit = AuditLog(root / "audit.jsonl")
        self.audit_path = root / "audit.jsonl"
        self.server = LiveServer(create_app(self.indexes, Settings(), None, agent, access=access, audit=self.audit))

    def client(self, name: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[name]}"}
        return httpx.Client(base_url=f"{self.server.url}/api/indexes/{name}", headers=headers, timeout=60)

    def close(self) -> None:
        self.server.close()
        self.llm.close()
        self.audit.close()
        for index in self.indexes.values():
            index.close()


def _answers(team: Team, client: httpx.Client, name: str) -> dict[str, Any]:
    """The index's answers to every route, for comparison across the two tokens."""
    seen: dict[str, Any] = {}
    info = client.get("/info").json()
    counts = {k: info["counts"][k] for k in ("documents", "chunks")}  # a restricted token is not told sentences
    seen["info"] = (counts, info["metadata_fields"])
    seen["keyword"] = client.post("/search/keyword", json={"keywords": ["salary", "Portland"], "top_k": 50}).json()
    seen["keyword top 2"] = client.post("/search/keyword", json={"keywords": ["budget"], "top_k": 2}).json()
    every_chunk = [record.chunk_id for record in team.indexes["all"].iter_chunks()]
    read = client.post("/read", json={"chunk_ids": every_chunk})
    seen["read"] = (read.json(), read.headers.get("x-missing-chunk-ids"))
    seen["chunks"] = [
        (r.status_code, r.json()) for r in (client.get(f"/chunks/{c.replace('#', '%23')}") for c in every_chunk)
    ]
    seen["export"] = client.get("/export").text
    session = {"X-Session-Id": "same-session-id"}  # the same id on both tokens: each its own tracker
    for tool, arguments in [
        ("keyword_search", {"keywords": ["audit"], "top_k": 20}),
        ("chunk_read", {"chunk_ids": every_chunk}),
        ("chunk_read", {"chunk_ids": every_chunk}),  # the tracker's notices, for what this token read only
        ("grep", {"pattern": "(audit|deploy) [a-z]+", "top_k": 20}),
        ("list_documents", {"top_k": 100}),
    ]:
        seen[f"tool {tool} {len(seen)}"] = client.post(f"/tools/{tool}", json=arguments, headers=session).json()
    seen["documents"] = client.get("/documents").json()
    doc_ids = sorted({c.split("#")[0] for c in every_chunk})
    for doc_id in doc_ids:
        outline = client.get("/documents/outline", params={"doc_id": doc_id})
        section = client.get("/documents/section", params={"section_id": f"{doc_id}#s1"})
        seen[f"outline {doc_id}"] = (outline.status_code, outline.json())
        seen[f"section {doc_id}"] = (section.status_code, section.json())
    listed = httpx.get(f"{team.server.url}/api/indexes", headers=client.headers).json()
    seen["listed"] = [entry["documents"] for entry in listed]
    # a question, its stream, a conversation's turn: the model asks the same tools on both indexes
    team.llm.replies = [completion(tool_calls=[call]) for call in QUESTION_CALLS] + [completion("Done.")]
    asked = client.post("/ask", json={"question": "What about salary?"}).json()
    seen["ask"] = [(s["tool"], s["observation"]) for s in asked["trajectory"]]
    team.llm.replies = [completion(tool_calls=[call]) for call in QUESTION_CALLS] + [completion("Done.")]
    streamed = client.post("/ask/stream", json={"question": "What about salary?"}).text
    seen["stream"] = [
        json.loads(line[6:]).get("observation") for line in streamed.splitlines() if line.startswith("data: ")
    ]
    opened = client.post("/conversations", json={}).json()
    team.llm.replies = [completion(tool_calls=[call]) for call in QUESTION_CALLS] + [completion("Done.")]
    turn = client.post(f"/conversations/{opened['id']}/ask", json={"question": "And the budget?"}).json()
    seen["conversation"] = [(s["tool"], s["observation"]) for s in turn["trajectory"]]
    seen["mcp"] = _mcp_calls(f"{team.server.url}/api/indexes/{name}/mcp/", team.tokens[name], every_chunk)
    return seen


def _semantic_is_a_top_of_the_reference(team: Team, queries: list[str]) -> None:
    """The semantic hits of the restricted token are a top 20 of the reference index's whole ranking, with the same
    scores (within 1e-5: the same sums over fewer rows add in another order, so near-ties may swap at the cut)."""
    with team.client("all") as client:
        for query in queries:
            hits = client.post("/search/semantic", json={"query": query, "top_k": 20}).json()
            ranking = {h.chunk_id: h for h in team.indexes["own"].semantic_search(query, 1000)}
            assert len(hits) == min(20, len(ranking))
            for hit in hits:
                wanted = ranking[hit["chunk_id"]]
                assert abs(hit["score"] - wanted.score) < 1e-5 and hit["snippets"] == wanted.snippets
            cut = min(hit["score"] for hit in hits)
            shown = {hit["chunk_id"] for hit in hits}
            assert all(h.score <= cut + 1e-5 for c, h in ranking.items() if c not in shown)


def _mcp_calls(url: str, token: str, chunk_ids: list[str]) -> list[str]:
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def calls() -> list[str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            shown = []
            for name, arguments in [
                ("keyword_search", {"keywords": ["salary", "budget"], "top_k": 20}),
                ("chunk_read", {"chunk_ids": chunk_ids}),
                ("list_documents", {}),
            ]:
                result = await session.call_tool(name, arguments)
                shown.append(result.content[0].text)  # type: ignore[union-attr]
            return shown

    return anyio.run(calls)


@settings(
    max_examples=6 * FUZZ_SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(documents=DOCUMENTS, groups=st.lists(st.sampled_from(GROUPS), max_size=3, unique=True))
def test_every_route_shows_a_token_exactly_the_documents_it_may_read(
    documents: list[tuple[str, list[str] | None]], groups: list[str]
) -> None:
    check_every_route([OPEN_DOCUMENT, *documents], groups)


def check_every_route(
    documents: list[tuple[str, list[str] | None]],
    groups: list[str],
    all_location: str | None = None,
    serve_as: Callable[[str], str] | None = None,
) -> None:
    """Every route for a token of ``groups`` on the index of every document equals every route for a token that
    reads everything on an index of the documents those groups may read (tests/test_postgres.py runs it with the
    first index on PostgreSQL, served by a role under row-level security)."""
    with tempfile.TemporaryDirectory() as folder:
        team = Team(Path(folder), documents, groups, all_location, serve_as)
        try:
            with team.client("all") as restricted, team.client("own") as reference:
                seen, expected = _answers(team, restricted, "all"), _answers(team, reference, "own")
            for route in expected:
                assert seen[route] == expected[route], route
            _semantic_is_a_top_of_the_reference(team, ["travel policy review", "salary budget"])
        finally:
            team.close()


def test_a_document_refused_by_name_is_missing_and_the_audit_log_records_it(tmp_path: Path) -> None:
    documents: list[tuple[str, list[str] | None]] = [
        OPEN_DOCUMENT,
        ("The salary bands of 2026 are secret.", ["hr"]),
        ("The audit of the budget found nothing.", ["finance"]),
    ]
    team = Team(tmp_path, documents, ["finance"])
    try:
        with team.client("all") as client:
            read = client.post("/read", json={"chunk_ids": ["doc1#0", "doc2#0"]})
            assert [row["chunk_id"] for row in read.json()] == ["doc2#0"]
            assert json.loads(read.headers["x-missing-chunk-ids"]) == ["doc1#0"]
            assert client.get("/chunks/doc1%230").status_code == 404
            tool = client.post("/tools/chunk_read", json={"chunk_ids": ["doc1#0"]}).json()
            assert "not found" in tool["observation"] and "salary" not in tool["observation"]
            assert client.get("/documents/outline", params={"doc_id": "doc1"}).status_code == 404
            assert client.get("/documents/section", params={"section_id": "doc1#s1"}).status_code == 404
            found = client.post("/search/keyword", json={"keywords": ["salary"]}).json()
            assert [hit["chunk_id"] for hit in found] == ["doc0#0"]
            over_mcp = _mcp_calls(f"{team.server.url}/api/indexes/all/mcp/", team.tokens["all"], ["doc1#0"])
            assert "not found" in over_mcp[1] and "salary" not in over_mcp[1]
            me = httpx.get(f"{team.server.url}/api/me", headers=client.headers).json()
            assert me == {"name": "reader", "scope": "ask", "indexes": ["all"], "groups": ["finance"]}
    finally:
        team.close()
    lines = [json.loads(line) for line in team.audit_path.read_text().splitlines()]
    denied = {line["route"]: line.get("denied") for line in lines if "mcp" not in line["route"]}
    assert [line["denied"] for line in lines if "mcp" in line["route"] and "denied" in line] == [["doc1"]]
    assert denied["/api/indexes/all/read"] == ["doc1"]
    assert denied["/api/indexes/all/chunks/doc1#0"] == ["doc1"]
    assert denied["/api/indexes/all/tools/chunk_read"] == ["doc1"]
    assert denied["/api/indexes/all/documents/outline"] == ["doc1"]
    assert denied["/api/indexes/all/documents/section"] == ["doc1"]
    assert denied["/api/indexes/all/search/keyword"] is None  # a search names no document: nothing refused


def test_a_tokens_question_traces_only_what_it_may_read(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from arag import tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    documents: list[tuple[str, list[str] | None]] = [
        OPEN_DOCUMENT,
        ("The salary bands of 2026 are secret.", ["hr"]),
        ("The salary review of the audit team.", ["finance"]),
    ]
    team = Team(tmp_path, documents, ["finance"])
    tracing.use(provider)
    try:
        team.llm.replies = [
            completion(tool_calls=[tool_call("keyword_search", {"keywords": ["salary"], "top_k": 20})]),
            completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["doc1#0", "doc2#0"]}, "call_2")]),
            completion("Done."),
        ]
        with team.client("all") as client:
            asked = client.post("/ask", json={"question": "What about salary?"}).json()
        assert asked["stop_reason"] == "answered"
    finally:
        tracing.use(None)
        team.close()
    traced = [s.attributes.get("arag.chunk_ids") for s in exporter.get_finished_spans() if s.name == "arag.tool"]
    assert traced and all(ids is not None for ids in traced)
    assert sorted({chunk for ids in traced for chunk in ids}) == ["doc0#0", "doc2#0"]  # never hr's doc1
