"""Can the closest sentence read tell a false refusal from a true one? For every "Not in the documents" in the given
runs: the cosine of the question to the closest sentence of the chunks the run read, and whether the question was
answerable (a false refusal) or asked absent (a true one). No model call; the runs' own indexes.

    python benchmarks/refusal_closeness.py runs/after-2wiki runs/after-absent-2wiki runs/after-medical ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from arag.eval.runner import run_index
from arag.eval.runs import RESULTS, chunks_read, read_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (arag eval run --out)")
    args = parser.parse_args()
    rows: list[tuple[float | None, bool, str, str, str]] = []
    for run_dir in args.runs:
        absent = bool(json.loads((run_dir / "config.json").read_text(encoding="utf-8")).get("absent"))
        index, _settings = run_index(run_dir)
        for record in read_results(run_dir / RESULTS).values():
            if not record.get("not_found"):
                continue
            records, _missing = index.read(chunks_read(record))
            sentences = [sentence for chunk in records for sentence in index.sentences(chunk)]
            if not sentences:
                rows.append((None, absent, run_dir.name, record["id"], "(nothing read)"))
                continue
            cosines = index.embedder.embed_documents(sentences) @ index.embedder.embed_query(record["question"])
            best = int(np.argmax(cosines))
            rows.append((float(cosines[best]), absent, run_dir.name, record["id"], " ".join(sentences[best].split())))
    print("| cosine | refusal | run | question | closest sentence read |\n|---|---|---|---|---|")
    for cosine, absent, run, question_id, sentence in sorted(rows, key=lambda r: -1.0 if r[0] is None else r[0]):
        shown = "—" if cosine is None else f"{cosine:.3f}"
        kind = "true (absent)" if absent else "FALSE (answerable)"
        print(f"| {shown} | {kind} | {run} | {question_id} | {sentence[:90]} |")


if __name__ == "__main__":
    main()
