"""`arag serve`: the HTTP API (httpx against a real uvicorn on 127.0.0.1), the SSE stream, limits, the token,
path traversal, and MCP over HTTP. The model is the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.index import Index
from arag.settings import IndexSettings, ServerSettings, Settings
from arag.store import FORMAT_VERSION
from arag.tools.toolkit import TOOL_NAMES
from conftest import FIXTURES, FUZZ_SCALE, fake_settings
from support.live_server import LiveServer, serve
from support.scripted_server import Hang, ScriptedServer, completion, tool_call
from support.strategies import json_values

TOKEN = "s3cret-token-0123456789"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    path = tmp_path_factory.mktemp("serve") / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], path, fake_settings())
    return Index.open(path, threads=1)


@pytest.fixture
def llm() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


@pytest.fixture
def live(index: Index, llm: ScriptedServer) -> Iterator[LiveServer]:
    server = serve(index, llm)
    yield server
    server.close()


def sse_events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    event, data = "message", ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data += line[6:]
        elif not line:
            yield event, json.loads(data) if data else {}
            event, data = "message", ""


def test_search_read_info_export(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url) as client:
        info = client.get("/api/info").json()
        assert info["counts"]["chunks"] == 16 and info["format_version"] == FORMAT_VERSION  # the shape of `arag info`
        hits = client.post("/api/search/keyword", json={"keywords": ["Waldrada"], "top_k": 2}).json()
        assert hits[0]["chunk_id"] == "Waldrada#0" and set(hits[0]) == {"chunk_id", "score", "snippets"}
        semantic = client.post("/api/search/semantic", json={"query": "Lothair mother", "top_k": 3}).json()
        assert len(semantic) == 3
        read = client.post("/api/read", json={"chunk_ids": ["Waldrada#0", "nope"]})
        assert [set(c) for c in read.json()] == [
            {"chunk_id", "text", "prev_id", "next_id", "source"}
        ]  # `arag read --json`
        assert read.json()[0]["chunk_id"] == "Waldrada#0" and read.headers["x-missing-chunk-ids"] == '["nope"]'
        chunk = client.get("/api/chunks/Waldrada#0".replace("#", "%23")).json()
        assert chunk["position"] == 1 and chunk["of"] == 1 and chunk["doc_id"] == "Waldrada"
        assert client.get("/api/chunks/nope").status_code == 404
        lines = client.get("/api/export").text.splitlines()
        assert len(lines) == 16 and json.loads(lines[0])["chunk_id"]
        assert client.get("/openapi.json").json()["info"]["title"] == "a-rag"
        assert "a-rag HTTP API" in client.get("/api/docs").text
        page = client.get("/")
        assert page.status_code == 200 and "/static/app.js" in page.text and "cdn" not in page.text.lower()


def test_tools_over_http_keep_a_tracker_per_session(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url) as client:
        first = client.post("/api/tools/chunk_read", json={"chunk_ids": ["Waldrada#0"]})
        session = first.headers["x-session-id"]
        assert first.json()["ok"] and "Pope Nicholas" in first.json()["observation"]
        again = client.post(
            "/api/tools/chunk_read", json={"chunk_ids": ["Waldrada#0"]}, headers={"X-Session-Id": session}
        )
        assert "already read" in again.json()["observation"]
        other = client.post("/api/tools/chunk_read", json={"chunk_ids": ["Waldrada#0"]})
        assert other.headers["x-session-id"] != session and "Pope Nicholas" in other.json()["observation"]
        bad = client.post("/api/tools/keyword_search", json={"keywords": "x" * 10, "top_k": 10**30})
        assert bad.status_code == 200 and bad.json()["ok"]  # the tools' own bounds apply
        unknown = client.post("/api/tools/rm_rf", json={}).json()
        assert not unknown["ok"] and unknown["observation"].startswith("Error: unknown tool")


def test_arguments_and_bodies_are_bounded(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url) as client:
        assert client.post("/api/search/keyword", json={"keywords": ["x"], "top_k": 0}).status_code == 422
        assert client.post("/api/search/keyword", json={"keywords": []}).status_code == 422
        assert client.post("/api/search/keyword", json={"keywords": ["  "]}).status_code == 422
        assert client.post("/api/search/semantic", json={"query": ""}).status_code == 422
        assert client.post("/api/read", json={"chunk_ids": ["x"] * 11}).status_code == 422
        assert client.post("/api/ask", json={"question": "   "}).status_code == 422
        too_big = client.post("/api/search/semantic", content=b'{"query": "' + b"x" * 2_000_000 + b'"}')
        assert too_big.status_code == 413
        assert client.post("/api/search/keyword", content=b"not json").status_code == 422


def test_ask_and_the_event_stream(live: LiveServer, llm: ScriptedServer) -> None:
    script = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]}, "c2")]),
        completion("20 March 851 [chunk Ermengarde of Tours#0]"),
    ]
    llm.replies = list(script)
    with httpx.Client(base_url=live.url, timeout=60) as client:
        result = client.post("/api/ask", json={"question": "When did Ermengarde die?"}).json()
        assert result["answer"].startswith("20 March 851") and result["steps"] == 2
        llm.replies = list(script)
        with client.stream("POST", "/api/ask/stream", json={"question": "When did Ermengarde die?"}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = list(sse_events(response))
    assert [e for e, _ in events] == ["step", "step", "answer", "done"]
    first = events[0][1]
    assert first["tool"] == "keyword_search" and first["retrieved_tokens"] > 0 and "latency_s" in first
    answer = events[2][1]
    assert answer["citations"] == [{"chunk_id": "Ermengarde of Tours#0", "verified": True}]
    assert answer["stop_reason"] == "answered" and "usage" in answer and "cost" in answer


def test_errors_arrive_as_an_event(live: LiveServer, llm: ScriptedServer) -> None:
    llm.default = (500, {"error": {"message": "down"}})
    with (
        httpx.Client(base_url=live.url, timeout=60) as client,
        client.stream("POST", "/api/ask/stream", json={"question": "q?"}) as response,
    ):
        events = list(sse_events(response))
    assert [e for e, _ in events] == ["answer", "done"]
    assert events[0][1]["stop_reason"] == "error" and "HTTP 500" in events[0][1]["error"]


def test_concurrency_limit_429_and_a_client_that_disconnects(index: Index, llm: ScriptedServer) -> None:
    server = serve(index, llm, max_concurrent_asks=1)
    try:
        llm.replies = [Hang()]
        with httpx.Client(base_url=server.url, timeout=60) as client:
            with client.stream("POST", "/api/ask/stream", json={"question": "slow?"}) as hanging:
                assert hanging.status_code == 200
                time.sleep(0.3)
                busy = client.post("/api/ask", json={"question": "another?"})
                assert busy.status_code == 429 and busy.headers["retry-after"] == "5"
            # the client went away mid-stream; the slot comes back once the agent stops
            llm.stopping.set()  # the hanging model call ends (its connection drops)
            llm.replies, llm.default = [], completion("done")
            deadline = time.monotonic() + 60
            while True:
                answer = client.post("/api/ask", json={"question": "after?"})
                if answer.status_code != 429 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert answer.status_code == 200 and answer.json()["answer"] == "done"
            assert client.get("/api/info").status_code == 200
    finally:
        server.close()


def test_token_is_checked_everywhere(index: Index, llm: ScriptedServer) -> None:
    server = serve(index, llm, token=TOKEN)
    try:
        with httpx.Client(base_url=server.url) as client:
            for path in ("/api/info", "/", "/static/app.js", "/openapi.json", "/api/runs", "/mcp"):
                assert client.get(path).status_code == 401, path
            assert client.post("/api/ask/stream", json={"question": "q"}).status_code == 401
            assert client.get("/api/info", headers={"Authorization": "Bearer wrong-token-000000"}).status_code == 401
            assert client.get("/api/info", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
            assert client.get(f"/api/info?token={TOKEN}").status_code == 200
            page = client.get(f"/?token={TOKEN}")  # sets the cookie the page's own requests then carry
            assert page.status_code == 200 and client.get("/static/app.js").status_code == 200
    finally:
        server.close()


def test_binding_beyond_loopback_requires_a_token(index: Index) -> None:
    from arag.errors import ConfigError
    from arag.serve.http import serve as run_server

    with pytest.raises(ConfigError, match="set a token"):
        run_server(index, Settings(server=ServerSettings(host="0.0.0.0")))


def test_runs_browser_and_path_traversal(index: Index, llm: ScriptedServer, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name, predictions in (("naive", ["20 March 851", "no", "x"]), ("full", ["20 March 851", "Lothair", "x"])):
        run = runs / name
        run.mkdir(parents=True)
        records = [
            {"id": str(i), "question": f"q{i}", "gold": ["20 March 851", "Lothair", "y"][i], "prediction": p,
             "contain_acc": float(p == ["20 March 851", "Lothair", "y"][i]), "stop_reason": "answered", "steps": 1,
             "retrieved_tokens": 10, "latency_s": 1.0, "retrieval_recall": 1.0, "read_recall": 1.0, "error": None,
             "trajectory": [{"tool": "keyword_search", "arguments": {"keywords": ["x"]}, "observation": "<script>",
                             "retrieved_tokens": 3, "latency_s": 0.1}]}
            for i, p in enumerate(predictions)
        ]  # fmt: skip
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        (run / "config.json").write_text(json.dumps({"method": f"{name}", "dataset": "mini"}))
    (tmp_path / "secret.txt").write_text("outside")
    server = serve(index, llm, runs=runs)
    try:
        with httpx.Client(base_url=server.url) as client:
            listed = client.get("/api/runs").json()
            assert [r["name"] for r in listed] == ["full", "naive"] and listed[0]["contain_acc_ci95"]["n"] == 3
            detail = client.get("/api/runs/full").json()
            assert [q["tag"] for q in detail["questions"]] == ["correct", "correct", "reasoning"]
            question = client.get("/api/runs/full/questions/1").json()
            assert question["trajectory"][0]["observation"] == "<script>"
            compared = client.get("/api/compare", params={"a": "naive", "b": "full"}).json()
            assert compared["questions"][0]["id"] == "1"  # the question where they differ comes first
            for path in (
                "/api/runs/..%2Fsecret.txt",
                "/api/runs/../secret.txt",
                "/api/runs/%2E%2E",
                "/api/runs/..%2F..%2Fetc%2Fpasswd/questions/1",
                "/static/..%2Fserver.py",
                "/static/%2E%2E%2Fserver.py",
                "/static/index.html",
            ):
                response = client.get(path)
                assert response.status_code == 404 and "outside" not in response.text, path
    finally:
        server.close()


def test_mcp_over_http_has_a_tracker_per_session(live: LiveServer) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def read_twice() -> list[str]:
        async with streamable_http_client(f"{live.url}/mcp/") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert names == list(TOOL_NAMES)
            first = await session.call_tool("chunk_read", {"chunk_ids": ["Waldrada#0"]})
            again = await session.call_tool("chunk_read", {"chunk_ids": ["Waldrada#0"]})
            return [first.content[0].text, again.content[0].text]

    async def both() -> tuple[list[str], list[str]]:
        return await read_twice(), await read_twice()

    one, two = anyio.run(both)
    assert "Pope Nicholas" in one[0] and "already read" in one[1]
    assert "Pope Nicholas" in two[0]  # a new session starts with its own, empty tracker


@settings(max_examples=150 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(["/api/search/keyword", "/api/search/semantic", "/api/read", "/api/v1/embeddings"])
    | st.sampled_from(["/api/tools/keyword_search", "/api/tools/chunk_read"]),
    body=json_values | st.fixed_dictionaries({}, optional={"keywords": json_values, "query": json_values,
                                                           "chunk_ids": json_values, "top_k": json_values,
                                                           "input": json_values, "model": st.just("fake") | json_values,
                                                           "encoding_format": json_values}),
)  # fmt: skip
def test_fuzzed_bodies_never_break_the_server(live: LiveServer, path: str, body: object) -> None:
    response = httpx.post(live.url + path, content=json.dumps(body).encode(), timeout=60)
    allowed = (200, 404, 413, 422) if path.endswith("embeddings") else (200, 413, 422)  # 404: a model not served
    assert response.status_code in allowed, (path, body, response.text[:300])
    response.json()  # always a JSON reply


def test_openai_compatible_embeddings_with_the_index_embedder(
    index: Index, llm: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client of the endpoint (a-rag's own ``openai:`` embedder, on the openai SDK) gets the vectors the index
    was built with, as floats or base64; what the endpoint cannot serve is refused with a reason."""
    import base64

    import numpy as np

    from arag.embedding.embedders import load_embedder

    server = serve(index, llm, token=TOKEN)
    try:
        texts = ["Who was Lothair II's mother?", "Waldrada", "naïve café ✓"]
        expected = index.embedder.embed_documents(texts)
        monkeypatch.setenv("ARAG_EMBED_BASE_URL", server.url + "/api/v1")
        monkeypatch.setenv("ARAG_EMBED_API_KEY", TOKEN)
        client_embedder = load_embedder("openai:fake")
        assert client_embedder.dims == expected.shape[1]
        assert np.allclose(client_embedder.embed_documents(texts), expected, atol=1e-6)
        build_index(
            [FIXTURES / "hipporag_corpus.json"], tmp_path / "remote", IndexSettings(embedder="openai:fake", threads=1)
        )
        remote = Index.open(tmp_path / "remote", threads=1)
        ours = [h.chunk_id for h in index.semantic_search("Lothair mother", 5)]
        assert [h.chunk_id for h in remote.semantic_search("Lothair mother", 5)] == ours

        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=server.url, headers=auth, timeout=60) as client:
            assert client.get("/api/v1/models").json()["data"][0]["id"] == "fake"
            packed = client.post(
                "/api/indexes/default/v1/embeddings",
                json={"model": "fake", "input": texts[0], "encoding_format": "base64"},
            ).json()
            vector = np.frombuffer(base64.b64decode(packed["data"][0]["embedding"]), dtype="<f4")
            assert np.allclose(vector, expected[0], atol=1e-6) and packed["model"] == "fake"
            refusals = {
                "a model not served": ({"model": "text-embedding-3-small", "input": "x"}, 404, "embedder is 'fake'"),
                "token ids": ({"model": "fake", "input": [1, 2, 3]}, 422, ""),
                "an empty text": ({"model": "fake", "input": ["ok", ""]}, 422, "non-empty"),
                "no text": ({"model": "fake", "input": []}, 422, "between 1 and 2048"),
                "too many": ({"model": "fake", "input": ["x"] * 2049}, 422, "between 1 and 2048"),
                "shorter vectors": ({"model": "fake", "input": "x", "dimensions": 8}, 422, "does not shorten"),
            }
            for what, (body, status, reason) in refusals.items():
                response = client.post("/api/v1/embeddings", json=body)
                assert response.status_code == status and reason in response.text, what
        assert httpx.post(server.url + "/api/v1/embeddings", json={"model": "fake", "input": "x"}).status_code == 401
    finally:
        server.close()


