"""The ``Index``: opened once, shared by every tool. Exact keyword and semantic search, chunk reads.

Formulas (paper §3.2):

* keyword:  score(c) = Σ_k count(lower(k), lower(c)) · len(k), counting non-overlapping occurrences
  (Python's ``str.count``); ties broken by document order (chunk row ascending).
* semantic: score(c) = max over sentences s of c of cos(q, s); ties broken by document order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arag.embedding import Embedder, load_embedder
from arag.errors import EmbedderError
from arag.store import ChunkRecord, Store, ivf
from arag.store.embedded import EmbeddedStore

SEMANTIC_SNIPPETS = 3


@dataclass(slots=True)
class SearchHit:
    chunk_id: str
    score: float
    snippets: list[str]
    row: int = field(repr=False, default=-1)

    def to_dict(self) -> dict[str, object]:
        return {"chunk_id": self.chunk_id, "score": self.score, "snippets": self.snippets}


def normalize_keywords(keywords: list[str]) -> list[str]:
    """Strip, drop empties and case-insensitive duplicates (a keyword counted twice would double its weight)."""
    seen: set[str] = set()
    out: list[str] = []
    for keyword in keywords:
        stripped = keyword.strip()
        if stripped and stripped.lower() not in seen:
            seen.add(stripped.lower())
            out.append(stripped)
    return out


class Index:
    """A read-only handle on an index directory. Thread-safe for concurrent searches."""

    def __init__(self, store: Store, embedder: Embedder | None = None, threads: int = 2) -> None:
        self.store = store
        self._embedder = embedder
        self.threads = threads

    @classmethod
    def open(
        cls,
        index_dir: str | Path,
        embedder: Embedder | None = None,
        threads: int = 2,
        probes: int = ivf.DEFAULT_PROBES,
    ) -> Index:
        return cls(EmbeddedStore(Path(index_dir), threads=threads, probes=probes), embedder, threads)

    @property
    def manifest(self):
        return self.store.manifest

    @property
    def embedder(self) -> Embedder:
        """The query embedder, loaded on first use and checked against the one that built the index."""
        if self._embedder is None:
            spec = self.store.manifest.embedder["name"]
            self._embedder = load_embedder(spec, threads=self.threads)
        expected = self.store.manifest.embedder.get("fingerprint")
        if expected and self._embedder.fingerprint != expected:
            raise EmbedderError(
                f"query embedder {self._embedder.fingerprint} differs from the one that built the index "
                f"({expected}); re-index with the current model or install the original weights"
            )
        return self._embedder

    # ------------------------------------------------------------------ keyword
    def keyword_search(self, keywords: list[str], top_k: int = 5) -> list[SearchHit]:
        keywords = normalize_keywords(keywords)
        if not keywords or top_k <= 0:
            return []
        lowered = [k.lower() for k in keywords]
        top = self.store.keyword_scores(keywords, top_k)
        records = self.store.chunks(row for row, _ in top)
        return [
            SearchHit(records[row].chunk_id, float(score), self._keyword_snippets(records[row], lowered), row)
            for row, score in top
        ]

    def _keyword_snippets(self, record: ChunkRecord, lowered: list[str]) -> list[str]:
        out = []
        for start, end in self.store.sentence_spans(record.row):
            sentence = record.text[start:end]
            low = sentence.lower()
            if any(k in low for k in lowered):
                out.append(sentence.strip())
        return out

    # ------------------------------------------------------------------ semantic
    def semantic_search(self, query: str, top_k: int = 5, exact: bool = True) -> list[SearchHit]:
        if not query.strip() or top_k <= 0 or self.store.n_sentences == 0:
            return []
        vector = self.embedder.embed_query(query)
        return self.semantic_search_vector(vector, top_k, exact)

    def semantic_search_vector(self, vector: np.ndarray, top_k: int = 5, exact: bool = True) -> list[SearchHit]:
        offsets = np.asarray(self.store.sentence_ranges())
        scores = self.store.all_sentence_scores(vector) if exact else None
        if scores is not None:
            best = self._chunk_best_from_all(scores, offsets)
            order = np.lexsort((np.arange(len(best)), -best))
            rows = [int(r) for r in order[:top_k] if np.isfinite(best[r])]
            ranked = [(r, float(best[r])) for r in rows]
        else:
            ranked = self._chunk_best_from_top(vector, offsets, top_k, exact)
        records = self.store.chunks(r for r, _ in ranked)
        hits = []
        for row, score in ranked:
            begin, end = int(offsets[row]), int(offsets[row + 1])
            sentence_scores = (
                scores[begin:end]
                if scores is not None
                else self.store.sentence_vectors(np.arange(begin, end)) @ vector.astype(np.float32)
            )
            hits.append(
                SearchHit(records[row].chunk_id, score, self._semantic_snippets(records[row], sentence_scores), row)
            )
        return hits

    @staticmethod
    def _chunk_best_from_all(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        starts = offsets[:-1]
        nonempty = offsets[1:] > starts
        best = np.full(len(starts), -np.inf, dtype=np.float32)
        if nonempty.any():
            # reduceat over starts of non-empty chunks only: an empty chunk would take its neighbour's value
            best[nonempty] = np.maximum.reduceat(scores, starts[nonempty])
        return best

    def _chunk_best_from_top(
        self, vector: np.ndarray, offsets: np.ndarray, top_k: int, exact: bool
    ) -> list[tuple[int, float]]:
        """Top-k chunks from the m best sentences; m grows until k distinct chunks are covered.

        If the m best sentences cover k distinct chunks, those chunks' maxima are the k largest
        chunk scores, so the result is exact whenever the sentence search is.
        """
        n = self.store.n_sentences
        m = min(n, max(64, 8 * top_k))
        while True:
            sentence_rows, sentence_scores = self.store.top_sentences(vector, m, exact)
            chunk_rows = np.searchsorted(offsets, sentence_rows, side="right") - 1
            best: dict[int, float] = {}
            for chunk, score in zip(chunk_rows.tolist(), sentence_scores.tolist(), strict=True):
                if chunk not in best or score > best[chunk]:
                    best[chunk] = score
            if len(best) >= top_k or m >= n:
                break
            m = min(n, m * 4)
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:top_k]

    def _semantic_snippets(self, record: ChunkRecord, sentence_scores: np.ndarray) -> list[str]:
        spans = self.store.sentence_spans(record.row)
        top = np.lexsort((np.arange(len(sentence_scores)), -np.asarray(sentence_scores)))[:SEMANTIC_SNIPPETS]
        return [record.text[spans[i][0] : spans[i][1]].strip() for i in sorted(int(t) for t in top)]

    # ------------------------------------------------------------------ read
    def read(self, chunk_ids: list[str]) -> tuple[list[ChunkRecord], list[str]]:
        """Records of the known ids (in the order asked) and the ids that were not found."""
        rows = self.store.rows_for_ids(chunk_ids)
        records = self.store.chunks(rows.values())
        found = [records[rows[c]] for c in dict.fromkeys(chunk_ids) if c in rows]
        missing = [c for c in dict.fromkeys(chunk_ids) if c not in rows]
        return found, missing

    def close(self) -> None:
        self.store.close()
