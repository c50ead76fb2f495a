"""Tables shaped like the paper's, and plots: accuracy vs max_steps and vs retrieved tokens."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from arag.eval.metrics import KeyTerms
from arag.eval.runs import METHOD_LABELS, load_runs


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _label(run: dict[str, Any]) -> str:
    method, steps = run["method"], run.get("max_steps")
    label = METHOD_LABELS.get(method, method)
    if steps and str(method).startswith("arag"):
        label += f" (max_steps {steps})"
    if run.get("ambiguous"):  # two runs of the same method: name the run folder
        label += f" · {Path(run['run_dir']).name}"
    return label + (" [unfinished]" if run.get("partial") else "")


def _mark_ambiguous(runs: list[dict[str, Any]]) -> None:
    seen = Counter((r["method"], r.get("max_steps"), r["dataset"]) for r in runs)
    for run in runs:
        run["ambiguous"] = seen[(run["method"], run.get("max_steps"), run["dataset"])] > 1


def _scores(run: dict[str, Any], key: str) -> dict[str, float | None]:
    return {str(r["id"]): r.get(key) for r in run["records"]}


def _estimate_cell(run: dict[str, Any] | None, key: str) -> str:
    from arag.eval.stats import accuracy

    if not run:
        return "–"
    if not run["records"]:  # only a summary: its mean, without an interval
        return _pct(run.get(key))
    estimate = accuracy(list(_scores(run, key).values()))
    return "–" if estimate.n == 0 else estimate.percent()


def _metrics(runs: list[dict[str, Any]], dataset: str) -> list[tuple[str, str]]:
    """(record key, column name) of the accuracies a dataset's runs have: LLM-Acc, Contain-Acc, and Key-Terms-Acc
    where its answers were scored by key terms."""
    metrics = [("llm_acc", "LLM-Acc"), ("contain_acc", "Contain-Acc")]
    if any(r.get("key_terms_acc") is not None for run in runs if run["dataset"] == dataset for r in run["records"]):
        metrics.append(("key_terms_acc", "Key-Terms-Acc"))
    return metrics


def markdown(runs: list[dict[str, Any]]) -> str:
    _mark_ambiguous(runs)
    datasets = list(dict.fromkeys(r["dataset"] for r in runs))
    keys = list(dict.fromkeys((r["method"], r.get("max_steps"), r["run_dir"]) for r in runs))
    by_key = {(r["method"], r.get("max_steps"), r["run_dir"], r["dataset"]): r for r in runs}
    columns = [(d, key, name) for d in datasets for key, name in _metrics(runs, d)]
    head = "| Method | " + " | ".join(f"{d} {name}" for d, _key, name in columns) + " |"
    lines = [
        "## Accuracy (%, 95 % Wilson interval, n questions)",
        "",
        head,
        "|---|" + "---|" * len(columns),
    ]
    for method, steps, run_dir in keys:
        label = next(_label(r) for r in runs if r["run_dir"] == run_dir)
        cells = []
        for dataset, key, _name in columns:
            cells.append(_estimate_cell(by_key.get((method, steps, run_dir, dataset)), key))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Efficiency (per question)",
        "",
        "| Method | Dataset | Questions | Retrieved tokens | Steps | Cost (USD) | Answered | Stalled | Forced | "
        "Errors | Recall of gold passages | Latency p50 (s) | Prompt tokens per call (processed) | "
        "ms per processed / generated token |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        cost = "–" if r.get("cost_per_question") is None else f"{r['cost_per_question']:.5f}"
        stops = [rec.get("stop_reason") for rec in r["records"]]
        n = max(1, len(stops))
        forced = sum(1 for s in stops if s in ("max_steps", "token_budget", "time_budget"))
        latencies = [float(rec["latency_s"]) for rec in r["records"] if rec.get("latency_s") is not None]
        p50 = statistics.median(latencies) if latencies else None
        lines.append(
            f"| {_label(r)} | {r['dataset']} | {r['questions']} | "
            f"{(r.get('retrieved_tokens') or 0):.0f} | {(r.get('steps') or 0):.2f} | {cost} | "
            f"{_pct(sum(1 for s in stops if s == 'answered') / n)}% | {_pct(stops.count('stalled') / n)}% | "
            f"{_pct(forced / n)}% | {r.get('errors', 0)} | {_pct(r.get('retrieval_recall'))}% | "
            f"{'–' if p50 is None else f'{p50:.1f}'} | {_prompt_tokens(r['records'])} | {_token_speed(r['records'])} |"
        )
    lines += measures_lines(runs)
    lines += _paired_lines(runs)
    judges = {r.get("judge_model") for r in runs if r.get("llm_acc") is not None}
    lines += ["", f"LLM-Acc judge: {', '.join(sorted(str(j) for j in judges)) if judges else 'not run'}."]
    return "\n".join(lines) + "\n"


def measures_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The table of what a user needs (arag.eval.measures), one row per run."""
    from arag.eval.measures import MEASURES, describe, measures

    lines = [
        "",
        "## What a user needs (%, 95 % Wilson interval, n; arag/eval/measures.py)",
        "",
        "| Method | Dataset | " + " | ".join(MEASURES) + " | p50 s |",
        "|---|---|" + "---|" * (len(MEASURES) + 1),
    ]
    for run in runs:
        cells = [shown for _name, shown in describe(run.get("measures") or measures(run["records"]))]
        lines.append(f"| {_label(run)} | {run['dataset']} | " + " | ".join(cells) + " |")
    return lines


