"""One client for every chat endpoint: the openai SDK against any OpenAI-compatible base URL.

Retries (429 with Retry-After, 5xx, connection errors, timeouts) are the SDK's. This module adds what the
SDK does not do:

* a deadline on each *whole* request (httpx's timeouts bound each read, so a server that drips a byte
  every few seconds would otherwise hold a call forever) — a timed-out attempt is a timeout to the SDK,
  which retries it a bounded number of times;
* an optional deadline on the whole call, retries included (the agent's per-question time budget);
* a reply parser that accepts anything a server may send and turns what is not a chat completion into
  one clear :class:`LLMError` (the SDK's models are built without validation, so a ``message: null`` or
  a numeric ``content`` would otherwise surface later as an AttributeError);
* usage accounting and cost.
"""

from __future__ import annotations

import json
import math
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

import anyio
import httpx2

from arag.errors import ConfigError, LLMError, OutputRejected, TimeBudgetExceeded
from arag.settings import LLMSettings

# USD per 1M tokens (input, output); override or extend with Settings.prices.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
    "gpt-5-nano": (0.05, 0.40),
}
MAX_REPLY_BYTES = 16 * 1024 * 1024


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.calls += other.calls

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class ChatTurn:
    message: dict[str, Any]  # the assistant message, ready to append to the conversation
    content: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str | None
    usage: Usage
    # llama.cpp's own timings of the call, where the server sends them ("prompt_ms", "generation_ms", and while
    # drafting "drafted_tokens", "accepted_drafts"): the speed of the machine at the time, which a latency alone
    # cannot separate from the work done
    timings: dict[str, float] = field(default_factory=dict)


