"""Typed settings: one source of truth with a description for every field.

Precedence (highest first): CLI flags, environment (``ARAG_*``), config file, defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from arag.errors import ConfigError

ToolName = Literal[
    "keyword_search",
    "semantic_search",
    "chunk_read",
    "search",
    "list_documents",
    "document_outline",
    "section_read",
    "grep",
    "table_list",
    "table_query",
]
# the agent's default: the paper's three (the table tools are offered by agent.tools or the method arag-tables)
TOOL_NAMES: tuple[ToolName, ...] = ("keyword_search", "semantic_search", "chunk_read")
DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"


class ChunkerSettings(BaseModel):
    """How documents become chunks and sentences (paper §3.1). Recorded in the index manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_tokens: int = Field(1000, ge=16, le=100_000, description="Target chunk size in tokens (cl100k_base).")
    encoding: str = Field("cl100k_base", description="tiktoken encoding used to count tokens.")


class IndexSettings(BaseModel):
    """What an index contains (:attr:`BUILT_BY`: changing any of it means a different index), and how it is
    searched and built (threads, batches, each store's search-time knobs)."""

    model_config = ConfigDict(extra="forbid")
    BUILT_BY: ClassVar[tuple[str, ...]] = ("chunker", "embedder", "vector_dtype", "ann")

    chunker: ChunkerSettings = Field(default_factory=ChunkerSettings, description="Chunking settings.")
    embedder: str = Field(
        DEFAULT_EMBEDDER,
        description=(
            "Embedding model: 'sentence-transformers/all-MiniLM-L6-v2' (ONNX int8, no torch; 'minilm-f32': its float32 "
            "arithmetic), 'wordllama' (static WordLlama token vectors: fast, weaker; extra 'wordllama'), "
            "'st:NAME_OR_PATH' (any sentence-transformers model, extra 'st'), "
            "'openai:MODEL' (an OpenAI-compatible /embeddings endpoint), or 'fake' (hashing embedder for tests). "
            "e5 and nomic-embed models get the query/passage prefixes they were trained with."
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

    def built_by(self) -> dict[str, Any]:
        """The settings that decide an index's content, as JSON values (an index's identity)."""
        return self.model_dump(mode="json", include=set(self.BUILT_BY))


class LLMSettings(BaseModel):
    """An OpenAI-compatible chat endpoint."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="Endpoint base URL, e.g. https://api.openai.com/v1.")
    api_key: str | None = Field(None, description="API key (local servers accept any string).")
    model: str | None = Field(None, description="Model name as the endpoint knows it.")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature (passed through).")
    reasoning_effort: str | None = Field(None, description="Reasoning effort for reasoning models.")
    max_tokens: int | None = Field(
        None, ge=1, description="Max completion tokens per call (the embedded model: 320 unless set)."
    )
    lookup_tokens: int | None = Field(
        None,
        ge=0,
        le=64,
        description="Embedded model only: prompt-lookup speculative decoding drafts up to this many tokens copied "
        "from the conversation and verifies them in one batch (llama.cpp n-gram speculation); 0 = off. Unset: 8 on "
        "a llama.cpp build for this CPU (AVX-512, which scripts/setup.sh compiles; generation about 30 % faster "
        "per token on the dev sets), 0 on the prebuilt AVX2 wheel (measured 17 % slower there).",
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
        3,
        ge=0,
        le=10,
        description="Retries the openai SDK makes on 429, 5xx and connection errors, with exponential backoff that "
        "honours Retry-After (up to 120 s): three transient failures in a row still end in an answer. The embedded "
        "model is never retried.",
    )
    retry_timeouts: bool = Field(
        False,
        description="Retry a request that overran timeout_s too (each retry waits the full deadline again). Off: a "
        "never-answering endpoint ends the question after one timeout_s.",
    )


class ViewSettings(BaseModel):
    """How tool results are shown to the model, over the profile's own view (``None``: the profile's value)."""

    model_config = ConfigDict(extra="forbid")

    hints: bool | None = Field(
        None,
        description="Small-model presentation: no scores, a search ends with how to read its hits (both of a "
        "comparison's two hits at once), a hit already read shows no snippets. The paper: off.",
    )
    search_hits: int | None = Field(
        None,
        ge=1,
        le=20,
        description="Chunks a search returns when the model names no top_k (the compact profile: 5; of 181 reads on "
        "100 2Wiki questions, 176 were of hits 1 and 2). The paper: the tool's default, 5.",
    )
    expose_top_k: bool | None = Field(
        None, description="Whether the search tools' schemas offer top_k (the compact profile: no, ~7 tokens less)."
    )
    expose_where: bool | None = Field(
        None,
        description="Whether the tools' schemas offer the metadata filter 'where', listing the fields the index has "
        "(the paper profile: yes, an addition to the paper's tools that changes nothing unless the model uses it; "
        "false reproduces the paper's schemas exactly; the compact profile: no). A user's own scope (arag ask "
        "--where) applies either way.",
    )
    snippets_per_hit: int | None = Field(None, ge=0, le=100, description="Matching sentences shown per hit.")
    snippet_chars: int | None = Field(None, ge=20, le=10_000, description="Characters a snippet is cut to.")
    focused_read_tokens: int | None = Field(
        None,
        ge=0,
        le=100_000,
        description="chunk_read shows a chunk longer than this many tokens as its first sentence plus the sentences "
        "closest to the question, within this many tokens; 0 = full text (the paper; the compact profile: 250).",
    )
    inline_read_tokens: int | None = Field(
        None,
        ge=0,
        le=100_000,
        description="A search's top hit is shown as chunk_read would show it (and counts as read) when that is at "
        "most this many tokens; 0 = off (the paper, and the compact profile: snippets only).",
    )
    title_reads: bool | None = Field(
        None,
        description='A keyword search\'s hit whose document title is one of its keywords (a trailing "(…)" aside) is '
        "shown as chunk_read would show it and counts as read, at most two per search. Off in both profiles: on "
        "2Wiki no faster on 2 cores (fewer read calls, more prompt tokens) and no more accurate (docs/results.md).",
    )


class AgentSettings(BaseModel):
    """The ReAct loop (paper §3.3): its budgets, the profile (a named bundle of policies and a result view), and
    switches on top of the profile."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(10, ge=1, le=200, description="Tool-calling steps before the model must answer.")
    token_budget: int = Field(
        60_000, ge=100, description="Retrieved-plus-prompt token budget; reaching it forces the final answer."
    )
    action_mode: Literal["auto", "native", "json", "flat-json"] = Field(
        "auto",
        description="'native' tool calls, 'json' constrained actions (response_format: {\"action\": …, "
        '"arguments": {…}}), \'flat-json\' ({"keyword_search": [...]}: fewer generated tokens, but on 2Wiki '
        "the small model answered before the step limit half as often, docs/results.md), 'auto': json for the embedded "
        "model, native otherwise.",
    )
    parallel_tool_calls: bool = Field(False, description="Execute every tool call in a response, not only the first.")
    profile: str = Field(
        "auto",
        description="'paper': the paper's prompt and loop; 'compact': the same loop with the small-model policies "
        "(arag/harness/profiles/compact.toml); 'tables': the paper's loop with the table tools too; a path to a "
        "profile file of your own; 'auto': compact for the embedded model, paper otherwise.",
    )
    policies: list[str] = Field(
        default_factory=list,
        description="Switches on the profile's policies: '-name' leaves one out, '+name' adds one "
        "(arag policies lists them; e.g. ['-plan', '+opening_search']).",
    )
    policy: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Each policy's own settings, by its name: agent.policy.NAME.KNOB (each policy's settings "
        "class, in its module of arag/harness/policies, names and checks them; arag policies lists them with their "
        "defaults).",
    )
    view: ViewSettings = Field(default_factory=ViewSettings, description="Overrides of the profile's result view.")
    tools: list[ToolName] = Field(
        default_factory=lambda: list(TOOL_NAMES),
        description="Enabled tools.",
    )
    system_prompt_file: Path | None = Field(None, description="Override the profile's system prompt.")
    tool_names: dict[ToolName, str] = Field(
        default_factory=dict,
        description="Names the model sees for the tools, e.g. {'chunk_read': 'read_chunk'} as in the authors' code.",
    )
    stall_limit: int = Field(
        2, ge=1, description="Consecutive repeated calls with nothing new before the answer is forced."
    )
    max_model_calls: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="Model calls a question may make before its answer is forced (stop reason 'model_calls'), "
        "answers the harness held back included: the loop's own bound, whatever its policies do. Default: "
        "2 × max_steps + 6, which the packaged policies never reach (every step, as many held answers, and their "
        "one-time holds).",
    )
    verify_answers: bool = Field(
        False,
        description="Check each claim of the answer against the sentences of the chunks read (arag.verification: "
        "key terms and sentence vectors, no model call) and record the result with the answer. The "
        "supported_answer policy (--policy +supported_answer) also sends an unsupported answer back once.",
    )
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


