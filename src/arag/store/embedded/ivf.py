"""Approximate semantic search: an inverted file (IVF) over the stored sentence vectors.

k-means (faiss) splits the vectors into lists around centroids; the store keeps its vectors *sorted by
list*, so probing a list is one contiguous slice of the memory-mapped matrix. A query scores the
centroids, scans the ``probes`` best lists with the same arithmetic as exact search, and returns the
best sentences among them: a found sentence always has its exact score, so only sentences in
unprobed lists can be missed.

Chosen over HNSW (usearch, the previous backend) after measuring both on the x100 benchmark copy
(docs/benchmarks.md): the graph lost near-duplicate neighbours (recall@10 by chunk id 0.65 at 14 ms), took 21
minutes to build and a quarter more disk; the inverted file probes whole neighbourhoods (0.96 at 9 ms),
builds in ~2 minutes more than the flat index and adds only its small maps.
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_PROBES = 128
LISTS_PER_SQRT_N = 4.0
TRAINING_POINTS_PER_LIST = 40  # faiss warns below 39
_ASSIGN_BLOCK = 65536


def list_count(n_vectors: int) -> int:
    """About 4 sqrt(n) lists (6,227 at 2.4M sentences), each with at least ~39 training points."""
    return max(1, min(n_vectors // 39, round(LISTS_PER_SQRT_N * math.sqrt(n_vectors))))


def build(stored: np.ndarray, threads: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train centroids on a sample of ``stored`` (float32, float16 or int8 rows) and assign every row.

    Returns (centroids [lists, dims] float32, order: the row at each stored position, offsets [lists+1]:
    where each list starts in that order).
    """
    n_vectors = len(stored)
    lists = list_count(n_vectors)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n_vectors, min(n_vectors, TRAINING_POINTS_PER_LIST * lists), replace=False))
    if lists == 1:  # too few vectors to cluster: one list, scanned whole
        mean = _unit(stored[sample]).sum(axis=0, keepdims=True) if n_vectors else np.zeros((1, stored.shape[1]))
        centroids = _unit(mean)
    else:
        import faiss

        faiss.omp_set_num_threads(max(1, threads))
        kmeans = faiss.Kmeans(stored.shape[1], lists, niter=15, seed=seed, spherical=True, verbose=False)
        kmeans.train(_unit(stored[sample]))
        centroids = np.ascontiguousarray(kmeans.centroids, dtype=np.float32)
    assignment = np.empty(n_vectors, dtype=np.int64)
    for begin in range(0, n_vectors, _ASSIGN_BLOCK):
        block = _unit(stored[begin : begin + _ASSIGN_BLOCK])
        assignment[begin : begin + len(block)] = np.argmax(block @ centroids.T, axis=1)
    order = np.argsort(assignment, kind="stable")
    offsets = np.zeros(lists + 1, dtype=np.int64)
    np.cumsum(np.bincount(assignment, minlength=lists), out=offsets[1:])
    return centroids, order, offsets


def _unit(rows: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(rows, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def probed_ranges(centroids: np.ndarray, offsets: np.ndarray, query: np.ndarray, probes: int) -> list[tuple[int, int]]:
    """Stored-position ranges of the ``probes`` lists whose centroids are closest to ``query``, in storage
    order (sequential reads of the memory map)."""
    scores = centroids @ query.astype(np.float32)
    probes = max(1, min(probes, len(scores)))
    best = np.argpartition(-scores, probes - 1)[:probes] if probes < len(scores) else np.arange(len(scores))
    return [(int(offsets[i]), int(offsets[i + 1])) for i in np.sort(best) if offsets[i + 1] > offsets[i]]
