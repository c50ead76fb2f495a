"""Typed settings: one source of truth with a description for every field.

Precedence (highest first): CLI flags, environment (``ARAG_*``), config file, defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from arag.errors import ConfigError

ToolName = Literal["keyword_search", "semantic_search", "chunk_read"]
TOOL_NAMES: tuple[ToolName, ...] = ("keyword_search", "semantic_search", "chunk_read")
DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"


class ChunkerSettings(BaseModel):
    """How documents become chunks and sentences (paper §3.1). Recorded in the index manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_tokens: int = Field(1000, ge=16, le=100_000, description="Target chunk size in tokens (cl100k_base).")
    encoding: str = Field("cl100k_base", description="tiktoken encoding used to count tokens.")


class IndexSettings(BaseModel):
    """Everything that decides what an index contains; changing any of it means a different index."""

    model_config = ConfigDict(extra="forbid")

    chunker: ChunkerSettings = Field(default_factory=ChunkerSettings, description="Chunking settings.")
    embedder: str = Field(
        DEFAULT_EMBEDDER,
        description=(
            "Embedding model: 'sentence-transformers/all-MiniLM-L6-v2' (ONNX, no torch), 'st:NAME_OR_PATH' "
            "(any sentence-transformers model, extra 'st'), 'openai:MODEL' (an OpenAI-compatible /embeddings "
            "endpoint), or 'fake' (hashing embedder for tests)."
        ),
    )
    vector_dtype: Literal["f32", "f16", "i8"] = Field(
        "f32", description="Storage precision of sentence vectors; f16/i8 shrink large indexes 2x/4x."
    )
    ann: bool = Field(
        False,
        description="Also build an inverted-file (IVF) index, ~4·sqrt(sentences) lists, for approximate search.",
    )
    ann_probes: int = Field(
        128,
        ge=1,
        le=65536,
        description="IVF lists scanned per approximate query: higher is slower and more exact (docs/benchmarks.md).",
    )
    hnsw_ef_search: int = Field(
        400,
        ge=1,
        le=1000,
        description="PostgreSQL indexes built with ann: HNSW candidate list per approximate query (hnsw.ef_search).",
    )
    pg_statement_timeout_s: float = Field(
        30.0, gt=0, le=3600, description="PostgreSQL indexes: a search statement running longer is cancelled."
    )
    embed_batch_size: int = Field(32, ge=1, le=4096, description="Sentences per embedding batch.")
    threads: int = Field(
        default_factory=lambda: max(1, min(2, os.cpu_count() or 1)),
        ge=1,
        description="CPU threads for embedding and vector search.",
    )


