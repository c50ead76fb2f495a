"""Adaptive stopping's curve: accuracy against model calls and tokens per question, for confident_stop thresholds,
beside the step limit — from finished runs on the same questions.

    arag eval sweep ...the reference run's options... --max-steps 10 --confidence 0.5,1 --out runs/curve
    python benchmarks/stopping_curve.py runs/cand10-2wiki runs/cs-2wiki runs/curve/* \\
        --complete-from runs/cs-2wiki --plot docs/results/stopping_curve_2wiki.png

The first run is the reference (confident_stop off); each other run is labelled by its config: its threshold,
or its step limit where confident_stop is off (a point of the paper's max-steps sweep). A run of only some of the
reference's questions — those where its threshold takes another path than the run given as ``--complete-from``
(``python benchmarks/would_act.py RUN --policy confident_stop --threshold T``) — is completed by that run's
records of the others, which at temperature 0 are what it would have recorded. Accuracy is Key-Terms-Acc where
answers were scored by key terms, else Contain-Acc; the difference to the reference is paired (bootstrap over the
questions, 95 %).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from arag.eval.report import model_calls_of, processed_tokens
from arag.eval.runs import completed, confident_stop_threshold, load_runs
from arag.eval.stats import accuracy, paired_difference


def label(run_dir: Path) -> tuple[str, float]:
    """The run's point on the curve, and a sort key (a threshold; the step limit where the policy is off)."""
    max_steps = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))["settings"]["agent"]["max_steps"]
    threshold = confident_stop_threshold(run_dir)
    if threshold is None:
        return f"off, max {max_steps} steps", -float(max_steps)
    return f"confidence ≥ {threshold:g}, max {max_steps} steps", threshold


def work(records: list[dict[str, Any]]) -> tuple[float, float, float]:
    """Model calls, processed prompt tokens (not served from the cache) and generated tokens per question."""
    calls = model_calls_of(records)
    generated = sum(c.get("completion_tokens") or 0 for c in calls)
    n = max(1, len(records))
    return len(calls) / n, sum(processed_tokens(c) for c in calls) / n, generated / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reference", type=Path, help="the run with confident_stop off")
    parser.add_argument("runs", nargs="+", type=Path, help="runs at thresholds (or other step limits)")
    parser.add_argument("--complete-from", type=Path, help="the run a subset run's questions were chosen from")
    parser.add_argument("--plot", type=Path, help="write the curve as a PNG here")
    args = parser.parse_args()
    reference, *runs = load_runs([args.reference, *args.runs])
    base = load_runs([args.complete_from])[0] if args.complete_from else None
    key = "key_terms_acc" if any(r.get("key_terms_acc") is not None for r in reference["records"]) else "contain_acc"
    head = ["point", "questions run", "accuracy % [95 %]", "− reference (paired)", "own answers", "at the step limit"]
    head += ["model calls", "processed / generated tokens", "p50 s"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    points = []
    for run_dir, run in [(args.reference, reference), *zip(args.runs, runs, strict=True)]:
        records, ran = run["records"], len(run["records"])
        if ran < len(reference["records"]):
            if base is None:
                parser.error(f"{run_dir} answered {ran} of {len(reference['records'])} questions: give --complete-from")
            records, ran = completed(run, base)
        name, order = label(run_dir)
        estimate = accuracy([r.get(key) for r in records])
        paired = paired_difference(
            {str(r["id"]): r.get(key) for r in reference["records"]}, {str(r["id"]): r.get(key) for r in records}
        )
        calls, processed, generated = work(records)
        n = max(1, len(records))
        answered = sum(r.get("stop_reason") == "answered" and r.get("answer_from", "model") == "model" for r in records)
        at_limit = sum(r.get("stop_reason") == "max_steps" for r in records)
        p50 = statistics.median(float(r["latency_s"]) for r in records)
        diff = "–"
        if run is not reference and paired is not None:
            diff = f"{100 * paired.value:+.1f} [{100 * paired.low:+.1f}, {100 * paired.high:+.1f}]"
        cells = [
            name,
            f"{ran} / {len(records)}",
            estimate.percent(),
            diff,
            f"{100 * answered / n:.0f} %",
        ]
        cells += [f"{100 * at_limit / n:.0f} %", f"{calls:.2f}", f"{processed:,.0f} / {generated:,.0f}", f"{p50:.1f}"]
        print("| " + " | ".join(cells) + " |")
        points.append((order, name, estimate, calls, processed + generated))
    if args.plot:
        plot(sorted(points, key=lambda p: p[0]), args.plot, str(reference["dataset"]))
    return 0


def plot(points: list[tuple[float, str, Any, float, float]], path: Path, dataset: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axis, column, title in ((axes[0], 3, "model calls per question"), (axes[1], 4, "tokens per question")):
        for point in points:
            order, name, estimate, x = point[0], point[1], point[2], point[column]
            marker = "s" if order < 0 else "o"  # squares: the step limit alone; circles: a confidence threshold
            error = [[100 * (estimate.value - estimate.low)], [100 * (estimate.high - estimate.value)]]
            axis.errorbar(x, 100 * estimate.value, yerr=error, fmt=marker, capsize=3, label=name)
        axis.set_xlabel(title)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy % (95 % interval)")
    axes[1].legend(fontsize=7, loc="lower right")
    figure.suptitle(f"Adaptive stopping on {dataset}: confident_stop thresholds and the step limit")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
