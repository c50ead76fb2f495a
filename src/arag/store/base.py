"""What every store shares: the records, the manifest, and the :class:`Store` protocol (the read side)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from arag.store.tabular import TableAnswer, TableInfo, TableQuery

FORMAT_VERSION = 4
# version 3 had no document metadata and no chunk locations: such an index is read as it is (filters match none of
# its documents, citations resolve to the chunk only)
METADATA_SINCE = 4


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
    location: dict[str, Any] | None = None  # offsets in the source, pages, heading path (None: not recorded)


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
    # path, type, title, mtime and what the file says about itself (corpus.readers); None: indexed before a-rag
    # recorded metadata (format version 3)
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class PreparedChunk:
    """A chunk ready to store: its id, position in its document, text, token count and sentence spans."""

    chunk_id: str
    ordinal: int
    text: str
    n_tokens: int
    spans: list[tuple[int, int]]
    location: dict[str, Any] | None = None  # where it comes from (corpus.readers.Structure.locate)


@dataclass(slots=True)
class PendingDocument:
    """A new or changed document to write: its chunks, and one hash and one vector per sentence (in chunk, then
    sentence order)."""

    record: DocumentRecord
    chunks: list[PreparedChunk]
    hashes: np.ndarray  # uint64: the sentence text's hash, by which vectors are reused
    vectors: np.ndarray  # float32, L2-normalised


@dataclass(slots=True)
class KeptDocument:
    """A stored document that stays as it is."""

    record: DocumentRecord


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

    def keyword_scores(self, keywords: list[str], top_k: int, scope: Scope | None = None) -> list[tuple[int, int]]:
        """``(row, score)`` of the top_k chunks by Σ_k count(lower(k), lower(chunk)) · len(k), score > 0,
        ordered by score descending then row ascending; only chunks in ``scope`` when one is given.
        ``keywords`` are stripped, non-empty and distinct."""
        ...

    def keyword_chunk_count(self, keyword: str, limit: int) -> int:
        """How many chunks contain ``keyword`` (case-insensitive substring), counted up to ``limit``: enough to
        tell a word found everywhere from a name without counting every match."""
        ...

    def sentence_spans(self, row: int) -> list[tuple[int, int]]:
        """Character spans of a chunk's sentences within its text."""
        ...

    def sentence_scores(self, query: np.ndarray, row: int) -> np.ndarray:
        """The cosine of each of a chunk's sentences (in order) with ``query``, from the stored vectors."""
        ...

    def semantic_chunks(
        self, query: np.ndarray, top_k: int, exact: bool, scope: Scope | None = None
    ) -> list[SemanticMatch]:
        """The top_k chunks by their best sentence's cosine with ``query`` (score descending, then row
        ascending), each with the cosines of all its sentences in order; approximate unless ``exact`` (a search
        in a ``scope`` is always exact)."""
        ...

    def table_catalog(self) -> list[TableInfo] | None:
        """The tables found in the chunks, in document order (None: the index was written before a-rag kept
        tables as data)."""
        ...

    def table_answer(self, table_id: str, query: TableQuery) -> TableAnswer:
        """A checked query's result over one table, read-only and bounded in rows and time
        (:class:`~arag.store.tabular.TableQueryError` for an unknown id or a query stopped at the time limit)."""
        ...

    def verify(self) -> list[str]:
        """Problems found by a full consistency check (empty when the index is sound)."""
        ...

    def consistent(self) -> AbstractContextManager[None]:
        """A block in which this thread's reads all see one committed state of the index (PostgreSQL: one
        read-only transaction; the embedded store: always so). Held for one operation, not for a question."""
        ...

    def reading_as(self, groups: frozenset[str] | None) -> AbstractContextManager[None]:
        """A block whose reads are a reader of ``groups`` (None: every document). a-rag filters above the store
        for every store; PostgreSQL's row-level security holds a serving role to them as well."""
        ...

    def latest_generation(self) -> int:
        """The index's generation now: newer than ``manifest.generation`` once another one was committed since
        this store was opened (it keeps reading its own)."""
        ...

    def close(self) -> None: ...


