"""The questions on which a policy that is off by default would act, found from the default's recorded runs.

    python benchmarks/would_act.py runs/cand10-2wiki --policy same_name --out runs/same_name-2wiki.ids.json
    arag eval run ...the default run's options... --policy +same_name --ids-file runs/same_name-2wiki.ids.json \\
        --out runs/same_name-2wiki

Why: at temperature 0 a run with one more policy is the default's run up to the policy's first act (the same
requests in the same order; benchmarks/ablation.py relies on the same fact for the bundle minus a policy). So its
before/after only needs re-running the questions where it would act; the others keep the default's records.
Where it would act is decided by the policy's own code on what the recorded run saw:

* ``same_name`` looks at each search's hits: every recorded search (the model's and the harness's, in order) is
  run again on the run's index, and the policy's ``after_result`` decides;
* ``supported_answer`` looks at the answer that ended the run — the only answer it is asked about, since it comes
  after every policy of the bundle and an answer none of them held ends the run — when the model gave it
  (``answered``, not a forced answer or one the loop gave): ``verify_answer`` against the chunks read, as the
  policy calls it.
* ``confident_stop`` at another ``--threshold`` than the run's (a run with ``+confident_stop``: every model step
  records the confidence it stated): a lower threshold changes the questions where an earlier step stated enough,
  a higher one those the run's threshold stopped at a confidence below it. A run recorded before steps kept their
  confidence gives the superset: every question for a lower threshold, every stopped one for a higher.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from arag.agent.prompts import REPEATED
from arag.eval.runner import run_index
from arag.eval.runs import chunks_read, confident_stop_threshold, load_runs, threshold_changes
from arag.harness import POLICIES, resolve
from arag.index import Index
from arag.tools.toolkit import Toolkit
from arag.verification import verify_answer

SEARCHES = ("keyword_search", "semantic_search")

HIT_LINE = re.compile(r"^\[\d+\] chunk (.+?)(?: \[already read\])?$", re.M)


def same_name_acts(record: dict[str, Any], index: Index, settings: Any, replays: list[str]) -> bool:
    """Whether same_name acts on one of the record's searches; ``replays`` gets one line per search replayed,
    marked where its hits differ from the recorded ones (there should be none)."""
    bundle = resolve(settings, local=True)
    policy = POLICIES["same_name"](bundle.configs["same_name"], settings)
    toolkit = Toolkit(index, view=bundle.view)  # the embedded default's result view
    for step in record.get("trajectory") or []:
        recorded = str(step.get("observation") or "")
        if step.get("tool") not in SEARCHES or recorded.startswith(REPEATED):
            continue  # a repeated call is answered by the loop: no search result, nothing for after_result
        result = toolkit.call(step["tool"], step.get("arguments") or {})
        differs = result.hits != HIT_LINE.findall(recorded)
        replays.append(f"{'DIFFERS ' if differs else ''}{record['id']}: {step['tool']} {step.get('arguments')}")
        run = SimpleNamespace(toolkit=toolkit, question=record["question"])
        if policy.after_result(run, result):
            return True
    return False


def supported_answer_acts(record: dict[str, Any], index: Index) -> bool:
    if record.get("stop_reason") != "answered" or record.get("answer_from", "model") != "model":
        return False
    verification = verify_answer(index, str(record.get("prediction") or ""), chunks_read(record))
    return bool(verification.claims) and not verification.supported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the default's run directory (arag eval run)")
    parser.add_argument("--policy", required=True, choices=["same_name", "supported_answer", "confident_stop"])
    parser.add_argument("--threshold", type=float, help="confident_stop: the threshold to run at instead")
    parser.add_argument("--out", type=Path, required=True, help="the ids file for arag eval run --ids-file")
    args = parser.parse_args()
    (run,) = load_runs([args.run])
    if args.policy == "confident_stop":
        recorded = confident_stop_threshold(args.run)
        if recorded is None or args.threshold is None:
            parser.error("confident_stop: give --threshold, and a run made with --policy +confident_stop")
        ids = [str(r["id"]) for r in run["records"] if threshold_changes(r, recorded, args.threshold)]
        args.out.write_text(json.dumps(ids), encoding="utf-8")
        print(f"at {args.threshold:g} instead of {recorded:g}, {len(ids)} of {len(run['records'])} questions change")
        return
    index, settings = run_index(args.run)
    replays: list[str] = []
    try:
        ids = [
            str(record["id"])
            for record in run["records"]
            if (
                same_name_acts(record, index, settings.agent, replays)
                if args.policy == "same_name"
                else supported_answer_acts(record, index)
            )
        ]
    finally:
        index.close()
    args.out.write_text(json.dumps(ids), encoding="utf-8")
    differing = [line for line in replays if line.startswith("DIFFERS")]
    if replays:
        print(f"{len(replays)} searches replayed, {len(differing)} with hits other than the record's")
    for line in differing:
        print(line)
    print(f"{args.policy} would act on {len(ids)} of {len(run['records'])} questions of {args.run}: {args.out}")


if __name__ == "__main__":
    main()
