"""Where the hop_read policy would act on recorded runs, and the start of a run with it.

hop_read changes a run only at a repeated call or an answer, and only where a text read by then of the question's
subject names the holder of the relation the question asks about (a father, a director) whose own text is not read.
A recorded run none of whose repeats and answers meets that is the run with it; one that does must be answered again
live (an answer the harness held back is seen where the hold made a read; one held with a message only is not). The
reached ids go to ``OUT/NAME/hop_read.ids``, every other result to ``OUT/NAME/results.jsonl`` as recorded: the start
of a spliced run (``arag.eval.splice``; copy it to a new run directory, run the run's command with ``--policy
+hop_read``: only the ids missing are answered). For each reached run it prints the holders it would read
first, and whether one's text holds a gold answer. No model is asked::

    python benchmarks/hop_read_reach.py runs/after-2wiki runs/after-absent-2wiki --out runs/hops
    mkdir runs/hops-2wiki && cp runs/hops/after-2wiki/results.jsonl runs/hops-2wiki/
    arag eval run … --policy +hop_read --out runs/hops-2wiki

With ``--resolved`` (over runs made with hop_read): only the runs whose hops resolve the question (the one holder in
place of the relation: ``agent.policy.hop_read.resolved_question``), each printed with it.
"""

from __future__ import annotations

from typing import Any

from arag.agent.prompts import REPEATED
from arag.eval.runs import chunks_read_in_order
from arag.eval.splice import gold_holders, reach_arguments, say_reached, write_reach
from arag.harness.policies.hop_read import next_hops, resolution
from arag.index import Index


def reads_before(trajectory: list[dict[str, Any]], step: int) -> list[str]:
    """The chunk ids read in the steps before ``step`` (the model's reads and the loop's)."""
    return chunks_read_in_order({"trajectory": trajectory[:step]})


def main() -> None:
    args = reach_arguments(__doc__ or "", {"--resolved": "only the runs whose first hop resolves the question"})

    def check(index: Index, record: dict[str, Any]) -> bool | None:
        trajectory = record.get("trajectory") or []
        repeats = [i for i, s in enumerate(trajectory) if str(s.get("observation", "")).startswith(REPEATED)]
        holds_read = [i for i, s in enumerate(trajectory) if s.get("origin") == "harness" and i not in repeats]
        for step in [*sorted(repeats + holds_read), len(trajectory)]:
            hops = next_hops(index, record["question"], reads_before(trajectory, step))
            if hops:
                break
        else:
            return False
        resolved = resolution(record["question"], hops)
        if args.resolved and resolved is None:
            return False
        gold_in = gold_holders(index, record, [h.chunk_id for h in hops]) or "none"
        names = ", ".join(h.name for h in hops)
        where = "at the final answer" if step == len(trajectory) else f"at step {step + 1} (a repeat or a hold's read)"
        said = f"{where}: {names}; gold answer in {gold_in}; right before: {record.get('contain_acc')}"
        say_reached(record, said + (f'; resolved: "{resolved[1]}"' if resolved else ""))
        return True

    write_reach(args.runs, args.out, "hop_read", check)


if __name__ == "__main__":
    main()
