"""The ``arag`` command."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from arag.errors import ARagError, InputError
from arag.settings import AgentSettings, IndexSettings, LLMSettings, describe
from arag.store import display_location

if TYPE_CHECKING:
    from arag.eval.runner import DatasetChoice

# rich_markup_mode=None: usage errors are one plain "Error: ..." line, not a panel hard-wrapped at 80 columns
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="A-RAG: agentic retrieval over hierarchical retrieval interfaces.",
)
search_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Run a retrieval tool directly.")
app.add_typer(search_app, name="search")
db_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="A local PostgreSQL + pgvector server.")
app.add_typer(db_app, name="db")
eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Reproduce the paper's experiments.")
app.add_typer(eval_app, name="eval")
err = Console(stderr=True, soft_wrap=True)  # never hard-wrap: people grep logs and paste paths
out = Console(soft_wrap=True)


def _say(label: str, text: str, console: Console = err) -> None:
    """``label: text`` with only the label styled: the text (paths, ids, "a-rag[eval]") is printed as it is."""
    console.print(f"{label}: {escape(text)}" if label else escape(text), highlight=False)


IndexOpt = Annotated[
    str,
    typer.Option(
        "--index", "-i", help="Index directory (made by arag index), or postgresql://[user@]host[:port]/db?index=NAME."
    ),
]
PARTIAL_INDEX = 3  # exit status: index written without some sources (2 is click's usage error)
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="Settings file (JSON or TOML); flags and ARAG_* variables win.")
]
TopKOpt = Annotated[int, typer.Option("--top-k", "-k", min=1, max=1000, help="Number of chunks to return (1-1000).")]
WhereOpt = Annotated[
    str | None,
    typer.Option(
        "--where",
        "-w",
        help="Only documents whose metadata match, e.g. 'path=guides/*' or 'type=pdf, year>=2020' (fields: path, "
        "type, title, mtime and what the files say about themselves; syntax: README, Scoped search). [default: all]",
    ),
]
MaxStepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, max=200, help=describe(AgentSettings, "max_steps", "ARAG_AGENT__MAX_STEPS")),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(help="Model name at the endpoint. [default: none: the embedded local model; env ARAG_MODEL]"),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible endpoint base URL. [default: none: the embedded local model; env ARAG_BASE_URL]"
    ),
]
LocalModelOpt = Annotated[
    str | None,
    typer.Option(
        help="Embedded model when no endpoint is set: qwen2.5-coder-1.5b, qwen2.5-coder-0.5b or a GGUF file path. "
        "[default: qwen2.5-coder-1.5b; env ARAG_LOCAL_MODEL]"
    ),
]
ActionModeOpt = Annotated[
    str | None, typer.Option(help=describe(AgentSettings, "action_mode", "ARAG_AGENT__ACTION_MODE"))
]
CorpusOpt = Annotated[str, typer.Option(help="auto, chunks (A-RAG chunks.json) or corpus (passages).")]
ProfileOpt = Annotated[str | None, typer.Option(help=describe(AgentSettings, "profile", "ARAG_AGENT__PROFILE"))]
PolicyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--policy",
        help="Switch one of the profile's policies for this run: --policy -NAME leaves it out, --policy +NAME adds "
        "it (repeatable; arag/harness/policies). [default: the profile's; env ARAG_AGENT__POLICIES]",
    ),
]
ThreadsOpt = Annotated[
    int | None, typer.Option(min=1, max=256, help=describe(IndexSettings, "threads", "ARAG_INDEX__THREADS"))
]


def _version(value: bool) -> None:
    if value:
        from arag.version import __version__

        sys.stdout.write(f"a-rag {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """A-RAG: agentic retrieval over hierarchical retrieval interfaces."""
    from arag.settings import unknown_environment

    for name in unknown_environment():
        _say("[yellow]warning[/yellow]", f"{name} is not an a-rag setting; ignored")


def _nonempty(values: list[str], what: str) -> list[str]:
    kept = [v for v in values if v.strip()]
    if not kept:
        raise InputError(f"the {what} is empty")
    return kept


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _settings(config: Path | None, overrides: dict[str, Any] | None = None):
    from arag.settings import load_settings

    return load_settings(config, overrides)


def _open_index(index: str, threads: int | None = None, probes: int | None = None):
    from arag.index import Index

    settings = _settings(None).index  # ARAG_INDEX__THREADS, __ANN_PROBES, __HNSW_EF_SEARCH, __PG_STATEMENT_TIMEOUT_S
    overrides = {"threads": threads, "ann_probes": probes}
    return Index.open_with(index, settings.model_copy(update={k: v for k, v in overrides.items() if v}))


@app.command()
def index(
    sources: Annotated[list[Path], typer.Argument(help="Files and folders to index.")],
    index_dir: IndexOpt,
    chunk_tokens: Annotated[
        int | None,
        typer.Option(min=16, max=100_000, help="Target tokens per chunk (cl100k_base). [default: 1000]"),
    ] = None,
    embedder: Annotated[
        str | None, typer.Option(help=describe(IndexSettings, "embedder", "ARAG_INDEX__EMBEDDER"))
    ] = None,
    vector_dtype: Annotated[
        str | None, typer.Option(help=describe(IndexSettings, "vector_dtype", "ARAG_INDEX__VECTOR_DTYPE"))
    ] = None,
    ann: Annotated[
        bool | None, typer.Option("--ann/--no-ann", help=describe(IndexSettings, "ann", "ARAG_INDEX__ANN"))
    ] = None,
    threads: ThreadsOpt = None,
    rebuild: Annotated[bool, typer.Option(help="Start a new index instead of adding to it.")] = False,
    shards: Annotated[
        list[str] | None,
        typer.Option(
            "--shard",
            help="PostgreSQL only, when the index is created: a shard server's URL (repeat for each); the --index "
            "database becomes the coordinator whose tables are hash partitions on the shards (postgres_fdw).",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Write nothing if any source cannot be read (exit 1).")
    ] = False,
    sync: Annotated[
        bool,
        typer.Option(
            "--sync",
            help="Make the index follow the sources: documents of files deleted or renamed in a source folder are "
            "removed too (a file that is there but unreadable keeps its documents); one atomic generation.",
        ),
    ] = False,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index files and folders (.txt .md .html .pdf .jsonl, and A-RAG/HippoRAG/GraphRAG-Bench JSON).

    Sources that cannot be read are reported once each on stderr and skipped. Exit status: 0 when every
    source was indexed; 3 when the index was written without the sources reported; 1 when nothing was
    written (an error, or any unreadable source with --strict).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from arag.corpus.build import build_index

    index_overrides: dict[str, Any] = {
        "embedder": embedder,
        "vector_dtype": vector_dtype,
        "ann": ann,
        "threads": threads,
    }
    if chunk_tokens is not None:
        index_overrides["chunker"] = {"chunk_tokens": chunk_tokens}
    settings = _settings(config, {"index": index_overrides})
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=as_json,
    ) as bar:

        def stage(name: str, total: int):
            task = bar.add_task(name, total=total)
            return lambda n: bar.advance(task, n)

        report = build_index(
            sources,
            index_dir,
            settings.index,
            rebuild=rebuild,
            progress=stage,
            strict=strict,
            shards=shards,
            sync=sync,
        )
    for problem in report.problems:
        _say("[yellow]skipped[/yellow]", str(problem))
    where = display_location(index_dir)
    summary = {
        "index": where,
        "documents": report.documents,
        "chunks": report.chunks,
        "sentences": report.sentences,
        "added": len(report.added),
        "replaced": len(report.replaced),
        "unchanged": report.unchanged,
        "removed": report.removed,
        "embedded_sentences": report.embedded,
        "reused_vectors": report.reused_vectors,
        "problems": [str(p) for p in report.problems],
    }
    if as_json:
        _print_json(summary)
    else:
        err.print(
            f"indexed {report.documents} documents, {report.chunks} chunks, {report.sentences} sentences "
            f"({len(report.added)} added, {len(report.replaced)} replaced, {report.unchanged} unchanged, "
            f"{report.removed} removed; "
            f"embedded {report.embedded}, reused {report.reused_vectors}) → {escape(where)}",
            highlight=False,
        )
    if report.problems:
        err.print(
            f"{len(report.problems)} source(s) skipped (see above); --strict makes that an error", highlight=False
        )
        raise typer.Exit(PARTIAL_INDEX)


@app.command()
def watch(
    sources: Annotated[list[Path], typer.Argument(help="Files and folders to keep the index equal to.")],
    index_dir: IndexOpt,
    embedder: Annotated[
        str | None, typer.Option(help=describe(IndexSettings, "embedder", "ARAG_INDEX__EMBEDDER"))
    ] = None,
    chunk_tokens: Annotated[
        int | None,
        typer.Option(min=16, max=100_000, help="Target tokens per chunk of a new index. [default: 1000]"),
    ] = None,
    debounce_ms: Annotated[
        int, typer.Option(min=50, max=600_000, help="Wait this long after a change for more before a sync.")
    ] = 1600,
    threads: ThreadsOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Keep the index equal to the sources: sync now, then after every change (added, changed, deleted and renamed
    files; see arag index --sync). Each sync is one generation that a running arag serve / arag mcp picks up.
    Ctrl-C stops."""
    from arag.corpus.build import IndexReport
    from arag.corpus.watch import watch_sources

    index_overrides: dict[str, Any] = {"embedder": embedder, "threads": threads}
    if chunk_tokens is not None:
        index_overrides["chunker"] = {"chunk_tokens": chunk_tokens}
    settings = _settings(config, {"index": index_overrides})
    where = display_location(index_dir)

    def said(outcome: IndexReport | ARagError) -> None:
        if isinstance(outcome, ARagError):
            _say("[red]sync failed[/red]", f"{outcome} (the next change tries again)")
            return
        for problem in outcome.problems:
            _say("[yellow]skipped[/yellow]", str(problem))
        _say(
            "synced",
            f"{outcome.documents} documents ({len(outcome.added)} added, {len(outcome.replaced)} replaced, "
            f"{outcome.removed} removed, {outcome.embedded} sentences embedded) → {where}",
        )

    _say("watching", f"{', '.join(str(s) for s in sources)} for {where} (Ctrl-C stops)")
    watch_sources(sources, index_dir, settings.index, said, debounce_ms=debounce_ms)
    _say("stopped", "watching")


