"""Traces of questions, exported with OpenTelemetry (the ``trace`` extra: ``pip install 'a-rag[trace]'``).

Each question is one span ``arag.question`` with a child ``arag.step`` per turn of the loop; a step holds its
``arag.model`` call (tokens, latency: the span's duration) and its ``arag.tool`` call (the chunk ids it returned,
retrieved tokens). Attribute names follow OpenTelemetry's GenAI conventions where one exists (``gen_ai.*``).
Question and answer texts are recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

Where spans go: a program that set a tracer provider (the OpenTelemetry API's global one) gets them there; the
``arag`` commands set one up with an OTLP/HTTP exporter when an ``OTEL_*`` variable asks for traces
(:func:`configure`), so they land in Jaeger, Langfuse or any OTLP collector. Without the extra, or unconfigured,
every call here does nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_provider: Any = None  # a provider set with use() (tests, programs that keep theirs apart); else the global one


def _api() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


def use(provider: Any) -> None:
    """Send a-rag's spans to ``provider`` (an SDK ``TracerProvider``) instead of the global one; None: undo."""
    global _provider
    _provider = provider


def wanted() -> bool:
    """Whether the environment asks for traces (the standard OTLP variables, or an exporter other than none)."""
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none" or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return bool(
        exporter
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def configure() -> bool:
    """Export spans over OTLP/HTTP as the ``OTEL_*`` variables say (endpoint, headers, service name), when they ask
    for traces; flushed at exit. Returns whether traces are exported. Raises MissingExtraError without the SDK."""
    if not wanted():
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        from arag.errors import MissingExtraError

        raise MissingExtraError(
            "OTEL_* variables ask for traces, which need the OpenTelemetry SDK: pip install 'a-rag[trace]' "
            "(or unset them)"
        ) from None
    from arag.version import __version__

    service = os.environ.get("OTEL_SERVICE_NAME") or "a-rag"
    provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": __version__}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # the last spans are sent before the command exits
    return True


def parent_from(headers: Mapping[str, str]) -> Any:
    """The caller's trace context (W3C ``traceparent``/``tracestate`` headers), or None."""
    if "traceparent" not in {k.lower() for k in headers}:
        return None
    try:
        from opentelemetry.propagate import extract
    except ImportError:
        return None
    return extract(dict(headers))


def _tracer() -> Any:
    api = _api()
    if api is None:
        return None
    from arag.version import __version__

    return (_provider or api.get_tracer_provider()).get_tracer("arag", __version__)


class QuestionTrace:
    """The spans of one question. Spans are started and ended explicitly, with parents given, so a question that
    runs in a worker thread (the HTTP server, ``arag chat``) is traced as one tree."""

    def __init__(self, question: str, attributes: dict[str, Any], parent: Any = None) -> None:
        tracer = _tracer()
        self._api = _api()
        self._tracer = tracer
        self.content = os.environ.get(CAPTURE_CONTENT, "").lower() == "true"
        self._step: Any = None
        self.root: Any = None
        if tracer is None:
            return
        attributes = {**attributes, "arag.question.chars": len(question)}
        if self.content:
            attributes["arag.question"] = question
        root = tracer.start_span("arag.question", context=parent, attributes=_clean(attributes))
        self.root = root if root.is_recording() else None  # no provider set up: nothing to record

    @property
    def active(self) -> bool:
        return self.root is not None

    def _under(self, span: Any) -> Any:
        return self._api.set_span_in_context(span)

    def step(self, number: int, final: bool = False) -> None:
        """A new turn of the loop (the one before ends)."""
        if not self.active:
            return
        self._end_step()
        attributes = {"arag.step": number, "arag.step.final": final}
        self._step = self._tracer.start_span("arag.step", context=self._under(self.root), attributes=attributes)

    def model_call(self, model: str, latency_s: float, usage: Any, finish_reason: str | None) -> None:
        """A model call that just ended, ``latency_s`` long."""
        if not self.active:
            return
        end = time.time_ns()
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens,
            "gen_ai.response.finish_reasons": [finish_reason] if finish_reason else [],
        }
        parent = self._under(self._step or self.root)
        span = self._tracer.start_span(
            "arag.model", context=parent, attributes=_clean(attributes), start_time=end - int(latency_s * 1e9)
        )
        span.end(end_time=end)

    @contextlib.contextmanager
    def tool(self, name: str, arguments: Any, by_model: bool) -> Iterator[Any]:
        """Around a tool call; the caller passes its result to the yielded function."""
        if not self.active:
            yield lambda result: None
            return
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "arag.tool.by_model": by_model}
        if self.content:
            attributes["arag.tool.arguments"] = str(arguments)[:2000]
        span = self._tracer.start_span("arag.tool", context=self._under(self._step or self.root), attributes=attributes)

        def outcome(result: Any) -> None:
            span.set_attributes(
                _clean({
                    "arag.tool.ok": result.ok,
                    "arag.chunk_ids": list(result.chunk_ids),
                    "arag.retrieved_tokens": result.retrieved_tokens,
                })
            )  # fmt: skip

        try:
            yield outcome
        except BaseException as exc:
            span.record_exception(exc)
            raise
        finally:
            span.end()

    def end(self, result: Any) -> None:
        """The question's outcome (an AgentResult)."""
        if not self.active:
            return
        self._end_step()
        attributes = {
            "arag.stop_reason": result.stop_reason,
            "arag.steps": result.steps,
            "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": result.usage.completion_tokens,
            "arag.retrieved_tokens": result.retrieved_tokens,
            "arag.chunks_read": list(result.read_chunks)[:200],
        }
        if self.content:
            attributes["arag.answer"] = result.answer
        self.root.set_attributes(_clean(attributes))
        if result.error:
            from opentelemetry.trace import Status, StatusCode

            self.root.set_status(Status(StatusCode.ERROR, str(result.error)[:500]))
        self.root.end()
        self.root = None

    def abort(self, error: BaseException) -> None:
        """The question ended by an exception that is not the model's (it propagates)."""
        if not self.active:
            return
        from opentelemetry.trace import Status, StatusCode

        self._end_step()
        self.root.record_exception(error)
        self.root.set_status(Status(StatusCode.ERROR, type(error).__name__))
        self.root.end()
        self.root = None

    def _end_step(self) -> None:
        if self._step is not None:
            self._step.end()
            self._step = None


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes str, bool, int, float and lists of one of them; None is left out."""
    return {k: v for k, v in attributes.items() if v is not None}
