"""Where the repeat_stop policy would act on recorded runs, and the start of a run with it.

repeat_stop changes a run only once the model has repeated ``agent.policy.repeat_stop.after`` calls it had made
(``ARAG_AGENT__POLICY__REPEAT_STOP__AFTER``, default 3): there the search ends and the answer is asked for. A
recorded run that repeated fewer calls is the run with it; one that repeated more must be answered again live. The
reached ids go to ``OUT/NAME/repeat_stop.ids``, every other result to ``OUT/NAME/results.jsonl`` as recorded: the
start of a spliced run (``arag.eval.splice``; copy it to a new run directory, run the run's command: only the ids
missing are answered). For each reached run it prints whether a gold answer stands in the chunks the run read (is
the loop short of a hop, or of reading what it has?). No model is asked::

    python benchmarks/repeat_stop_reach.py runs/after-2wiki runs/after-absent-2wiki --out runs/repeats
    mkdir runs/repeats-2wiki && cp runs/repeats/after-2wiki/results.jsonl runs/repeats-2wiki/
    arag eval run … --out runs/repeats-2wiki
"""

from __future__ import annotations

from typing import Any

from arag.eval.measures import repeated_calls
from arag.eval.runs import chunks_read
from arag.eval.splice import gold_holders, reach_arguments, say_reached, write_reach
from arag.harness.policies.repeat_stop import RepeatStopSettings
from arag.harness.profiles import policy_configs
from arag.index import Index
from arag.settings import load_settings


def main() -> None:
    args = reach_arguments(__doc__ or "")
    config = policy_configs(load_settings(None, {}).agent)["repeat_stop"]
    after = config.after if isinstance(config, RepeatStopSettings) else RepeatStopSettings().after

    def check(index: Index, record: dict[str, Any]) -> bool | None:
        repeats = repeated_calls(record)
        if repeats < after:
            return None
        gold_read = "gold answer read" if gold_holders(index, record, chunks_read(record)) else "gold answer NOT read"
        say_reached(record, f"{repeats} repeats, {record.get('stop_reason')}, {gold_read}")
        return True

    write_reach(args.runs, args.out, "repeat_stop", check)


if __name__ == "__main__":
    main()
