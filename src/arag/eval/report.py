"""Tables shaped like the paper's, and plots: accuracy vs max_steps and vs retrieved tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arag.eval.runner import SUMMARY

METHOD_LABELS = {
    "direct": "Direct answer",
    "naive-rag": "Naive RAG",
    "arag-naive": "A-RAG (Naive)",
    "arag-full": "A-RAG (Full)",
    "arag-no-keyword": "A-RAG w/o keyword_search",
    "arag-no-semantic": "A-RAG w/o semantic_search",
    "arag-no-read": "A-RAG w/o chunk_read",
}


def load_runs(run_dirs: list[Path]) -> list[dict[str, Any]]:
    from arag.errors import ConfigError

    runs = []
    for run_dir in run_dirs:
        path = run_dir / SUMMARY
        if not path.is_file():
            raise ConfigError(f"{run_dir} has no {SUMMARY} (run 'arag eval run' to finish it)")
        runs.append({**json.loads(path.read_text()), "run_dir": str(run_dir)})
    return runs


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def markdown(runs: list[dict[str, Any]]) -> str:
    datasets = list(dict.fromkeys(r["dataset"] for r in runs))
    methods = list(dict.fromkeys((r["method"], r.get("max_steps")) for r in runs))
    by_key = {(r["method"], r.get("max_steps"), r["dataset"]): r for r in runs}
    head = "| Method | " + " | ".join(f"{d} LLM-Acc | {d} Contain-Acc" for d in datasets) + " |"
    lines = ["## Accuracy (%)", "", head, "|---|" + "---|---|" * len(datasets)]
    for method, steps in methods:
        label = METHOD_LABELS.get(method, method) + (
            f" (max_steps {steps})" if steps and method.startswith("arag") else ""
        )
        cells = []
        for dataset in datasets:
            run = by_key.get((method, steps, dataset), {})
            cells += [_pct(run.get("llm_acc")), _pct(run.get("contain_acc"))]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Efficiency (per question)",
        "",
        "| Method | Dataset | Questions | Retrieved tokens | Steps | Cost (USD) | Answered | Recall of gold "
        "passages | Latency (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        cost = "–" if r.get("cost_per_question") is None else f"{r['cost_per_question']:.5f}"
        lines.append(
            f"| {METHOD_LABELS.get(r['method'], r['method'])} | {r['dataset']} | {r['questions']} | "
            f"{(r.get('retrieved_tokens') or 0):.0f} | {(r.get('steps') or 0):.2f} | {cost} | "
            f"{_pct(r.get('answered_rate'))}% | {_pct(r.get('retrieval_recall'))}% | "
            f"{(r.get('latency_s') or 0):.1f} |"
        )
    judges = {r.get("judge_model") for r in runs if r.get("llm_acc") is not None}
    lines += ["", f"LLM-Acc judge: {', '.join(sorted(str(j) for j in judges)) if judges else 'not run'}."]
    return "\n".join(lines) + "\n"


def plots(runs: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    from arag.errors import MissingExtraError

    try:
        import matplotlib
    except ImportError:
        raise MissingExtraError("the plots need matplotlib: pip install 'a-rag[eval]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for method, dataset in dict.fromkeys((r["method"], r["dataset"]) for r in runs):
        points = sorted(
            (r["max_steps"], r["contain_acc"])
            for r in runs
            if r["method"] == method
            and r["dataset"] == dataset
            and r.get("max_steps")
            and r.get("contain_acc") is not None
        )
        if points:
            ax.plot(
                [p[0] for p in points],
                [100 * p[1] for p in points],
                marker="o",
                label=f"{METHOD_LABELS.get(method, method)} / {dataset}",
            )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    written.append(
        _save(fig, ax, "max_steps", "Test-time scaling: accuracy vs max_steps", out_dir / "accuracy_vs_steps.png")
    )

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        if r.get("contain_acc") is None:
            continue
        ax.scatter(r.get("retrieved_tokens") or 0, 100 * r["contain_acc"])
        ax.annotate(
            f"{METHOD_LABELS.get(r['method'], r['method'])}"
            + (f" @{r['max_steps']}" if r.get("max_steps") and r["method"].startswith("arag") else ""),
            (r.get("retrieved_tokens") or 0, 100 * r["contain_acc"]),
            fontsize=7,
        )
    written.append(
        _save(
            fig, ax, "retrieved tokens per question", "Accuracy vs retrieved tokens", out_dir / "accuracy_vs_tokens.png"
        )
    )
    return written


def _save(fig: Any, ax: Any, xlabel: str, title: str, path: Path) -> Path:
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel("Contain-Acc (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(run_dirs: list[Path], out_dir: Path) -> tuple[list[Path], list[str]]:
    """The files written (the Markdown tables always) and what could not be made, said in one line each."""
    from arag.errors import MissingExtraError

    runs = load_runs(run_dirs)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "report.md"
    report.write_text("# A-RAG evaluation report\n\n" + markdown(runs), encoding="utf-8")
    try:
        return [report, *plots(runs, out_dir)], []
    except MissingExtraError as exc:
        return [report], [f"plots skipped: {exc}"]
