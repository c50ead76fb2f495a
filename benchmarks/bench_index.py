"""Benchmark the index and tools against brute-force baselines written like the paper's reference code.

    python benchmarks/bench_index.py --data ../shared/datasets/2wikimultihopqa --scale 1 --scale 10

Prints, per scale: keyword and semantic p50/p95 (ours vs brute force), open time, disk size, peak RSS.
A scaled copy replicates the real index's chunks and vectors under fresh ids, with a little noise on the
vectors (embedding millions of sentences on 2 cores would take hours).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arag.corpus.build import build_index
from arag.embedding.embedders import load_embedder
from arag.eval.runner import question_entities
from arag.index import Index
from arag.settings import IndexSettings
from arag.store import FORMAT_VERSION, DocumentRecord
from arag.store.embedded import ivf
from arag.store.embedded.store import EmbeddedStore, GenerationWriter


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def print_table(header: list[str], rows: list[dict[str, Any]], float_format: str) -> None:
    """A markdown table of ``rows`` (dicts) in the ``header`` order, floats formatted with ``float_format``."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = (float_format.format(row[h]) if isinstance(row[h], float) else str(row[h]) for h in header)
        print("| " + " | ".join(cells) + " |")


def disk_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass
class BaseArrays:
    """What a scaled copy replicates of the base index: its chunks, sentence offsets, spans, hashes and vectors."""

    store: EmbeddedStore
    records: list[Any]
    offsets: np.ndarray
    spans: np.ndarray
    hashes: np.ndarray
    vectors: np.ndarray

    @classmethod
    def read(cls, base_dir: Path) -> BaseArrays:
        base = EmbeddedStore(base_dir)
        return cls(base, list(base.iter_chunks()), np.asarray(base.sentence_ranges()),
                   np.load(base.path / "sent_spans.npy"), np.load(base.path / "sent_hash.npy"),
                   base.sentence_vectors(np.arange(base.n_sentences)))  # fmt: skip


def scaled_copy(base_dir: Path, target: Path, scale: int, dtype: str, ann: bool, seed: int = 0) -> None:
    arrays = BaseArrays.read(base_dir)
    base, records, offsets, spans, hashes, vectors = (arrays.store, arrays.records, arrays.offsets, arrays.spans,
                                                      arrays.hashes, arrays.vectors)  # fmt: skip
    rng = np.random.default_rng(seed)
    writer = GenerationWriter(target, {"chunker": base.manifest.chunker, "vector_dtype": dtype, "ann": ann})
    all_offsets, all_vectors = [0], []
    for copy in range(scale):
        doc_id = f"copy{copy}"
        writer.add_document(DocumentRecord(doc_id, doc_id, None, f"h{copy}"))
        writer.add_chunks(
            doc_id,
            [(f"{r.chunk_id}_{copy}" if copy else r.chunk_id, i, r.text, r.n_tokens) for i, r in enumerate(records)],
        )
        all_offsets.extend((offsets[1:] + all_offsets[-1]).tolist())
        noisy = vectors if copy == 0 else vectors + rng.normal(0, 0.02, vectors.shape).astype(np.float32)
        all_vectors.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
    stacked = np.concatenate(all_vectors)
    writer.finish(
        np.asarray(all_offsets),
        np.tile(spans, (scale, 1)),
        np.tile(hashes, scale),
        stacked,
        dtype,
        ann,
        2,
        {"documents": scale, "chunks": len(records) * scale, "sentences": len(stacked)},
    )
    writer.commit(dict(base.manifest.embedder))


def search_latencies(
    index: Index, keyword_queries: list[list[str]], vectors: np.ndarray, exact: bool = True
) -> tuple[list[float], list[float]]:
    """Seconds of each keyword and each semantic search (top 5), after one untimed pass: the index is
    memory-mapped, and a long-running agent or server is warm."""
    for keywords, vector in zip(keyword_queries, vectors, strict=True):
        index.keyword_search(keywords, 5)
        index.semantic_search_vector(vector, 5, exact=exact)
    keyword, semantic = [], []
    for keywords, vector in zip(keyword_queries, vectors, strict=True):
        started = time.perf_counter()
        index.keyword_search(keywords, 5)
        keyword.append(time.perf_counter() - started)
        started = time.perf_counter()
        index.semantic_search_vector(vector, 5, exact=exact)
        semantic.append(time.perf_counter() - started)
    return keyword, semantic


