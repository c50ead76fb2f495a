"""The answer_in_text policy applied to recorded runs: what the same runs would have answered with it.

answer_in_text only revises the final answer (no model call, nothing before it changes), so a run with it is the
recorded run up to its answer, then the check: the policy's own function (``refusal_of``) on the chunks the run
was shown — its search hits and reads, as recorded — and its final answer (``--no-figures``: without its setting
``figures``, the checks of an answer's figures).
Each run is written again to ``OUT/NAME`` with the answers it turns into "Not in the documents" (scores 0, nothing
cited, ``answer_from`` the harness's; run folders of one name from different parents would overwrite each other: one
``--out`` per parent), and each changed answer is printed. No model is asked. Then
``benchmarks/honest_answers.py --before RUN --after OUT/NAME`` pairs them::

    python benchmarks/answer_in_text_replay.py runs/after-medical runs/after-absent-medical --out runs/in-text
    python benchmarks/honest_answers.py --key-terms benchmarks/key_terms/graphrag-bench-medical.json \\
        --before runs/after-medical runs/after-absent-medical --after runs/in-text/after-medical \\
        runs/in-text/after-absent-medical
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from arag.eval.runner import run_index
from arag.eval.runs import RESULTS, chunks_read, read_results, searched
from arag.harness.policies.answer_in_text import refusal_of
from arag.harness.reads import quoted_searches

SCORES = ("contain_acc", "exact_match", "f1", "key_terms_acc", "llm_acc")


def shown(record: dict[str, Any]) -> set[str]:
    """The chunks the recorded run was shown: its searches' hits and its reads."""
    return {str(c) for c in record.get("retrieved_chunks") or []} | set(chunks_read(record))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    parser.add_argument("--out", type=Path, required=True, help="where the replayed runs are written")
    parser.add_argument("--no-figures", action="store_true", help="without the policy's `figures` setting")
    args = parser.parse_args()
    for run_dir in args.runs:
        index, _settings = run_index(run_dir)
        out = args.out / run_dir.name
        out.mkdir(parents=True, exist_ok=True)
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        config["replayed"] = {"policy": "answer_in_text", "figures": not args.no_figures, "from": str(run_dir)}
        (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        acted = 0
        with (out / RESULTS).open("w", encoding="utf-8") as results:
            for record in read_results(run_dir / RESULTS).values():
                answer, question = str(record.get("prediction") or ""), str(record["question"])
                searches = quoted_searches(searched(record))
                found = refusal_of(answer, question, index, shown(record), searches, figures=not args.no_figures)
                if found is not None:
                    refusal, why = found
                    acted += 1
                    right = any(record.get(k) for k in SCORES)
                    print(f"  {'right' if right else 'wrong'}: {question[:70]} | {answer[:60]}", flush=True)
                    record["policy_records"] = {**(record.get("policy_records") or {}), "answer_in_text": why}
                    record["policies_acted"] = {**(record.get("policies_acted") or {}), "answer_in_text": 1}
                    record.update(prediction=refusal, not_found=True, answer_from="not in the documents")
                    record.update({k: 0.0 for k in SCORES if record.get(k) is not None})
                    record["citations"] = {"cited": [], "unshown": [], "holding": []}
                results.write(json.dumps(record) + "\n")
        index.close()
        print(f"{run_dir.name}: {acted} answer(s) now refusals", flush=True)


if __name__ == "__main__":
    main()
