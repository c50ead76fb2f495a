"""Where a policy would act on recorded runs, and the start of a run with it (a spliced run).

A policy that changes a run only after its answer (one more model call, no tools) changes nothing before it: a run
with it is the recorded run up to the answer, then the call. A reach script makes that call on each recorded
answer; the runs it reaches must be answered again live, and every other result is kept as recorded with the
call's time added — the start of a spliced run (copy it to a new run directory and run the run's command with the
policy: only the ids missing are answered). ``benchmarks/next_hop_reach.py`` and
``benchmarks/compare_dates_reach.py`` are two."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arag.eval.runner import run_index
from arag.eval.runs import RESULTS, read_results
from arag.index import Index

# A policy's check on one recorded result: None when it makes no call there; else whether the run is reached.
Check = Callable[[Index, dict[str, Any]], bool | None]


def reach_arguments(description: str, switches: dict[str, str] | None = None) -> argparse.Namespace:
    """A reach script's arguments: the recorded run directories, where the reach goes, and the script's own
    on/off ``switches`` (flag → help)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    parser.add_argument("--out", type=Path, required=True, help="where the reach and the kept results are written")
    for flag, explained in (switches or {}).items():
        parser.add_argument(flag, action="store_true", help=explained)
    return parser.parse_args()


def gold_holders(index: Index, record: dict[str, Any], chunk_ids: list[str]) -> list[str]:
    """Which of ``chunk_ids`` hold a gold answer of the result ``record`` (as ``arag.eval.measures`` finds one)."""
    from arag.eval.measures import answer_holder

    holds = answer_holder([str(g) for g in record.get("gold") or []], set(), None)
    return [c.chunk_id for c in index.read(chunk_ids)[0] if holds(c.chunk_id, c.text)]


def say_reached(record: dict[str, Any], detail: str) -> None:
    """One reached run, as a reach script prints it: its question, then its type and ``detail``."""
    print(f"  {record['question']}\n    {record.get('type')}, {detail}", flush=True)


def recorded_index(run_dir: Path) -> Index:
    return run_index(run_dir)[0]


def write_reach(
    run_dirs: list[Path], out: Path, policy: str, check: Check, index_of: Callable[[Path], Index] = recorded_index
) -> None:
    """For each run, ``OUT/NAME/POLICY.ids`` (the ids the check reaches) and ``OUT/NAME/results.jsonl`` (every other
    result, its latency plus the check's time where it made a call), with its ``config.json``; ``index_of`` opens
    the index a run used."""
    for run_dir in run_dirs:
        index = index_of(run_dir)
        written = out / run_dir.name
        written.mkdir(parents=True, exist_ok=True)
        (written / "config.json").write_text((run_dir / "config.json").read_text(encoding="utf-8"), encoding="utf-8")
        reached: list[str] = []
        checked = 0
        with (written / RESULTS).open("w", encoding="utf-8") as kept:
            for record in read_results(run_dir / RESULTS).values():
                began = time.monotonic()
                verdict = check(index, record)
                if verdict is not None:
                    checked += 1
                    spent = time.monotonic() - began
                    record["latency_s"] = round(float(record.get("latency_s") or 0) + spent, 3)
                if verdict:
                    reached.append(str(record["id"]))
                    continue
                kept.write(json.dumps(record) + "\n")
        (written / f"{policy}.ids").write_text("".join(f"{i}\n" for i in reached), encoding="utf-8")
        print(f"{run_dir.name}: {checked} checked, {len(reached)} to answer again", flush=True)
