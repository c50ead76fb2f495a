"""The answer_check policy applied to recorded runs: what the same runs would have answered with it.

answer_check acts after the final answer and changes nothing before it (one more model call, no tools), so a run
with it is the recorded run up to its answer, then the check. This script makes that call — the policy's own text
(``check_text``), prompt (``check_messages``) and verdict (``answers_question``), on the chunks the run read and its
final answer — with the embedded model, and writes each run again to ``OUT/NAME`` with the answers the check
refused replaced by its "Not in the documents" (scores 0, nothing cited, the call's time and tokens added). Then
``benchmarks/honest_answers.py --before RUN --after OUT/NAME`` pairs them::

    python benchmarks/answer_check_replay.py runs/after-medical runs/after-absent-medical --out runs/check
    python benchmarks/honest_answers.py --key-terms benchmarks/key_terms/graphrag-bench-medical.json \\
        --before runs/after-medical runs/after-absent-medical --after runs/check/after-medical \\
        runs/check/after-absent-medical

With ``agent.policy.answer_check.search_again`` the first "not stated" for an answer the model gave on its own (not
the step limit's) sends it back to search on: those runs change from the check on and must be answered again live.
Their ids go to ``OUT/NAME/search_again.ids``; ``OUT/NAME/search_again-kept.jsonl`` holds every other replayed
result, the start of a spliced run (copy it to a new run directory's results.jsonl, run the run's command with the
setting: only the ids missing are answered)::

    mkdir runs/again-medical && cp runs/check/after-medical/search_again-kept.jsonl runs/again-medical/results.jsonl
    ARAG_AGENT__POLICY__ANSWER_CHECK__SEARCH_AGAIN=true arag eval run … --policy +answer_check --out runs/again-medical
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from arag.eval.runner import run_index
from arag.eval.runs import RESULTS, chunks_read, read_results, searched
from arag.harness.policies.answer_check import (
    WINDOW,
    answers_question,
    check_messages,
    check_text,
    checked,
    unanswered,
)
from arag.models.choice import chat_model
from arag.settings import load_settings

SCORES = ("contain_acc", "exact_match", "f1", "key_terms_acc", "llm_acc")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    parser.add_argument("--out", type=Path, required=True, help="where the replayed runs are written")
    parser.add_argument("--window", type=int, default=WINDOW, help="sentences either side (the policy's: WINDOW)")
    args = parser.parse_args()
    model, _local = chat_model(load_settings(None, {}))
    for run_dir in args.runs:
        index, _settings = run_index(run_dir)
        out = args.out / run_dir.name
        out.mkdir(parents=True, exist_ok=True)
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        config["replayed"] = {"policy": "answer_check", "window": args.window, "from": str(run_dir)}
        (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        acted, again = 0, []
        with (
            (out / RESULTS).open("w", encoding="utf-8") as results,
            (out / "search_again-kept.jsonl").open("w", encoding="utf-8") as kept,
        ):
            for record in read_results(run_dir / RESULTS).values():
                answer, question = str(record.get("prediction") or ""), str(record["question"])
                text = check_text(index, chunks_read(record), question, answer, args.window) if answer else None
                if text is not None and checked(question, answer):
                    began = time.monotonic()
                    reply = model.complete(check_messages(text, question)).content or ""
                    record["latency_s"] = round(float(record.get("latency_s") or 0) + time.monotonic() - began, 3)
                    if not answers_question(reply):
                        acted += 1
                        if record.get("stop_reason") == "answered":
                            again.append(str(record["id"]))
                        refusal = unanswered(searched(record))
                        record["policy_records"] = {
                            **(record.get("policy_records") or {}),
                            "answer_check": {"reread": {"before": answer, "after": refusal}},
                        }
                        record["policies_acted"] = {**(record.get("policies_acted") or {}), "answer_check": 1}
                        record.update(prediction=refusal, not_found=True)
                        record.update({k: 0.0 for k in SCORES if record.get(k) is not None})
                        record["citations"] = {"cited": [], "unshown": [], "holding": []}
                results.write(json.dumps(record) + "\n")
                if str(record["id"]) not in again:
                    kept.write(json.dumps(record) + "\n")
        (out / "search_again.ids").write_text("".join(f"{i}\n" for i in again), encoding="utf-8")
        index.close()
        print(f"{run_dir.name}: the check refused {acted} answer(s), {len(again)} of them the model's own", flush=True)


if __name__ == "__main__":
    main()
