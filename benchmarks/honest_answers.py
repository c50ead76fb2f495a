"""Two agents on the same questions, by what a user needs: answerable accuracy, the multi-hop slice, absent questions
answered "not in the documents", false refusals, right answers citing a chunk that holds them, citations of chunks
never shown, own answers, stalls (arag/eval/measures.py) — each with its 95 % interval and n, and the paired
difference (after − before, paired bootstrap over the questions both answered) — and p50 and p90 seconds and model
calls per question.

Each side is one or more ``arag eval run`` directories of one dataset: its answerable run and its ``--absent`` run.
A record without citation fields (a run older than them) is given them from the run's index, as the runner does::

    python benchmarks/honest_answers.py --before runs/base-2wiki runs/base-absent-2wiki \\
        --after runs/new-2wiki runs/new-absent-2wiki --naive runs/naive-2wiki
    python benchmarks/honest_answers.py --key-terms benchmarks/key_terms/graphrag-bench-medical.json \\
        --before runs/base-medical runs/base-absent-medical --after runs/new-medical runs/new-absent-medical

``--naive``: a Naive RAG run of the answerable questions, for the multi-hop slice against it (paired).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from arag.eval.measures import MEASURES, scores
from arag.eval.metrics import KeyTerms
from arag.eval.runner import DatasetChoice, GoldChunks, cited_evidence, run_index
from arag.eval.runs import load_runs
from arag.eval.stats import Estimate, accuracy, paired_difference


def records_of(run_dirs: list[Path], key_terms: KeyTerms | None) -> dict[str, dict[str, Any]]:
    """Every record of the runs, by id (an absent question's as "absent:ID"), with its citation fields."""
    out: dict[str, dict[str, Any]] = {}
    for run in load_runs(run_dirs, key_terms):
        run_dir = Path(run["run_dir"])
        missing = [r for r in run["records"] if not isinstance(r.get("citations"), dict)]
        if missing:
            fill_citations(run_dir, missing, key_terms)
        absent = "absent" in json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        for record in run["records"]:
            record["absent"] = absent
            out[("absent:" if absent else "") + str(record["id"])] = record
    return out


def fill_citations(run_dir: Path, records: list[dict[str, Any]], key_terms: KeyTerms | None) -> None:
    """Citation fields for records of a run older than them, from the index the run used."""
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    index, _settings = run_index(run_dir)
    corpus_file = Path(config["corpus_file"])
    corpus = corpus_file.stem if corpus_file.stem in ("corpus", "chunks") else "auto"
    dataset = DatasetChoice(Path(config["dataset_path"]), corpus).load()
    questions = {q.id: q for q in dataset.questions}
    gold = GoldChunks(index, dataset)
    for record in records:
        question = questions[str(record["id"])]
        shown = [str(c) for c in record.get("retrieved_chunks") or []]
        record["citations"] = cited_evidence(index, gold, key_terms, question, str(record["prediction"]), shown)
    index.close()


def cell(estimate: Estimate) -> str:
    return estimate.percent() if estimate.n else "—"


def table(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], naive: dict[str, Any] | None) -> str:
    shared = sorted(before.keys() & after.keys())
    per_before = {k: scores(before[k]) for k in shared}
    per_after = {k: scores(after[k]) for k in shared}
    lines = [
        f"| measure | before | after | after − before (paired, points) |  (questions in both: {len(shared)})",
        "|---|---|---|---|",
    ]
    for name in MEASURES:
        first = {k: per_before[k][name] for k in shared}
        second = {k: per_after[k][name] for k in shared}
        diff = paired_difference(first, second)
        shown = "—" if diff is None else f"{100 * diff.value:+.1f} [{100 * diff.low:+.1f}, {100 * diff.high:+.1f}]"
        lines.append(f"| {name} | {cell(accuracy(list(first.values())))} | {cell(accuracy(list(second.values())))} | "
                     f"{shown} |")  # fmt: skip
    for label, side in (("before", before), ("after", after)):
        latencies = [float(side[k]["latency_s"]) for k in shared if side[k].get("latency_s") is not None]
        if latencies:
            p90 = statistics.quantiles(latencies, n=10)[-1] if len(latencies) > 1 else latencies[0]
            calls = statistics.mean(len(side[k].get("model_calls") or []) for k in shared)
            lines.append(f"| p50 s ({label}) | {statistics.median(latencies):.1f} | | |")
            lines.append(f"| p90 s, model calls per question ({label}) | {p90:.1f}, {calls:.2f} | | |")
    if naive is not None:
        multi = [k for k in shared if per_after[k]["multi_hop"] is not None and k in naive]
        first = {k: scores(naive[k])["multi_hop"] for k in multi}
        second = {k: per_after[k]["multi_hop"] for k in multi}
        diff = paired_difference(first, second)
        if diff is not None:
            lines.append(
                f"| multi_hop: after − Naive RAG | {cell(accuracy(list(first.values())))} (Naive RAG) | "
                f"{cell(accuracy(list(second.values())))} | {100 * diff.value:+.1f} [{100 * diff.low:+.1f}, "
                f"{100 * diff.high:+.1f}] |"
            )
    lines.append("")
    lines.append(f"answers that differ: {sum(before[k]['prediction'] != after[k]['prediction'] for k in shared)} of "
                 f"{len(shared)}")  # fmt: skip
    for label, side in (("before", before), ("after", after)):
        lines.append(f"tool calls ({label}): {tool_calls(side, shared)}")
    return "\n".join(lines)


def tool_calls(side: dict[str, dict[str, Any]], keys: list[str]) -> str:
    """How often each tool was called over the questions, and in how many questions."""
    calls: Counter[str] = Counter()
    questions: Counter[str] = Counter()
    for key in keys:
        used = [str(step.get("tool")) for step in side[key].get("trajectory") or [] if step.get("tool")]
        calls.update(used)
        questions.update(set(used))
    return ", ".join(f"{name} {calls[name]} (in {questions[name]})" for name in sorted(calls, key=lambda n: -calls[n]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, nargs="+", required=True)
    parser.add_argument("--after", type=Path, nargs="+", required=True)
    parser.add_argument("--naive", type=Path, nargs="*", default=None)
    parser.add_argument("--key-terms", type=Path, default=None)
    args = parser.parse_args()
    key_terms = KeyTerms.load(args.key_terms) if args.key_terms else None
    before, after = records_of(args.before, key_terms), records_of(args.after, key_terms)
    naive = records_of(args.naive, key_terms) if args.naive else None
    print(table(before, after, naive))


if __name__ == "__main__":
    main()
