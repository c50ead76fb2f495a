"""Where the next_hop policy would act on recorded runs, and the start of a run with it.

next_hop changes a run only when the model's own answer (not the step limit's) to a question that asks for a place,
a date, a number, a nationality or a title is a short name the model calls a person's (or an address for "who").
This script makes that check — the policy's own rules (``asks_for``, ``bare_name``) and call (``person_messages``,
``says_yes``) — with the embedded model on each recorded answer. The runs it reaches must be answered again live;
their ids go to ``OUT/NAME/next_hop.ids``. Every other result goes to ``OUT/NAME/results.jsonl`` as recorded, with
the check's time added where the policy would have made the call: the start of a spliced run (``arag.eval.splice``;
copy it to a new run directory, run the run's command with ``--policy +next_hop``: only the ids missing are
answered)::

    python benchmarks/next_hop_reach.py runs/after-2wiki runs/after-absent-2wiki --out runs/hop
    mkdir runs/hop-2wiki && cp runs/hop/after-2wiki/results.jsonl runs/hop-2wiki/
    arag eval run … --policy +next_hop --out runs/hop-2wiki
"""

from __future__ import annotations

from typing import Any

from arag.eval.splice import reach_arguments, write_reach
from arag.harness.policies.next_hop import address_for_who, asks_for, bare_name, person_messages, says_yes
from arag.index import Index
from arag.models.choice import chat_model
from arag.settings import load_settings


def main() -> None:
    args = reach_arguments(__doc__ or "")
    model, _local = chat_model(load_settings(None, {}))

    def check(_index: Index, record: dict[str, Any]) -> bool | None:
        answer, question = str(record.get("prediction") or ""), str(record["question"])
        if record.get("stop_reason") != "answered":
            return None
        kind = asks_for(question)
        name = bare_name(answer) if kind else None
        if name is None:
            return True if address_for_who(question, answer) else None
        reached = says_yes(model.complete(person_messages(name)).content or "")
        if reached:
            print(f"  {record['id']}: {question} -> {name} ({kind})", flush=True)
        return reached

    write_reach(args.runs, args.out, "next_hop", check)


if __name__ == "__main__":
    main()
