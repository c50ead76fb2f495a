"""Which recorded runs could a heading change? A heading the chunk's structure records is passed over as the closest
sentence read (``arag.harness.text.a_heading``), a Markdown heading line is a sentence of its own and goes into the
chunk of what follows it, and an HTML page's menus and footer are left out: a run changes only if a
closest-sentence note or answer of it named a heading of its chunk, or its corpus has Markdown heading lines or HTML
pages (its chunks, sentences and texts would differ). No model is asked.

    python benchmarks/heading_reach.py ../runs/final-hop-after-2wiki ../runs/hop-after-medical ...
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from arag.citations import cited_ids, without_citations
from arag.eval.runner import run_index
from arag.eval.runs import RESULTS, read_results
from arag.harness.text import a_heading, chunk_headings
from arag.index import Index

NAMED = re.compile(r'Closest to the question(?: in what you read)?: "(.*?)" \[chunk ([^\]]+)\]')
CLOSEST_ANSWER = "the closest sentence read"


def headings_named(index: Index, record: dict[str, Any]) -> list[str]:
    """The headings a run's closest-sentence notes named, and its answer if the harness gave a heading as one (not a
    phrase ``phrase_answer`` cut from a sentence), each checked against its chunk's recorded headings."""
    named = [
        (m.group(1), m.group(2)) for step in record.get("trajectory") or [] for m in NAMED.finditer(step["observation"])
    ]
    answer = str(record.get("prediction") or "")
    if record.get("answer_from") == CLOSEST_ANSWER and "phrase_answer" not in (record.get("policy_records") or {}):
        named += [(without_citations(answer).strip(), chunk_id) for chunk_id in cited_ids(answer)]
    found = []
    for sentence, chunk_id in named:
        records, _ = index.read([chunk_id])
        if records and a_heading(sentence, chunk_headings(records[0].location)):
            found.append(sentence)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    args = parser.parse_args()
    for run_dir in args.runs:
        index, _settings = run_index(run_dir)
        with_headings = sum(bool(chunk_headings(chunk.location)) for chunk in index.iter_chunks())
        markup = sum(doc.source.lower().endswith((".md", ".markdown", ".html", ".htm")) for doc in index.documents())
        records = list(read_results(run_dir / RESULTS).values())
        reached = [(r["question"], named) for r in records if (named := headings_named(index, r))]
        print(
            f"{run_dir.name}: {len(reached)} of {len(records)} runs named a heading; its index: {with_headings} of "
            f"{index.chunk_count()} chunks record headings, {markup} Markdown or HTML documents"
        )
        for question, named in reached:
            print(f"  {question[:80]} | {named[:3]}")
        index.close()


if __name__ == "__main__":
    main()