class ChatModel:
    """A chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter, ...)."""

    def __init__(
        self, settings: LLMSettings, prices: dict[str, tuple[float, float]] | None = None, local: bool = False
    ) -> None:
        if not settings.model:
            raise ConfigError("no model configured: set ARAG_MODEL (and ARAG_BASE_URL / ARAG_API_KEY)")
        self.settings = settings
        self.model = settings.model
        self.local = local  # the embedded model: its errors say so, not "cannot reach the endpoint"
        self.prices = {**DEFAULT_PRICES, **(prices or {})}

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
        deadline: float | None = None,
    ) -> ChatTurn:
        """One chat completion. ``deadline`` (time.monotonic()) bounds the call, retries included."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
            if parallel_tool_calls is not None:
                kwargs["parallel_tool_calls"] = parallel_tool_calls
        if response_format:
            kwargs["response_format"] = response_format
        for key in ("temperature", "reasoning_effort"):
            value = getattr(self.settings, key)
            if value is not None:
                kwargs[key] = value
        if self.settings.max_tokens:
            kwargs["max_tokens"] = self.settings.max_tokens
        budget = None if deadline is None else deadline - time.monotonic()
        if budget is not None and budget <= 0:
            raise TimeBudgetExceeded("the time budget for this question ran out before the model call")
        body = self._post(kwargs, budget)
        return parse_completion(body, self._label())

    def _post(self, kwargs: dict[str, Any], budget: float | None) -> bytes:
        import openai

        try:
            return anyio.run(self._apost, kwargs, budget)
        except TimeoutError:
            raise TimeBudgetExceeded(
                f"the time budget for this question ran out while waiting for {self._label()}"
            ) from None
        except (openai.APITimeoutError, _TimedOut):
            retried = self.settings.retry_timeouts and not self.local
            attempts = 1 + (self.settings.max_retries if retried else 0)
            if self.local:
                raise LLMError(
                    f"the local model did not answer within {self.settings.timeout_s:g} s: it is too slow on this "
                    "machine for this prompt; raise ARAG_LLM__TIMEOUT_S, lower --max-steps, or use a smaller model"
                ) from None
            raise LLMError(
                f"{self._label()} did not send a complete reply within {self.settings.timeout_s:g} s "
                f"({attempts} attempt{'s' if attempts > 1 else ''}"
                f"{'' if retried else '; a timed-out request is not retried'}); check the endpoint or raise "
                "ARAG_LLM__TIMEOUT_S"
            ) from None
        except openai.APIStatusError as exc:
            message = f"{self._label()} answered HTTP {exc.status_code}: {_brief(exc)}"
            if exc.status_code == 500 and _PARSER_REJECTED in str(exc):
                raise OutputRejected(message) from None
            raise LLMError(message) from None
        except openai.APIConnectionError as exc:
            if _caused_by(exc, ReplyTooLarge):
                raise LLMError(
                    f"{self._label()} sent a reply larger than {MAX_REPLY_BYTES / 2**20:g} MiB; refused unread"
                ) from None
            if self.local:
                raise LLMError(f"the local model server stopped answering: {exc}") from None
            raise LLMError(f"cannot reach the model endpoint {self.settings.base_url}: {exc}") from None
        except openai.OpenAIError as exc:
            raise LLMError(f"model call failed: {_brief(exc)}") from None

    async def _apost(self, kwargs: dict[str, Any], budget: float | None) -> bytes:
        from openai import AsyncOpenAI

        transport = WholeRequestDeadline(
            httpx2.AsyncHTTPTransport(verify=_ssl_context(), retries=0), self.settings.timeout_s
        )
        async with (
            httpx2.AsyncClient(transport=transport, timeout=self.settings.timeout_s) as http,
            AsyncOpenAI(
                base_url=self.settings.base_url,
                api_key=self.settings.api_key or "not-needed",
                timeout=self.settings.timeout_s,
                max_retries=0 if self.local else self.settings.max_retries,
                http_client=http,
            ) as client,
        ):
            with anyio.fail_after(budget):  # None: no limit
                with anyio.CancelScope() as request:
                    if not self.settings.retry_timeouts:
                        # a request that timed out is final: the SDK's retry would wait the full deadline again
                        transport.on_timeout = request.cancel
                    raw = await client.chat.completions.with_raw_response.create(**kwargs)
                    return raw.http_response.content
            raise _TimedOut  # the scope was cancelled by a timeout

    def _label(self) -> str:
        return "the local model" if self.local else f"the {self.model} endpoint"

    def cost(self, usage: Usage) -> float | None:
        """USD for ``usage`` at this model's price, or None when the price is unknown (e.g. local models)."""
        price = self.prices.get(self.model) or self.prices.get(self.model.split("/")[-1])
        if price is None:
            return None
        return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000


@cache
def _ssl_context() -> ssl.SSLContext:
    # building the default context reads the CA bundle (~20 ms): once per process, not once per call
    return httpx2.create_ssl_context()


class _TimedOut(Exception):
    """A request overran its deadline and, timeouts not being retried, ended there."""


class WholeRequestDeadline(httpx2.AsyncBaseTransport):
    """Bounds a whole HTTP exchange — headers and body — by one deadline, and reports overruns as
    ``httpx2.ReadTimeout`` so that the openai SDK's own retry policy applies to them."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds
        self.on_timeout: Callable[[], Any] = lambda: None  # told of each overrun before it is raised

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = anyio.current_time() + self.seconds
        try:
            with anyio.fail_after(self.seconds):
                response = await self.inner.handle_async_request(request)
        except TimeoutError:
            self.on_timeout()
            raise httpx2.ReadTimeout(f"no response headers within {self.seconds:g} s", request=request) from None
        response.stream = _DeadlineStream(response.stream, deadline, request, self.on_timeout)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class ReplyTooLarge(httpx2.ReadError):
    """The endpoint's reply passed MAX_REPLY_BYTES: it answered, too much (not a connection that failed)."""


class _DeadlineStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, deadline: float, request: httpx2.Request, on_timeout: Callable[[], Any]) -> None:
        self.inner, self.deadline, self.request, self.on_timeout = inner, deadline, request, on_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        iterator = self.inner.__aiter__()
        received = 0
        while True:
            try:
                with anyio.fail_after(max(0.0, self.deadline - anyio.current_time())):
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                self.on_timeout()
                raise httpx2.ReadTimeout("the reply body did not complete in time", request=self.request) from None
            received += len(chunk)
            if received > MAX_REPLY_BYTES:
                raise ReplyTooLarge(f"reply larger than {MAX_REPLY_BYTES} bytes", request=self.request)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``kind`` is in ``exc``'s chain of causes (the openai SDK wraps the transport's errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


