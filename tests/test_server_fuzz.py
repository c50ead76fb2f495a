"""Every route of the OpenAPI surface, fuzzed: whatever a client sends — awkward strings (lone surrogates, NUL),
numbers JSON cannot hold (NaN, 1e999), bodies of any shape, damaged runs on disk — the answer is a status below 500
with a JSON reason (issue 51: a bad input is a 4xx on every route, not a list of cases)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.serve.access import Access, TokenFile
from arag.serve.http import create_app
from arag.settings import AgentSettings, LLMSettings, Settings
from conftest import FIXTURES, FUZZ_SCALE, fake_settings
from support.scripted_server import ScriptedServer, completion
from support.strategies import json_values

AWKWARD = st.sampled_from(
    ["\ud800", "a\udfffb", "\x00", "app.js\x00.html", "..", "%", "", " ", "x" * 5000, "Waldrada#0"]
)
TEXTS = AWKWARD | st.text(max_size=30)
# raw JSON numbers Python's parser takes but JSON cannot hold, written as a client may send them
RAW_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" * 400]


@pytest.fixture(scope="module", params=["the local user", "a token of groups"])
def client(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """The app as a server without tokens serves it, and as a token that reads its groups' documents sees it (every
    route then runs on a view of the index for that reader)."""
    folder = tmp_path_factory.mktemp("fuzz")
    build_index([FIXTURES / "hipporag_corpus.json"], folder / "idx", fake_settings())
    index = Index.open(folder / "idx", threads=1)
    runs = folder / "runs"
    for name, text in {"array": "[1, 2]\n", "no-id": '{"question": "q"}\n', "torn": '{"id": "q1", "predi'}.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "results.jsonl").write_text(text, encoding="utf-8")
    (runs / "bad-config").mkdir()
    (runs / "bad-config" / "results.jsonl").write_text('{"id": "q1", "prediction": "x"}\n', encoding="utf-8")
    (runs / "bad-config" / "config.json").write_text("[]", encoding="utf-8")
    model = ScriptedServer()
    model.default = completion("Waldrada [chunk Waldrada#0]")

    def agent(max_steps: int | None, served: Index) -> Agent:
        chat = ChatModel(LLMSettings(base_url=model.base_url, model="m", max_retries=0, timeout_s=30))
        return Agent(served, chat, AgentSettings(max_steps=max_steps or 2))

    access, headers = None, {}
    if request.param == "a token of groups":
        tokens = TokenFile(folder / "tokens.json")
        headers = {"Authorization": f"Bearer {tokens.add('fuzzer', 'admin', [], ['hr', 'eng'])}"}
        access = Access.load(tokens.path, None)
    app = create_app(index, Settings(), runs, agent_factory=agent, access=access)
    with TestClient(app, raise_server_exceptions=False, headers=headers) as test_client:
        yield test_client
    model.close()


def _routes(app: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path template, operation) of every route the OpenAPI description lists."""
    spec = app.openapi()
    return [
        (method.upper(), path, operation) for path, item in spec["paths"].items() for method, operation in item.items()
    ]


def _raw_body(value: object, number: str | None) -> bytes:
    text = json.dumps(value)  # lone surrogates as \\ud800 escapes, NaN and Infinity as Python writes them
    if number is not None:
        text = re.sub(r"(?<![\\w\\\\])-?\\d+(?:\\.\\d+)?", number, text, count=1)
    return text.encode()


@settings(max_examples=300 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_route_answers_a_bad_input_with_a_4xx_and_a_reason(client: TestClient, data: st.DataObject) -> None:
    method, template, operation = data.draw(st.sampled_from(_routes(client.app)))
    path = re.sub(
        r"\{(\w+)(?::path)?\}",
        lambda m: quote(data.draw(TEXTS, label=m.group(1)).encode("utf-8", "surrogatepass"), safe=""),
        template,
    )
    query = {
        p["name"]: data.draw(TEXTS, label=p["name"]) for p in operation.get("parameters", []) if p["in"] == "query"
    }
    url = path + ("?" + "&".join(f"{k}={quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in query.items())
                  if query else "")  # fmt: skip
    body = None
    if method in ("POST", "PUT", "PATCH"):
        shape = json_values | st.dictionaries(st.sampled_from(FIELDS), json_values | TEXTS, max_size=4)
        body = _raw_body(data.draw(shape), data.draw(st.none() | st.sampled_from(RAW_NUMBERS)))
    response = client.request(method, url, content=body, headers={"content-type": "application/json"})
    assert response.status_code < 500, (method, url, body, response.text[:300])
    if response.headers.get("content-type", "").startswith("application/json"):
        response.json()


# the names the routes' bodies have, so that the fuzz reaches past "field required"
FIELDS = ["question", "query", "keywords", "chunk_ids", "where", "top_k", "max_steps", "input", "model", "claim"]


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("POST", "/api/search/semantic", '{"query": "\\ud800"}'),
        ("POST", "/api/search/keyword", '{"keywords": ["x"], "where": "title=\\ud800"}'),
        ("POST", "/api/ask", '{"question": "q", "max_steps": NaN}'),
        ("POST", "/api/read", '{"chunk_ids": ["a"], "claim": "\\udfff"}'),
        ("POST", "/api/v1/embeddings", '{"input": "x", "model": "fake", "dimensions": 1e999}'),
        ("POST", "/api/conversations", '{"where": "\\ud800"}'),
        ("GET", "/api/runs/app.js%00.html", None),
        ("GET", "/api/runs/array", None),
        ("GET", "/api/runs/no-id/questions/q1", None),
        ("GET", "/api/compare?a=array&b=bad-config", None),
    ],
)
def test_the_inputs_that_were_500s_are_4xx_with_a_reason(client: TestClient, method: str, url: str, body: str) -> None:
    response = client.request(method, url, content=body.encode() if body else None)
    assert 400 <= response.status_code < 500, response.text[:300]
    assert response.json()["detail"]


def test_a_damaged_run_is_reported_and_skipped_the_rest_listed(client: TestClient) -> None:
    response = client.get("/api/runs")
    assert response.status_code == 200
    skipped = json.loads(response.headers["x-skipped-runs"])
    assert sorted(s.split(":")[0] for s in skipped) == ["array", "bad-config", "no-id"]
    assert [run["name"] for run in response.json()] == ["torn"]  # a torn last line: the run so far, nothing lost