class IndexWriter(Protocol):
    """Write side of an index: one ingest, all or nothing. Opened by :func:`arag.store.open_writer`; the build
    pipeline (arag.corpus.build) drives it the same way for every store: check :attr:`manifest`, read
    :meth:`documents`, :meth:`begin`, :meth:`remove` what went away, :meth:`write` the documents in order (kept and
    pending ones), :meth:`commit`; :meth:`close` always (it abandons an ingest that was not committed)."""

    where: str  # the index as messages name it
    manifest: Manifest | None  # the index's manifest before this ingest; None for a new (or --rebuild) index
    # sentences embedded and written per batch (None: all at once); bounds the memory of a large ingest
    batch_sentences: int | None

    def documents(self) -> list[DocumentRecord]:
        """The stored documents, in document order (none for a new index)."""
        ...

    def begin(self, dims: int) -> None:
        """Start writing vectors of ``dims`` dimensions (after the settings were checked against the manifest)."""
        ...

    def chunk_owners(self, chunk_ids: list[str]) -> dict[str, str]:
        """For each of these chunk ids that a stored document holds, that document's id."""
        ...

    def known_vectors(self, hashes: list[int]) -> dict[int, np.ndarray]:
        """The stored float32 vectors of the sentences with these text hashes (those the index has)."""
        ...

    def remove(self, doc_ids: list[str]) -> None:
        """Leave these stored documents out of the index."""
        ...

    def write(self, documents: list[PendingDocument | KeptDocument]) -> int:
        """Write these documents, in document order after those written before; a kept document stays as it is.
        Returns the number of sentences written with the vectors they had (a store that copies kept documents
        counts theirs)."""
        ...

    def commit(self, embedder: dict[str, Any]) -> dict[str, int]:
        """Make the ingest visible at once, with a manifest that records ``embedder``; returns the index's counts
        (documents, chunks, sentences)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Scope:
    """The documents a search may return (the matches of a filter): their ids, and their chunks' row ranges
    ``[begin, end)``. Each store restricts its search by whichever it can use."""

    doc_ids: frozenset[str]
    rows: tuple[tuple[int, int], ...]

    def mask(self, n_chunks: int) -> np.ndarray:
        """A boolean per chunk row: True where the chunk is in scope."""
        allowed = np.zeros(n_chunks, dtype=bool)
        for begin, end in self.rows:
            allowed[begin:end] = True
        return allowed


@dataclass(slots=True)
class SemanticMatch:
    row: int
    score: float
    sentence_scores: np.ndarray


def new_manifest(
    generation: int,
    embedder: dict[str, Any],
    chunker: dict[str, Any],
    vector_dtype: str,
    ann: bool,
    counts: dict[str, int],
    extra: dict[str, Any] | None = None,
    files: dict[str, FileDigest] | None = None,
) -> Manifest:
    """The manifest of a generation written now, by this version of a-rag."""
    import datetime

    from arag.version import __version__

    return Manifest(
        format_version=FORMAT_VERSION,
        generation=generation,
        embedder=embedder,
        chunker=chunker,
        vector_dtype=vector_dtype,
        ann=ann,
        counts=counts,
        created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        arag_version=__version__,
        extra=extra or {},
        files=files or {},
    )


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
    # version 3 lacks only metadata and locations; version 2 also differs in the approximate-search files (HNSW
    # then): flat version-2 indexes still read
    readable = manifest.format_version in (FORMAT_VERSION, 3) or (manifest.format_version == 2 and not manifest.ann)
    if not readable:
        raise IndexFormatError(
            f"{index} has format version {manifest.format_version}; this a-rag reads "
            f"versions 3 and {FORMAT_VERSION} (re-index the sources with --rebuild)"
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