class LLMSettings(BaseModel):
    """An OpenAI-compatible chat endpoint."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="Endpoint base URL, e.g. https://api.openai.com/v1.")
    api_key: str | None = Field(None, description="API key (local servers accept any string).")
    model: str | None = Field(None, description="Model name as the endpoint knows it.")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature (passed through).")
    reasoning_effort: str | None = Field(None, description="Reasoning effort for reasoning models.")
    max_tokens: int | None = Field(None, ge=1, description="Max completion tokens per call.")
    lookup_tokens: int = Field(
        0,
        ge=0,
        le=64,
        description="Embedded model only: prompt-lookup speculative decoding drafts up to this many tokens copied "
        "from the conversation and verifies them in one batch (llama.cpp n-gram speculation); 0 = off (the "
        "default: measured slower on 2 cores, where about half of the drafts were rejected).",
    )
    flash_attention: Literal["auto", "on", "off"] = Field(
        "off",
        description="Embedded model only: llama.cpp's flash attention. Off by default: on 2 AVX2 cores it made "
        "generation ~16 % slower at the agent's 1-3k-token prompts and prompt processing only ~3 % faster "
        "(benchmarks/bench_local_model.py, docs/benchmarks.md); 'auto' lets llama.cpp decide (on for a CPU).",
    )
    timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="Deadline for each whole request (headers and body), seconds; an overrun counts as a timeout.",
    )
    max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Retries the openai SDK makes on 429, 5xx, connection errors and timeouts "
        "(the embedded model is never retried).",
    )


class AgentSettings(BaseModel):
    """The ReAct loop (paper §3.3)."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(10, ge=1, le=200, description="Tool-calling steps before the model must answer.")
    token_budget: int = Field(
        60_000, ge=100, description="Retrieved-plus-prompt token budget; reaching it forces the final answer."
    )
    action_mode: Literal["auto", "native", "json"] = Field(
        "auto",
        description="'native' tool calls, 'json' constrained actions (response_format), 'auto' picks per model.",
    )
    parallel_tool_calls: bool = Field(False, description="Execute every tool call in a response, not only the first.")
    profile: Literal["auto", "paper", "compact"] = Field(
        "auto",
        description="'paper': the paper's prompt and loop; 'compact': for small models (a worked example in the "
        "prompt, read hints, a repeated call reads the best unread hit, an answer given before any read gets the "
        "top hits read first, a short final answer); 'auto': compact for the embedded model, paper otherwise.",
    )
    inline_read_tokens: int = Field(
        0,
        ge=0,
        le=100_000,
        description="Compact profile: a search's top hit is shown as chunk_read would show it (and counts as read) "
        "when that is at most this many tokens (a long chunk's focused view counts by what it shows), saving a "
        "small model a read step and a model call; 0 = off (the paper: snippets only).",
    )
    title_reads: bool = Field(
        False,
        description="Compact profile: a keyword search's hit whose document title is one of its keywords (a trailing "
        '"(…)" aside) is shown as chunk_read would show it and counts as read, at most reads_per_search such hits '
        "per search, saving the read step. Measured on 2Wiki (docs/results.md, title reads): no faster on 2 cores "
        "(fewer read calls, more prompt tokens) and 1 point lower on 100 questions; off (the paper: snippets only).",
    )
    choice_answers: bool = Field(
        True,
        description="Compact profile with JSON actions: the answer to an either-or question ('…, A or B?') must be "
        "one of the two options, and the answer to a yes/no question ('Are both … from the same country?') must "
        "start with Yes or No (constrained decoding).",
    )
    flat_actions: bool = Field(
        False,
        description='Compact profile with JSON actions: write an action as {"keyword_search": [...]} instead of '
        '{"action": ..., "arguments": {...}} (fewer generated tokens per action). Off by default: on 70 2Wiki '
        "questions the model then answered before the step limit half as often, so a question cost as much.",
    )
    search_hits: int = Field(
        5,
        ge=1,
        le=20,
        description="Compact profile: chunks a search returns (the model does not choose top_k there; the paper: 5). "
        "Of 181 reads on 100 2Wiki questions, 176 were of hits 1 and 2, and each hit shown costs ~35 prompt tokens.",
    )
    action_notes: bool = Field(
        True,
        description="Compact profile: every action starts with a 'found' note (what the text read "
        "so far says); False: only the final answer does. Each note costs a small model ~15 generated tokens, but "
        "without them it rarely stopped before the step limit (12 of 14 questions forced against 7 with notes).",
    )
    reads_per_search: int = Field(
        2,
        ge=0,
        le=100,
        description="Compact profile: after this many of a search's hits were read, the others can no longer be "
        "read (the model must search again or answer); 0 = no limit (the paper).",
    )
    common_keyword_share: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="Compact profile: keyword_search leaves out a keyword found in more than this share of the "
        "chunks (and in over 50) when another of its keywords is rarer, and says so; a generic word ('father', "
        "'director') otherwise outscores the name it came with. 0 = off (the paper's score on every keyword).",
    )
    focused_read_tokens: int = Field(
        250,
        ge=0,
        le=100_000,
        description="Compact profile: chunk_read shows a chunk longer than this many tokens as its first sentence "
        "plus the sentences closest to the question, within this many tokens; 0 = full text (the paper).",
    )
    tools: list[ToolName] = Field(
        default_factory=lambda: list(TOOL_NAMES),
        description="Enabled tools.",
    )
    system_prompt_file: Path | None = Field(None, description="Override the packaged system prompt.")
    tool_names: dict[ToolName, str] = Field(
        default_factory=dict,
        description="Names the model sees for the tools, e.g. {'chunk_read': 'read_chunk'} as in the authors' code.",
    )
    stall_limit: int = Field(2, ge=1, description="Consecutive repeated calls before the answer is forced.")
    time_budget_s: float = Field(
        600.0,
        gt=0,
        le=86_400,
        description="Wall-clock budget per question, seconds, model calls included; running out stops the "
        "question with stop reason 'time_budget'.",
    )
    trajectory_file: Path | None = Field(None, description="Append each result as a JSON line here.")


class EvalSettings(BaseModel):
    """Evaluation protocol."""

    model_config = ConfigDict(extra="forbid")

    judge_prompt_file: Path | None = Field(
        None,
        description="Override the LLM-Acc judge prompt; placeholders {question}, {gold} and {prediction} "
        "(aliases {gold_answer}, {answer}, {predicted_answer}, {response}).",
    )


