"""Which recorded runs could a heading change? A heading is passed over as the closest sentence read
(``arag.harness.text.a_heading``), a Markdown heading line is a sentence of its own, and an HTML page's menus and
footer are left out: a run changes only if a closest-sentence note or answer of it named a heading, or its corpus
has a Markdown heading line that runs into the next line or an HTML page. No model is asked.

    python benchmarks/heading_reach.py ../runs/final-hop-after-2wiki ../runs/hop-after-medical ...
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arag.citations import without_citations
from arag.eval.runner import run_dataset
from arag.eval.runs import RESULTS, read_results
from arag.harness.text import a_heading

NAMED = re.compile(r'Closest to the question(?: in what you read)?: "(.*?)" \[chunk')
HEADING_RUN_ON = re.compile(r"(?m)^[ \t]{0,3}#{1,6}[ \t][^\n]*\n[ \t]*\S")
CLOSEST_ANSWER = "the closest sentence read"


def strings_in(value: object) -> Iterator[str]:
    """Every string of a JSON value (a corpus file's texts, whatever its format)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def headings_named(record: dict[str, Any]) -> list[str]:
    """The headings a run's closest-sentence notes named, and its answer if the harness gave a heading as one (not a
    phrase ``phrase_answer`` cut from a sentence)."""
    named = [m.group(1) for step in record.get("trajectory") or [] for m in NAMED.finditer(step["observation"])]
    if record.get("answer_from") == CLOSEST_ANSWER and "phrase_answer" not in (record.get("policy_records") or {}):
        named.append(without_citations(str(record.get("prediction") or "")).strip())
    return [sentence for sentence in named if a_heading(sentence)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    args = parser.parse_args()
    corpora: dict[Path, tuple[int, bool]] = {}
    for run_dir in args.runs:
        corpus = run_dataset(run_dir).corpus
        if corpus not in corpora:
            raw = corpus.read_text(encoding="utf-8")
            texts = list(strings_in(json.loads(raw))) if corpus.suffix == ".json" else [raw]
            corpora[corpus] = (sum(len(HEADING_RUN_ON.findall(t)) for t in texts), corpus.suffix in (".html", ".htm"))
        run_on, html = corpora[corpus]
        records = list(read_results(run_dir / RESULTS).values())
        reached = [(r["question"], named) for r in records if (named := headings_named(r))]
        print(
            f"{run_dir.name}: {len(reached)} of {len(records)} runs named a heading; corpus {corpus.name}: "
            f"{run_on} Markdown heading lines run on, {'an' if html else 'no'} HTML page"
        )
        for question, named in reached:
            print(f"  {question[:80]} | {named[:3]}")


if __name__ == "__main__":
    main()
