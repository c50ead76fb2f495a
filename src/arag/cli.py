"""The ``arag`` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from arag.errors import ARagError

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
eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Reproduce the paper's experiments.")
app.add_typer(eval_app, name="eval")
err = Console(stderr=True, soft_wrap=True)  # never hard-wrap: people grep logs and paste paths
out = Console(soft_wrap=True)

IndexOpt = Annotated[Path, typer.Option("--index", "-i", help="Index directory.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Settings file (JSON or TOML).")]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _settings(config: Path | None, overrides: dict[str, Any] | None = None):
    from arag.settings import load_settings

    return load_settings(config, overrides)


def _open_index(index: Path, threads: int | None = None, probes: int | None = None):
    from arag.index import Index

    settings = _settings(None).index  # ARAG_INDEX__THREADS, ARAG_INDEX__ANN_PROBES
    return Index.open(index, threads=threads or settings.threads, probes=probes or settings.ann_probes)


@app.command()
def index(
    sources: Annotated[list[Path], typer.Argument(help="Files and folders to index.")],
    index_dir: IndexOpt,
    chunk_tokens: Annotated[int | None, typer.Option(help="Target tokens per chunk (default 1000).")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedder spec (see docs).")] = None,
    vector_dtype: Annotated[str | None, typer.Option(help="f32, f16 or i8.")] = None,
    ann: Annotated[
        bool | None, typer.Option("--ann/--no-ann", help="Also build an IVF index for approximate search.")
    ] = None,
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
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Scan only the nearest IVF lists (index built with --ann).")
    ] = False,
    probes: Annotated[int | None, typer.Option(help="IVF lists scanned (with --approximate).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Semantic search: chunk score = its best sentence's cosine."""
    idx = _open_index(index_dir, probes=probes)
    _print_hits(idx.semantic_search(query, top_k, exact=not approximate), as_json)


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

    serve(_open_index(index_dir))  # threads and IVF probes from settings, like the other commands


def _eval_setup(
    config: Path | None, max_steps: int | None, model: str | None, base_url: str | None, action_mode: str | None
):
    return _settings(
        config,
        {"llm": {"model": model, "base_url": base_url}, "agent": {"max_steps": max_steps, "action_mode": action_mode}},
    )


def _run_one(
    dataset_path: Path,
    method: str,
    out_dir: Path,
    settings,
    workers: int,
    limit: int | None,
    seed: int | None,
    local_model: str | None,
    judge: bool,
    naive_top_k: int,
    corpus: str,
    index_dir: Path | None,
) -> dict[str, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from arag.eval.datasets import load_dataset
    from arag.eval.methods import make_method
    from arag.eval.runner import index_for, run_eval, select_questions
    from arag.runtime import chat_model

    dataset = load_dataset(dataset_path, corpus)
    questions = select_questions(dataset.questions, limit, seed)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err, transient=True
    ) as bar:

        def stage(name: str, total: int):
            task = bar.add_task(f"indexing: {name}", total=total)
            return lambda n: bar.advance(task, n)

        index = index_for(dataset, settings.index, index_dir, progress=stage)
    model, embedded = chat_model(settings, local_model=local_model, threads=settings.index.threads)
    judge_model = None
    if judge:
        judge_model = (
            chat_model(settings, llm=settings.judge, local_model=local_model)[0]
            if (settings.judge.model or settings.judge.base_url)
            else model
        )
    mode = settings.agent.action_mode
    method_impl = make_method(
        method, index, model, settings.agent, mode == "json" or (mode == "auto" and embedded), naive_top_k
    )
    config = {
        "dataset": dataset.name,
        "dataset_path": str(dataset_path),
        "format": dataset.format,
        "method": method,
        "model": model.model,
        "embedded_model": embedded,
        "judge_model": judge_model.model if judge_model else None,
        "settings": {
            "agent": settings.agent.model_dump(mode="json"),
            "index": settings.index.model_dump(mode="json", exclude={"threads"}),
            "naive_top_k": naive_top_k,
        },
        "limit": limit,
        "seed": seed,
        "question_ids": [q.id for q in questions],
    }
    correct = [0.0, 0]
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    ) as bar:
        task = bar.add_task(f"{method} on {dataset.name}", total=len(questions))
        from arag.eval.runner import RESULTS, _read_finished

        done = _read_finished(out_dir / RESULTS) if (out_dir / RESULTS).exists() else {}
        bar.advance(task, sum(1 for q in questions if q.id in done))

        def on_result(record: dict[str, Any]) -> None:
            correct[0] += record["contain_acc"]
            correct[1] += 1
            bar.update(
                task,
                advance=1,
                description=f"{method} on {dataset.name} — Contain-Acc {100 * correct[0] / correct[1]:.1f}%",
            )

        return run_eval(dataset, method_impl, index, out_dir, config, questions, workers, judge_model, on_result)