class ServerSettings(BaseModel):
    """``arag serve``: the HTTP API, the web page and MCP over HTTP."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address to bind; anything but loopback requires a token.")
    port: int = Field(8000, ge=0, le=65535, description="TCP port (0: any free port).")
    token: str | None = Field(
        None, min_length=16, description="Bearer token required on every request (env ARAG_SERVER__TOKEN)."
    )
    max_concurrent_asks: int = Field(
        2, ge=1, le=256, description="Questions answered at once; more get HTTP 429 with Retry-After."
    )
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest request body accepted.")
    request_timeout_s: float = Field(60.0, gt=0, description="Deadline of a search, read or info request, seconds.")
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS (default: none).")


class Settings(BaseSettings):
    """All of a-rag's settings."""

    model_config = SettingsConfigDict(
        env_prefix="ARAG_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    index: IndexSettings = Field(default_factory=IndexSettings, description="Index construction.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="Agent LLM endpoint.")
    judge: LLMSettings = Field(default_factory=LLMSettings, description="Judge LLM endpoint for LLM-Acc.")
    agent: AgentSettings = Field(default_factory=AgentSettings, description="Agent loop.")
    eval: EvalSettings = Field(default_factory=EvalSettings, description="Evaluation protocol.")
    server: ServerSettings = Field(default_factory=ServerSettings, description="arag serve.")
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="Override USD per 1M tokens as {model: (input, output)}.",
    )
    # The paper's reference code reads these flat names; they map onto llm.*.
    base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("ARAG_BASE_URL", "OPENAI_BASE_URL"),
        exclude=True,
        description="Flat alias of llm.base_url (env ARAG_BASE_URL, else OPENAI_BASE_URL).",
    )
    api_key: str | None = Field(
        None,
        validation_alias=AliasChoices("ARAG_API_KEY", "OPENAI_API_KEY"),
        exclude=True,
        description="Flat alias of llm.api_key (env ARAG_API_KEY, else OPENAI_API_KEY).",
    )
    model: str | None = Field(
        None, validation_alias=AliasChoices("ARAG_MODEL"), exclude=True, description="Flat alias of llm.model."
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings


# read directly by the modules that need them, outside the settings model
OTHER_ENV = frozenset(
    {
        "ARAG_CACHE_DIR",
        "ARAG_LOCAL_MODEL",
        "ARAG_HF_DATASET",
        "ARAG_EMBED_BASE_URL",
        "ARAG_EMBED_API_KEY",
        "ARAG_DEBUG",
    }
)


def unknown_environment(environ: dict[str, str] | None = None) -> list[str]:
    """``ARAG_*`` variables that no setting reads (a typo would otherwise be silently ignored). Unknown keys
    below a section (``ARAG_AGENT__MAX_STEP``) are already errors of the settings model."""
    environ = dict(os.environ) if environ is None else environ
    sections = {f"ARAG_{name.upper()}" for name in Settings.model_fields}
    known = sections | OTHER_ENV | {"ARAG_BASE_URL", "ARAG_API_KEY", "ARAG_MODEL"}
    return sorted(
        key for key in environ if key.upper().startswith("ARAG_") and key.upper().split("__", 1)[0] not in known
    )


def describe(model: type[BaseModel], name: str, env: str | None = None) -> str:
    """A CLI option's help from the setting it overrides: its description, default and where else to set it."""
    field = model.model_fields[name]
    default = field.get_default(call_default_factory=True)
    shown = default if not isinstance(default, list) else ",".join(map(str, default))
    where = f"; env {env}" if env else ""
    return f"{field.description} [default: {shown}{where}]"


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict):
            current = merged.get(key)
            merged[key] = _deep_merge(current if isinstance(current, dict) else {}, value)
        elif value is not None:
            merged[key] = value
    return merged


def load_settings(config_file: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Build settings from a config file (JSON or TOML), the environment and explicit overrides (CLI flags)."""
    from pydantic import ValidationError

    file_values: dict[str, Any] = {}
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        try:
            if config_file.suffix == ".toml":
                import tomllib

                file_values = tomllib.loads(text)
            else:
                import json

                file_values = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"config file {config_file} is not valid: {exc}") from None
    try:
        from_env = Settings()
        env_values = from_env.model_dump(exclude_defaults=True)
        flat = {"base_url": from_env.base_url, "api_key": from_env.api_key, "model": from_env.model}
        env_values = _deep_merge(env_values, {"llm": {k: v for k, v in flat.items() if v is not None}})
        merged = _deep_merge(_deep_merge(file_values, env_values), overrides or {})
        return Settings.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"invalid setting {where}: {first['msg']}") from None