# ------------------------------------------------------------------ conversations and scope over HTTP
def test_a_conversation_over_http_follows_up_streams_and_is_deleted(live: LiveServer, llm: ScriptedServer) -> None:
    llm.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair II"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]}, "c2")]),
        completion("Ermengarde of Tours [chunk Lothair II#0]"),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0", "Ermengarde of Tours#0"]})]),
        completion("20 March 851 [chunk Ermengarde of Tours#0]"),
    ]
    with httpx.Client(base_url=live.url, timeout=60) as client:
        opened = client.post("/api/conversations", json={})
        assert opened.status_code == 201
        conversation = opened.json()["id"]
        assert len(conversation) >= 32 and opened.json()["turns"] == []  # 24 random bytes: not guessable
        first = client.post(f"/api/conversations/{conversation}/ask", json={"question": "Who was Lothair II's mother?"})
        assert first.json()["turn"] == 1 and first.json()["answer"].startswith("Ermengarde")
        with client.stream(
            "POST", f"/api/conversations/{conversation}/ask/stream", json={"question": "And when did she die?"}
        ) as response:
            events = list(sse_events(response))
        assert [e for e, _ in events] == ["step", "answer", "done"]
        assert "already read earlier in this session" in events[0][1]["observation"]
        answer = events[1][1]
        assert answer["turn"] == 2 and answer["answer"].startswith("20 March 851")
        assert answer["sources"][0]["chunk_id"] == "Ermengarde of Tours#0" and answer["sources"][0]["label"]
        # the follow-up's request carried the first turn
        assert any("Who was Lothair II's mother?" in str(m.get("content")) for m in llm.requests[3]["messages"])
        thread = client.get(f"/api/conversations/{conversation}").json()
        assert [t["question"] for t in thread["turns"]] == ["Who was Lothair II's mother?", "And when did she die?"]
        assert {s["chunk_id"] for s in thread["sources"]} == {"Lothair II#0", "Ermengarde of Tours#0"}
        assert client.delete(f"/api/conversations/{conversation}").status_code == 204
        assert client.post(f"/api/conversations/{conversation}/ask", json={"question": "q?"}).status_code == 404
        assert client.get("/api/conversations/not-an-id").status_code == 404


