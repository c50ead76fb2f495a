"""The ``arag`` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from arag.errors import ARagError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="A-RAG: agentic retrieval over hierarchical retrieval interfaces.",
)
search_app = typer.Typer(no_args_is_help=True, help="Run a retrieval tool directly.")
app.add_typer(search_app, name="search")
err = Console(stderr=True)
out = Console()

IndexOpt = Annotated[Path, typer.Option("--index", "-i", help="Index directory.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Settings file (JSON or TOML).")]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _settings(config: Path | None, overrides: dict[str, Any] | None = None):
    from arag.settings import load_settings

    return load_settings(config, overrides)


def _open_index(index: Path, threads: int | None = None):
    from arag.index import Index

    return Index.open(index, threads=threads or 2)


@app.command()
def index(
    sources: Annotated[list[Path], typer.Argument(help="Files and folders to index.")],
    index_dir: IndexOpt,
    chunk_tokens: Annotated[int | None, typer.Option(help="Target tokens per chunk (default 1000).")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedder spec (see docs).")] = None,
    vector_dtype: Annotated[str | None, typer.Option(help="f32, f16 or i8.")] = None,
    ann: Annotated[bool | None, typer.Option("--ann/--no-ann", help="Build an HNSW index too.")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads.")] = None,
    rebuild: Annotated[bool, typer.Option(help="Start a new index instead of adding to it.")] = False,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index files and folders (.txt .md .html .pdf .jsonl, and A-RAG/HippoRAG/GraphRAG-Bench JSON)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from arag.indexing import build_index

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

        report = build_index(sources, index_dir, settings.index, rebuild=rebuild, progress=stage)
    for problem in report.problems:
        err.print(f"[red]error[/red]: {problem}", highlight=False)
    summary = {
        "index": str(index_dir),
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
            f"({len(report.added)} added, {len(report.replaced)} replaced, {report.unchanged} unchanged; "
            f"embedded {report.embedded}, reused {report.reused_vectors}) → {index_dir}",
            highlight=False,
        )
    if report.problems:
        raise typer.Exit(1)


def _print_hits(hits: list[Any], as_json: bool) -> None:
    if as_json:
        _print_json([h.to_dict() for h in hits])
        return
    if not hits:
        out.print("no matching chunks")
    for hit in hits:
        out.print(f"[bold]{hit.chunk_id}[/bold]  score {hit.score:.4g}", highlight=False)
        for snippet in hit.snippets:
            out.print(f"   {' '.join(snippet.split())[:300]}", highlight=False, markup=False)


@search_app.command("keyword")
def search_keyword(
    keywords: Annotated[list[str], typer.Argument(help="Keywords (exact, case-insensitive).")],
    index_dir: IndexOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Keyword search: score = Σ count(k) · len(k)."""
    _print_hits(_open_index(index_dir).keyword_search(keywords, top_k), as_json)


@search_app.command("semantic")
def search_semantic(
    query: Annotated[str, typer.Argument(help="Natural-language query.")],
    index_dir: IndexOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k")] = 5,
    approximate: Annotated[bool, typer.Option("--approximate", help="Use the HNSW index (needs --ann).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Semantic search: chunk score = its best sentence's cosine."""
    _print_hits(_open_index(index_dir).semantic_search(query, top_k, exact=not approximate), as_json)


@app.command()
def read(
    chunk_ids: Annotated[list[str], typer.Argument(help="Chunk ids.")],
    index_dir: IndexOpt,
    as_json: JsonOpt = False,
) -> None:
    """Print chunks by id, with their neighbours' ids."""
    found, missing = _open_index(index_dir).read(chunk_ids)
    if as_json:
        _print_json(
            [{"chunk_id": r.chunk_id, "text": r.text, "prev_id": r.prev_id, "next_id": r.next_id} for r in found]
        )
    else:
        for r in found:
            out.print(f"[bold]{r.chunk_id}[/bold] (prev {r.prev_id or '-'}, next {r.next_id or '-'})", highlight=False)
            out.print(r.text, markup=False, highlight=False)
    for chunk_id in missing:
        err.print(f"not found: {chunk_id}", highlight=False, markup=False)
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
def info(index_dir: IndexOpt) -> None:
    """Print the index manifest."""
    from dataclasses import asdict

    from arag.store.embedded import read_manifest

    _print_json(asdict(read_manifest(index_dir)))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    index_dir: IndexOpt,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Tool-calling steps (paper: 5-20).")] = None,
    model: Annotated[str | None, typer.Option(help="Endpoint model name (overrides ARAG_MODEL).")] = None,
    base_url: Annotated[str | None, typer.Option(help="Endpoint base URL (overrides ARAG_BASE_URL).")] = None,
    local_model: Annotated[str | None, typer.Option(help="Embedded model name or GGUF path.")] = None,
    action_mode: Annotated[str | None, typer.Option(help="auto, native or json.")] = None,
    parallel_tool_calls: Annotated[bool | None, typer.Option("--parallel-tool-calls/--one-call")] = None,
    trajectory_file: Annotated[Path | None, typer.Option(help="Append the result as JSON Lines here.")] = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question with the A-RAG agent, showing each step."""
    from arag.agent import Agent
    from arag.runtime import chat_model

    settings = _settings(
        config,
        {
            "llm": {"model": model, "base_url": base_url},
            "agent": {
                "max_steps": max_steps,
                "action_mode": action_mode,
                "parallel_tool_calls": parallel_tool_calls,
                "trajectory_file": str(trajectory_file) if trajectory_file else None,
            },
        },
    )
    idx = _open_index(index_dir, settings.index.threads)
    chat, embedded = chat_model(settings, local_model=local_model, threads=settings.index.threads)
    mode = settings.agent.action_mode
    agent = Agent(idx, chat, settings.agent, json_actions=mode == "json" or (mode == "auto" and embedded))
    agent.on_step = None if as_json else _show_step
    result = agent.run(question)
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
        for citation in result.citations:
            mark = "verified" if citation["verified"] else "NOT among the chunks retrieved in this run"
            out.print(f"  [{citation['chunk_id']}] {mark}", markup=False, highlight=False)
        if result.error:
            err.print(f"[red]error[/red]: {result.error}", highlight=False)
    if result.stop_reason == "error":
        raise typer.Exit(1)


def _show_step(step) -> None:
    first = " ".join(step.observation.split())[:160]
    err.print(f"[cyan]→ {step.tool}[/cyan] {json.dumps(step.arguments, ensure_ascii=False)}", highlight=False)
    err.print(f"  {first}", markup=False, highlight=False)


@app.command()
def mcp(index_dir: IndexOpt) -> None:
    """Serve the three tools over MCP (stdio)."""
    from arag.mcp_server import serve

    serve(index_dir)


def main() -> None:
    try:
        app()
    except ARagError as exc:
        err.print(f"[red]error[/red]: {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
