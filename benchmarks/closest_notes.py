"""A change to the closest sentence, measured on recorded runs: which runs it reaches, and which re-runs drifted.

``closest_sentence`` ends every read with the read sentence closest to the question. A change to how it is chosen
(``agent.policy.closest_sentence.pronouns``) reaches only the runs where a note would read differently; the rest
are the recorded runs. Without a model::

    python benchmarks/closest_notes.py reach runs/after-2wiki runs/after-medical --pronouns --splice runs/pron
    ARAG_AGENT__POLICY__CLOSEST_SENTENCE__PRONOUNS=true arag eval run … --out runs/pron/after-2wiki
    python benchmarks/closest_notes.py drift --before runs/after-2wiki --after runs/pron/after-2wiki

``reach`` recomputes every read's note of every run with the default scoring — all must reproduce, else the index
or the code is not the run's — and with the change; a run is reached when a note differs. ``--splice OUT`` writes
the rows it does not reach to ``OUT/NAME/results.jsonl``, so the same ``arag eval run`` command into that directory
runs only the rest.

``drift``: re-running only some questions changes which question precedes which, so the embedded server's prompt
cache holds another prefix and a greedy answer can change with identical inputs. For each row that differs from
the recorded one, it finds the first step where the two differ: an observation (the change reached the model:
"changed"), or the model's own call with every observation before it the same ("drift"). ``--keep-drift OUT``
writes the after-run with the drifted rows replaced by the recorded ones, to pair the change's effect alone.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

from arag.agent.state import RunState
from arag.eval.runner import run_index
from arag.eval.runs import CONFIG, READ_HEADER, RESULTS, read_results
from arag.harness.reads import SENTENCE_CHARS, closest_sentences
from arag.index import Index
from arag.settings import AgentSettings
from arag.tools import ResultView, Toolkit

NOTE = re.compile(r'Closest to the question: "(.*)" \[chunk ([^\]]+)\]\. If this answers', re.S)


def run_for(index: Index, question: str) -> RunState:
    """A run over ``index`` asking ``question``, with no model: what the closest sentence reads off a run."""
    toolkit = Toolkit(index, view=ResultView())
    toolkit.focus_query = question
    return RunState(question, "", toolkit, AgentSettings(), lambda call, text: {"role": "user", "content": text})


def notes(record: dict[str, Any]) -> list[tuple[list[str], tuple[str, str]]]:
    """Each read of a recorded run that ended with a closest-sentence note: the chunks it showed, the note."""
    found = []
    for step in record.get("trajectory") or []:
        observation = str(step.get("observation") or "")
        note = NOTE.search(observation)
        if step.get("tool") == "chunk_read" and note:
            found.append((READ_HEADER.findall(observation), (note.group(1), note.group(2))))
    return found


def reached(index: Index, record: dict[str, Any], pronouns: bool) -> tuple[bool, int]:
    """(whether the change reaches this run, how many of its notes the default scoring did not reproduce)."""
    run = run_for(index, str(record["question"]))
    reaches, mismatches = False, 0
    for chunk_ids, recorded in notes(record):
        default = closest_sentences(run, chunk_ids)
        changed = closest_sentences(run, chunk_ids, pronouns=pronouns)
        mismatches += bool(default) and (default[0].shown(SENTENCE_CHARS), default[0].chunk_id) != recorded
        reaches |= bool(changed) and (changed[0].shown(SENTENCE_CHARS), changed[0].chunk_id) != recorded
    return reaches, mismatches


def reach(args: argparse.Namespace) -> int:
    mismatched = 0
    for run_dir in args.runs:
        index, _settings = run_index(run_dir)
        records = list(read_results(run_dir / RESULTS).values())
        verdicts = [reached(index, record, args.pronouns) for record in records]
        index.close()
        mismatched += sum(m for _, m in verdicts)
        kept = [record for record, (reaches, _) in zip(records, verdicts, strict=True) if not reaches]
        print(
            f"{run_dir.name}: {len(records)} runs, {len(records) - len(kept)} reached; "
            f"{sum(m for _, m in verdicts)} recorded notes not reproduced",
            flush=True,
        )
        if args.splice:
            out = args.splice / run_dir.name
            out.mkdir(parents=True, exist_ok=True)
            (out / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return 1 if mismatched else 0


def action(step: dict[str, Any]) -> tuple[Any, ...]:
    return step.get("tool"), json.dumps(step.get("arguments"), sort_keys=True), step.get("thought")


def why_differs(before: dict[str, Any], after: dict[str, Any]) -> str:
    """ "same", "changed" (an observation differs first: the change reached the model) or "drift"."""
    if before.get("prediction") == after.get("prediction") and before.get("not_found") == after.get("not_found"):
        return "same"
    old, new = before.get("trajectory") or [], after.get("trajectory") or []
    for a, b in zip(old, new, strict=False):
        if action(a) != action(b):
            return "drift"  # the model's call differed, every observation before it the same
        if a.get("observation") != b.get("observation"):
            return "changed"
    if len(old) != len(new):
        return "drift"
    # the same steps: the final answer differs; the harness's own answer can change with a ranking
    return "drift" if before.get("answer_from") == after.get("answer_from") == "model" else "changed"


def drift(args: argparse.Namespace) -> int:
    before, after = read_results(args.before / RESULTS), read_results(args.after / RESULTS)
    verdicts = {qid: why_differs(before[qid], record) for qid, record in after.items() if qid in before}
    for kind in ("changed", "drift"):
        ids = [qid for qid, verdict in verdicts.items() if verdict == kind]
        print(f"{args.after.name}: {kind} {len(ids)}" + (f" ({', '.join(i[:8] for i in ids)})" if ids else ""))
    if args.keep_drift:
        args.keep_drift.mkdir(parents=True, exist_ok=True)
        shutil.copy(args.after / CONFIG, args.keep_drift / CONFIG)
        rows = [before[qid] if verdicts.get(qid) == "drift" else record for qid, record in after.items()]
        (args.keep_drift / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    reach_parser = commands.add_parser("reach", help="which recorded runs the change reaches")
    reach_parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    reach_parser.add_argument("--pronouns", action="store_true", help="the change: closest_sentence.pronouns")
    reach_parser.add_argument("--splice", type=Path, help="write the runs it does not reach to SPLICE/NAME")
    drift_parser = commands.add_parser("drift", help="which re-runs the change changed, and which drifted")
    drift_parser.add_argument("--before", type=Path, required=True)
    drift_parser.add_argument("--after", type=Path, required=True)
    drift_parser.add_argument("--keep-drift", type=Path, help="write the after-run with drifted rows as before")
    args = parser.parse_args()
    return reach(args) if args.command == "reach" else drift(args)


if __name__ == "__main__":
    raise SystemExit(main())
