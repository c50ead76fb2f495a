"""Where the next_hop policy would act on recorded runs, and the start of a run with it.

next_hop changes a run only when the model's own answer (not the step limit's) to a question that asks for a place,
a date, a number, a nationality or a title is a short name the model calls a person's (or an address for "who").
This script makes that check — the policy's own rules (``asks_for``, ``bare_name``) and call (``person_messages``,
``says_yes``) — with the embedded model on each recorded answer. The runs it reaches must be answered again live;
their ids go to ``OUT/NAME/next_hop.ids``. Every other result goes to ``OUT/NAME/results.jsonl`` as recorded, with
the check's time added where the policy would have made the call: the start of a spliced run (copy it to a new run
directory, run the run's command with ``--policy +next_hop``: only the ids missing are answered)::

    python benchmarks/next_hop_reach.py runs/after-2wiki runs/after-absent-2wiki --out runs/hop
    mkdir runs/hop-2wiki && cp runs/hop/after-2wiki/results.jsonl runs/hop-2wiki/
    arag eval run … --policy +next_hop --out runs/hop-2wiki
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from arag.eval.runs import RESULTS, read_results
from arag.harness.policies.next_hop import address_for_who, asks_for, bare_name, person_messages, says_yes
from arag.models.choice import chat_model
from arag.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    parser.add_argument("--out", type=Path, required=True, help="where the reach and the kept results are written")
    args = parser.parse_args()
    model, _local = chat_model(load_settings(None, {}))
    for run_dir in args.runs:
        out = args.out / run_dir.name
        out.mkdir(parents=True, exist_ok=True)
        reached: list[str] = []
        checked = 0
        with (out / RESULTS).open("w", encoding="utf-8") as kept:
            for record in read_results(run_dir / RESULTS).values():
                answer, question = str(record.get("prediction") or ""), str(record["question"])
                kind = asks_for(question)
                name = bare_name(answer) if kind and record.get("stop_reason") == "answered" else None
                if name is not None:
                    checked += 1
                    began = time.monotonic()
                    reply = model.complete(person_messages(name)).content or ""
                    record["latency_s"] = round(float(record.get("latency_s") or 0) + time.monotonic() - began, 3)
                    if says_yes(reply):
                        reached.append(str(record["id"]))
                        print(f"  {record['id']}: {question} -> {name} ({kind})", flush=True)
                        continue
                elif address_for_who(question, answer) and record.get("stop_reason") == "answered":
                    reached.append(str(record["id"]))
                    continue
                kept.write(json.dumps(record) + "\n")
        (out / "next_hop.ids").write_text("".join(f"{i}\n" for i in reached), encoding="utf-8")
        print(f"{run_dir.name}: {checked} answer(s) checked, {len(reached)} to answer again", flush=True)


if __name__ == "__main__":
    main()
