"""The build pipeline's own cost: a from-scratch build and an incremental add of one file, on any store.

    python benchmarks/bench_build.py --corpus ../shared/datasets/2wikimultihopqa/corpus.json [--index URL] [--runs 2]

The fake embedder keeps embedding out of the figures (bench_index.py and bench_embedder.py time the real one), so
what is timed is reading, chunking, hashing, vector reuse and writing: the code the stores share. An incremental
add keeps every stored document (the embedded store copies them into a new generation; PostgreSQL leaves them).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from arag.corpus.build import build_index
from arag.settings import IndexSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/datasets/2wikimultihopqa/corpus.json"))
    parser.add_argument("--index", help="a postgresql:// URL (default: an embedded index in a temporary folder)")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arag-bench-build-"))
    location = args.index or str(work / "idx")
    settings = IndexSettings(embedder="fake", threads=2)
    print("| run | full build s | documents | sentences | add one file s | vectors reused | embedded |")
    print("|---|---|---|---|---|---|---|")
    try:
        for run in range(1, args.runs + 1):
            started = time.perf_counter()
            full = build_index([args.corpus], location, settings, rebuild=True)
            full_s = time.perf_counter() - started
            extra = work / f"extra{run}.md"
            extra.write_text("A new passage. It has two sentences.", encoding="utf-8")
            started = time.perf_counter()
            added = build_index([extra], location, settings)
            add_s = time.perf_counter() - started
            print(
                f"| {run} | {full_s:.2f} | {full.documents} | {full.sentences} | {add_s:.2f} | "
                f"{added.reused_vectors} | {added.embedded} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