def model_calls_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every recorded model call of a run's question records, in order."""
    return [c for r in records for c in r.get("model_calls") or [] if isinstance(c, dict)]


def processed_tokens(call: dict[str, Any]) -> int:
    """Prompt tokens the server processed: those not served from its prompt (KV) cache."""
    return int((call.get("prompt_tokens") or 0) - (call.get("cached_tokens") or 0))


def _prompt_tokens(records: list[dict[str, Any]]) -> str:
    """Mean prompt tokens per model call, and (in parentheses) how many the server processed."""
    calls = model_calls_of(records)
    if not calls:
        return "–"
    prompt = sum(c.get("prompt_tokens") or 0 for c in calls) / len(calls)
    return f"{prompt:.0f} ({sum(processed_tokens(c) for c in calls) / len(calls):.0f})"


def _token_speed(records: list[dict[str, Any]]) -> str:
    """Milliseconds per processed prompt token and per generated token over the calls the server timed
    (llama.cpp): how fast the machine was during the run, so that latencies of runs at different times compare."""
    calls = [c for c in model_calls_of(records) if "generation_ms" in c]
    processed = sum(processed_tokens(c) for c in calls)
    generated = sum(c.get("completion_tokens") or 0 for c in calls)
    if not calls or not processed or not generated:
        return "–"
    prompt_ms = sum(c.get("prompt_ms") or 0.0 for c in calls)
    return f"{prompt_ms / processed:.0f} / {sum(c['generation_ms'] for c in calls) / generated:.0f}"


def _paired_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Each pair of runs on the same dataset: the difference on the questions both answered, in Key-Terms-Acc
    where the dataset is scored by key terms, else in Contain-Acc."""
    from arag.eval.stats import paired_difference

    rows = []
    for i, first in enumerate(runs):
        for second in runs[i + 1 :]:
            if first["dataset"] != second["dataset"]:
                continue
            key, name = _metrics(runs, first["dataset"])[-1]
            diff = paired_difference(_scores(first, key), _scores(second, key))
            if diff is None:
                continue
            sign = "+" if diff.value >= 0 else ""
            rows.append(
                f"| {_label(second)} − {_label(first)} | {first['dataset']} | {name} | {sign}{100 * diff.value:.1f} "
                f"[{100 * diff.low:+.1f}, {100 * diff.high:+.1f}] | {diff.n} |"
            )
    if not rows:
        return []
    return [
        "",
        "## Paired differences (points, 95 % paired-bootstrap interval, shared questions)",
        "",
        "| Comparison | Dataset | Metric | Difference | n |",
        "|---|---|---|---|---|",
        *rows,
    ]


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


def write_report(
    run_dirs: list[Path], out_dir: Path, key_terms: KeyTerms | None = None
) -> tuple[list[Path], list[str]]:
    """The files written (the Markdown tables always) and what could not be made, said in one line each."""
    from arag.errors import MissingExtraError
    from arag.eval.analyze import analyze_run, breakdown_markdown

    runs = load_runs(run_dirs, key_terms)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "report.md"
    analyses = [analyze_run(Path(r["run_dir"]), write=False) for r in runs]
    text = "# A-RAG evaluation report\n\n" + markdown(runs) + "\n" + breakdown_markdown(analyses)
    report.write_text(text, encoding="utf-8")
    try:
        return [report, *plots(runs, out_dir)], []
    except MissingExtraError as exc:
        return [report], [f"plots skipped: {exc}"]