def test_an_idle_conversation_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    from arag.serve.http import conversations as http

    clock = [1000.0]
    monkeypatch.setattr(http.time, "monotonic", lambda: clock[0])
    store = http.Conversations(idle_expiry_s=60, max_open=2)
    kept = store.add(object())  # type: ignore[arg-type]
    clock[0] += 59
    store.get(kept)  # a question keeps it open
    clock[0] += 59
    assert store.get(kept) is not None
    clock[0] += 61
    with pytest.raises(http.HTTPException) as gone:
        store.get(kept)
    assert gone.value.status_code == 404
    first, second, third = (store.add(object()) for _ in range(3))  # type: ignore[arg-type]
    with pytest.raises(http.HTTPException):
        store.get(first)  # the least recently used beyond max_open
    assert store.get(second) is not None and store.get(third) is not None


def test_scoped_search_ask_and_cited_chunks_over_http(live: LiveServer, llm: ScriptedServer) -> None:
    with httpx.Client(base_url=live.url, timeout=60) as client:
        assert "path" in client.get("/api/info").json()["metadata_fields"]
        hits = client.post("/api/search/keyword", json={"keywords": ["Lothair"], "where": "title=Waldrada"}).json()
        assert [h["chunk_id"] for h in hits] == ["Waldrada#0"]
        bad = client.post("/api/search/semantic", json={"query": "q", "where": "title=="})
        assert bad.status_code == 400 and "cannot read the filter" in bad.json()["detail"]
        read = client.post("/api/read", json={"chunk_ids": ["Waldrada#0"], "claim": "Waldrada was his mistress."})
        source = read.json()[0]["source"]
        assert source["label"] == "hipporag_corpus.json" and "Waldrada was the mistress" in source["sentence"]
        chunk = client.get("/api/chunks/Waldrada%230", params={"claim": "Waldrada was his mistress."}).json()
        start, end = chunk["source"]["sentence_start"], chunk["source"]["sentence_end"]
        assert "Waldrada was the mistress" in chunk["text"][start:end]
        llm.replies = [
            completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair"]})]),
            completion("Waldrada [chunk Waldrada#0]"),
        ]
        answer = client.post("/api/ask", json={"question": "Who?", "where": "title=Waldrada"}).json()
        assert "Lothair II#0" not in answer["trajectory"][0]["observation"] and answer["sources"][0]["verified"]


