"""Held-out questions: ones no default was chosen on, for checking the shipped default on each dev set.

The dev questions are the seeded samples the policies were measured on (2Wiki: ``--limit 100 --seed 0`` and,
from earlier runs, the first 100; Medical: ``--question-type 'Fact Retrieval' --limit 40 --seed 0``). The
held-out ones are a sample with another seed, less the dev questions, the first ``--count``::

    python benchmarks/heldout.py --out benchmarks/heldout

writes ``2wikimultihopqa.ids`` and ``graphrag-bench-medical.ids`` (one id per line, for ``arag eval run
--ids-file``; the run's own ``--limit``/``--seed`` must select a superset: the ones printed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arag.eval.datasets import load_dataset
from arag.eval.runner import select_questions

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def heldout_ids(
    dataset: str, corpus: str, question_type: str | None, dev: list[tuple[int, int | None]], sample: int, count: int
) -> list[str]:
    """Of a ``sample`` drawn with seed 1, the first ``count`` not among the ``dev`` selections (limit, seed)."""
    questions = load_dataset(DATASETS / dataset, corpus).questions
    used = {q.id for limit, seed in dev for q in select_questions(questions, limit, seed, question_type)}
    picked = [q.id for q in select_questions(questions, sample, 1, question_type) if q.id not in used]
    return picked[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/heldout"))
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    # dataset: (corpus, question type, the dev selections as (limit, seed), the held-out sample, its options)
    runs: dict[str, tuple[str, str | None, list[tuple[int, int | None]], int, str]] = {
        "2wikimultihopqa": ("corpus", None, [(100, 0), (100, None)], 300, "--corpus corpus --limit 300 --seed 1"),
        "graphrag-bench-medical": (
            "auto",
            "Fact Retrieval",
            [(40, 0)],
            120,
            "--question-type 'Fact Retrieval' --limit 120 --seed 1",
        ),
    }
    for name, (corpus, question_type, dev, sample, options) in runs.items():
        ids = heldout_ids(name, corpus, question_type, dev, sample, args.count)
        path = args.out / f"{name}.ids"
        path.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
        print(f"{path}: {len(ids)} ids; arag eval run --dataset ../shared/datasets/{name} {options} --ids-file {path}")


if __name__ == "__main__":
    main()
