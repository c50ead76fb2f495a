"""The embedded store: one index directory of SQLite + NumPy files, written by generations.

Layout::

    DIR/manifest.json      the current generation and what built it (replaced atomically)
    DIR/gen-000007/        one complete, immutable generation
        chunks.sqlite      documents, chunks, and a trigram FTS5 index of the lower-cased text
        sent_offsets.npy   int64[n_chunks+1]: the sentence rows of each chunk
        sent_spans.npy     int32[n_sentences, 2]: character span of each sentence in its chunk
        sent_hash.npy      uint64[n_sentences]: hash of the sentence text (embedding reuse)
        vectors.npy        [n_sentences, dims] in f32/f16/i8, in sentence order, or grouped by IVF list
        vector_norms.npy   float32 norms of f16/i8 vectors (same order as vectors.npy)
        ivf_*.npy          when ann is on: centroids, list offsets, and the row <-> position maps
        words.txt, word_*.npy   the word index of the lower-cased texts (arag/store/words.py)
        tables.sqlite      the tables found in the chunks, as typed tables (arag/store/embedded/tables.py)

A new generation is written to a temporary folder, fsynced, renamed into place, and only then
does manifest.json (temp file + rename) point at it. A crash at any point leaves the previous
generation as the current one. Nothing is pickled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from arag.errors import IndexFormatError, IndexNotFoundError
from arag.files import sha256_file
from arag.store.base import (
    METADATA_SINCE,
    ChunkRecord,
    DocumentRecord,
    FileDigest,
    KeptDocument,
    Manifest,
    PendingDocument,
    PreparedChunk,
    Scope,
    SemanticMatch,
    best_per_chunk,
    new_manifest,
    parse_manifest,
)
from arag.store.embedded import ivf
from arag.store.embedded.tables import TABLES_DATABASE, TablesFile, TablesWriter
from arag.store.tabular import TableAnswer, TableInfo, TableQuery, TableQueryError, tables_in
from arag.store.words import FILES as WORD_FILES
from arag.store.words import LazyWordIndex, WordIndex, WordIndexBuilder, is_word, top_scores

if TYPE_CHECKING:
    from arag.settings import IndexSettings

MANIFEST = "manifest.json"
WRITER_LOCK = ".writer.lock"
DATABASE = "chunks.sqlite"  # also the file readers hold a shared flock on, so no writer removes their generation
I8_SCALE = 127.0
_SCHEMA = """
CREATE TABLE docs (doc_row INTEGER PRIMARY KEY, doc_id TEXT UNIQUE NOT NULL, source TEXT NOT NULL,
                   title TEXT, content_hash TEXT NOT NULL, metadata TEXT);  -- metadata: JSON
CREATE TABLE chunks (row INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, doc_row INTEGER NOT NULL,
                     ordinal INTEGER NOT NULL, n_tokens INTEGER NOT NULL, text TEXT NOT NULL,
                     text_lower TEXT,  -- only where SQLite's ASCII lower() differs from str.lower()
                     location TEXT);  -- JSON: offsets in the source, pages, heading path
CREATE VIRTUAL TABLE chunk_fts USING fts5(text_lower, content='', tokenize='trigram case_sensitive 1',
                                          detail=none);
