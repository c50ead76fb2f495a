"""One client for every chat endpoint: the openai SDK against any OpenAI-compatible base URL.

HTTP, timeouts and retries (429 with Retry-After, 5xx, connection errors) are the SDK's; this module
adds usage accounting and cost.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from arag.errors import ConfigError, LLMError
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


class ChatModel:
    """A chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter, ...)."""

    def __init__(self, settings: LLMSettings, prices: dict[str, tuple[float, float]] | None = None) -> None:
        if not settings.model:
            raise ConfigError("no model configured: set ARAG_MODEL (and ARAG_BASE_URL / ARAG_API_KEY)")
        from openai import OpenAI

        self.settings = settings
        self.model = settings.model
        self.prices = {**DEFAULT_PRICES, **(prices or {})}
        self.client = OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> ChatTurn:
        import openai

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
        try:
            response = self.client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            raise LLMError(f"{self.model} endpoint answered HTTP {exc.status_code}: {_brief(exc)}") from None
        except openai.APIConnectionError as exc:
            raise LLMError(f"cannot reach the model endpoint {self.settings.base_url}: {exc}") from None
        except openai.OpenAIError as exc:
            raise LLMError(f"model call failed: {exc}") from None
        usage = Usage(calls=1)
        if response.usage is not None:
            usage.prompt_tokens = response.usage.prompt_tokens or 0
            usage.completion_tokens = response.usage.completion_tokens or 0
            details = getattr(response.usage, "prompt_tokens_details", None)
            usage.cached_tokens = (getattr(details, "cached_tokens", 0) or 0) if details else 0
        if not response.choices:
            return ChatTurn({"role": "assistant", "content": ""}, "", [], None, usage)
        choice = response.choices[0]
        message = choice.message
        tool_calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments or ""},
            }
            for c in (message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        content = message.content or ""
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            assistant["tool_calls"] = tool_calls
        return ChatTurn(assistant, content, tool_calls, choice.finish_reason, usage)

    def cost(self, usage: Usage) -> float | None:
        """USD for ``usage`` at this model's price, or None when the price is unknown (e.g. local models)."""
        price = self.prices.get(self.model) or self.prices.get(self.model.split("/")[-1])
        if price is None:
            return None
        return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000


def _brief(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "…"