def brute_keyword(texts: list[str], keywords: list[str], top_k: int) -> list[int]:
    """The reference approach: a Python loop over every chunk, counting each keyword."""
    scores = []
    for i, text in enumerate(texts):
        low = text.lower()
        score = sum(low.count(k.lower()) * len(k) for k in keywords)
        if score > 0:
            scores.append((score, i))
    scores.sort(key=lambda s: (-s[0], s[1]))
    return [i for _, i in scores[:top_k]]


def brute_semantic(vectors: np.ndarray, owner: np.ndarray, query: np.ndarray, top_k: int) -> list[int]:
    """The reference approach: score every sentence, full argsort, walk down until k distinct chunks."""
    scores = vectors @ query
    chunks: list[int] = []
    for i in np.argsort(-scores):
        if owner[i] not in chunks:
            chunks.append(int(owner[i]))
            if len(chunks) == top_k:
                break
    return chunks


def embedded(index: Index) -> EmbeddedStore:
    """The index's embedded store: this benchmark reads its files and sentence arrays directly."""
    if not isinstance(index.store, EmbeddedStore):
        raise SystemExit("bench_index measures the embedded store; open a directory index, not a database URL")
    return index.store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets/2wikimultihopqa"))
    parser.add_argument("--scale", type=int, action="append", default=None)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "arag-bench")
    parser.add_argument("--dtype", default="i8", help="vector dtype of scaled copies")
    parser.add_argument("--write-only", action="store_true", help="only build the scaled copies, measure nothing")
    parser.add_argument("--ann", choices=["both", "off", "only"], default="both", help="which variants to run")
    parser.add_argument(
        "--probes", type=int, action="append", default=None, help="IVF lists to scan; repeat for a trade-off table"
    )
    args = parser.parse_args()
    scales = args.scale or [1, 10]
    args.work.mkdir(parents=True, exist_ok=True)
    base_dir = args.work / "base"
    if not _current(base_dir, load_embedder(IndexSettings().embedder).fingerprint):
        started = time.perf_counter()
        shutil.rmtree(base_dir, ignore_errors=True)
        report = build_index([args.data / "chunks.json"], base_dir, IndexSettings(threads=2), rebuild=True)
        elapsed = time.perf_counter() - started
        print(
            f"build: {report.sentences} sentences ({report.embedded} unique) in {elapsed:.1f}s = "
            f"{report.embedded / elapsed:.0f} sentences/s (chunking + embedding + writing)"
        )
    base = Index.open(base_dir)
    questions = json.loads((args.data / "questions.json").read_text())[: args.queries]
    # what an agent searches for: the question's entities (capitalized phrases without question words)
    keyword_queries = [question_entities(q["question"]) or q["question"].split()[:2] for q in questions]
    query_vectors = base.embedder.embed_documents([q["question"] for q in questions])
    rows = []
    breadth: list[tuple[int, int, float, float, float, float]] = []
    for scale in scales:
        for ann in {"both": (False, True), "off": (False,), "only": (True,)}[args.ann]:
            target = args.work / f"x{scale}{'-ann' if ann else ''}"
            if not _current(target, base.manifest.embedder["fingerprint"]):
                shutil.rmtree(target, ignore_errors=True)
                started = time.perf_counter()
                # in a child process, so that this process's peak RSS is that of opening and searching
                dtype = "f32" if scale == 1 and not ann else args.dtype
                child = multiprocessing.Process(
                    target=scaled_copy, args=(embedded(base).index_dir, target, scale, dtype, ann)
                )
                child.start()
                child.join()
                if child.exitcode != 0:
                    raise SystemExit(f"writing x{scale} ann={ann} failed (exit code {child.exitcode})")
                print(f"x{scale} ann={ann}: written in {time.perf_counter() - started:.1f}s")
            if args.write_only:
                continue
            probes = sorted(args.probes or [ivf.DEFAULT_PROBES])
            started = time.perf_counter()
            index = Index.open(target, probes=probes[-1] if ann else ivf.DEFAULT_PROBES)
            open_s = time.perf_counter() - started
            kw, sem = search_latencies(index, keyword_queries, query_vectors, exact=not ann)
            recall = content_recall = None
            if ann:
                exact_top = [
                    [h.chunk_id for h in index.semantic_search_vector(v, 10, exact=True)] for v in query_vectors
                ]
                for probe in probes:  # largest last: its figures go in the main table
                    embedded(index).probes = probe
                    recall, content_recall, p50, p95 = ann_quality(index, query_vectors, exact_top)
                    breadth.append((scale, probe, recall, content_recall, p50, p95))
            # brute force baselines in the same run, on the same data
            texts = [r.text for r in index.store.iter_chunks()]
            offsets = np.asarray(embedded(index).sentence_ranges())
            owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
            vectors = embedded(index).sentence_vectors(np.arange(index.store.n_sentences)) if scale <= 10 else None
            bkw, bsem = [], []
            for keywords, vector in list(zip(keyword_queries, query_vectors, strict=True))[:10]:
                t = time.perf_counter()
                brute_keyword(texts, keywords, 5)
                bkw.append(time.perf_counter() - t)
                if vectors is not None:
                    t = time.perf_counter()
                    brute_semantic(vectors, owner, vector, 5)
                    bsem.append(time.perf_counter() - t)
            del texts, vectors
            rows.append(
                {
                    "scale": scale,
                    "ann": ann,
                    "chunks": index.store.n_chunks,
                    "sentences": index.store.n_sentences,
                    "kw_p50": pct(kw, 50),
                    "kw_p95": pct(kw, 95),
                    "kw_brute_p50": pct(bkw, 50),
                    "sem_p50": pct(sem, 50),
                    "sem_p95": pct(sem, 95),
                    "sem_brute_p50": pct(bsem, 50) if bsem else float("nan"),
                    "recall@10": recall,
                    "content_recall@10": content_recall,
                    "open_ms": open_s * 1000,
                    "disk_mb": disk_size(target) / 1e6,
                    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                }
            )
            index.close()
    header = [
        "scale",
        "ann",
        "chunks",
        "sentences",
        "kw_p50",
        "kw_p95",
        "kw_brute_p50",
        "sem_p50",
        "sem_p95",
        "sem_brute_p50",
        "recall@10",
        "content_recall@10",
        "open_ms",
        "disk_mb",
        "peak_rss_mb",
    ]
    print_table(header, rows, "{:.1f}")
    if breadth:
        print("\n| scale | probes | recall@10 (chunk id) | recall@10 (same content) | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|")
        for scale, probe, recall, content, p50, p95 in breadth:
            print(f"| {scale} | {probe} | {recall:.3f} | {content:.3f} | {p50:.1f} | {p95:.1f} |")