def _scope_notes(idx: Any, where: Any) -> None:
    """What a filter could not match: documents without metadata, or nothing at all (said on stderr)."""
    if where is None:
        return
    missing = idx.without_metadata()
    if missing:
        _say(
            "[yellow]note[/yellow]",
            f"{missing} documents were indexed before a-rag recorded metadata and match no filter; "
            "re-index them with --rebuild",
        )
    scope = idx.scope(where)
    if scope is not None and not scope.doc_ids:
        fields = ", ".join(idx.metadata_fields()) or "none"
        _say("[yellow]note[/yellow]", f"no document matches the filter {where}; fields in this index: {fields}")


def _print_hits(hits: list[Any], as_json: bool) -> None:
    if as_json:
        _print_json([h.to_dict() for h in hits])
        return
    if not hits:
        out.print("no matching chunks")
    for hit in hits:
        out.print(f"[bold]{escape(hit.chunk_id)}[/bold]  score {hit.score:.4g}", highlight=False)
        for snippet in hit.snippets:
            out.print(f"   {' '.join(snippet.split())[:300]}", highlight=False, markup=False)


@search_app.command("keyword")
def search_keyword(
    keywords: Annotated[list[str], typer.Argument(help="Keywords (exact, case-insensitive).")],
    index_dir: IndexOpt,
    top_k: TopKOpt = 5,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Keyword search: score = Σ count(k) · len(k)."""
    from arag.filters import parse_filter

    keywords = _nonempty(keywords, "keyword list")
    scope = parse_filter(where)
    idx = _open_index(index_dir)
    _scope_notes(idx, scope)
    _print_hits(idx.keyword_search(keywords, top_k, scope), as_json)


@search_app.command("semantic")
def search_semantic(
    query: Annotated[str, typer.Argument(help="Natural-language query.")],
    index_dir: IndexOpt,
    top_k: TopKOpt = 5,
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Scan only the nearest IVF lists (index built with --ann).")
    ] = False,
    probes: Annotated[
        int | None,
        typer.Option(min=1, max=65536, help=describe(IndexSettings, "ann_probes", "ARAG_INDEX__ANN_PROBES")),
    ] = None,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Semantic search: chunk score = its best sentence's cosine."""
    from arag.filters import parse_filter

    query = _nonempty([query], "query")[0]
    scope = parse_filter(where)
    idx = _open_index(index_dir, probes=probes)
    _scope_notes(idx, scope)
    _print_hits(idx.semantic_search(query, top_k, exact=not approximate, where=scope), as_json)


@app.command()
def read(
    chunk_ids: Annotated[
        list[str], typer.Argument(help="Chunk ids as search results and export show them, e.g. 'notes.md#0'.")
    ],
    index_dir: IndexOpt,
    where: WhereOpt = None,
    claim: Annotated[
        str | None,
        typer.Option("--claim", help="Also name the sentence of each chunk that best supports this text."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print chunks by id, with their neighbours' ids and where they come from (file, page, heading path)."""
    from arag.citations import locate
    from arag.filters import parse_filter

    scope = parse_filter(where)
    idx = _open_index(index_dir)
    _scope_notes(idx, scope)
    found, missing = idx.read(_nonempty(chunk_ids, "chunk id list"), scope)
    sources = [locate(idx, r, claim) for r in found]
    if as_json:
        _print_json(
            [
                {
                    "chunk_id": r.chunk_id,
                    "text": r.text,
                    "prev_id": r.prev_id,
                    "next_id": r.next_id,
                    "source": source.to_dict(),
                }
                for r, source in zip(found, sources, strict=True)
            ]
        )
    else:
        for r, source in zip(found, sources, strict=True):
            out.print(
                f"[bold]{escape(r.chunk_id)}[/bold] (prev {r.prev_id or '-'}, next {r.next_id or '-'}) — "
                f"{escape(source.label)}",
                highlight=False,
            )
            out.print(r.text, markup=False, highlight=False)
            if source.sentence:
                out.print(f"  supports the claim: “{source.sentence}”", markup=False, highlight=False)
    for chunk_id in missing:
        reason = "not found (or outside the filter)" if scope is not None else "not found"
        err.print(f"{reason}: {chunk_id}", highlight=False, markup=False)
    if missing:
        raise typer.Exit(1)


@app.command()
def export(
    index_dir: IndexOpt,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write here instead of stdout.")] = None,
) -> None:
    """Write every chunk, in document order, as JSON Lines {chunk_id, doc_id, text}."""
    idx = _open_index(index_dir)
    target = out_file.open("w", encoding="utf-8") if out_file else sys.stdout
    try:
        for record in idx.store.iter_chunks():
            target.write(
                json.dumps(
                    {"chunk_id": record.chunk_id, "doc_id": record.doc_id, "text": record.text}, ensure_ascii=False
                )
                + "\n"
            )
    finally:
        if out_file:
            target.close()


@app.command()
def info(
    index_dir: IndexOpt,
    verify: Annotated[
        bool, typer.Option("--verify", help="Check every file against its sha256 in the manifest (exit 1 if damaged).")
    ] = False,
) -> None:
    """Print the index manifest; with --verify, check every file's checksum."""
    from dataclasses import asdict

    from arag.store import is_database_url
    from arag.store.embedded.store import read_manifest

    if not verify and not is_database_url(index_dir):
        _print_json(asdict(read_manifest(Path(index_dir))))
        return
    index = _open_index(index_dir)
    if not verify:
        manifest = asdict(index.manifest)
        manifest["counts"] = {
            "documents": len(index.store.documents()),
            "chunks": index.store.n_chunks,
            "sentences": index.store.n_sentences,
        }
        index.close()
        _print_json(manifest)
        return
    problems = index.store.verify()
    index.close()
    for problem in problems:
        _say("[red]damaged[/red]", problem)
    if problems:
        err.print("re-index the sources with --rebuild", highlight=False)
        raise typer.Exit(1)
    if is_database_url(index_dir):
        _say("ok", "documents, chunks, sentences and vectors are consistent")
    else:
        _say("ok", f"{len(index.manifest.files)} files match their checksums")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    index_dir: IndexOpt,
    max_steps: MaxStepsOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    local_model: LocalModelOpt = None,
    action_mode: ActionModeOpt = None,
    profile: ProfileOpt = None,
    policy: PolicyOpt = None,
    parallel_tool_calls: Annotated[
        bool | None,
        typer.Option(
            "--parallel-tool-calls/--one-call",
            help=describe(AgentSettings, "parallel_tool_calls", "ARAG_AGENT__PARALLEL_TOOL_CALLS"),
        ),
    ] = None,
    time_budget: Annotated[
        float | None,
        typer.Option(
            "--time-budget", min=1, help=describe(AgentSettings, "time_budget_s", "ARAG_AGENT__TIME_BUDGET_S")
        ),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.1, help=describe(LLMSettings, "timeout_s", "ARAG_LLM__TIMEOUT_S"))
    ] = None,
    trajectory_file: Annotated[
        Path | None, typer.Option(help="Append the result as a JSON line to this file. [default: none]")
    ] = None,
    where: WhereOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question with the A-RAG agent, showing each step."""
    from arag.agent import check_question
    from arag.filters import parse_filter

    question = check_question(question)
    scope = parse_filter(where)

    settings = _settings(
        config,
        {
            "llm": {"model": model, "base_url": base_url, "timeout_s": timeout},
            "agent": {
                "max_steps": max_steps,
                "action_mode": action_mode,
                "profile": profile,
                "policies": policy,
                "parallel_tool_calls": parallel_tool_calls,
                "time_budget_s": time_budget,
                "trajectory_file": str(trajectory_file) if trajectory_file else None,
            },
        },
    )
    from arag.api import make_agent

    idx = _open_index(index_dir, settings.index.threads)
    _scope_notes(idx, scope)
    with _Status("loading the model…", enabled=not as_json):
        agent = make_agent(idx, settings, local_model=local_model)
    if as_json:
        result = agent.run(question, scope)
    else:
        with _Status("thinking…", enabled=True) as status:
            agent.on_step = _show_step
            agent.on_model_call = lambda step: status.update(
                f"thinking (model call {step + 1}; max {settings.agent.max_steps} tool steps)…"
            )
            result = agent.run(question, scope)
    if settings.agent.trajectory_file:
        with settings.agent.trajectory_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    if as_json:
        _print_json(result.to_dict())
    else:
        out.print(
            f"\n[bold]Answer[/bold] ({result.stop_reason}, {result.steps} steps, "
            f"{result.retrieved_tokens} retrieved tokens):",
            highlight=False,
        )
        out.print(result.answer or "(no answer)", markup=False, highlight=False)
        _print_citations(result.sources)
        if result.read_chunks:  # what the answer could rest on, whether or not the model cited it
            out.print(f"Chunks read: {', '.join(result.read_chunks)}", markup=False, highlight=False)
        if result.error:
            _say("[red]error[/red]", result.error)
    if result.stop_reason == "error":
        raise typer.Exit(1)


def _print_citations(citations: list[dict[str, Any]]) -> None:
    """Each cited chunk: whether the run was shown it, where it comes from, and the sentence that supports the
    answer where one was found."""
    for citation in citations:
        if not citation["verified"]:
            out.print(
                f"  [{citation['chunk_id']}] NOT among the chunks retrieved in this run", markup=False, highlight=False
            )
            continue
        where = citation.get("label") or citation["chunk_id"]
        out.print(f"  [{citation['chunk_id']}] {where}", markup=False, highlight=False)
        if citation.get("sentence"):
            out.print(f"      “{citation['sentence']}”", markup=False, highlight=False)


class _Status:
    """A live status line on a terminal; plain progress lines otherwise (logs, pipes), so a slow model is never
    silent."""

    def __init__(self, text: str, enabled: bool) -> None:
        self.enabled = enabled
        self.live = err.status(text) if enabled and err.is_terminal else None
        if enabled and self.live is None:
            _say("", f"… {text}")

    def update(self, text: str) -> None:
        if self.live is not None:
            self.live.update(text)
        elif self.enabled:
            _say("", f"… {text}")

    def __enter__(self) -> _Status:
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)


def _show_step(step) -> None:
    first = " ".join(step.observation.split())[:160]
    # a call the loop made for the model: without a label a read in place of a repeated call looked like a repeat
    made = f" (made for the model {step.why})" if step.origin == "harness" else ""
    err.print(
        f"[cyan]→ {escape(step.tool)}[/cyan] {escape(json.dumps(step.arguments, ensure_ascii=False))}{made}",
        highlight=False,
    )
    err.print(f"  {first}", markup=False, highlight=False)


@app.command()
def policies(as_json: JsonOpt = False) -> None:
    """The agent's policies: what each does, which profiles run it (switch one with --policy -NAME/+NAME), and its
    settings (agent.policy.NAME.KNOB: in a settings file, or ARAG_AGENT__POLICY__NAME__KNOB)."""
    from dataclasses import asdict

    from arag.harness import describe_policies

    rows = describe_policies()
    if as_json:
        _print_json([asdict(row) for row in rows])
        return
    for row in rows:
        profiles = ", ".join(row.profiles) or "none (add with --policy +NAME)"
        out.print(f"[bold]{row.name}[/bold] ({profiles}): {escape(row.summary)}", highlight=False)
        for knob, about in row.settings.items():
            setting = f"agent.policy.{row.name}.{knob} = {json.dumps(about['default'])}"
            out.print(f"  {escape(setting)}: {escape(about['description'])}", highlight=False)


CHAT_HELP = (
    "Ask a question; follow-ups are read in the context of the earlier ones. /sources: what the conversation "
    "read and cited; /new: start over; /quit or Ctrl-D: leave. Ctrl-C stops the current answer."
)


@app.command()
def chat(
    index_dir: IndexOpt,
    max_steps: MaxStepsOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    local_model: LocalModelOpt = None,
    profile: ProfileOpt = None,
    policy: PolicyOpt = None,
    where: WhereOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Talk to the agent: follow-up questions in context, one context tracker, the steps as they happen.
    /new, /sources, /quit; Ctrl-C stops the current answer and keeps the conversation."""
    import threading

    from arag.agent import Conversation
    from arag.api import make_agent
    from arag.filters import parse_filter

    scope = parse_filter(where)
    settings = _settings(
        config,
        {
            "llm": {"model": model, "base_url": base_url},
            "agent": {"max_steps": max_steps, "profile": profile, "policies": policy},
        },
    )
    idx = _open_index(index_dir, settings.index.threads)
    _scope_notes(idx, scope)
    with _Status("loading the model…", enabled=True):
        agent = make_agent(idx, settings, local_model=local_model)
    agent.on_step = _show_step
    conversation = Conversation(agent, settings.conversation.max_tokens, scope)
    history = _ChatHistory()
    err.print(CHAT_HELP, highlight=False)
    while True:
        try:
            line = input("you › ").strip()
        except EOFError:
            err.print()
            break
        except KeyboardInterrupt:  # at the prompt: a fresh line, as a shell does
            err.print()
            continue
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line == "/new":
            conversation.reset()
            _say("", "a new conversation: nothing asked, nothing read")
            continue
        if line == "/sources":
            _print_sources(conversation.sources())
            continue
        if line.startswith("/"):
            _say("", f"unknown command {line.split()[0]}. {CHAT_HELP}")
            continue
        stop = threading.Event()
        agent.cancelled = stop.is_set
        outcome: list[Any] = []

        def answer(question: str = line, into: list[Any] = outcome) -> None:
            try:
                into.append(conversation.ask(question))
            except ARagError as exc:
                into.append(exc)

        worker = threading.Thread(target=answer, name="arag-chat", daemon=True)
        worker.start()
        while worker.is_alive():
            try:
                worker.join(0.1)
            except KeyboardInterrupt:  # stop at the next step; the conversation keeps what it had
                stop.set()
                _say("", "stopping after the current step…")
        result = outcome[0] if outcome else None
        if isinstance(result, ARagError):
            _say("[red]error[/red]", str(result))
        elif result is None or result.stop_reason == "cancelled":
            _say("", "stopped; the conversation goes on from the previous answer")
        else:
            out.print(f"[bold]a-rag ›[/bold] {escape(result.answer or '(no answer)')}", highlight=False)
            _print_citations(result.sources)
            if result.error:
                _say("[red]error[/red]", result.error)
    history.save()


class _ChatHistory:
    """readline's line editing and a history file (``$ARAG_CACHE_DIR/chat_history``), where readline exists."""

    def __init__(self) -> None:
        from arag.files import cache_dir

        self.path = cache_dir() / "chat_history"
        try:
            import readline
        except ImportError:  # not on every platform: input() still works, without editing or history
            self.readline = None
            return
        self.readline = readline
        readline.set_history_length(1000)
        if self.path.is_file():
            with contextlib.suppress(OSError):  # an unreadable history is no reason not to chat
                readline.read_history_file(str(self.path))

    def save(self) -> None:
        if self.readline is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.readline.write_history_file(str(self.path))
        except OSError as exc:
            _say("[yellow]note[/yellow]", f"the chat history was not saved: {exc}")


def _print_sources(sources: list[dict[str, Any]]) -> None:
    if not sources:
        _say("", "nothing read yet")
    for source in sources:
        how = "cited" if source.get("cited") else "read"
        where = source.get("label") or source["chunk_id"]
        out.print(
            f"  {source['chunk_id']} — {where} ({how} for question {source['turn']})", markup=False, highlight=False
        )


@app.command()
def mcp(index_dir: IndexOpt) -> None:
    """Serve the three tools over MCP (stdio)."""
    from arag.serve.mcp import serve

    index = _open_index(index_dir)  # threads and IVF probes from settings, like the other commands
    index.follow_updates()  # a sync or an added file is served without a restart
    serve(index)


def _served_indexes(specs: list[str], configured: dict[str, str]) -> dict[str, str]:
    """``NAME=LOCATION`` (or a bare location, served as "default") for each --index; else server.indexes."""
    from arag.serve.access import NAME

    if not specs:
        if not configured:
            raise InputError("name an index to serve: --index PATH, or --index NAME=PATH for each of several")
        return dict(configured)
    served: dict[str, str] = {}
    for spec in specs:
        name, _, location = spec.partition("=")
        if not (location and NAME.match(name)):
            name, location = ("default" if not served else Path(spec).name or spec), spec
        if name in served:
            raise InputError(f"two indexes named {name!r}: name them (--index NAME=PATH)")
        served[name] = location
    return served


@app.command()
def serve(
    index_specs: Annotated[
        list[str] | None,
        typer.Option(
            "--index",
            "-i",
            help="An index to serve: PATH or postgresql://… (served as 'default'), or NAME=PATH; repeat for several "
            "(the first is the default, at /api/…; each at /api/indexes/NAME/…). [default: server.indexes]",
        ),
    ] = None,
    runs: Annotated[
        Path | None, typer.Option("--runs", help="Folder of 'arag eval run' outputs to browse. [default: none]")
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="Address to bind; not loopback requires tokens. [default: 127.0.0.1]")
    ] = None,
    port: Annotated[int | None, typer.Option(min=0, max=65535, help="TCP port. [default: 8000]")] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="One bearer token with every right (see arag token for scoped ones). [default: none; env "
            "ARAG_SERVER__TOKEN]"
        ),
    ] = None,
    tokens_file: Annotated[
        Path | None, typer.Option(help="Scoped tokens (arag token add). [default: ~/.config/arag/tokens.json]")
    ] = None,
    audit_log: Annotated[
        Path | None, typer.Option(help="Append one JSON line per request (no token, no question text). [default: none]")
    ] = None,
    max_concurrent_asks: Annotated[
        int | None, typer.Option(min=1, max=256, help="Questions answered at once; more get 429. [default: 2]")
    ] = None,
    local_model: LocalModelOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API, the web page (open http://HOST:PORT/) and MCP over HTTP (/mcp), for one index or several."""
    try:
        from arag.serve.http import serve as run_server
    except ImportError:
        from arag.errors import MissingExtraError

        raise MissingExtraError("arag serve needs FastAPI and uvicorn: pip install 'a-rag[serve]'") from None
    if local_model:
        os.environ["ARAG_LOCAL_MODEL"] = local_model
    server = {"host": host, "port": port, "token": token, "max_concurrent_asks": max_concurrent_asks,
              "tokens_file": tokens_file, "audit_log": audit_log}  # fmt: skip
    settings = _settings(config, {"server": server})
    if runs is not None and not runs.is_dir():
        raise InputError(f"--runs {runs} is not a folder")
    indexes = {}
    try:
        for name, location in _served_indexes(index_specs or [], settings.server.indexes).items():
            indexes[name] = _open_index(location, settings.index.threads)
            indexes[name].follow_updates()  # a sync or an added file is served without a restart
        names = ", ".join(indexes)
        _say(
            "serving",
            f"http://{settings.server.host}:{settings.server.port}/ ({names}; MCP: /mcp, API docs: /api/docs)",
        )
        run_server(indexes, settings, runs)
    finally:
        for opened in indexes.values():
            opened.close()


token_app = typer.Typer(help="Scoped tokens for arag serve: add, list, revoke (stored hashed).", no_args_is_help=True)
app.add_typer(token_app, name="token")
TokensFileOpt = Annotated[
    Path | None, typer.Option("--file", help="The token file. [default: ~/.config/arag/tokens.json]")
]


def _token_file(path: Path | None):
    from arag.serve.access import TokenFile, default_tokens_file

    return TokenFile(path or _settings(None).server.tokens_file or default_tokens_file())


@token_app.command("add")
def token_add(
    name: Annotated[str, typer.Argument(help="Who or what the token is for (shown in the audit log).")],
    indexes: Annotated[
        list[str] | None, typer.Option("--index", help="An index name it may use (repeat); admin without: all.")
    ] = None,
    scope: Annotated[
        str, typer.Option(help="read (search, read, MCP), ask (and questions), admin (and runs).")
    ] = "read",
    file: TokensFileOpt = None,
) -> None:
    """Create a token; it is printed once and stored only as its SHA-256."""
    tokens = _token_file(file)
    token = tokens.add(name, scope, indexes or [])
    _say("token", f"{name} ({scope}; {', '.join(indexes or []) or 'every index'}) added to {tokens.path}")
    print(token)


@token_app.command("list")
def token_list(file: TokensFileOpt = None, as_json: JsonOpt = False) -> None:
    """The tokens: name, scope, indexes, when created (never the token)."""
    entries = [
        {"name": e.name, "scope": e.scope, "indexes": e.indexes, "created": e.created}
        for e in _token_file(file).entries()
    ]
    if as_json:
        _print_json(entries)
        return
    if not entries:
        _say("", "no tokens")
    for entry in entries:
        print(f"{entry['name']}\t{entry['scope']}\t{','.join(entry['indexes']) or '*'}\t{entry['created']}")


@token_app.command("revoke")
def token_revoke(name: str, file: TokensFileOpt = None) -> None:
    """Remove a token: a running server refuses it after its restart or within a few seconds (it rereads the file)."""
    if not _token_file(file).revoke(name):
        raise InputError(f"no token named {name!r}")
    _say("revoked", name)


DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Data directory of the server. [default: $ARAG_CACHE_DIR/postgres]"),
]


@db_app.command("start")
def db_start(data: DataOpt = None) -> None:
    """Start a local PostgreSQL 18 + pgvector (extra 'pg'); prints its URL. It keeps running until 'db stop'."""
    from arag.store.postgres.server import start

    sys.stdout.write(start(data) + "\n")


@db_app.command("url")
def db_url(data: DataOpt = None) -> None:
    """Print the URL of the running local server."""
    from arag.store.postgres.server import url

    sys.stdout.write(url(data) + "\n")


@db_app.command("stop")
def db_stop(data: DataOpt = None) -> None:
    """Stop the local server."""
    from arag.store.postgres.server import data_dir, stop

    _say("stopped" if stop(data) else "not running", str(data_dir(data)))


def _eval_setup(
    config: Path | None,
    max_steps: int | None,
    model: str | None,
    base_url: str | None,
    action_mode: str | None,
    judge_prompt_file: Path | None = None,
    system_prompt_file: Path | None = None,
    profile: str | None = None,
    policies: list[str] | None = None,
    embedder: str | None = None,
):
    return _settings(
        config,
        {
            "index": {"embedder": embedder},
            "llm": {"model": model, "base_url": base_url},
            "agent": {
                "max_steps": max_steps,
                "action_mode": action_mode,
                "profile": profile,
                "policies": policies,
                "system_prompt_file": str(system_prompt_file) if system_prompt_file else None,
            },
            "eval": {"judge_prompt_file": str(judge_prompt_file) if judge_prompt_file else None},
        },
    )


def _run_one(
    choice: DatasetChoice,
    method: str,
    out_dir: Path,
    settings,
    workers: int,
    limit: int | None,
    seed: int | None,
    local_model: str | None,
    judge: bool,
    naive_top_k: int,
    index_dir: str | None,
    first: int | None = None,
) -> dict[str, Any]:
    """``run_method`` with progress bars: the index build's stages, then the questions with a live Contain-Acc."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from arag.eval.runner import run_method

    correct = [0.0, 0]
    # started by the first bar: a run refused before any work (a bad option, another run's directory) prints its
    # one error line and nothing else
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )
    stages: list[Any] = []  # the index build's bars, removed when the questions start
    questions: list[Any] = []
    started: list[bool] = []

    def start() -> None:
        if not started:
            bar.start()
            started.append(True)

    def stage(name: str, total: int):
        start()
        stages.append(bar.add_task(f"indexing: {name}", total=total))
        return lambda n, task=stages[-1]: bar.advance(task, n)

    def on_start(label: str, total: int, done: int) -> None:
        start()
        for task in stages:
            bar.remove_task(task)
        questions.append(bar.add_task(label, total=total, completed=done))

    def on_result(record: dict[str, Any]) -> None:
        correct[0] += record["contain_acc"]
        correct[1] += 1
        label = bar.tasks[-1].description.split(" — ")[0]
        accuracy = f"Contain-Acc {100 * correct[0] / correct[1]:.1f}%"
        bar.update(questions[0], advance=1, description=f"{label} — {accuracy}")

    try:
        return run_method(
            choice,
            method,
            out_dir,
            settings,
            workers=workers,
            limit=limit,
            seed=seed,
            first=first,
            local_model=local_model,
            judge=judge,
            naive_top_k=naive_top_k,
            index_dir=index_dir,
            index_progress=stage,
            on_start=on_start,
            on_result=on_result,
        )
    finally:
        if started:  # a Progress never started still prints a line when stopped
            bar.stop()


EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="Embedder of the evaluation index (its own cached index per embedder): "
        + describe(IndexSettings, "embedder", "ARAG_INDEX__EMBEDDER"),
    ),
]
EvalIndexOpt = Annotated[
    str | None,
    typer.Option(
        "--index",
        help="Use/build the index here (directory or postgresql:// URL). [default: a cache entry per corpus]",
    ),
]
DatasetOpt = Annotated[
    Path | None,
    typer.Option(
        "--dataset",
        help="Dataset folder as released (A-RAG, HippoRAG/LinearRAG, GraphRAG-Bench incl. its Datas tree) or "
        "hf:Ayanami0730/rag_test/NAME. [default: none: give --corpus-file and --questions-file]",
    ),
]
SubsetOpt = Annotated[
    str | None,
    typer.Option(help="Subset NAME where the folder holds several (GraphRAG-Bench medical, novel...). [default: none]"),
]
CorpusFileOpt = Annotated[
    Path | None, typer.Option("--corpus-file", help="Corpus file, instead of --dataset. [default: none]")
]
QuestionsFileOpt = Annotated[
    Path | None, typer.Option("--questions-file", help="Questions file, with --corpus-file. [default: none]")
]
JudgePromptOpt = Annotated[
    Path | None,
    typer.Option(
        "--judge-prompt-file",
        help="LLM-Acc judge prompt file ({question} {gold} {prediction}). [default: the packaged prompt; "
        "env ARAG_EVAL__JUDGE_PROMPT_FILE]",
    ),
]
QuestionTypeOpt = Annotated[
    str | None,
    typer.Option(
        "--question-type",
        help="Only questions of this type (GraphRAG-Bench: 'Fact Retrieval', 'Complex Reasoning'). [default: all]",
    ),
]
FirstOpt = Annotated[
    int | None,
    typer.Option(
        min=1, help="Answer only the first N of the selected questions (a prefix of a sample). [default: all]"
    ),
]
IdsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--ids-file",
        help="Of the questions selected, answer only those whose id is in this file (one per line, or a JSON list). "
        "[default: all selected]",
    ),
]
KeyTermsOpt = Annotated[
    Path | None,
    typer.Option(
        "--key-terms",
        help="Also score answers by key terms (a file like benchmarks/key_terms/graphrag-bench-medical.json: for "
        "datasets whose gold answers are sentences). [default: none]",
    ),
]
AbsentOpt = Annotated[
    bool,
    typer.Option(
        "--absent",
        help="Ask the selected questions over the corpus with their evidence taken out (gold passages; key terms' "
        'sentences): the right answer is "not in the documents". Questions whose answer stays in the corpus are '
        "left out, with the reason, in the run's config. The evidence of every question selected is taken out; "
        "--ids-file only picks which are asked.",
    ),
]
SystemPromptOpt = Annotated[
    Path | None,
    typer.Option(
        "--system-prompt-file",
        help="Agent system prompt file. [default: the packaged prompt; env ARAG_AGENT__SYSTEM_PROMPT_FILE]",
    ),
]


@eval_app.command("run")
def eval_run(
    method: Annotated[
        str,
        typer.Option(help="direct, naive-rag, arag-naive, arag-full, arag-no-keyword, arag-no-semantic, arag-no-read."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Run directory (resumable).")],
    dataset: DatasetOpt = None,
    subset: SubsetOpt = None,
    corpus_file: CorpusFileOpt = None,
    questions_file: QuestionsFileOpt = None,
    question_type: QuestionTypeOpt = None,
    key_terms: KeyTermsOpt = None,
    ids_file: IdsFileOpt = None,
    absent: AbsentOpt = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Number of questions. [default: all]")] = None,
    seed: Annotated[
        int | None, typer.Option(help="Sample --limit questions at random with this seed. [default: the first --limit]")
    ] = None,
    first: FirstOpt = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Questions answered concurrently.")] = 1,
    max_steps: MaxStepsOpt = None,
    judge: Annotated[
        bool, typer.Option("--judge", help="Also compute LLM-Acc (ARAG_JUDGE__* or the agent model).")
    ] = False,
    judge_prompt_file: JudgePromptOpt = None,
    system_prompt_file: SystemPromptOpt = None,
    naive_top_k: Annotated[int, typer.Option(min=1, max=100, help="Chunks Naive RAG pastes into the prompt.")] = 5,
    corpus: CorpusOpt = "auto",
    index_dir: EvalIndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    local_model: LocalModelOpt = None,
    action_mode: ActionModeOpt = None,
    profile: ProfileOpt = None,
    policy: PolicyOpt = None,
    embedder: EmbedderOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Run one method on a dataset; writes OUT/results.jsonl and OUT/summary.json."""
    from arag.eval.runner import DatasetChoice

    settings = _eval_setup(
        config,
        max_steps,
        model,
        base_url,
        action_mode,
        judge_prompt_file,
        system_prompt_file,
        profile,
        policy,
        embedder,
    )
    choice = DatasetChoice(
        dataset, corpus, subset, corpus_file, questions_file, question_type, key_terms, ids_file, absent
    )
    summary = _run_one(
        choice, method, out, settings, workers, limit, seed, local_model, judge, naive_top_k, index_dir, first
    )
    _print_json(summary)


@eval_app.command("sweep")
def eval_sweep(
    method: Annotated[str, typer.Option(help="Method, as for eval run.")],
    out: Annotated[Path, typer.Option("--out", help="Parent directory; one run per value: OUT/steps-N.")],
    dataset: DatasetOpt = None,
    subset: SubsetOpt = None,
    corpus_file: CorpusFileOpt = None,
    questions_file: QuestionsFileOpt = None,
    question_type: QuestionTypeOpt = None,
    key_terms: KeyTermsOpt = None,
    ids_file: IdsFileOpt = None,
    max_steps: Annotated[str, typer.Option("--max-steps", help="Comma-separated values.")] = "5,10,15,20",
    confidence: Annotated[
        str | None,
        typer.Option(
            "--confidence",
            help="Comma-separated thresholds of the confident_stop policy (added for these runs), each at every "
            "--max-steps value: the accuracy / steps curve of adaptive stopping. [default: none]",
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Number of questions. [default: all]")] = None,
    seed: Annotated[int | None, typer.Option(help="Sample --limit questions with this seed. [default: none]")] = None,
    first: FirstOpt = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Questions answered concurrently.")] = 1,
    judge: Annotated[bool, typer.Option("--judge", help="Also compute LLM-Acc.")] = False,
    judge_prompt_file: JudgePromptOpt = None,
    system_prompt_file: SystemPromptOpt = None,
    corpus: CorpusOpt = "auto",
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    local_model: LocalModelOpt = None,
    profile: ProfileOpt = None,
    policy: PolicyOpt = None,
    embedder: EmbedderOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Test-time scaling: run a method at several max_steps values (the paper: 5, 10, 15, 20), and with
    --confidence at several thresholds of adaptive stopping (OUT/steps-N-confidence-C)."""
    from arag.errors import ConfigError
    from arag.eval.runner import DatasetChoice

    try:
        values = [int(v) for v in max_steps.split(",") if v.strip()]
        thresholds: list[float | None] = (
            [float(v) for v in confidence.split(",") if v.strip()] if confidence is not None else [None]
        )
    except ValueError:
        raise ConfigError("--max-steps takes comma-separated integers, --confidence numbers from 0 to 1") from None
    if any(t is not None and not 0 <= t <= 1 for t in thresholds):
        raise ConfigError("--confidence thresholds are numbers from 0 to 1")
    choice = DatasetChoice(dataset, corpus, subset, corpus_file, questions_file, question_type, key_terms, ids_file)
    summaries = []
    for steps in values:
        for threshold in thresholds:
            policies = [*(policy or []), "+confident_stop"] if threshold is not None else policy
            settings = _eval_setup(
                config, steps, model, base_url, None, judge_prompt_file, system_prompt_file, profile, policies, embedder
            )
            name = f"steps-{steps}"
            if threshold is not None:
                settings.agent.policy.setdefault("confident_stop", {})["threshold"] = threshold
                name += f"-confidence-{threshold:g}"
            summaries.append(
                _run_one(choice, method, out / name, settings, workers, limit, seed, local_model, judge, 5, None, first)
            )
    _print_json(summaries)


@eval_app.command("report")
def eval_report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories.")],
    out: Annotated[Path | None, typer.Option("--out", help="Report folder (default: ./report).")] = None,
    key_terms: KeyTermsOpt = None,
) -> None:
    """Markdown tables (accuracy, efficiency) and PNG plots from finished runs."""
    from arag.eval.metrics import KeyTerms
    from arag.eval.report import write_report

    terms = KeyTerms.load(key_terms) if key_terms else None
    written, skipped = write_report(run_dirs, out or Path("report"), terms)
    for path in written:
        _say("wrote", str(path))
    for note in skipped:
        _say("[yellow]warning[/yellow]", note)


@eval_app.command("analyze")
def eval_analyze(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories (arag eval run --out).")],
    as_json: JsonOpt = False,
) -> None:
    """Tag every wrong answer by its cause (retrieval miss, seen but not read, reasoning, stall, budget, ...);
    writes RUN_DIR/analysis.jsonl and prints the breakdown per run."""
    from arag.eval.analyze import FAILURE_TAGS, analyze_run, breakdown_markdown

    analyses = [analyze_run(run_dir) for run_dir in run_dirs]
    if as_json:
        _print_json(analyses)
        return
    out.print(breakdown_markdown(analyses), markup=False, highlight=False)
    for analysis in analyses:
        causes = ", ".join(f"{t} {analysis['tags'][t]}" for t in FAILURE_TAGS if analysis["tags"][t])
        _say("wrote", f"{analysis['run_dir']}/analysis.jsonl ({analysis['wrong']} wrong: {causes or 'none'})")


@eval_app.command("export")
def eval_export(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders written by arag eval run.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for train.jsonl and heldout.jsonl.")],
    fmt: Annotated[str, typer.Option("--format", help="openai-chat or sharegpt (LLaMA-Factory).")] = "openai-chat",
    only_correct: Annotated[bool, typer.Option("--only-correct", help="Only correctly answered questions.")] = False,
    by: Annotated[
        str, typer.Option(help="What counts as correct: contain, llm, key-terms, or any of those the run has.")
    ] = "any",
    heldout: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="Share of questions (by id) in heldout.jsonl.")
    ] = 0.1,
    key_terms: Annotated[
        Path | None, typer.Option("--key-terms", help="Score answers by these key terms first.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the runs' trajectories as fine-tuning data (system prompt, tool schemas, tool calls and observations,
    final answer), deduplicated, with a held-out split by question id."""
    from arag.eval.export import export_runs

    report = export_runs(run_dirs, out, fmt, only_correct, by, heldout, key_terms)  # type: ignore[arg-type]
    if as_json:
        from dataclasses import asdict

        _print_json(asdict(report))
        return
    _say(
        "exported",
        f"{report.examples} training and {report.heldout} held-out examples ({fmt}) → {', '.join(report.files)}; "
        f"left out: {report.skipped_unanswered} unanswered, {report.skipped_wrong} wrong, "
        f"{report.skipped_unscored} unscored, {report.duplicates} duplicates",
    )


@eval_app.command("retrieval")
def eval_retrieval(
    dataset: DatasetOpt = None,
    subset: SubsetOpt = None,
    corpus_file: CorpusFileOpt = None,
    questions_file: QuestionsFileOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="Recall at this many chunks.")] = 5,
    naive_top_k: Annotated[int, typer.Option(min=1, max=100, help="Chunks Naive RAG would paste.")] = 5,
    corpus: CorpusOpt = "auto",
    limit: Annotated[int | None, typer.Option(min=1, help="Number of questions. [default: all]")] = None,
    index_dir: EvalIndexOpt = None,
    embedders: Annotated[
        list[str] | None,
        typer.Option(
            "--embedder",
            help="Embedder to measure (repeatable: one result per embedder, as a JSON list, each on its own cached "
            "index). [default: index.embedder; env ARAG_INDEX__EMBEDDER]",
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Recall@k of gold passages with no LLM: semantic search, Naive RAG's top-k, keyword search on entities."""
    from arag.errors import ConfigError
    from arag.eval.runner import DatasetChoice, index_for, retrieval_metrics, select_questions

    if embedders and len(embedders) > 1 and index_dir:
        raise ConfigError("--index holds one embedder's index: give it with one --embedder, or leave it out")
    data = DatasetChoice(dataset, corpus, subset, corpus_file, questions_file).load()
    data.questions = select_questions(data.questions, limit, None)
    results = []
    specs: list[str | None] = list(embedders) if embedders else [None]  # None: index.embedder as configured
    for spec in specs:
        settings = _settings(config, {"index": {"embedder": spec}}).index
        metrics = retrieval_metrics(data, index_for(data, settings, index_dir), k, naive_top_k)
        results.append({"embedder": settings.embedder, **metrics})
    _print_json(results if embedders and len(embedders) > 1 else results[0])


def main() -> None:
    from arag import tracing

    try:
        tracing.configure()  # spans over OTLP when OTEL_* variables ask for them
        app()
    except ARagError as exc:
        _say("[red]error[/red]", str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # a bug: still one line; ARAG_DEBUG=1 shows the traceback
        if os.environ.get("ARAG_DEBUG"):
            raise
        _say("[red]internal error[/red]", f"{type(exc).__name__}: {exc} (please report it; ARAG_DEBUG=1 shows where)")
        sys.exit(1)
