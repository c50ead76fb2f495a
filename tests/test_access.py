"""One server, several indexes, scoped tokens (httpx against a real uvicorn): every route × every scope × a foreign
index gives the documented status; tokens are stored hashed in a 0600 file, revoked while the server runs, fuzzed;
the audit log records every request without a token or a question's text (unless asked to)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.serve.access import Access, AuditLog, TokenFile, route_of
from arag.serve.http import create_app
from arag.settings import AgentSettings, LLMSettings, Settings
from conftest import FIXTURES, FUZZ_SCALE, fake_settings
from support.live_server import LiveServer
from support.scripted_server import ScriptedServer, completion, tool_call

# (method, path under the index prefix, body, scope needed); bodies valid for read routes, and for ask routes an
# empty question, which the route itself rejects (422) once the guard let it through
ROUTES: list[tuple[str, str, Any, str]] = [
    ("GET", "/info", None, "read"),
    ("POST", "/search/keyword", {"keywords": ["the"]}, "read"),
    ("POST", "/search/semantic", {"query": "the"}, "read"),
    ("POST", "/read", {"chunk_ids": ["x#0"]}, "read"),
    ("POST", "/tools/keyword_search", {"keywords": ["the"]}, "read"),
    ("GET", "/chunks/x%230", None, "read"),
    ("GET", "/export", None, "read"),
    ("POST", "/mcp/", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "read"),
    ("POST", "/ask", {"question": ""}, "ask"),
    ("POST", "/ask/stream", {"question": ""}, "ask"),
    ("POST", "/conversations", {"where": "((("}, "ask"),
    ("GET", "/conversations/nope", None, "ask"),
]
GLOBAL_ROUTES: list[tuple[str, str, str]] = [  # (method, path, scope needed)
    ("GET", "/api/runs", "admin"),
    ("GET", "/api/compare?a=x&b=y", "admin"),
    ("GET", "/api/indexes", "read"),
    ("GET", "/", "read"),
    ("GET", "/openapi.json", "read"),
]
TOKENS = {  # name → (scope, indexes)
    "reader-a": ("read", ["a"]),
    "asker-a": ("ask", ["a"]),
    "other-asker-a": ("ask", ["a"]),  # a second person on the same index: conversations are each one's own
    "asker-b": ("ask", ["b"]),
    "admin": ("admin", []),
}
LEVEL = {"read": 0, "ask": 1, "admin": 2}


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Index]]:
    root = tmp_path_factory.mktemp("team")
    (root / "b").mkdir()
    (root / "b" / "zebra.md").write_text("# Zebra\n\nThe secret project Zebra ships in May.\n")
    build_index([FIXTURES / "hipporag_corpus.json"], root / "a-idx", fake_settings())
    build_index([root / "b"], root / "b-idx", fake_settings())
    opened = {"a": Index.open(root / "a-idx", threads=1), "b": Index.open(root / "b-idx", threads=1)}
    yield opened
    for index in opened.values():
        index.close()


@pytest.fixture(scope="module")
def team(indexes: dict[str, Index], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("access")
    file = TokenFile(root / "config" / "tokens.json")
    tokens = {name: file.add(name, scope, names) for name, (scope, names) in TOKENS.items()}
    access = Access.load(file.path, None)
    access.RELOAD_EVERY_S = 0
    audit = AuditLog(root / "audit.jsonl")
    llm = ScriptedServer()

    def agent(max_steps: int | None, served: Index) -> Agent:
        model = ChatModel(LLMSettings(base_url=llm.base_url, model="m", max_retries=0, timeout_s=30, api_key="sk-KEY"))
        return Agent(served, model, AgentSettings(max_steps=max_steps or 3))

    server = LiveServer(create_app(indexes, Settings(), root, agent_factory=agent, access=access, audit=audit))
    yield {"url": server.url, "tokens": tokens, "file": file, "audit": root / "audit.jsonl", "llm": llm}
    server.close()
    llm.close()
    audit.close()


def _call(client: httpx.Client, method: str, path: str, body: Any, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if path.endswith("/mcp/"):
        headers |= {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return client.request(method, path, json=body, headers=headers)


def _expected(token_name: str | None, scope: str, index: str | None) -> int | None:
    """The documented status, or None for "let through" (the route's own answer)."""
    if token_name is None:
        return 401
    granted, names = TOKENS[token_name]
    if index is not None and granted != "admin" and index not in names:
        return 404
    if LEVEL[granted] < LEVEL[scope]:
        return 403
    return None


def test_every_route_every_scope_and_a_foreign_index(team: dict[str, Any]) -> None:
    checked = 0
    with httpx.Client(base_url=team["url"], timeout=30) as client:
        for token_name in [None, *TOKENS]:
            token = team["tokens"].get(token_name) if token_name else None
            for method, rest, body, scope in ROUTES:
                for prefix, index in (("/api/indexes/a", "a"), ("/api/indexes/b", "b"), ("/api", "a"), ("", "a")):
                    if prefix == "" and not rest.startswith("/mcp"):
                        continue  # /mcp is the default index's MCP; the rest live under /api
                    if prefix == "/api" and rest.startswith("/mcp"):
                        continue
                    response = _call(client, method, prefix + rest, body, token)
                    expected = _expected(token_name, scope, index)
                    where = f"{token_name} {method} {prefix + rest}"
                    if expected is None:
                        assert response.status_code not in (401, 403, 404) or rest.startswith(("/chunks", "/conv")), (
                            where
                        )
                        assert response.status_code < 500, where
                    else:
                        assert response.status_code == expected, f"{where}: {response.status_code} {response.text}"
                    checked += 1
            for method, path, scope in GLOBAL_ROUTES:
                response = _call(client, method, path, None, token)
                expected = _expected(token_name, scope, None)
                assert response.status_code == (expected or response.status_code), f"{token_name} {path}"
                if expected is None:  # let through: the route answers (no such run is the route's own 404)
                    assert response.status_code == 200 or "no run" in response.text, f"{token_name} {path}"
                checked += 1
    assert checked > 200


def test_a_conversation_belongs_to_the_token_that_opened_it(team: dict[str, Any]) -> None:
    mine, theirs = team["tokens"]["asker-a"], team["tokens"]["other-asker-a"]
    with httpx.Client(base_url=team["url"], timeout=30) as client:
        opened = _call(client, "POST", "/api/indexes/a/conversations", {}, mine)
        assert opened.status_code == 201
        path = f"/api/indexes/a/conversations/{opened.json()['id']}"
        # another token of the same index that knows the id: as if it did not exist, for reading, asking, deleting
        assert _call(client, "GET", path, None, theirs).status_code == 404
        assert _call(client, "POST", path + "/ask", {"question": "Who?"}, theirs).status_code == 404
        assert _call(client, "DELETE", path, None, theirs).status_code == 404
        assert _call(client, "GET", path, None, mine).status_code == 200  # still there, still its owner's
        # one token opening many conversations evicts only its own, never another's
        for _ in range(40):
            assert _call(client, "POST", "/api/indexes/a/conversations", {}, theirs).status_code == 201
        assert _call(client, "GET", path, None, mine).status_code == 200
        assert _call(client, "DELETE", path, None, mine).status_code == 204


def test_the_conversation_store_keeps_a_quota_per_principal_and_evicts_the_largest_holder() -> None:
    from arag.serve.http.conversations import Conversations

    store = Conversations(idle_expiry_s=3600, max_open=5, per_principal=3)
    alice = [store.add(object(), "alice") for _ in range(4)]  # type: ignore[arg-type]
    assert store.remove(alice[0], "alice") is False  # her oldest went past her quota of 3
    bob = [store.add(object(), "bob") for _ in range(2)]  # type: ignore[arg-type]
    # 5 in all (alice 3, bob 2): one more of bob's passes the total; the largest holder (alice) loses her oldest
    store.add(object(), "bob")  # type: ignore[arg-type]
    assert store.remove(alice[1], "alice") is False and store.remove(bob[0], "bob") is True
    assert store.remove(alice[2], "bob") is False and store.remove(alice[2], "alice") is True


def test_a_token_cannot_even_list_another_index(team: dict[str, Any]) -> None:
    with httpx.Client(base_url=team["url"], timeout=30) as client:

        def get(path: str, token: str) -> httpx.Response:
            return client.get(path, headers={"Authorization": f"Bearer {token}"})

        tokens = team["tokens"]
        assert [i["name"] for i in get("/api/indexes", tokens["asker-b"]).json()] == ["b"]
        assert [i["name"] for i in get("/api/indexes", tokens["reader-a"]).json()] == ["a"]
        assert [i["name"] for i in get("/api/indexes", tokens["admin"]).json()] == ["a", "b"]
        foreign = get("/api/indexes/a/info", tokens["asker-b"])
        missing = get("/api/indexes/zzz/info", tokens["admin"])
        assert (
            (foreign.status_code, foreign.json())
            == (missing.status_code, missing.json())
            == (404, {"detail": "Not Found"})
        )
        assert "/indexes/b" not in get("/openapi.json", tokens["reader-a"]).text
        zebra = client.post(
            "/api/indexes/b/search/keyword", json={"keywords": ["Zebra"]},
            headers={"Authorization": f"Bearer {tokens['asker-b']}"},
        )  # fmt: skip
        assert zebra.status_code == 200 and zebra.json()[0]["chunk_id"] == "b/zebra.md#0"
        # the default routes are index a's: b's own token does not reach them, a's does
        assert get("/api/info", tokens["asker-b"]).status_code == 404
        assert get("/api/info", tokens["reader-a"]).json()["counts"]["documents"] > 1


def test_an_ask_and_its_stream_run_on_the_tokens_index(team: dict[str, Any]) -> None:
    llm: ScriptedServer = team["llm"]
    token = team["tokens"]["asker-b"]
    llm.default = completion("In May [b/zebra.md#0].")
    with httpx.Client(base_url=team["url"], timeout=60, headers={"Authorization": f"Bearer {token}"}) as client:
        answer = client.post("/api/indexes/b/ask", json={"question": "When does project Zebra ship?"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["answer"].startswith("In May")
        with client.stream("POST", "/api/indexes/b/ask/stream", json={"question": "When does Zebra ship?"}) as events:
            body = "".join(events.iter_text())
        assert "event: answer" in body and "event: done" in body
        reader = {"Authorization": f"Bearer {team['tokens']['reader-a']}"}
        assert client.post("/api/indexes/a/ask/stream", json={"question": "q?"}, headers=reader).status_code == 403


def test_a_stream_stops_when_its_token_is_revoked(team: dict[str, Any]) -> None:
    llm: ScriptedServer = team["llm"]
    file: TokenFile = team["file"]
    token = file.add("leaving", "ask", ["a"])
    # a model that searches on and on, one call every 0.3 s
    llm.replies = [completion(tool_calls=[tool_call("keyword_search", {"keywords": [f"w{n}"]}, f"c{n}")])
                   for n in range(40)]  # fmt: skip
    llm.delay_s = 0.3
    try:
        headers = {"Authorization": f"Bearer {token}"}
        with (
            httpx.Client(base_url=team["url"], timeout=60, headers=headers) as client,
            client.stream(
                "POST", "/api/indexes/a/ask/stream", json={"question": "Who was Waldrada?", "max_steps": 30}
            ) as events,
        ):
            lines = events.iter_lines()
            assert next(line for line in lines if line.startswith("event: ")) == "event: step"
            file.revoke("leaving")
            os.utime(file.path, (2, 2))
            rest = list(lines)
        assert "event: error" in rest and any("token was revoked" in line for line in rest)
        assert sum(1 for line in rest if line == "event: step") <= 2  # the steps under way when it was revoked
    finally:
        llm.delay_s = 0.0
        llm.replies = []


def test_the_audit_log_has_every_request_and_no_secret(team: dict[str, Any], tmp_path: Path) -> None:
    with httpx.Client(base_url=team["url"], timeout=30) as client:
        token = team["tokens"]["reader-a"]
        client.get(f"/api/info?token={token}")
        client.post(
            "/api/indexes/a/ask",
            json={"question": "the secret question text"},
            headers={"Authorization": f"Bearer {token}"},
        )
        client.get("/api/info", headers={"Authorization": "Bearer not-a-token-at-all"})
    lines = [json.loads(line) for line in team["audit"].read_text().splitlines()]
    assert {"time", "token", "method", "route", "index", "status", "ms"} <= set(lines[-1])
    last = lines[-3:]
    assert [(e["token"], e["route"], e["index"], e["status"]) for e in last] == [
        ("reader-a", "/api/info", "a", 200),
        ("reader-a", "/api/indexes/a/ask", "a", 403),
        (None, "/api/info", "a", 401),
    ]
    text = team["audit"].read_text()
    assert not any(t in text for t in team["tokens"].values())
    assert "secret question" not in text and "sk-KEY" not in text
    assert stat.S_IMODE(os.stat(team["audit"]).st_mode) == 0o600


def test_questions_are_logged_only_when_enabled(indexes: dict[str, Index], tmp_path: Path) -> None:
    file = TokenFile(tmp_path / "tokens.json")
    token = file.add("asker", "ask", ["a"])
    audit = AuditLog(tmp_path / "audit.jsonl", questions=True)
    server = LiveServer(create_app(indexes, Settings(), access=Access.load(file.path, None), audit=audit))
    try:
        with httpx.Client(base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {token}"}) as client:
            client.post("/api/indexes/a/ask", json={"question": "  ", "max_steps": 0})
            client.post("/api/indexes/a/conversations/nope/ask", json={"question": "which abbey?"})
    finally:
        server.close()
        audit.close()
    logged = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert logged[-1]["question"] == "which abbey?" and logged[-1]["status"] == 404
    assert token not in (tmp_path / "audit.jsonl").read_text()


def test_the_token_file_holds_hashes_only_and_a_revoked_token_stops_working(team: dict[str, Any]) -> None:
    file: TokenFile = team["file"]
    text = file.path.read_text()
    assert stat.S_IMODE(os.stat(file.path).st_mode) == 0o600
    assert not any(token in text for token in team["tokens"].values())
    assert all(token.startswith("arag_") and len(token) > 40 for token in team["tokens"].values())
    extra = file.add("temporary", "read", ["a"])
    with httpx.Client(base_url=team["url"], timeout=30, headers={"Authorization": f"Bearer {extra}"}) as client:
        assert client.get("/api/indexes/a/info").status_code == 200  # a new token works without a restart
        assert file.revoke("temporary")
        os.utime(file.path, (1, 1))  # a change the reload notices even within one mtime tick
        assert client.get("/api/indexes/a/info").status_code == 401


@settings(max_examples=60 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    token=st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=300),
    header=st.sampled_from(["Authorization", "authorization", "Cookie", "X-Token"]),
    scheme=st.sampled_from(["Bearer ", "bearer ", "Basic ", "", "Bearer  "]),
)
def test_fuzzed_tokens_and_headers_are_refused_cleanly(
    team: dict[str, Any], token: str, header: str, scheme: str
) -> None:
    value = (f"arag_token={token}" if header == "Cookie" else scheme + token).strip(" ")  # as a client sends it
    with httpx.Client(base_url=team["url"], timeout=30) as client:
        response = client.get("/api/indexes/a/info", headers={header: value.encode("latin-1")})
    assert response.status_code == 401


@pytest.mark.parametrize(
    "path,scope,index",
    [
        ("/api/indexes/a/ask", "ask", "a"),
        ("/api/indexes/a/conversations/x/ask/stream", "ask", "a"),
        ("/api/indexes/b/mcp/", "read", "b"),
        ("/api/search/keyword", "read", "default"),
        ("/mcp", "read", "default"),
        ("/api/runs/x", "admin", None),
        ("/static/app.js", "read", None),
        ("/api/indexes", "read", None),
    ],
)
def test_route_rule(path: str, scope: str, index: str | None) -> None:
    route = route_of(path, "default")
    assert (route.scope, route.index) == (scope, index)


def test_token_commands(tmp_path: Path) -> None:
    file = tmp_path / "conf" / "tokens.json"

    def arag(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COLUMNS": "200"}
        return subprocess.run([sys.executable, "-m", "arag", "token", *args, "--file", str(file)],
                              capture_output=True, text=True, env=env)  # fmt: skip

    added = arag("add", "alice", "--index", "docs", "--scope", "ask")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert token.startswith("arag_") and token not in file.read_text()
    assert stat.S_IMODE(os.stat(file).st_mode) == 0o600
    assert "open documents only" in added.stderr
    hr = arag("add", "hana", "--index", "docs", "--group", "hr", "--group", "finance")
    assert hr.returncode == 0 and "the open documents and those of finance, hr" in hr.stderr, hr.stderr
    assert arag("add", "root", "--scope", "admin").returncode == 0
    assert arag("add", "svc", "--index", "docs", "--all-documents").returncode == 0
    listed = arag("list", "--json")
    assert [entry | {"created": ""} for entry in json.loads(listed.stdout)] == [
        {"name": "alice", "scope": "ask", "indexes": ["docs"], "created": "", "groups": []},
        {"name": "hana", "scope": "read", "indexes": ["docs"], "created": "", "groups": ["finance", "hr"]},
        {"name": "root", "scope": "admin", "indexes": [], "created": "", "groups": None},  # reads every document
        {"name": "svc", "scope": "read", "indexes": ["docs"], "created": "", "groups": None},
    ]
    assert token not in listed.stdout
    assert [line.split("\t")[3] for line in arag("list").stdout.splitlines()] == ["-", "finance,hr", "*", "*"]
    for bad, message in (
        (("add", "alice", "--index", "docs"), "exists"),
        (("add", "bob", "--scope", "read"), "name the indexes"),
        (("add", "carol", "--index", "d", "--scope", "root"), "scope"),
        (("add", "dan", "--index", "d", "--group", "h r"), "'h r' is not a group name"),
        (("add", "eve", "--index", "d", "--group", "hr", "--all-documents"), "not both"),
        (("revoke", "nobody"), "no token named"),
    ):
        failed = arag(*bad)
        assert failed.returncode != 0 and message in failed.stderr and "Traceback" not in failed.stderr, failed.stderr
    for name in ("alice", "hana", "root", "svc"):
        assert arag("revoke", name).returncode == 0
    assert json.loads(arag("list", "--json").stdout) == []


def test_arag_serve_with_two_named_indexes_tokens_and_an_audit_log(tmp_path: Path) -> None:
    import socket
    import time

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.md").write_text(f"Document {name} text.")
        build_index([tmp_path / name], tmp_path / f"{name}-idx", fake_settings())
    file = TokenFile(tmp_path / "tokens.json")
    token = file.add("bee", "read", ["b"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "arag", "serve", "--index", f"a={tmp_path / 'a-idx'}", "--index",
               f"b={tmp_path / 'b-idx'}", "--port", str(port), "--tokens-file", str(file.path),
               "--audit-log", str(tmp_path / "audit.jsonl")]  # fmt: skip
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"})
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    first = client.get("/api/indexes")
                    break
                except httpx.TransportError:
                    assert server.poll() is None and time.monotonic() < deadline, "arag serve did not start"
                    time.sleep(0.2)
            assert first.status_code == 401
            auth = {"Authorization": f"Bearer {token}"}
            assert client.get("/api/indexes", headers=auth).json() == [{"name": "b", "default": False, "documents": 1}]
            hits = client.post("/api/indexes/b/search/keyword", json={"keywords": ["text"]}, headers=auth).json()
            assert [h["chunk_id"] for h in hits] == ["b/b.md#0"]
            assert client.get("/api/info", headers=auth).status_code == 404  # the default is a
            # a sync of b while the server runs: its next requests read the new generation, no restart
            (tmp_path / "b" / "b.md").unlink()
            (tmp_path / "b" / "new.md").write_text("Fresh words arrive.")
            build_index([tmp_path / "b"], tmp_path / "b-idx", fake_settings(), sync=True)
            search = {"keywords": ["Fresh words"]}
            while not client.post("/api/indexes/b/search/keyword", json=search, headers=auth).json():
                assert time.monotonic() < deadline + 30, "the server kept the old generation"
                time.sleep(0.2)
            assert client.post("/api/indexes/b/search/keyword", json={"keywords": ["text"]}, headers=auth).json() == []
    finally:
        server.terminate()
        server.wait(timeout=30)
    logged = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(e["token"], e["status"]) for e in logged][:2] == [(None, 401), ("bee", 200)]
    assert {e["token"] for e in logged} == {None, "bee"} and not any(token in json.dumps(e) for e in logged)
    assert "Traceback" not in (server.stderr.read() if server.stderr else "")
