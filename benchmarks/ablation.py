"""The policy ablation: the profile's bundle, and the bundle minus each policy, on the same questions.

    # 1. the bundle itself (any `arag eval run` options; the same ones are used for every ablation run)
    arag eval run --method arag-full --dataset ../shared/datasets/2wikimultihopqa --corpus corpus \\
        --limit 100 --seed 0 --first 40 --max-steps 5 --out runs/abl/compact-2wiki
    # 2. the bundle minus each policy, re-run only on the questions where that policy acted
    python benchmarks/ablation.py run --out runs/abl runs/abl/compact-2wiki -- --method arag-full \\
        --dataset ../shared/datasets/2wikimultihopqa --corpus corpus --limit 100 --seed 0 --first 40 --max-steps 5
    # 3. the table
    python benchmarks/ablation.py table runs/abl/compact-2wiki runs/abl/compact-medical \\
        --runs runs/abl/minus-*

Why only where it acted: every run records how often each policy changed something (`policies_acted`), and at
temperature 0 a question on which a policy never acted runs the same without it (the same requests in the same
order; checked by re-running such questions, docs/results.md). So the bundle minus a policy is the bundle's own
record on those questions, and is run on the others. The table says on how many questions each policy acted.

Accuracy is Key-Terms-Acc where the answers were scored by key terms (GraphRAG-Bench Medical), else Contain-Acc;
the difference to the bundle is paired (bootstrap over the questions, 95 %). "Own answers": answered before the
step limit, with an answer of the model's own (not one the loop gave instead); "stalled": a loop guard cut the
run short.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from arag.errors import ARagError
from arag.eval.metrics import KeyTerms
from arag.eval.runs import completed, load_runs
from arag.eval.stats import accuracy, paired_difference


def acted_ids(reference: dict[str, Any], policy: str) -> list[str]:
    return [str(r["id"]) for r in reference["records"] if (r.get("policies_acted") or {}).get(policy)]


def run_minus(out: Path, name: str, policy: str, ids: list[str], options: list[str]) -> int:
    ids_file = out / f"{name}.ids.json"
    ids_file.write_text(json.dumps(ids), encoding="utf-8")
    command = ["arag", "eval", "run", *options, "--policy", f"-{policy}", "--ids-file", str(ids_file)]
    result = subprocess.run([*command, "--out", str(out / name)], stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        print(f"{policy}: arag eval run failed ({result.returncode})", file=sys.stderr)
    return result.returncode


def calls(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["tool"], json.dumps(s["arguments"], sort_keys=True)) for s in record["trajectory"]]


def identical_ids(reference: dict[str, Any], check: dict[str, Any]) -> list[str]:
    """The questions of a check run with the reference's answer and the reference's tool calls."""
    base = {str(r["id"]): r for r in reference["records"]}
    return [
        str(r["id"])
        for r in check["records"]
        if str(r["id"]) in base
        and r["prediction"] == base[str(r["id"])]["prediction"]
        and calls(r) == calls(base[str(r["id"])])
    ]


def same_runs(reference: dict[str, Any], check_dir: Path) -> tuple[int, int]:
    """(questions, of them the same answer and the same calls) of a check run against the reference."""
    (check,) = load_runs([check_dir])
    return len(check["records"]), len(identical_ids(reference, check))


def speed(reference_dir: Path, run_dir: Path) -> int:
    """Time on the questions both runs did identically (the same answer, the same calls): a setting that changes
    only speed, such as llama.cpp's drafts, compared on the same work."""
    reference, run = load_runs([reference_dir, run_dir])
    same = set(identical_ids(reference, run))
    print(f"{len(same)} of {len(run['records'])} questions identical (the same answer and tool calls)")
    if not same:
        return 0
    head = ["run", "question s", "generation s", "generated tokens", "prompt ms per new token"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    rows = []
    for records in (reference["records"], run["records"]):
        done = [r for r in records if str(r["id"]) in same]
        model_calls = [c for r in done for c in r.get("model_calls") or []]
        new_tokens = sum(c["prompt_tokens"] - (c.get("cached_tokens") or 0) for c in model_calls)
        rows.append(
            (
                sum(float(r["latency_s"]) for r in done),
                sum(c["generation_ms"] for c in model_calls) / 1000,
                sum(c["completion_tokens"] for c in model_calls),
                sum(c["prompt_ms"] for c in model_calls) / max(1, new_tokens),
            )
        )
    base, other = rows
    print("| " + " | ".join([reference_dir.name, *(f"{v:.1f}" for v in base)]) + " |")
    cells = [f"{v:.1f} ({v / b:.2f}×)" if b else f"{v:.1f}" for b, v in zip(base, other, strict=True)]
    print("| " + " | ".join([run_dir.name, *cells]) + " |")
    return 0


def run_ablation(
    reference_dir: Path, out: Path, options: list[str], only: list[str] | None = None, check: int = 0
) -> int:
    (reference,) = load_runs([reference_dir])
    config = json.loads((reference_dir / "config.json").read_text(encoding="utf-8"))
    policies = config["settings"]["protocol"].get("policies") or []
    policies = [p for p in only if p in policies] if only else policies
    out.mkdir(parents=True, exist_ok=True)
    for policy in policies:
        ids = acted_ids(reference, policy)
        name = f"minus-{policy}-{reference_dir.name.split('-')[-1]}"
        print(f"{policy}: acted on {len(ids)} of {len(reference['records'])} questions", flush=True)
        if not ids:
            continue  # the bundle's own records are this run's
        if code := run_minus(out, name, policy, ids, options):
            return code
        others = [str(r["id"]) for r in reference["records"] if str(r["id"]) not in set(ids)][:check]
        if others:  # the premise: where the policy did not act, the run without it is the bundle's own
            if code := run_minus(out, f"check-{name}", policy, others, options):
                return code
            questions, same = same_runs(reference, out / f"check-{name}")
            print(f"{policy}: {same} of {questions} questions where it did not act ran the same without it")
    return 0


def not_run(run: dict[str, Any]) -> set[str]:
    """The questions an ablation run was given (the ids file ``run`` writes beside it) and has no record of."""
    run_dir = Path(run["run_dir"])
    ids_file = run_dir.parent / f"{run_dir.name}.ids.json"
    if not ids_file.is_file():
        return set()
    return {str(i) for i in json.loads(ids_file.read_text(encoding="utf-8"))} - {str(r["id"]) for r in run["records"]}


def row(name: str, dataset: str, records: list[dict[str, Any]], ran: int, base: dict[str, Any] | None) -> str:
    key = "key_terms_acc" if any(r.get("key_terms_acc") is not None for r in records) else "contain_acc"
    n = max(1, len(records))
    estimate = accuracy([r.get(key) for r in records])
    own = sum(1 for r in records if r.get("stop_reason") == "answered" and r.get("answer_from", "model") == "model")
    stalled = sum(1 for r in records if r.get("stop_reason") == "stalled")
    latencies = [float(r["latency_s"]) for r in records if r.get("latency_s") is not None]
    diff = "–"
    if base is not None:
        paired = paired_difference(
            {str(r["id"]): r.get(key) for r in base["records"]}, {str(r["id"]): r.get(key) for r in records}
        )
        if paired is not None:
            diff = f"{100 * paired.value:+.1f} [{100 * paired.low:+.1f}, {100 * paired.high:+.1f}]"
    cells = [
        name,
        dataset,
        f"{ran} / {len(records)}",
        estimate.percent() if estimate.n else "–",
        diff,
        f"{100 * own / n:.0f}%",
        f"{100 * stalled / n:.0f}%",
        f"{statistics.median(latencies):.1f}" if latencies else "–",
    ]
    return "| " + " | ".join(cells) + " |"


def table(reference_dirs: list[Path], run_dirs: list[Path], key_terms: Path | None = None) -> int:
    terms = KeyTerms.load(key_terms) if key_terms else None
    references = {r["dataset"]: r for r in load_runs(reference_dirs, terms)}
    runs = load_runs(run_dirs, terms) if run_dirs else []
    head = ["run", "dataset", "questions run / in all", "accuracy % [95 %]", "− bundle (points)", "own answers"]
    head += ["stalled", "p50 s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for dataset, reference in references.items():
        print(row(Path(reference["run_dir"]).name, dataset, reference["records"], len(reference["records"]), None))
        for run in sorted((r for r in runs if r["dataset"] == dataset), key=lambda r: r["run_dir"]):
            name, base = Path(run["run_dir"]).name, reference
            missing = not_run(run)
            if missing:
                # a stopped run: the questions it was to run and did not are left out of both sides, else the
                # bundle's own records would stand in for them
                base = {**reference, "records": [r for r in reference["records"] if str(r["id"]) not in missing]}
                name += f" (stopped: {len(missing)} not run, left out)"
            records, ran = completed(run, base)
            print(row(name, dataset, records, ran, base))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the bundle minus each policy where it acted")
    run.add_argument(
        "reference",
        type=Path,
        help="the bundle's run directory (after the options: what follows it is the arag eval run command line)",
    )
    run.add_argument("--out", type=Path, required=True, help="where the ablation runs go")
    run.add_argument(
        "--policies", nargs="+", help="only these of the bundle's policies, in this order (give it before --out)"
    )
    run.add_argument(
        "--check", type=int, default=0, help="also run this many questions where the policy did not act (the premise)"
    )
    run.add_argument("options", nargs=argparse.REMAINDER, help="-- and the bundle run's arag eval run options")
    show = commands.add_parser("table", help="print the ablation table")
    show.add_argument("references", nargs="+", type=Path, help="the bundle's run directory on each dataset")
    show.add_argument("--runs", nargs="*", type=Path, default=[], help="ablation run directories")
    show.add_argument("--key-terms", type=Path, help="(re)score every answer by these key terms")
    timing = commands.add_parser("speed", help="time on the questions two runs did identically")
    timing.add_argument("reference", type=Path, help="a run directory")
    timing.add_argument("run", type=Path, help="a run of the same questions with another setting")
    args = parser.parse_args()
    try:
        if args.command == "run":
            options = args.options[1:] if args.options[:1] == ["--"] else args.options
            return run_ablation(args.reference, args.out, options, args.policies, args.check)
        if args.command == "speed":
            return speed(args.reference, args.run)
        return table(args.references, args.runs, args.key_terms)
    except ARagError as exc:  # a run directory or a key-terms file that is not what it should be: one line
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
