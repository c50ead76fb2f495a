"""Choosing the chat model for a run: the configured endpoint, else the embedded local model."""

from __future__ import annotations

from typing import Any

from arag.errors import ConfigError
from arag.models.endpoint import ChatModel
from arag.settings import LLMSettings, Settings

_servers: dict[str, Any] = {}  # one embedded server per process and model file
LOCAL_TIMEOUT_S = 300.0
# an action or a short answer: a cap keeps a rambling small model from spending a minute per step (~0.1 s per
# generated token on 2 cores)
LOCAL_MAX_TOKENS = 320


def chat_model(
    settings: Settings, llm: LLMSettings | None = None, local_model: str | None = None, threads: int = 2
) -> tuple[ChatModel, bool]:
    """The chat model and whether it is the embedded one (which defaults to constrained JSON actions)."""
    llm = llm or settings.llm
    if llm.base_url or llm.model:
        if not llm.model:
            raise ConfigError("ARAG_BASE_URL is set but ARAG_MODEL is not: name the model to use")
        return ChatModel(llm, settings.prices), False
    from arag.models.local import LocalServer, local_available, lookup_tokens, resolve_model

    if not local_available():
        raise ConfigError(
            "no model configured. Either point at an OpenAI-compatible endpoint "
            "(export ARAG_BASE_URL=https://api.openai.com/v1 ARAG_API_KEY=... ARAG_MODEL=gpt-4o-mini) "
            "or install the embedded local model: bash scripts/setup.sh local"
        )
    path = resolve_model(local_model)
    # the agent and the judge share one server (the first one's threads)
    drafts = lookup_tokens(llm)
    key = f"{path}:{drafts}:{llm.flash_attention}"
    server = _servers.get(key)
    if server is None:
        server = _servers[key] = LocalServer(
            path, threads=threads, lookup_tokens=drafts, flash_attention=llm.flash_attention
        )
    local = llm.model_copy(
        update={
            "base_url": server.base_url,
            "model": server.model_name,
            "api_key": "local",
            "temperature": 0.0 if llm.temperature is None else llm.temperature,
            "max_tokens": llm.max_tokens or LOCAL_MAX_TOKENS,
            # two CPU cores shared with other work can take minutes per call; the question's own time budget
            # still bounds the whole question
            "timeout_s": llm.timeout_s if "timeout_s" in llm.model_fields_set else LOCAL_TIMEOUT_S,
        }
    )
    return ChatModel(local, settings.prices, local=True), True
