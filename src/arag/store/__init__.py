"""Storage behind a small interface.

:class:`Store` is everything the rest of a-rag may know about where chunks, sentences and vectors
live. The embedded implementation (SQLite + NumPy files in one directory) is the default; a
PostgreSQL + pgvector backend implements the same protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

FORMAT_VERSION = 3


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One stored chunk. ``row`` orders chunks in document order, and one document's chunks have consecutive
    rows (the embedded store numbers them 0..n_chunks-1; PostgreSQL leaves gaps between documents so a
    document can be replaced without renumbering the others). ``spans``, when the store returns them with
    the text, are the sentence spans read in the same statement."""

    row: int
    chunk_id: str
    doc_id: str
    text: str
    n_tokens: int
    prev_id: str | None
    next_id: str | None
    spans: tuple[tuple[int, int], ...] | None = None


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

    def keyword_chunk_count(self, keyword: str, limit: int) -> int:
        """How many chunks contain ``keyword`` (case-insensitive substring), counted up to ``limit``: enough to
        tell a word found everywhere from a name without counting every match."""
        ...

    def sentence_spans(self, row: int) -> list[tuple[int, int]]:
        """Character spans of a chunk's sentences within its text."""
        ...

    def semantic_chunks(self, query: np.ndarray, top_k: int, exact: bool) -> list[SemanticMatch]:
        """The top_k chunks by their best sentence's cosine with ``query`` (score descending, then row
        ascending), each with the cosines of all its sentences in order; approximate unless ``exact``."""
        ...

    def verify(self) -> list[str]:
        """Problems found by a full consistency check (empty when the index is sound)."""
        ...

    def close(self) -> None: ...


@dataclass(slots=True)
class SemanticMatch:
    row: int
    score: float
    sentence_scores: np.ndarray


def parse_manifest(data: Any, source: str, index: str) -> Manifest:
    """A manifest read from ``source`` (a file or a table), validated; ``index`` names the index in messages."""
    from pydantic import TypeAdapter, ValidationError

    from arag.errors import IndexFormatError

    try:
        manifest = TypeAdapter(Manifest).validate_python(data)
    except (ValidationError, ValueError, RecursionError) as exc:
        problem = _validation_summary(exc) if isinstance(exc, ValidationError) else str(exc)
        raise IndexFormatError(
            f"{source} is not a valid a-rag manifest ({problem}); re-index the sources with --rebuild"
        ) from None
    if not isinstance(manifest.embedder.get("name"), str) or manifest.generation < 1:
        raise IndexFormatError(
            f"{source} is not a valid a-rag manifest (no embedder name or no generation); "
            "re-index the sources with --rebuild"
        )
    # version 2 differs only in the approximate-search files (HNSW then): flat version-2 indexes still read
    if manifest.format_version != FORMAT_VERSION and not (manifest.format_version == 2 and not manifest.ann):
        raise IndexFormatError(
            f"{index} has format version {manifest.format_version}; this a-rag reads "
            f"version {FORMAT_VERSION} (re-index the sources with --rebuild)"
        )
    return manifest


def _validation_summary(exc: Any) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "manifest"
    return f"{where}: {first['msg']}" + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else "")


def best_per_chunk(chunk_rows: Iterable[int], scores: Iterable[float]) -> dict[int, float]:
    """Each chunk's best sentence score among the given (chunk row, sentence score) pairs."""
    best: dict[int, float] = {}
    for chunk, score in zip(chunk_rows, scores, strict=True):
        if chunk not in best or score > best[chunk]:
            best[chunk] = score
    return best


def is_database_url(location: str | Path) -> bool:
    """Whether an index location names a PostgreSQL database rather than a directory."""
    return str(location).startswith(("postgresql://", "postgres://"))


def display_location(location: str | Path) -> str:
    """An index location fit to print: a database URL loses its password (in the user part or a parameter)."""
    text = str(location)
    if not is_database_url(text):
        return text
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("password", "sslpassword")]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/"), ""))


def open_store(
    location: str | Path,
    threads: int = 2,
    probes: int | None = None,
    ef_search: int | None = None,
    statement_timeout_s: float | None = None,
) -> Store:
    """The one place that decides which backend serves an index: a ``postgresql://`` URL is served by
    PostgreSQL + pgvector, anything else is an embedded index directory."""
    if is_database_url(location):
        from arag.store.postgres import STATEMENT_TIMEOUT_S, PgStore

        return PgStore(
            str(location),
            threads=threads,
            ef_search=ef_search,
            statement_timeout_s=statement_timeout_s or STATEMENT_TIMEOUT_S,
        )
    from arag.store import ivf
    from arag.store.embedded import EmbeddedStore

    return EmbeddedStore(Path(location), threads=threads, probes=probes or ivf.DEFAULT_PROBES)
