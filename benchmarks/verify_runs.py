"""Answer verification's precision on recorded runs: supported / unsupported against correct / wrong.

    python benchmarks/verify_runs.py runs/cand10-2wiki runs/cand10-medical \\
        --key-terms benchmarks/key_terms/graphrag-bench-medical.json

``agent.verify_answers`` only records a check (it never changes what the agent does), so a run made without it
can be checked afterwards: each record's answer against the chunks its trajectory read (``chunk_read`` calls,
the harness's included; the chunks shown in results when nothing was read), with the index the run used —
the same ``arag.verification.verify_answer`` the agent calls. Correct is Contain-Acc, or Key-Terms-Acc with
``--key-terms`` where the file scores the question. Prints one row per run: the four cells, the precision of
"unsupported" as a flag of wrong answers and its recall, each with its Wilson 95 % interval and n.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from arag.eval.metrics import KeyTerms
from arag.eval.runner import run_index
from arag.eval.runs import chunks_read, load_runs
from arag.eval.stats import wilson
from arag.verification import verify_answer


def correct(record: dict[str, Any], metric: str) -> bool | None:
    score = record.get(metric)
    return None if score is None else bool(score)


def interval(successes: int, n: int) -> str:
    if not n:
        return "–"
    estimate = wilson(successes, n)
    return f"{100 * successes / n:.0f} % [{100 * estimate.low:.0f}, {100 * estimate.high:.0f}] (n={n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    parser.add_argument("--key-terms", type=Path, help="score GraphRAG-Bench runs by these key terms")
    args = parser.parse_args()
    key_terms = KeyTerms.load(args.key_terms) if args.key_terms else None
    print("| run | checked | supported·correct | supported·wrong | unsupported·correct | unsupported·wrong "
          "| precision (flagged → wrong) | recall (wrong → flagged) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for run in load_runs(args.runs, key_terms):
        index, _settings = run_index(Path(run["run_dir"]))
        cells = {(s, c): 0 for s in (True, False) for c in (True, False)}
        # the key terms score the runs of the dataset they were written for; Contain-Acc the others
        scored = any(r.get("key_terms_acc") is not None for r in run["records"])
        metric = "key_terms_acc" if scored else "contain_acc"
        for record in run["records"]:
            is_correct = correct(record, metric)
            if is_correct is None or not record.get("prediction"):
                continue
            supported = verify_answer(index, str(record["prediction"]), chunks_read(record)).supported
            cells[supported, is_correct] += 1
        index.close()
        flagged_wrong = cells[False, False]
        flagged = flagged_wrong + cells[False, True]
        wrong = flagged_wrong + cells[True, False]
        print(
            f"| {Path(run['run_dir']).name} | {sum(cells.values())} | {cells[True, True]} | {cells[True, False]} "
            f"| {cells[False, True]} | {flagged_wrong} | {interval(flagged_wrong, flagged)} "
            f"| {interval(flagged_wrong, wrong)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
