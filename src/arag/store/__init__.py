"""Storage behind a small interface.

:class:`Store` is everything the rest of a-rag may know about where chunks, sentences and vectors
live. The embedded implementation (SQLite + NumPy files in one directory) is the default; a
PostgreSQL + pgvector backend implements the same protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

FORMAT_VERSION = 3


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One stored chunk. ``row`` is its dense position in document order (0..n_chunks-1)."""

    row: int
    chunk_id: str
    doc_id: str
    text: str
    n_tokens: int
    prev_id: str | None
    next_id: str | None


@dataclass(slots=True)
class FileDigest:
    size: int
    sha256: str


@dataclass(slots=True)
class Manifest:
    format_version: int
    generation: int
    embedder: dict[str, Any]
    chunker: dict[str, Any]
    vector_dtype: str
    ann: bool
    counts: dict[str, int]
    created_at: str
    arag_version: str
    extra: dict[str, Any] = field(default_factory=dict)
    # size and sha256 of every file of the generation, by path relative to the index directory
    files: dict[str, FileDigest] = field(default_factory=dict)


@dataclass(slots=True)
class DocumentRecord:
    doc_id: str
    source: str
    title: str | None
    content_hash: str


class Store(Protocol):
    """Read side of an index. Chunk rows are dense and in document order; sentence rows are grouped by chunk."""

    manifest: Manifest

    @property
    def n_chunks(self) -> int: ...

    @property
    def n_sentences(self) -> int: ...

    def rows_for_ids(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        """Map known chunk ids to rows; unknown ids are left out."""
        ...

    def chunks(self, rows: Iterable[int]) -> dict[int, ChunkRecord]: ...

    def iter_chunks(self, batch: int = 1000) -> Iterator[ChunkRecord]:
        """Every chunk in document order."""
        ...

    def documents(self) -> list[DocumentRecord]: ...

    def doc_chunk_rows(self) -> dict[str, tuple[int, int]]:
        """For each document id, its chunk row range [begin, end)."""
        ...

    def doc_chunk_range(self, doc_id: str) -> tuple[int, int]:
        """One document's chunk row range [begin, end); (0, 0) for an unknown id."""
        ...

    def keyword_scores(self, keywords: list[str], top_k: int) -> list[tuple[int, int]]:
        """``(row, score)`` of the top_k chunks by Σ_k count(lower(k), lower(chunk)) · len(k), score > 0,
        ordered by score descending then row ascending. ``keywords`` are stripped, non-empty and distinct."""
        ...

    def sentence_ranges(self) -> np.ndarray:
        """``offsets`` of length n_chunks+1: chunk r owns sentence rows offsets[r]:offsets[r+1]."""
        ...

    def sentence_spans(self, row: int) -> list[tuple[int, int]]:
        """Character spans of a chunk's sentences within its text."""
        ...

    def sentence_vectors(self, sentence_rows: np.ndarray) -> np.ndarray:
        """float32 vectors of the given sentence rows."""
        ...

    def all_sentence_scores(self, query: np.ndarray) -> np.ndarray | None:
        """Cosine of the query with every sentence (float32), or None if the backend only does top-m."""
        ...

    def top_sentences(self, query: np.ndarray, m: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosines of the m best sentences, best first (approximate unless ``exact``)."""
        ...

    def close(self) -> None: ...