@eval_app.command("run")
def eval_run(
    dataset: Annotated[
        Path,
        typer.Option(
            "--dataset", help="Dataset folder (A-RAG, HippoRAG, GraphRAG-Bench) or hf:Ayanami0730/rag_test/NAME."
        ),
    ],
    method: Annotated[
        str,
        typer.Option(help="direct, naive-rag, arag-naive, arag-full, arag-no-keyword, arag-no-semantic, arag-no-read."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Run directory (resumable).")],
    limit: Annotated[int | None, typer.Option(help="Number of questions.")] = None,
    seed: Annotated[int | None, typer.Option(help="Sample --limit questions at random with this seed.")] = None,
    workers: Annotated[int, typer.Option(help="Questions answered concurrently.")] = 1,
    max_steps: Annotated[int | None, typer.Option("--max-steps")] = None,
    judge: Annotated[
        bool, typer.Option("--judge", help="Also compute LLM-Acc (ARAG_JUDGE__* or the agent model).")
    ] = False,
    naive_top_k: Annotated[int, typer.Option(help="Chunks Naive RAG pastes into the prompt.")] = 5,
    corpus: Annotated[str, typer.Option(help="auto, chunks (A-RAG chunks.json) or corpus (passages).")] = "auto",
    index_dir: Annotated[Path | None, typer.Option("--index", help="Use/build the index here.")] = None,
    model: Annotated[str | None, typer.Option()] = None,
    base_url: Annotated[str | None, typer.Option()] = None,
    local_model: Annotated[str | None, typer.Option()] = None,
    action_mode: Annotated[str | None, typer.Option()] = None,
    config: ConfigOpt = None,
) -> None:
    """Run one method on a dataset; writes OUT/results.jsonl and OUT/summary.json."""
    settings = _eval_setup(config, max_steps, model, base_url, action_mode)
    summary = _run_one(
        dataset, method, out, settings, workers, limit, seed, local_model, judge, naive_top_k, corpus, index_dir
    )
    _print_json(summary)


@eval_app.command("sweep")
def eval_sweep(
    dataset: Annotated[Path, typer.Option("--dataset")],
    method: Annotated[str, typer.Option()],
    out: Annotated[Path, typer.Option("--out", help="Parent directory; one run per value: OUT/steps-N.")],
    max_steps: Annotated[str, typer.Option("--max-steps", help="Comma-separated values.")] = "5,10,15,20",
    limit: Annotated[int | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    workers: Annotated[int, typer.Option()] = 1,
    judge: Annotated[bool, typer.Option("--judge")] = False,
    corpus: Annotated[str, typer.Option()] = "auto",
    model: Annotated[str | None, typer.Option()] = None,
    base_url: Annotated[str | None, typer.Option()] = None,
    local_model: Annotated[str | None, typer.Option()] = None,
    config: ConfigOpt = None,
) -> None:
    """Test-time scaling: run a method at several max_steps values (the paper: 5, 10, 15, 20)."""
    from arag.errors import ConfigError

    try:
        values = [int(v) for v in max_steps.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--max-steps must be comma-separated integers, got {max_steps!r}") from None
    summaries = []
    for steps in values:
        settings = _eval_setup(config, steps, model, base_url, None)
        summaries.append(
            _run_one(
                dataset,
                method,
                out / f"steps-{steps}",
                settings,
                workers,
                limit,
                seed,
                local_model,
                judge,
                5,
                corpus,
                None,
            )
        )
    _print_json(summaries)


@eval_app.command("report")
def eval_report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories.")],
    out: Annotated[Path | None, typer.Option("--out", help="Report folder (default: ./report).")] = None,
) -> None:
    """Markdown tables (accuracy, efficiency) and PNG plots from finished runs."""
    from arag.eval.report import write_report

    for path in write_report(run_dirs, out or Path("report")):
        err.print(f"wrote {path}", highlight=False)


@eval_app.command("retrieval")
def eval_retrieval(
    dataset: Annotated[Path, typer.Option("--dataset")],
    k: Annotated[int, typer.Option("-k")] = 5,
    naive_top_k: Annotated[int, typer.Option()] = 5,
    corpus: Annotated[str, typer.Option()] = "auto",
    limit: Annotated[int | None, typer.Option()] = None,
    index_dir: Annotated[Path | None, typer.Option("--index")] = None,
    config: ConfigOpt = None,
) -> None:
    """Recall@k of gold passages with no LLM: semantic search, Naive RAG's top-k, keyword search on entities."""
    from arag.eval.datasets import load_dataset
    from arag.eval.runner import index_for, retrieval_metrics, select_questions

    settings = _settings(config)
    data = load_dataset(dataset, corpus)
    data.questions = select_questions(data.questions, limit, None)
    _print_json(retrieval_metrics(data, index_for(data, settings.index, index_dir), k, naive_top_k))


def main() -> None:
    try:
        app()
    except ARagError as exc:
        err.print(f"[red]error[/red]: {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