CREATE TABLE trigram_df (trigram TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""
KEYWORD_TRIGRAMS = 4  # the rarest few trigrams select almost as well as all of them, at a fraction of the cost


def read_manifest(index_dir: Path) -> Manifest:
    path = index_dir / MANIFEST
    if not path.is_file():
        raise IndexNotFoundError(f"no index at {index_dir} (run: arag index SOURCE... --index {index_dir})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise IndexFormatError(
            f"{path} is not a valid a-rag manifest ({exc}); re-index the sources with --rebuild"
        ) from None
    return parse_manifest(data, str(path), f"index {index_dir}")


def _acquire_generation(index_dir: Path) -> tuple[Manifest, Path, int]:
    """The current generation, with a shared lock on it that keeps writers from removing it.

    A writer may commit a newer generation and try to remove this one at any moment: it removes only
    generations it can lock exclusively, renaming them away while it holds that lock, so a reader that
    locked its file and still finds it in place has a generation that stays until it lets go."""
    for _attempt in range(100):
        manifest = read_manifest(index_dir)
        path = _generation_dir(index_dir, manifest.generation)
        try:
            fd = os.open(path / DATABASE, os.O_RDONLY)
        except FileNotFoundError:
            if not path.is_dir() and _current_generation(index_dir) == manifest.generation:
                raise IndexFormatError(
                    f"index {index_dir} is damaged: {path.name} is missing; re-index the sources with --rebuild"
                ) from None
            if path.is_dir():
                raise IndexFormatError(
                    f"index {index_dir} is damaged: {path.name}/{DATABASE} is missing; "
                    "re-index the sources with --rebuild"
                ) from None
            continue  # replaced by a newer generation between reading the manifest and opening it
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            if os.stat(path / DATABASE).st_ino == os.fstat(fd).st_ino:
                return manifest, path, fd
        except (BlockingIOError, FileNotFoundError):
            pass  # a writer is removing this generation: read the manifest again
        os.close(fd)
        time.sleep(0.005)
    raise IndexFormatError(f"index {index_dir} kept changing while it was opened; try again")


def _current_generation(index_dir: Path) -> int:
    try:
        return int(json.loads((index_dir / MANIFEST).read_text(encoding="utf-8"))["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _generation_dir(index_dir: Path, generation: int) -> Path:
    return index_dir / f"gen-{generation:06d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def quantize(vectors: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "f32":
        return vectors.astype(np.float32, copy=False)
    if dtype == "f16":
        return vectors.astype(np.float16)
    return np.clip(np.rint(vectors * I8_SCALE), -127, 127).astype(np.int8)


def dequantize(vectors: np.ndarray) -> np.ndarray:
    out = vectors.astype(np.float32)
    if vectors.dtype == np.int8:
        norms = np.linalg.norm(out, axis=-1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
    return out


class EmbeddedStore:
    """Read side of the embedded store. Opening is cheap: arrays are memory-mapped."""

    def __init__(self, index_dir: Path, threads: int = 2, probes: int = ivf.DEFAULT_PROBES) -> None:
        self.index_dir = Path(index_dir)
        # held for this reader's whole life: the generation it reads is never removed under it
        self._lock_fd: int | None = None
        self.manifest, self.path, self._lock_fd = _acquire_generation(self.index_dir)
        self.threads = threads
        self.probes = probes
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._executor: ThreadPoolExecutor | None = None
        self._has_trigram_df: bool | None = None
        self._words = LazyWordIndex(self._load_words)
        self._norm_cache: np.ndarray | None = None
        self._ivf: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._tables: TablesFile | None = None
        try:
            self._check_sizes()
            self._offsets = self._array("sent_offsets.npy")
            self._spans = self._array("sent_spans.npy")
            self._vectors = self._array("vectors.npy")
            if self.manifest.ann:
                # centroids, list offsets, row of each stored position, stored position of each row
                self._ivf = (
                    np.array(self._array("ivf_centroids.npy")),
                    np.array(self._array("ivf_offsets.npy")),
                    self._array("ivf_order.npy"),
                    self._array("ivf_positions.npy"),
                )
            self._n_chunks = len(self._offsets) - 1
            self._check_shapes()
            with self._db_errors():
                last = self._db.execute("SELECT max(row) FROM chunks").fetchone()[0]
            if (last if last is not None else -1) != self._n_chunks - 1:
                held = 0 if last is None else last + 1
                raise self._damaged(DATABASE, f"it holds {held} chunks, not {self._n_chunks}")
        except BaseException:
            self.close()
            raise

    def _damaged(self, name: str, detail: str) -> IndexFormatError:
        return IndexFormatError(
            f"index {self.index_dir} is damaged: {self.path.name}/{name}: {detail}; "
            "re-index the sources with --rebuild (arag info --verify checks every file)"
        )

    def _check_sizes(self) -> None:
        """Cheap checks on open: every recorded file exists with its recorded size (hashes: :meth:`verify`)."""
        for relative, digest in self.manifest.files.items():
            path = self.index_dir / relative
            try:
                size = path.stat().st_size
            except OSError:
                raise self._damaged(Path(relative).name, "the file is missing") from None
            if size != digest.size:
                raise self._damaged(Path(relative).name, f"{size} bytes, expected {digest.size}")

    def _array(self, name: str) -> np.ndarray:
        try:
            return _mapped(self.path / name)
        except FileNotFoundError:
            raise self._damaged(name, "the file is missing") from None
        except Exception as exc:  # np.load's header parser raises ValueError, SyntaxError, TokenError, EOFError...
            raise self._damaged(name, f"not a readable NumPy array ({' '.join(str(exc).split())[:200]})") from None

    def _load_words(self) -> WordIndex | None:
        """The word index (None for a generation written before it), checked as the other arrays are on open."""
        path = self.path / "words.txt"
        if not path.exists() and "words.txt" not in {Path(f).name for f in self.manifest.files}:
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise self._damaged("words.txt", "the file is missing") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise self._damaged("words.txt", f"not readable as UTF-8 ({exc})") from None
        vocabulary = text.split("\n") if text else []
        ptr, rows, counts = (self._array(name) for name in WORD_FILES[1:])
        problem = WordIndex.problem(len(vocabulary), self._n_chunks, ptr, rows, counts)
        if problem:
            name, detail = problem.split(": ", 1)
            raise self._damaged(name, detail)
        return WordIndex(vocabulary, ptr, rows, counts)

    def _check_shapes(self) -> None:
        counts = self.manifest.counts
        offsets, spans, vectors = self._offsets, self._spans, self._vectors
        if offsets.ndim != 1 or len(offsets) < 1 or offsets.dtype.kind not in "iu":
            raise self._damaged("sent_offsets.npy", "wrong shape or type")
        n_sentences = int(offsets[-1])
        if "chunks" in counts and len(offsets) - 1 != counts["chunks"]:
            raise self._damaged("sent_offsets.npy", f"{len(offsets) - 1} chunks, the manifest says {counts['chunks']}")
        if int(offsets[0]) != 0 or ("sentences" in counts and n_sentences != counts["sentences"]):
            raise self._damaged("sent_offsets.npy", "sentence offsets do not match the manifest")
        if len(offsets) > 1 and bool((np.diff(offsets) < 0).any()):
            raise self._damaged("sent_offsets.npy", "sentence offsets are not in order")
        if spans.ndim != 2 or spans.shape != (n_sentences, 2):
            raise self._damaged("sent_spans.npy", f"shape {spans.shape}, expected ({n_sentences}, 2)")
        dims = self.manifest.embedder.get("dims")
        expected_dtype = {"f32": np.float32, "f16": np.float16, "i8": np.int8}.get(self.manifest.vector_dtype)
        if vectors.ndim != 2 or len(vectors) != n_sentences or (isinstance(dims, int) and vectors.shape[1] != dims):
            raise self._damaged("vectors.npy", f"shape {vectors.shape}, expected ({n_sentences}, {dims})")
        if expected_dtype is not None and vectors.dtype != expected_dtype:
            raise self._damaged("vectors.npy", f"dtype {vectors.dtype}, expected {self.manifest.vector_dtype}")
        if self._ivf is not None:
            centroids, list_offsets, order, positions = self._ivf
            if (
                len(order) != n_sentences
                or len(positions) != n_sentences
                or list_offsets.ndim != 1
                or len(list_offsets) != len(centroids) + 1
                or (len(list_offsets) and int(list_offsets[-1]) != n_sentences)
            ):
                raise self._damaged("ivf_*.npy", "the inverted-file arrays do not match the vectors")
            # out-of-range entries would index past the vectors at query time
            for name, array in (("ivf_order.npy", order), ("ivf_positions.npy", positions)):
                if n_sentences and (int(array.min()) < 0 or int(array.max()) >= n_sentences):
                    raise self._damaged(name, "entries out of range")

    @contextlib.contextmanager
    def _db_errors(self, name: str = DATABASE) -> Iterator[None]:
        """A SQLite failure of the generation's database ``name`` is a damaged index, named in one line."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._damaged(name, f"SQLite: {exc}") from None

    def verify(self) -> list[str]:
        """Problems found by hashing every file against the manifest (empty list: the index is intact)."""
        if not self.manifest.files:
            return [
                f"{self.index_dir}: the manifest records no checksums (written by an older a-rag); "
                "re-index with --rebuild to record them"
            ]
        problems = []
        for relative, digest in self.manifest.files.items():
            path = self.index_dir / relative
            try:
                actual = sha256_file(path)
            except OSError as exc:
                problems.append(f"{relative}: cannot be read ({exc.strerror})")
                continue
            if actual != digest.sha256:
                problems.append(f"{relative}: sha256 differs from the manifest: the file is damaged")
        listed = {Path(r).name for r in self.manifest.files}
        for entry in sorted(self.path.iterdir()):
            if entry.name not in listed:
                problems.append(f"{self.path.name}/{entry.name}: not recorded in the manifest")
        return problems

    # SQLite connections are per thread: the MCP server and eval workers call from several threads.
    @property
    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._lock_fd is None:
                raise IndexFormatError(f"index {self.index_dir} was closed")
            uri = f"file:{self.path / DATABASE}?mode=ro&immutable=1"
            with self._db_errors():
                conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._local.conn = conn
            self._connections.append(conn)
        return conn

    @property
    def n_chunks(self) -> int:
        return self._n_chunks

    @property
    def n_sentences(self) -> int:
        return int(self._offsets[-1])

    def rows_for_ids(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        with self._db_errors():
            return self._rows_for_ids(chunk_ids)

    def _rows_for_ids(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(chunk_ids))
        found: dict[str, int] = {}
        for begin in range(0, len(ids), 500):
            part = ids[begin : begin + 500]
            marks = ",".join("?" * len(part))
            for chunk_id, row in self._db.execute(
                f"SELECT chunk_id, row FROM chunks WHERE chunk_id IN ({marks})", part
            ):
                found[chunk_id] = row
        return found

    def _records(self, query: str, args: list[int]) -> list[ChunkRecord]:
        rows = self._db.execute(query, args).fetchall()
        neighbours = {r for (row, *_rest) in rows for r in (row - 1, row + 1)}
        ids = self._ids_of(neighbours)
        return [
            ChunkRecord(
                row,
                chunk_id,
                doc_id,
                text,
                n_tokens,
                ids.get(row - 1) if prev_doc_same else None,
                ids.get(row + 1) if next_doc_same else None,
                location=_json_field(location),
            )
            for row, chunk_id, doc_id, text, n_tokens, prev_doc_same, next_doc_same, location in rows
        ]

    @property
    def _select(self) -> str:
        """The chunk query's head (a version-3 index has no locations)."""
        location = "c.location" if self.manifest.format_version >= METADATA_SINCE else "NULL"
        return f"""
        SELECT c.row, c.chunk_id, d.doc_id, c.text, c.n_tokens,
               (SELECT p.doc_row = c.doc_row FROM chunks p WHERE p.row = c.row - 1),
               (SELECT n.doc_row = c.doc_row FROM chunks n WHERE n.row = c.row + 1),
               {location}
        FROM chunks c JOIN docs d ON d.doc_row = c.doc_row
    """

    def _ids_of(self, rows: set[int]) -> dict[int, str]:
        wanted = [r for r in rows if 0 <= r < self._n_chunks]
        out: dict[int, str] = {}
        for begin in range(0, len(wanted), 500):
            part = wanted[begin : begin + 500]
            marks = ",".join("?" * len(part))
            out.update(self._db.execute(f"SELECT row, chunk_id FROM chunks WHERE row IN ({marks})", part))
        return out

    def chunks(self, rows: Iterable[int]) -> dict[int, ChunkRecord]:
        with self._db_errors():
            return self._chunks(rows)

    def _chunks(self, rows: Iterable[int]) -> dict[int, ChunkRecord]:
        wanted = sorted({int(r) for r in rows})
        out: dict[int, ChunkRecord] = {}
        for begin in range(0, len(wanted), 500):
            part = wanted[begin : begin + 500]
            marks = ",".join("?" * len(part))
            for record in self._records(f"{self._select} WHERE c.row IN ({marks})", part):
                out[record.row] = record
        return out

    def iter_chunks(self, batch: int = 1000) -> Iterator[ChunkRecord]:
        for begin in range(0, self._n_chunks, batch):
            with self._db_errors():
                records = self._records(
                    f"{self._select} WHERE c.row >= ? AND c.row < ? ORDER BY c.row", [begin, begin + batch]
                )
            yield from records

    def documents(self) -> list[DocumentRecord]:
        metadata = "metadata" if self.manifest.format_version >= METADATA_SINCE else "NULL"
        query = f"SELECT doc_id, source, title, content_hash, {metadata} FROM docs ORDER BY doc_row"
        with self._db_errors():
            return [
                DocumentRecord(doc_id, source, title, content_hash, _json_field(fields))
                for doc_id, source, title, content_hash, fields in self._db.execute(query)
            ]

    def sentence_hashes(self) -> np.ndarray:
        """uint64 hash of each sentence's text, aligned with sentence rows (for reusing embeddings)."""
        hashes = self._array("sent_hash.npy")
        if hashes.shape != (self.n_sentences,):
            raise self._damaged("sent_hash.npy", f"shape {hashes.shape}, expected ({self.n_sentences},)")
        return hashes

    def doc_chunk_rows(self) -> dict[str, tuple[int, int]]:
        """For each document, its chunk row range [begin, end)."""
        with self._db_errors():
            return self._doc_chunk_rows()

    def _doc_chunk_rows(self) -> dict[str, tuple[int, int]]:
        return {
            doc_id: (lo, hi + 1)
            for doc_id, lo, hi in self._db.execute(
                "SELECT d.doc_id, MIN(c.row), MAX(c.row) FROM docs d JOIN chunks c ON c.doc_row = d.doc_row "
                "GROUP BY d.doc_row"
            )
        }

    def doc_chunk_range(self, doc_id: str) -> tuple[int, int]:
        """One document's chunk row range [begin, end); (0, 0) for an unknown id."""
        with self._db_errors():
            lo, hi = self._db.execute(
                "SELECT MIN(c.row), MAX(c.row) FROM chunks c JOIN docs d ON d.doc_row = c.doc_row WHERE d.doc_id = ?",
                (doc_id,),
            ).fetchone()
        return (0, 0) if lo is None else (int(lo), int(hi) + 1)

    def keyword_scores(self, keywords: list[str], top_k: int, scope: Scope | None = None) -> list[tuple[int, int]]:
        with self._db_errors():
            return self._keyword_scores(keywords, top_k, scope)

    def _keyword_scores(self, keywords: list[str], top_k: int, scope: Scope | None = None) -> list[tuple[int, int]]:
        """Exact scores: keywords of word characters from the word index (arag/store/words.py), the others from
        the trigram index's candidates, counted with ``str.count`` in the lower-cased text. SQLite's lower() folds
        ASCII only, so chunks where that differs from Python's str.lower() store their own lower-cased copy
        (``text_lower``); fetching rows dominates that path, and counting in Python measured faster than
        replace()/length() in SQL."""
        words = self._words.get()
        scores = np.zeros(self._n_chunks, np.int64)
        by_text = []
        for keyword in keywords:
            low = keyword.lower()
            if words is not None and low and is_word(low):
                words.add_scores(scores, low, len(keyword))
            else:
                by_text.append((low, len(keyword)))
        if by_text:
            for row, text in self._candidate_texts([low for low, _ in by_text]):
                scores[row] += sum(text.count(low) * weight for low, weight in by_text)
        if scope is not None:
            scores[~scope.mask(self._n_chunks)] = 0
        return top_scores(scores, top_k)

    def keyword_chunk_count(self, keyword: str, limit: int) -> int:
        low = keyword.lower()
        if not low or limit <= 0:
            return 0
        with self._db_errors():
            words = self._words.get()
            if words is not None and is_word(low):
                return words.chunk_count(low, limit)
            found = 0
            for _, text in self._candidate_texts([low]):
                found += low in text
                if found >= limit:
                    break
            return found

    def _candidate_texts(self, lowered: list[str]) -> Iterable[tuple[int, str]]:
        """``(row, lower-cased text)`` of the chunks that may contain any of the lower-cased keywords: those the
        word index names (arag/store/words.py), else those the trigram index names, or every chunk when a keyword
        is shorter than a trigram."""
        words = self._words.get()
        found = [words.candidates(low) for low in lowered] if words is not None else [None]
        present = [rows for rows in found if rows is not None]
        if len(present) == len(found):
            rows = np.unique(np.concatenate(present)) if present else np.zeros(0, np.int64)
            if not len(rows):
                return []
            listed = "SELECT value FROM json_each(?)"
            return self._db.execute(
                f"SELECT row, coalesce(text_lower, lower(text)) FROM chunks WHERE row IN ({listed})",
                [json.dumps([int(r) for r in rows])],
            )
        matches = [self._trigram_match(low) for low in lowered]
        if any(m is None for m in matches):
            return self._db.execute("SELECT row, coalesce(text_lower, lower(text)) FROM chunks")
        possible = [m for m in matches if m != ""]  # "" = a trigram no chunk has: the keyword matches nothing
        if not possible:
            return []
        union = " UNION ".join("SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?" for _ in possible)
        return self._db.execute(
            f"SELECT row, coalesce(text_lower, lower(text)) FROM chunks WHERE row IN ({union})", possible
        )

    def _trigram_match(self, keyword_lower: str) -> str | None:
        """FTS5 query for the keyword's rarest trigrams (a superset of the chunks containing it); None if the
        keyword is shorter than a trigram; "" if one of its trigrams occurs in no chunk."""
        trigrams = list(dict.fromkeys(keyword_lower[i : i + 3] for i in range(len(keyword_lower) - 2)))
        if not trigrams:
            return None
        if self._has_trigram_df is None:
            self._has_trigram_df = bool(
                self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'trigram_df'").fetchone()
            )
        if not self._has_trigram_df:
            return _trigram_query(keyword_lower)
        marks = ",".join("?" * len(trigrams))
        df = dict(self._db.execute(f"SELECT trigram, df FROM trigram_df WHERE trigram IN ({marks})", trigrams))
        if len(df) < len(trigrams):
            return ""
        return _fts_all_of(sorted(trigrams, key=lambda t: df[t])[:KEYWORD_TRIGRAMS])

    def consistent(self) -> contextlib.AbstractContextManager[None]:
        """A generation never changes: every read of this store is of one snapshot already."""
        return contextlib.nullcontext()

    def reading_as(self, groups: frozenset[str] | None) -> contextlib.AbstractContextManager[None]:
        """Files have no roles: a reader's restriction is a-rag's (arag.index), above the store."""
        return contextlib.nullcontext()

    def latest_generation(self) -> int:
        return read_manifest(self.index_dir).generation

    def sentence_ranges(self) -> np.ndarray:
        return self._offsets

    def sentence_spans(self, row: int) -> list[tuple[int, int]]:
        begin, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return [(int(a), int(b)) for a, b in self._spans[begin:end]]

    def sentence_scores(self, query: np.ndarray, row: int) -> np.ndarray:
        begin, end = int(self._offsets[row]), int(self._offsets[row + 1])
        if end <= begin:
            return np.zeros(0, np.float32)
        return np.asarray(self.sentence_vectors(np.arange(begin, end)) @ query.astype(np.float32), dtype=np.float32)

    def sentence_vectors(self, sentence_rows: np.ndarray) -> np.ndarray:
        positions = np.asarray(sentence_rows) if self._ivf is None else self._ivf[3][np.asarray(sentence_rows)]
        return dequantize(np.asarray(self._vectors[positions]))

    def all_sentence_scores(self, query: np.ndarray) -> np.ndarray:
        if self._vectors.dtype == np.float32:
            scores = np.asarray(self._vectors @ query.astype(np.float32))
        else:
            # f16/i8: SIMD dot products (exact integer arithmetic for i8) over row blocks in parallel, then
            # cosine = dot / (|v| |q|) with the stored per-vector norms.
            prepared = self._prepared(query)
            split = np.array_split(np.arange(len(self._vectors)), max(1, self.threads))
            blocks = [(int(b[0]), int(b[-1]) + 1) for b in split if len(b)]
            parts = list(self._pool().map(lambda block: self._range_scores(prepared, *block), blocks))
            scores = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        if self._ivf is None:
            return scores
        in_row_order = np.empty_like(scores)
        in_row_order[self._ivf[2]] = scores
        return in_row_order

    def _prepared(self, query: np.ndarray) -> tuple[np.ndarray, float]:
        """The query in the stored precision, [1, dims], and its norm: computed once per search."""
        stored_query = np.ascontiguousarray(_query_for(query, self.manifest.vector_dtype))
        return stored_query, float(np.linalg.norm(stored_query.astype(np.float32))) or 1.0

    def _range_scores(self, prepared: tuple[np.ndarray, float], begin: int, end: int) -> np.ndarray:
        """Cosine of the stored positions [begin, end) to a query from :meth:`_prepared`."""
        import numkong

        stored_query, query_norm = prepared
        part = self._vectors[begin:end]
        if part.dtype == np.float32:
            return np.asarray(part @ stored_query[0])
        dots = np.asarray(numkong.cdist(stored_query, part, metric="dot", out_dtype="float32"))[0]
        return dots / (self._norms()[begin:end] * query_norm)

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=max(1, self.threads))
        return self._executor

    def _norms(self) -> np.ndarray:
        if self._norm_cache is None:
            path = self.path / "vector_norms.npy"
            if path.exists():
                norms = np.array(self._array("vector_norms.npy"), dtype=np.float32)
                if norms.shape != (len(self._vectors),):
                    raise self._damaged("vector_norms.npy", f"shape {norms.shape}, expected ({len(self._vectors)},)")
            else:
                assert self._vectors is not None
                norms = _row_norms(self._vectors)
            norms[norms == 0] = 1.0
            self._norm_cache = norms
        return self._norm_cache

    def top_sentences(self, query: np.ndarray, m: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
        m = max(1, min(m, self.n_sentences))
        if self.n_sentences == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if self._ivf is not None and not exact:
            centroids, list_offsets, order, _ = self._ivf
            prepared = self._prepared(query)
            ranges = ivf.probed_ranges(centroids, list_offsets, query, self.probes)
            halves = [ranges[0::2], ranges[1::2]] if self.threads > 1 else [ranges]
            parts = list(self._pool().map(lambda rs: [self._range_scores(prepared, b, e) for b, e in rs], halves))
            scores = np.concatenate([score for part in parts for score in part])
            positions = np.concatenate([np.arange(b, e) for half in halves for b, e in half])
        else:
            scores = self.all_sentence_scores(query)
            positions = None
        top = np.argpartition(-scores, m - 1)[:m] if m < len(scores) else np.arange(len(scores))
        rows = top.astype(np.int64) if positions is None else np.asarray(order[positions[top]], dtype=np.int64)
        best_first = np.lexsort((rows, -scores[top]))
        return rows[best_first], scores[top][best_first].astype(np.float32)

    def semantic_chunks(
        self, query: np.ndarray, top_k: int, exact: bool, scope: Scope | None = None
    ) -> list[SemanticMatch]:
        offsets = self._offsets
        scores = self.all_sentence_scores(query) if exact or scope is not None else None
        if scores is not None:
            best = _chunk_best_from_all(scores, offsets)
            if scope is not None:
                best[~scope.mask(self._n_chunks)] = -np.inf
            order = np.lexsort((np.arange(len(best)), -best))
            ranked = [(int(r), float(best[r])) for r in order[:top_k] if np.isfinite(best[r])]
        else:
            ranked = self._chunk_best_from_top(query, top_k, exact)
        matches = []
        for row, score in ranked:
            begin, end = int(offsets[row]), int(offsets[row + 1])
            sentence_scores = (
                scores[begin:end]
                if scores is not None
                else self.sentence_vectors(np.arange(begin, end)) @ query.astype(np.float32)
            )
            matches.append(SemanticMatch(row, score, np.asarray(sentence_scores)))
        return matches

    def _chunk_best_from_top(self, query: np.ndarray, top_k: int, exact: bool) -> list[tuple[int, float]]:
        """Top-k chunks from the m best sentences; m grows until k distinct chunks are covered.

        If the m best sentences cover k distinct chunks, those chunks' maxima are the k largest
        chunk scores, so the result is exact whenever the sentence search is.
        """
        n = self.n_sentences
        m = min(n, max(64, 8 * top_k))
        while True:
            sentence_rows, sentence_scores = self.top_sentences(query, m, exact)
            chunk_rows = np.searchsorted(self._offsets, sentence_rows, side="right") - 1
            best = best_per_chunk(chunk_rows.tolist(), sentence_scores.tolist())
            if len(best) >= top_k or m >= n:
                break
            m = min(n, m * 4)
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:top_k]

    # ------------------------------------------------------------------ tables as data
    def _tables_file(self) -> TablesFile | None:
        if self._tables is None:
            path = self.path / TABLES_DATABASE
            if not path.exists():
                return None  # a generation written before a-rag kept tables
            self._tables = TablesFile(path)
        return self._tables

    def table_catalog(self) -> list[TableInfo] | None:
        tables = self._tables_file()
        if tables is None:
            return None
        with self._db_errors(TABLES_DATABASE):
            return [info for _n, info in tables.catalog()]

    def table_answer(self, table_id: str, query: TableQuery) -> TableAnswer:
        tables = self._tables_file()
        with self._db_errors(TABLES_DATABASE):
            found = tables.find(table_id) if tables is not None else None
        if tables is None or found is None:
            raise TableQueryError(f"no table has the id {table_id!r}; use ids from table_list")
        with self._db_errors(TABLES_DATABASE):
            return tables.answer(found[0], found[1], query)

    def close(self) -> None:
        """Release the generation; a generation a writer left behind for this reader is removed then."""
        tables = getattr(self, "_tables", None)
        if tables is not None:
            tables.close()
            self._tables = None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        for conn in self._connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._connections.clear()
        self._local = threading.local()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
            with contextlib.suppress(OSError, IndexFormatError, IndexNotFoundError):
                remove_stale_generations(self.index_dir, keep=read_manifest(self.index_dir).generation)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if self._lock_fd is not None:
                os.close(self._lock_fd)


def _chunk_best_from_all(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    starts = offsets[:-1]
    nonempty = offsets[1:] > starts
    best = np.full(len(starts), -np.inf, dtype=np.float32)
    if nonempty.any():
        # reduceat over starts of non-empty chunks only: an empty chunk would take its neighbour's value
        best[nonempty] = np.maximum.reduceat(scores, starts[nonempty])
    return best


# np.load parses each header with ast.literal_eval, which CPython 3.11 does not make safe across threads
# ("AST constructor recursion depth mismatch" when readers open indexes concurrently): one header at a time
_HEADER_LOCK = threading.Lock()


def _mapped(path: Path) -> np.ndarray:
    """A read-only memory map as a plain ndarray: slicing a np.memmap costs ~10 µs of Python per slice, which
    the inverted file's ~100 list slices per query would pay."""
    with _HEADER_LOCK:
        return np.load(path, mmap_mode="r").view(np.ndarray)


def _row_norms(vectors: np.ndarray, block: int = 65536) -> np.ndarray:
    out = np.empty(len(vectors), dtype=np.float32)
    for begin in range(0, len(vectors), block):
        part = np.asarray(vectors[begin : begin + block], dtype=np.float32)
        out[begin : begin + block] = np.sqrt(np.einsum("ij,ij->i", part, part))
    return out


def _trigram_query(keyword_lower: str) -> str | None:
    """An FTS5 query matching every chunk that contains ``keyword_lower`` (a superset), or None if too short.
    Used for indexes without trigram frequencies: 12 trigrams spread over the keyword."""
    trigrams = list(dict.fromkeys(keyword_lower[i : i + 3] for i in range(len(keyword_lower) - 2)))
    if not trigrams:
        return None
    if len(trigrams) > 12:  # a subset of the trigrams still gives a superset of the matches
        step = len(trigrams) / 12
        trigrams = [trigrams[int(i * step)] for i in range(12)] + [trigrams[-1]]
    return _fts_all_of(trigrams)


def _fts_all_of(trigrams: list[str]) -> str:
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in trigrams)


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _query_for(query: np.ndarray, dtype: str) -> np.ndarray:
    return quantize(query.reshape(1, -1).astype(np.float32), dtype)


class GenerationWriter:
    """Writes one new generation; :meth:`commit` makes it current atomically."""

    def __init__(self, index_dir: Path, manifest_base: dict[str, object]) -> None:
        self.index_dir = Path(index_dir)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = _writer_lock(self.index_dir)
        # Only the generation number is needed, so an index of another format version can be rebuilt in place.
        self.generation = _current_generation(self.index_dir) + 1
        while _generation_dir(self.index_dir, self.generation).exists():
            self.generation += 1
        self.tmp = Path(tempfile.mkdtemp(prefix=".tmp-gen-", dir=self.index_dir))
        self._manifest_base = manifest_base
        self._db = sqlite3.connect(self.tmp / "chunks.sqlite")
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        self._doc_rows: dict[str, int] = {}
        self._n_chunks = 0
        self._trigram_df: Counter[str] = Counter()
        self._words = WordIndexBuilder()
        self._tables = TablesWriter(self.tmp)

    def add_document(self, doc: DocumentRecord) -> None:
        metadata = None if doc.metadata is None else json.dumps(doc.metadata, ensure_ascii=False)
        cursor = self._db.execute(
            "INSERT INTO docs (doc_id, source, title, content_hash, metadata) VALUES (?, ?, ?, ?, ?)",
            (doc.doc_id, doc.source, doc.title, doc.content_hash, metadata),
        )
        self._doc_rows[doc.doc_id] = int(cursor.lastrowid or 0)

    def add_chunks(
        self,
        doc_id: str,
        chunks: list[tuple[str, int, str, int]],
        locations: list[dict[str, Any] | None] | None = None,
    ) -> None:
        """Append ``(chunk_id, ordinal, text, n_tokens)`` rows for a document already added (with each chunk's
        location, where recorded)."""
        doc_row = self._doc_rows[doc_id]
        first = self._n_chunks
        rows = []
        for i, (cid, ordinal, text, n_tok) in enumerate(chunks):
            lower = text.lower()
            self._trigram_df.update({lower[j : j + 3] for j in range(len(lower) - 2)})
            self._words.add(lower)
            location = locations[i] if locations else None
            rows.append(
                (
                    first + i,
                    cid,
                    doc_row,
                    ordinal,
                    n_tok,
                    text,
                    None if lower == _ascii_lower(text) else lower,
                    None if location is None else json.dumps(location, ensure_ascii=False),
                )
            )
        self._db.executemany(
            "INSERT INTO chunks (row, chunk_id, doc_row, ordinal, n_tokens, text, text_lower, location) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        self._db.executemany(
            "INSERT INTO chunk_fts (rowid, text_lower) VALUES (?, ?)",
            [(first + i, text.lower()) for i, (_cid, _o, text, _n) in enumerate(chunks)],
        )
        self._n_chunks += len(chunks)
        self._tables.add(tables_in(doc_id, [(cid, text) for cid, _ordinal, text, _n in chunks]))

    def finish(
        self,
        offsets: np.ndarray,
        spans: np.ndarray,
        hashes: np.ndarray,
        vectors: np.ndarray,
        dtype: str,
        ann: bool,
        threads: int,
        counts: dict[str, int],
    ) -> None:
        """Write the sentence arrays and the vectors (already L2-normalised float32 or pre-quantized)."""
        self._db.executemany("INSERT INTO trigram_df (trigram, df) VALUES (?, ?)", self._trigram_df.items())
        try:
            self._db.commit()
        except sqlite3.IntegrityError as exc:
            raise IndexFormatError(f"duplicate ids while writing the index: {exc}") from None
        self._db.close()
        self._tables.close()
        self._words.save(self.tmp)
        np.save(self.tmp / "sent_offsets.npy", np.asarray(offsets, dtype=np.int64))
        np.save(self.tmp / "sent_spans.npy", np.asarray(spans, dtype=np.int32).reshape(-1, 2))
        np.save(self.tmp / "sent_hash.npy", np.asarray(hashes, dtype=np.uint64))
        stored = vectors if vectors.dtype != np.float32 or dtype == "f32" else quantize(vectors, dtype)
        if ann:
            # vectors are stored grouped by IVF list, so probing a list reads one contiguous slice
            centroids, order, list_offsets = ivf.build(stored, threads)
            stored = stored[order]
            positions = np.empty_like(order)
            positions[order] = np.arange(len(order))
            counts = {**counts, "ivf_lists": len(centroids)}
            for name, array in (
                ("ivf_centroids", centroids),
                ("ivf_offsets", list_offsets),
                ("ivf_order", order),
                ("ivf_positions", positions),
            ):
                np.save(self.tmp / f"{name}.npy", array)
        np.save(self.tmp / "vectors.npy", stored)
        if stored.dtype != np.float32:
            np.save(self.tmp / "vector_norms.npy", _row_norms(stored))
        self._counts = counts

    def commit(self, embedder: dict[str, object]) -> Manifest:
        target = _generation_dir(self.index_dir, self.generation)
        files: dict[str, FileDigest] = {}
        for file in sorted(self.tmp.iterdir()):
            with file.open("rb") as handle:
                os.fsync(handle.fileno())
            files[f"{target.name}/{file.name}"] = FileDigest(file.stat().st_size, sha256_file(file))
        os.replace(self.tmp, target)
        _fsync_dir(self.index_dir)
        manifest = new_manifest(
            self.generation,
            embedder,
            dict(self._manifest_base["chunker"]),  # type: ignore[call-overload]
            str(self._manifest_base["vector_dtype"]),
            bool(self._manifest_base["ann"]),
            self._counts,
            extra=dict(self._manifest_base.get("extra") or {}),  # type: ignore[call-overload]
            files=files,
        )
        tmp_manifest = self.index_dir / f".{MANIFEST}.tmp"
        with tmp_manifest.open("w", encoding="utf-8") as handle:
            json.dump(asdict(manifest), handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_manifest, self.index_dir / MANIFEST)
        _fsync_dir(self.index_dir)
        remove_stale_generations(self.index_dir, keep=self.generation, writer=True)
        self._release()
        return manifest

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._db.close()
        with contextlib.suppress(Exception):
            self._tables.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


class EmbeddedWriter:
    """The embedded store's :class:`~arag.store.base.IndexWriter`: a new generation holding the kept documents
    (copied from the current one with their vectors) and the written ones; the current generation stays readable
    until the commit makes the new one current."""

    batch_sentences: int | None = None  # the generation's arrays are written at the end: no use writing in batches

    def __init__(self, index_dir: Path, settings: IndexSettings, rebuild: bool = False) -> None:
        self.index_dir, self.settings, self.where = Path(index_dir), settings, str(index_dir)
        self.previous: EmbeddedStore | None = None
        if not rebuild:
            with contextlib.suppress(IndexNotFoundError):
                self.previous = EmbeddedStore(self.index_dir, threads=settings.threads)
        self.manifest = self.previous.manifest if self.previous is not None else None
        self._generation: GenerationWriter | None = None
        self._rows_by_hash: dict[int, int] | None = None
        self._doc_rows: dict[str, tuple[int, int]] | None = None
        self._offsets: list[int] = [0]
        self._spans: list[tuple[int, int]] = []
        self._hashes: list[np.ndarray] = []
        self._vectors: list[np.ndarray] = []
        self._n_documents = 0

    def documents(self) -> list[DocumentRecord]:
        return self.previous.documents() if self.previous is not None else []

    def begin(self, dims: int) -> None:
        self.dims = dims
        manifest_base: dict[str, object] = {
            "chunker": self.settings.chunker.model_dump(),
            "vector_dtype": self.settings.vector_dtype,
            "ann": self.settings.ann,
        }
        self._generation = GenerationWriter(self.index_dir, manifest_base)

    def chunk_owners(self, chunk_ids: list[str]) -> dict[str, str]:
        if self.previous is None:
            return {}
        rows = self.previous.rows_for_ids(chunk_ids)
        records = self.previous.chunks(rows.values())
        return {chunk_id: records[row].doc_id for chunk_id, row in rows.items()}

    def known_vectors(self, hashes: list[int]) -> dict[int, np.ndarray]:
        if self.previous is None or not self.previous.n_sentences:
            return {}
        if self._rows_by_hash is None:
            self._rows_by_hash = {int(h): i for i, h in enumerate(self.previous.sentence_hashes().tolist())}
        found = {int(h): self._rows_by_hash[int(h)] for h in hashes if int(h) in self._rows_by_hash}
        if not found:
            return {}
        rows = np.fromiter(found.values(), dtype=np.int64, count=len(found))
        vectors = self.previous.sentence_vectors(rows)
        return dict(zip(found, vectors, strict=True))

    def remove(self, doc_ids: list[str]) -> None:
        """Nothing to do: a document not written is not in the new generation."""

    def write(self, documents: list[PendingDocument | KeptDocument]) -> int:
        assert self._generation is not None, "begin() first"
        copied = 0
        for document in documents:
            if isinstance(document, KeptDocument):
                hashes, vectors, chunks = self._kept(document.record.doc_id)
                copied += len(hashes)
            else:
                hashes, vectors, chunks = document.hashes, document.vectors, document.chunks
            self._generation.add_document(document.record)
            self._generation.add_chunks(
                document.record.doc_id,
                [(c.chunk_id, c.ordinal, c.text, c.n_tokens) for c in chunks],
                [c.location for c in chunks],
            )
            for chunk in chunks:
                self._spans.extend(chunk.spans)
                self._offsets.append(len(self._spans))
            self._hashes.append(np.asarray(hashes, dtype=np.uint64))
            self._vectors.append(np.asarray(vectors, dtype=np.float32).reshape(-1, self.dims))
            self._n_documents += 1
        return copied

    def _kept(self, doc_id: str) -> tuple[np.ndarray, np.ndarray, list[PreparedChunk]]:
        """A stored document's sentence hashes, vectors (float32) and chunks, as the current generation has them."""
        previous = self.previous
        assert previous is not None
        if self._doc_rows is None:
            self._doc_rows = previous.doc_chunk_rows()
            self._previous_hashes = previous.sentence_hashes()
        lo, hi = self._doc_rows.get(doc_id, (0, 0))
        records = previous.chunks(range(lo, hi))
        chunks = [
            PreparedChunk(
                records[row].chunk_id,
                i,
                records[row].text,
                records[row].n_tokens,
                previous.sentence_spans(row),
                records[row].location,
            )
            for i, row in enumerate(range(lo, hi))
        ]
        offsets = previous.sentence_ranges()
        rows = np.arange(int(offsets[lo]), int(offsets[hi]), dtype=np.int64) if hi > lo else np.zeros(0, np.int64)
        hashes = self._previous_hashes[rows]
        vectors = previous.sentence_vectors(rows) if len(rows) else np.zeros((0, self.dims), np.float32)
        return hashes, vectors, chunks

    def commit(self, embedder: dict[str, Any]) -> dict[str, int]:
        assert self._generation is not None, "begin() first"
        counts = {
            "documents": self._n_documents,
            "chunks": len(self._offsets) - 1,
            "sentences": len(self._spans),
        }
        self._generation.finish(
            np.asarray(self._offsets),
            np.asarray(self._spans, dtype=np.int32).reshape(-1, 2),
            np.concatenate(self._hashes) if self._hashes else np.zeros(0, np.uint64),
            np.concatenate(self._vectors) if self._vectors else np.zeros((0, self.dims), np.float32),
            self.settings.vector_dtype,
            self.settings.ann,
            self.settings.threads,
            counts,
        )
        if self.previous is not None:
            self.previous.close()
            self.previous = None
        self._generation.commit(embedder)
        self._generation = None
        return counts

    def close(self) -> None:
        if self._generation is not None:
            self._generation.abort()
            self._generation = None
        if self.previous is not None:
            self.previous.close()
            self.previous = None


def _json_field(text: str | None) -> dict[str, Any] | None:
    """A JSON column (document metadata, a chunk's location) as stored; None where absent or damaged."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _is_stale(name: str, keep: int, writer: bool) -> bool:
    """A generation other than ``keep``; for a reader, only an older one: a newer one may be a writer's
    commit whose manifest is not written yet (only the writer, holding the writer lock, knows it is not)."""
    if not name.startswith("gen-") or not name[4:].isdigit():
        return False
    number = int(name[4:])
    return number != keep if writer else number < keep


def _writer_lock(index_dir: Path) -> int:
    fd = os.open(index_dir / WRITER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise IndexFormatError(
            f"another process is writing the index {index_dir}; wait for it to finish, then run again"
        ) from None
    return fd


def remove_stale_generations(index_dir: Path, keep: int, writer: bool = False) -> None:
    """Delete generations other than ``keep`` that no reader holds, and (for the writer holding the writer
    lock) leftovers of interrupted writes. A generation a reader holds stays until that reader closes."""
    for entry in index_dir.iterdir():
        if entry.name.startswith(".trash-") or (writer and entry.name.startswith(".tmp-gen-")):
            shutil.rmtree(entry, ignore_errors=True)
        elif _is_stale(entry.name, keep, writer):
            try:
                fd = os.open(entry / DATABASE, os.O_RDONLY)
            except FileNotFoundError:
                if writer:
                    shutil.rmtree(entry, ignore_errors=True)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # renamed while locked: a reader that opened the file before now finds it gone and retries
                trash = index_dir / f".trash-{entry.name}-{os.getpid()}-{time.monotonic_ns()}"
                os.rename(entry, trash)
            except OSError:
                continue  # in use by a reader (or not ours to remove)
            finally:
                os.close(fd)
            shutil.rmtree(trash, ignore_errors=True)