@pytest.mark.parametrize("route", ["/api/ask", "conversation"])
def test_a_client_that_leaves_stops_its_question_within_one_model_call(
    index: Index, llm: ScriptedServer, route: str
) -> None:
    # a model that never answers (a new search each time: no stall guard ends it), one call every 0.3 s: without the
    # client it would run on to the step limit
    words = [f"w{n}" for n in range(60)]
    llm.replies = [completion(tool_calls=[tool_call("keyword_search", {"keywords": [w]}, f"c{w}")]) for w in words]
    llm.delay_s = 0.3
    server = serve(index, llm)
    try:
        path = route
        if route == "conversation":
            opened = httpx.post(server.url + "/api/conversations", json={"max_steps": 40}, timeout=30).json()
            path = f"/api/conversations/{opened['id']}/ask"
        with pytest.raises(httpx.ReadTimeout):  # the client gives up after 1 s and goes away
            httpx.post(server.url + path, json={"question": "Who was Waldrada?", "max_steps": 40}, timeout=1.0)
        left_at = llm.received
        time.sleep(3.0)  # ten model calls' time
        assert llm.received <= left_at + 2  # the one under way, and at most one more before the next step's check
        assert llm.received < 12
    finally:
        server.close()


def test_half_sent_requests_are_closed_and_a_stalled_body_is_a_408(index: Index, llm: ScriptedServer) -> None:
    import socket

    from arag.serve.http import create_app
    from arag.settings import ServerSettings as Limits

    app = create_app(index, Settings(server=Limits(read_timeout_s=1.0)))
    server = LiveServer(app, read_timeout_s=1.0)
    host, port = server.url.removeprefix("http://").split(":")
    try:
        held = []
        for _ in range(50):  # half a request's headers each, never finished
            connection = socket.create_connection((host, int(port)), timeout=10)
            connection.sendall(b"GET /api/info HTTP/1.1\r\nHost: x\r\n")
            held.append(connection)
        stalled = socket.create_connection((host, int(port)), timeout=10)
        stalled.sendall(b"POST /api/search/keyword HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 100\r\n\r\n{\"keywords\": ")  # fmt: skip
        time.sleep(3.0)  # three deadlines' time
        closed = 0
        for connection in held:
            connection.settimeout(0.5)
            try:
                closed += connection.recv(1024) == b""  # the server closed it
            except ConnectionResetError:
                closed += 1
            except TimeoutError:  # still open
                pass
            connection.close()
        assert closed == 50
        reply = stalled.recv(4096).decode("latin-1")
        stalled.close()
        assert reply.startswith("HTTP/1.1 408") and "stalled" in reply
        # a request sent whole still works
        assert httpx.get(server.url + "/api/info", timeout=10).status_code == 200
    finally:
        server.close()