# ---------------------------------------------------------------------------- reply parsing
def parse_completion(body: bytes, label: str = "the model endpoint") -> ChatTurn:
    """A chat-completion body as a :class:`ChatTurn`, whatever the server sent.

    A body that is not a JSON object, or an error object, raises :class:`LLMError`. Odd fields are
    coerced: ``message: null`` → an empty reply, numeric or list ``content`` → text, ``arguments`` that are
    not a string → their JSON text (the tool then tells the model what is wrong with them)."""
    from arag.jsonsafe import clean_json_value, loads_bounded

    try:
        data = clean_json_value(loads_bounded(body))
    except (ValueError, RecursionError):
        raise LLMError(f"{label} replied with a body that is not JSON: {_preview(body)}") from None
    if not isinstance(data, dict):
        raise LLMError(f"{label} replied with JSON that is not a chat completion object: {_preview(body)}")
    if "error" in data and not data.get("choices"):
        raise LLMError(f"{label} replied with an error: {_preview(_text(data['error']).encode())}")
    usage = _usage(data.get("usage"))
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    content = _text(message.get("content"))
    tool_calls = _tool_calls(message.get("tool_calls"))
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        assistant["tool_calls"] = tool_calls
    finish = choice.get("finish_reason")
    return ChatTurn(assistant, content, tool_calls, finish if isinstance(finish, str) else None, usage, _timings(data))


def _timings(data: dict[str, Any]) -> dict[str, float]:
    timings = data.get("timings")
    if not isinstance(timings, dict):
        return {}
    found: dict[str, float] = {}
    # durations may be fractional; the draft counts (sent only while prompt-lookup drafting is on) are whole
    fields = (
        ("prompt_ms", "prompt_ms", (int, float)),
        ("generation_ms", "predicted_ms", (int, float)),
        ("drafted_tokens", "draft_n", int),
        ("accepted_drafts", "draft_n_accepted", int),
    )
    for ours, theirs, kind in fields:
        value = timings.get(theirs)
        if isinstance(value, kind) and not isinstance(value, bool) and 0 <= value < 1e9:
            found[ours] = round(float(value), 3) if kind is not int else value
    return found


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": "..."}]
        parts = [p.get("text") if isinstance(p, dict) else p for p in value]
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) == len(parts):
            return "".join(texts)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return str(type(value).__name__)


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    calls = []
    for i, call in enumerate(value[:64]):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        arguments = function.get("arguments")
        call_id = call.get("id")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id else f"call_{i}",
                "type": "function",
                "function": {
                    "name": name if isinstance(name, str) else _text(name),
                    "arguments": arguments if isinstance(arguments, str) else _text(arguments),
                },
            }
        )
    return calls


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(value) if 0 <= value < 2**53 else 0


def _usage(value: Any) -> Usage:
    usage = Usage(calls=1)
    if isinstance(value, dict):
        usage.prompt_tokens = _count(value.get("prompt_tokens"))
        usage.completion_tokens = _count(value.get("completion_tokens"))
        details = value.get("prompt_tokens_details")
        if isinstance(details, dict):
            usage.cached_tokens = _count(details.get("cached_tokens"))
    return usage


def _preview(body: bytes) -> str:
    text = body[:200].decode("utf-8", "replace")
    text = " ".join(text.split())
    return (text or "(empty)") + ("…" if len(body) > 200 else "")


# llama.cpp's chat parser on generated text it cannot parse: a known server bug under response_format (generation
# can end mid-object; seen on about one final answer in a hundred, docs/results.md)
_PARSER_REJECTED = "The model produced output that does not match the expected"


def _brief(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) < 300 else text[:300] + "…"
