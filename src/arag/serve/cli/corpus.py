"""Building and inspecting an index: ``arag index``, ``watch``, ``export``, ``info``."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from arag.errors import ARagError
from arag.serve.cli.common import (
    PARTIAL_INDEX,
    ConfigOpt,
    IndexOpt,
    JsonOpt,
    ThreadsOpt,
    app,
    err,
    open_index,
    print_json,
    say,
    settings_with,
)
from arag.settings import IndexSettings, describe

if TYPE_CHECKING:
    from arag.corpus.build import IndexReport, StageProgress
from arag.store import display_location


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
    """Index files and folders: text, Markdown, HTML, PDF, Word, PowerPoint, Excel, CSV, EPUB, e-mail, images
    (OCR), JSONL and A-RAG/HippoRAG/GraphRAG-Bench JSON (docs/usage.md lists each format).

    Sources that cannot be read are reported once each on stderr and skipped. Exit status: 0 when every
    source was indexed; 3 when the index was written without the sources reported; 1 when nothing was
    written (an error, or any unreadable source with --strict).
    """
    from arag.corpus.build import build_index

    index_overrides: dict[str, Any] = {
        "embedder": embedder,
        "vector_dtype": vector_dtype,
        "ann": ann,
        "threads": threads,
    }
    if chunk_tokens is not None:
        index_overrides["chunker"] = {"chunk_tokens": chunk_tokens}
    settings = settings_with(config, {"index": index_overrides})
    with stage_bars(hidden=as_json) as stage:
        report = build_index(
            sources, index_dir, settings.index, rebuild=rebuild, progress=stage, strict=strict, shards=shards, sync=sync
        )
    for problem in report.problems:
        say("[yellow]skipped[/yellow]", str(problem))
    _print_index_report(report, display_location(index_dir), as_json)
    if report.problems:
        err.print(
            f"{len(report.problems)} source(s) skipped (see above); --strict makes that an error", highlight=False
        )
        raise typer.Exit(PARTIAL_INDEX)


@contextlib.contextmanager
def stage_bars(hidden: bool = False) -> Iterator[StageProgress]:
    """A progress bar per stage of a build (reading, chunking, embedding…), on stderr, gone when it ends."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True, disable=hidden) as bar:

        def stage(name: str, total: int) -> Callable[[int], None]:
            task = bar.add_task(name, total=total)
            return lambda n: bar.advance(task, n)

        yield stage


def _print_index_report(report: IndexReport, where: str, as_json: bool) -> None:
    """What a build did: as JSON, or one line, with a hint when documents whose file is gone were kept."""
    if as_json:
        print_json(
            {
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
                "stale": report.stale,
            }
        )
        return
    err.print(
        f"indexed {report.documents} documents, {report.chunks} chunks, {report.sentences} sentences "
        f"({len(report.added)} added, {len(report.replaced)} replaced, {report.unchanged} unchanged, "
        f"{report.removed} removed; embedded {report.embedded}, reused {report.reused_vectors}) → {escape(where)}",
        highlight=False,
    )
    if report.stale:
        named = ", ".join(report.stale[:3]) + (", …" if len(report.stale) > 3 else "")
        err.print(
            f"{len(report.stale)} document(s) kept whose file is gone from the sources ({escape(named)}): "
            "--sync removes them",
            highlight=False,
        )


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
    from arag.corpus.watch import watch_sources

    index_overrides: dict[str, Any] = {"embedder": embedder, "threads": threads}
    if chunk_tokens is not None:
        index_overrides["chunker"] = {"chunk_tokens": chunk_tokens}
    settings = settings_with(config, {"index": index_overrides})
    where = display_location(index_dir)

    def said(outcome: IndexReport | ARagError) -> None:
        if isinstance(outcome, ARagError):
            say("[red]sync failed[/red]", f"{outcome} (the next change tries again)")
            return
        for problem in outcome.problems:
            say("[yellow]skipped[/yellow]", str(problem))
        say(
            "synced",
            f"{outcome.documents} documents ({len(outcome.added)} added, {len(outcome.replaced)} replaced, "
            f"{outcome.removed} removed, {outcome.embedded} sentences embedded) → {where}",
        )

    say("watching", f"{', '.join(str(s) for s in sources)} for {where} (Ctrl-C stops)")
    watch_sources(sources, index_dir, settings.index, said, debounce_ms=debounce_ms)
    say("stopped", "watching")


@app.command()
def export(
    index_dir: IndexOpt,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write here instead of stdout.")] = None,
) -> None:
    """Write every chunk, in document order, as JSON Lines {chunk_id, doc_id, text}."""
    idx = open_index(index_dir)
    target = out_file.open("w", encoding="utf-8") if out_file else sys.stdout
    try:
        for record in idx.iter_chunks():
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
    """Print the index manifest and the metadata fields its filters (--where) can use; with --verify, check every
    file's checksum."""
    from arag.store import is_database_url

    index = open_index(index_dir)
    if not verify:
        manifest = index.described()  # what /api/info shows; with --as, only what those groups may read
        index.close()
        print_json(manifest)
        return
    problems = index.store.verify()
    index.close()
    for problem in problems:
        say("[red]damaged[/red]", problem)
    if problems:
        err.print("re-index the sources with --rebuild", highlight=False)
        raise typer.Exit(1)
    if is_database_url(index_dir):
        say("ok", "documents, chunks, sentences and vectors are consistent")
    else:
        say("ok", f"{len(index.manifest.files)} files match their checksums")
