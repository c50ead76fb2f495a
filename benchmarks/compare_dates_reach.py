"""Where the compare_dates policy would act on recorded runs, and the start of a run with it.

compare_dates changes a run only when the model's own answer (not the step limit's) to an either-or question decided
by two dates disagrees with the order of the dates the model copies out of the sentences it read, or, when the
question compares by someone's dates (a film's director) and the setting ``agent.policy.compare_dates.read_holders``
is on (``ARAG_AGENT__POLICY__COMPARE_DATES__READ_HOLDERS=true``), when an option's text names that someone and their
own text was not read (the answer goes back with it read; no call). This script makes that call — the policy's own
rules and prompt (``compared``, ``reading``, ``dates_messages``, ``decision``) — with the embedded model on each
recorded answer, and prints what the dates decide beside the gold answer. The runs it reaches must be answered again
live; their ids go to ``OUT/NAME/compare_dates.ids``. Every other result goes to ``OUT/NAME/results.jsonl`` as
recorded, with the call's time added where the policy would have made it: the start of a spliced run
(``arag.eval.splice``; copy it to a new run directory, run the run's command: only the ids missing are answered)::

    python benchmarks/compare_dates_reach.py runs/after-2wiki runs/after-absent-2wiki --out runs/dates
    mkdir runs/dates-2wiki && cp runs/dates/after-2wiki/results.jsonl runs/dates-2wiki/
    arag eval run … --policy +compare_dates --out runs/dates-2wiki
"""

from __future__ import annotations

from typing import Any

from arag.eval.runs import chunks_read_in_order
from arag.eval.splice import reach_arguments, write_reach
from arag.harness.policies.compare_dates import (
    CompareDatesSettings,
    compared,
    dates_messages,
    decision,
    holders_to_read,
    named_option,
    reading,
)
from arag.harness.profiles import policy_configs
from arag.index import Index
from arag.models.choice import chat_model
from arag.settings import load_settings


def main() -> None:
    args = reach_arguments(__doc__ or "")
    settings = load_settings(None, {})
    model, _local = chat_model(settings)
    config = policy_configs(settings.agent)["compare_dates"]
    read_holders = isinstance(config, CompareDatesSettings) and config.read_holders

    def check(index: Index, record: dict[str, Any]) -> bool | None:
        answer, question = str(record.get("prediction") or ""), str(record["question"])
        comparison = compared(question)
        if comparison is None or not answer or record.get("stop_reason") != "answered":
            return None
        holders = holders_to_read(index, chunks_read_in_order(record), comparison) if read_holders else []
        if holders:  # the answer goes back with each option's holder's text read: no call, answered again live
            print(f"  {question}\n    to read: {holders}", flush=True)
            return True
        read = reading(index, chunks_read_in_order(record), comparison)
        if not read.sentences:
            return None
        found = decision(comparison, model.complete(dates_messages(question, comparison, read)).content or "", read)
        said, gold = named_option(answer, comparison.options), [str(g) for g in record.get("gold") or []]
        right = "right" if found.decided in gold else "not the gold answer"
        print(f"  {question}\n    copied {found.copied} from {found.sources}", flush=True)
        print(f"    -> {found.decided} ({right if found.decided else 'undecided'}); answered {said}", flush=True)
        return found.decided is not None and found.decided != said

    write_reach(args.runs, args.out, "compare_dates", check)


if __name__ == "__main__":
    main()
