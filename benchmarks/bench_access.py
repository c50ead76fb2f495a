"""What per-document access costs a search: keyword and semantic latency for readers of 1, 10 and 100 groups beside
the local user (no filter), on the same index, in one run.

    python benchmarks/bench_access.py --data ../shared/datasets/2wikimultihopqa --scale 10

The index: the 2Wiki passages (embedded once with the default embedder), copied ``--scale`` times with a little
noise on the vectors, each passage a document of its own whose ``access`` is one of 100 groups (a tenth of them
open to everyone). A reader of k groups reads the open documents and those of groups g0 … g(k-1). Prints p50/p95 in
milliseconds, the documents each reader may read, and the ratio of each p50 to the unfiltered one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from arag.corpus.build import build_index
from arag.embedding.embedders import load_embedder
from arag.eval.runner import question_entities
from arag.index import Index
from arag.principals import Principal
from arag.settings import IndexSettings
from arag.store import DocumentRecord
from arag.store.embedded.store import GenerationWriter
from bench_index import (  # the sibling script: same base index, same tables
    BaseArrays,
    _current,
    pct,
    print_table,
    search_latencies,
)

GROUPS = 100
OPEN_SHARE = 0.1


def access_copy(base_dir: Path, target: Path, scale: int, seed: int = 0) -> int:
    """The base index's chunks ``scale`` times, each chunk a document with an access group; returns documents."""
    arrays = BaseArrays.read(base_dir)
    records, offsets, vectors = arrays.records, arrays.offsets, arrays.vectors
    rng = np.random.default_rng(seed)
    writer = GenerationWriter(target, {"chunker": arrays.store.manifest.chunker, "vector_dtype": "f32", "ann": False})
    all_offsets, all_vectors = [0], []
    for copy in range(scale):
        for number, record in enumerate(records):
            doc_id = f"d{copy}-{number}"
            open_to_all = rng.random() < OPEN_SHARE
            metadata = {"title": doc_id} if open_to_all else {"title": doc_id, "access": [f"g{rng.integers(GROUPS)}"]}
            writer.add_document(DocumentRecord(doc_id, doc_id, doc_id, f"h{copy}-{number}", metadata))
            writer.add_chunks(doc_id, [(f"{doc_id}#0", 0, record.text, record.n_tokens)])
        all_offsets.extend((offsets[1:] + all_offsets[-1]).tolist())
        noisy = vectors if copy == 0 else vectors + rng.normal(0, 0.02, vectors.shape).astype(np.float32)
        all_vectors.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
    stacked = np.concatenate(all_vectors)
    documents = len(records) * scale
    counts = {"documents": documents, "chunks": documents, "sentences": len(stacked)}
    writer.finish(np.asarray(all_offsets), np.tile(arrays.spans, (scale, 1)), np.tile(arrays.hashes, scale), stacked,
                  "f32", False, 2, counts)  # fmt: skip
    writer.commit(dict(arrays.store.manifest.embedder))
    return documents


def measure(index: Index, keyword_queries: list[list[str]], vectors: np.ndarray) -> dict[str, Any]:
    keyword, semantic = search_latencies(index, keyword_queries, vectors)
    return {"kw p50": pct(keyword, 50), "kw p95": pct(keyword, 95), "sem p50": pct(semantic, 50),
            "sem p95": pct(semantic, 95)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets/2wikimultihopqa"))
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "arag-bench")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    base_dir = args.work / "base"  # bench_index.py's base index, shared
    if not _current(base_dir, load_embedder(IndexSettings().embedder).fingerprint):
        shutil.rmtree(base_dir, ignore_errors=True)
        build_index([args.data / "chunks.json"], base_dir, IndexSettings(threads=2), rebuild=True)
    base = Index.open(base_dir)
    target = args.work / f"access-x{args.scale}"
    shutil.rmtree(target, ignore_errors=True)
    documents = access_copy(base.store.index_dir, target, args.scale)  # type: ignore[attr-defined]
    questions = json.loads((args.data / "questions.json").read_text())[: args.queries]
    keyword_queries = [question_entities(q["question"]) or q["question"].split()[:2] for q in questions]
    vectors = base.embedder.embed_documents([q["question"] for q in questions])
    index = Index.open(target)
    rows = []
    readers: list[tuple[str, Principal | None]] = [("local user (no filter)", None)]
    readers += [
        (f"{k} group{'s' if k > 1 else ''}", Principal.of("bench", [f"g{n}" for n in range(k)])) for k in (1, 10, 100)
    ]
    for name, principal in readers:
        view = index.as_principal(principal)
        rows.append(
            {"reader": name, "documents read": len(view.documents()), **measure(view, keyword_queries, vectors)}
        )
    unfiltered = rows[0]
    for row in rows:
        row["kw ×"] = row["kw p50"] / unfiltered["kw p50"]
        row["sem ×"] = row["sem p50"] / unfiltered["sem p50"]
    print(f"{documents} documents ({documents} chunks, {index.store.n_sentences} sentences), {args.queries} queries, "
          f"p50/p95 in ms; × = p50 over the unfiltered p50, same run\n")  # fmt: skip
    print_table(["reader", "documents read", "kw p50", "kw p95", "sem p50", "sem p95", "kw ×", "sem ×"], rows, "{:.2f}")
    index.close()
    base.close()


if __name__ == "__main__":
    main()