class JWTSettings(BaseModel):
    """Bearer JWTs from an identity provider, verified offline against its public keys (a JWKS file): the token's
    subject is the caller's name and its group claim the groups whose documents it reads."""

    model_config = ConfigDict(extra="forbid")

    jwks_file: Path | None = Field(
        None, description="The provider's public keys (JSON Web Key Set), read from this file; no network at run "
        "time. Unset: JWTs are refused (only a-rag tokens are accepted)."
    )  # fmt: skip
    issuer: str | None = Field(None, description="The `iss` every JWT must carry (unset: not checked).")
    audience: str | None = Field(None, description="The `aud` every JWT must carry (unset: a JWT with one is refused).")
    algorithms: list[str] = Field(
        default_factory=lambda: ["RS256", "ES256", "EdDSA"],
        description="Signature algorithms accepted (public-key ones only: HS* and none are refused).",
    )
    group_claim: str = Field("groups", min_length=1, description="The claim listing the caller's groups.")
    name_claim: str = Field("sub", min_length=1, description="The claim naming the caller (audit log, conversations).")
    scope: Literal["read", "ask"] = Field(
        "ask", description="What a JWT may do (read: search and read; ask: also questions)."
    )
    indexes: list[str] = Field(
        default_factory=list, description="The indexes a JWT may use (empty: every index served)."
    )
    leeway_s: float = Field(30.0, ge=0, le=600, description="Clock skew allowed on exp and nbf, seconds.")

    @field_validator("algorithms")
    @classmethod
    def _public_key_algorithms(cls, value: list[str]) -> list[str]:
        refused = [a for a in value if a.upper().startswith("HS") or a.lower() == "none"]
        if refused or not value:
            raise ValueError(f"only public-key algorithms (RS*, PS*, ES*, EdDSA), not {refused or 'none at all'}")
        return value


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
    read_timeout_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="A request's headers must arrive within this many seconds of its connection, and its body "
        "without a pause this long: a client that sends half a request is closed (or answered 408).",
    )
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS (default: none).")
    indexes: dict[str, str] = Field(
        default_factory=dict,
        description="Indexes served by name (name = directory or PostgreSQL URL), the first the default; "
        "arag serve --index NAME=PATH sets them too.",
    )
    tokens_file: Path | None = Field(
        None,
        description="Scoped tokens (arag token add); used when it exists. Default: $XDG_CONFIG_HOME/arag/tokens.json "
        "(~/.config/arag/tokens.json).",
    )
    audit_log: Path | None = Field(None, description="Append one JSON line per request here (default: no log).")
    audit_questions: bool = Field(
        False, description="Also record each question's text in the audit log (never a token or an API key)."
    )
    jwt: JWTSettings = Field(default_factory=JWTSettings, description="Bearer JWTs verified against a JWKS file.")


class ConversationSettings(BaseModel):
    """Conversations: questions that follow one another with one context tracker (arag chat, the Python
    ``Conversation``, the HTTP API's /api/conversations)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(
        8000,
        ge=200,
        le=1_000_000,
        description="The earlier turns kept in the model's context, in tokens. Past it the oldest turn is kept as "
        "its question and answer only (its tool steps leave the context, and the chunks it read may be read "
        "again), and past it still the oldest turn is dropped.",
    )
    idle_expiry_s: float = Field(
        3600.0, gt=0, description="arag serve forgets a conversation idle this long (seconds)."
    )
    max_open: int = Field(
        256, ge=1, le=100_000, description="Conversations arag serve keeps at once (the least recently used go)."
    )
    max_open_per_principal: int = Field(
        32,
        ge=1,
        le=100_000,
        description="Conversations one token (principal) keeps open at once: past it its own least recently used "
        "goes, never another's.",
    )


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
    conversation: ConversationSettings = Field(
        default_factory=ConversationSettings, description="Conversations (follow-up questions)."
    )
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
        "ARAG_AS",  # arag --as: the groups the CLI reads as
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