def _current(index_dir: Path, fingerprint: str) -> bool:
    """Whether ``index_dir`` holds an index of this a-rag's format built with ``fingerprint``."""
    try:
        manifest = json.loads((index_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return manifest.get("format_version") == FORMAT_VERSION and manifest["embedder"].get("fingerprint") == fingerprint


def ann_quality(
    index: Index, query_vectors: np.ndarray, exact_top: list[list[str]]
) -> tuple[float, float, float, float]:
    """Recall@10 of approximate search against exact (by chunk id, and by content: copies of one chunk are
    near-ties), and its p50/p95 latency in ms (after one untimed pass)."""
    for vector in query_vectors:
        index.semantic_search_vector(vector, 10, exact=False)
    hits = content_hits = total = 0
    times = []
    for vector, exact in zip(query_vectors, exact_top, strict=True):
        started = time.perf_counter()
        approx = [h.chunk_id for h in index.semantic_search_vector(vector, 10, exact=False)]
        times.append(time.perf_counter() - started)
        hits += len(set(exact) & set(approx))
        contents = {c.rsplit("_", 1)[0] for c in approx}
        content_hits += sum(1 for c in exact if c.rsplit("_", 1)[0] in contents)
        total += len(exact)
    return hits / total, content_hits / total, pct(times, 50), pct(times, 95)


if __name__ == "__main__":
    main()
