"""Does the evidence ledger find a question's names in an index, as written and as a user types them without
accents? Its refusal at once ("Not in the documents: no document names …") follows ``arag.harness.reads.naming``:
this script runs it, with no model, for every question of a dataset that names something.

    python benchmarks/ledger_naming.py --index ~/.cache/arag/indexes/NAME \\
        --dataset ../shared/datasets/2wikimultihopqa --corpus corpus [--accented] [--skip-first 40 --limit 100 --seed 0]

``--accented``: only the questions with an accented letter, each asked as written and typed without its accents.
``--skip-first N`` with ``--limit``/``--seed``: leave out the first N of that sample (the dev questions, whose
evidence an absent corpus lacks); ``--first N``: only those. Prints, per form, the questions where a name is found in
no chunk. ``--out FILE`` keeps the chunks found for every name; ``--compare FILE`` counts the questions whose names
or chunks differ from such a file (the same command at another commit):

    python benchmarks/ledger_naming.py … --out before.json        # at the commit before
    python benchmarks/ledger_naming.py … --compare before.json    # at the commit after
"""

from __future__ import annotations

import argparse
import json
import unicodedata
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from arag.eval.datasets import load_dataset
from arag.eval.runner import select_questions
from arag.harness.contract import RunView
from arag.harness.reads import naming
from arag.harness.text import question_names
from arag.index import Index


def without_accents(text: str) -> str:
    """As a user types it (here, not arag.text's: the script also measures commits before it)."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--corpus", default="auto")
    parser.add_argument("--question-type")
    parser.add_argument("--accented", action="store_true")
    parser.add_argument("--skip-first", type=int, default=0)
    parser.add_argument("--first", type=int)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--show", type=int, default=12)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    dataset = load_dataset(args.dataset, corpus=args.corpus)
    sample = select_questions(dataset.questions, args.limit, args.seed, args.question_type)
    if args.first is not None:
        questions = [q.question for q in sample[: args.first]]
    else:
        skipped = {q.id for q in sample[: args.skip_first]}
        typed = [q for q in dataset.questions if not args.question_type or q.type == args.question_type]
        questions = [q.question for q in typed if q.id not in skipped]
    if args.accented:
        questions = [q for q in questions if without_accents(q) != q]
    index = Index.open(args.index, threads=1)
    run = cast(RunView, SimpleNamespace(toolkit=SimpleNamespace(index=index, scope=None)))
    forms = {"as written": questions}
    if args.accented:
        forms["typed without accents"] = [without_accents(q) for q in questions]
    found: dict[str, list[tuple[str, dict[str, list[str]]]]] = {}
    for form, asked in forms.items():
        found[form] = [(q, {name: naming(run, name, 5) for name in question_names(q)}) for q in asked]
        missing = [(q, [n for n, chunks in names.items() if not chunks]) for q, names in found[form]]
        missing = [(q, names) for q, names in missing if names]
        print(f"{form}: a name found in no chunk in {len(missing)} of {len(asked)} questions")
        for question, names in missing[: args.show]:
            print(f"  {names} | {question[:100]}")
    if args.out:
        args.out.write_text(json.dumps(found, ensure_ascii=False), encoding="utf-8")
    if args.compare:
        earlier = json.loads(args.compare.read_text(encoding="utf-8"))
        for form, now in found.items():
            then = [(q, names) for q, names in earlier.get(form, [])]
            differ = sum(1 for i, item in enumerate(now) if i >= len(then) or then[i] != item)
            print(f"{form}: names or chunks differ from {args.compare.name} in {differ} of {len(now)} questions")


if __name__ == "__main__":
    main()
