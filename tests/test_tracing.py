"""Traces: the span tree of one question (OpenTelemetry SDK, in-memory exporter), the caller's traceparent honoured
by the HTTP API, the OTEL_* variables read by the arag commands, and nothing at all when tracing is off."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from arag import tracing
from arag.agent import Agent
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.serve.http import create_app
from arag.settings import AgentSettings, LLMSettings, Settings
from support.live_server import LiveServer
from support.scripted_server import ScriptedServer, completion, tool_call


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    yield exporter
    tracing.use(None)


def _agent(index: Index, llm: ScriptedServer) -> Agent:
    model = ChatModel(LLMSettings(base_url=llm.base_url, model="gpt-4o-mini", max_retries=0, timeout_s=30))
    return Agent(index, model, AgentSettings(max_steps=4, profile="paper"))


def _script(llm: ScriptedServer) -> None:
    llm.replies[:] = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Waldrada"]})], prompt_tokens=120),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Waldrada#0"]})], prompt_tokens=300),
        completion("Lothair II [Waldrada#0].", prompt_tokens=500, completion_tokens=12),
    ]


def test_one_question_is_one_span_tree(hippo_index: Index, server: ScriptedServer, spans: InMemorySpanExporter) -> None:
    _script(server)
    result = _agent(hippo_index, server).run("Who married Waldrada?")
    assert result.stop_reason == "answered"
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    (root,) = [s for s in finished if s.name == "arag.question"]
    assert root.parent is None
    assert root.attributes["arag.stop_reason"] == "answered" and root.attributes["arag.steps"] == 2
    assert root.attributes["gen_ai.usage.input_tokens"] == 920
    assert "arag.question" not in root.attributes  # no content unless asked for
    steps = sorted((s for s in finished if s.name == "arag.step"), key=lambda s: s.start_time)
    assert [s.attributes["arag.step"] for s in steps] == [1, 2, 3]
    assert all(s.parent.span_id == root.context.span_id for s in steps)

    def children(span: Any) -> list[str]:
        return sorted(s.name for s in finished if s.parent is not None and s.parent.span_id == span.context.span_id)

    assert children(steps[0]) == ["arag.model", "arag.tool"]
    assert children(steps[1]) == ["arag.model", "arag.tool"]
    assert children(steps[2]) == ["arag.model"]
    tools = sorted((s for s in finished if s.name == "arag.tool"), key=lambda s: s.start_time)
    assert tools[0].attributes["gen_ai.tool.name"] == "keyword_search"
    assert "Waldrada#0" in tools[0].attributes["arag.chunk_ids"]
    assert tools[1].attributes["arag.chunk_ids"] == ("Waldrada#0",) and tools[1].attributes["arag.retrieved_tokens"] > 0
    models = sorted((s for s in finished if s.name == "arag.model"), key=lambda s: s.start_time)
    assert [m.attributes["gen_ai.usage.input_tokens"] for m in models] == [120, 300, 500]
    assert all(m.end_time >= m.start_time and m.attributes["gen_ai.request.model"] == "gpt-4o-mini" for m in models)
    assert {s.context.trace_id for s in finished} == {root.context.trace_id}
    assert all(by_id.get(s.parent.span_id) for s in finished if s.parent is not None)


def test_content_is_recorded_only_when_asked(
    hippo_index: Index, server: ScriptedServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracing.CAPTURE_CONTENT, "true")
    _script(server)
    _agent(hippo_index, server).run("Who married Waldrada?")
    (root,) = [s for s in spans.get_finished_spans() if s.name == "arag.question"]
    assert root.attributes["arag.question"] == "Who married Waldrada?"
    assert root.attributes["arag.answer"].startswith("Lothair II")


def test_the_http_api_honours_the_callers_traceparent(
    hippo_index: Index, server: ScriptedServer, spans: InMemorySpanExporter
) -> None:
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

    def agent(max_steps: int | None, served: Index) -> Agent:
        return _agent(served, server)

    live = LiveServer(create_app(hippo_index, Settings(), agent_factory=agent))
    try:
        _script(server)
        headers = {"traceparent": f"00-{trace_id}-{parent_id}-01"}
        answer = httpx.post(
            f"{live.url}/api/ask", json={"question": "Who married Waldrada?"}, headers=headers, timeout=60
        )
        assert answer.status_code == 200, answer.text
        _script(server)
        with httpx.stream("POST", f"{live.url}/api/ask/stream", json={"question": "Who?"}, timeout=60) as events:
            assert "event: done" in "".join(events.iter_text())
    finally:
        live.close()
    roots = [s for s in spans.get_finished_spans() if s.name == "arag.question"]
    assert len(roots) == 2
    joined, own = roots
    assert format(joined.context.trace_id, "032x") == trace_id and format(joined.parent.span_id, "016x") == parent_id
    assert joined.parent.is_remote
    assert own.parent is None and format(own.context.trace_id, "032x") != trace_id  # no header: a trace of its own
    assert len([s for s in spans.get_finished_spans() if s.context.trace_id == joined.context.trace_id]) >= 6


def test_without_a_provider_or_configuration_nothing_is_traced(hippo_index: Index, server: ScriptedServer) -> None:
    trace = tracing.QuestionTrace("q", {})
    assert not trace.active
    _script(server)
    assert _agent(hippo_index, server).run("Who married Waldrada?").stop_reason == "answered"


def test_otel_variables_configure_the_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    assert not tracing.wanted()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert tracing.wanted()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not tracing.wanted()
    # a command with an endpoint that is down still works: export failures are the SDK's to log, not the user's
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_TRACES_EXPORTER": "otlp",
           "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "arag", "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr


def test_arag_ask_exports_its_trace_to_an_otlp_receiver(tmp_path: Path, server: ScriptedServer) -> None:
    """A real OTLP/HTTP receiver (protobuf over HTTP, as a collector, Jaeger or Langfuse takes it)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from arag.corpus.build import build_index
    from conftest import FIXTURES, fake_settings

    received: list[Any] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received.append((self.path, request))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    build_index([FIXTURES / "hipporag_corpus.json"], tmp_path / "idx", fake_settings())
    _script(server)
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
           "OTEL_SERVICE_NAME": "team-rag", "COLUMNS": "200"}  # fmt: skip
    command = [sys.executable, "-m", "arag", "ask", "Who married Waldrada?", "--index", str(tmp_path / "idx"),
               "--base-url", server.base_url, "--model", "gpt-4o-mini", "--profile", "paper"]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    finally:
        receiver.shutdown()
    assert done.returncode == 0, done.stderr
    assert received and all(path == "/v1/traces" for path, _ in received)
    spans, services = [], set()
    for _path, request in received:
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            services.add(attributes.get("service.name"))
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
    assert services == {"team-rag"}
    names = sorted(s.name for s in spans)
    assert names.count("arag.question") == 1 and names.count("arag.step") == 3 and names.count("arag.model") == 3
    assert names.count("arag.tool") == 2 and len({s.trace_id for s in spans}) == 1
