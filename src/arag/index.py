"""The ``Index``: opened once, shared by every tool. Exact keyword and semantic search, chunk reads.

Formulas (paper §3.2):

* keyword:  score(c) = Σ_k count(lower(k), lower(c)) · len(k), counting non-overlapping occurrences
  (Python's ``str.count``); ties broken by document order (chunk row ascending).
* semantic: score(c) = max over sentences s of c of cos(q, s); ties broken by document order.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import itertools
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from arag.corpus.chunking import count_tokens
from arag.corpus.outline import Outline, SectionPart, outline_of, section_number, section_part
from arag.corpus.tables import row_as_fields
from arag.embedding.embedders import Embedder, load_embedder
from arag.errors import ARagError, EmbedderError
from arag.filters import Filter
from arag.principals import Principal
from arag.settings import IndexSettings
from arag.store import ChunkRecord, DocumentRecord, Scope, Store, open_store
from arag.store.embedded import ivf
from arag.store.tabular import TableAnswer, TableInfo, TableQuery, TableQueryError, find_table, plan_query
from arag.text import STOPWORDS, never_stored, storable

SEMANTIC_SNIPPETS = 3
GREP_TIME_LIMIT_S = 10.0
MAX_PATTERN_CHARS = 500
RRF_K = 60  # reciprocal rank fusion's constant (Cormack, Clarke and Büttcher 2009)
FUSED_DEPTH = 20  # chunks each search ranks before the fusion
SECTION_TOKENS = 1000  # a section is read in parts of at most this many tokens: the paper's chunk size
_GREP_MEMORY = 8 << 20  # bytes RE2 may use to compile a pattern: a bigger program is refused


class GrepError(ARagError):
    """A pattern that cannot be searched for (RE2 cannot compile it, or it is too long); the message says why."""


@dataclass(slots=True)
class GrepResult:
    """A grep's exact counts — matches, chunks that hold one, chunks scanned (every one in scope when
    ``complete``) — and its top hits (score: the chunk's match count)."""

    matches: int
    chunks: int
    scanned: int
    complete: bool
    hits: list[SearchHit]


@dataclass(slots=True)
class DocumentEntry:
    """A document as list_documents shows it: id, title, path, size in chunks and tokens, first sentence."""

    doc_id: str
    title: str
    path: str
    chunks: int
    tokens: int
    first_sentence: str


def compile_grep_pattern(pattern: str, case_sensitive: bool = False) -> Any:
    """The pattern compiled by RE2 (linear time in the text, whatever the pattern)."""
    import re2

    if not pattern:
        raise GrepError("the pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GrepError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    if never_stored(pattern):
        raise GrepError("the pattern holds characters no document holds (NUL, a lone surrogate)")
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.max_mem = _GREP_MEMORY
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise GrepError(f"the pattern cannot be used: {detail} (RE2 syntax: no backreferences or lookaround)") from None


@dataclass(slots=True)
class SearchHit:
    chunk_id: str
    score: float
    snippets: list[str]
    row: int = field(repr=False, default=-1)

    def to_dict(self) -> dict[str, object]:
        return {"chunk_id": self.chunk_id, "score": self.score, "snippets": self.snippets}


def query_keywords(query: str, limit: int = 10) -> list[str]:
    """The keywords a fused search looks for in a query: its quoted phrases, then its other words of three or more
    characters (or digits) that are not common words, at most ``limit``."""
    quoted = [m.group(1) or m.group(2) for m in _QUOTED.finditer(query)]
    rest = _QUOTED.sub(" ", query)
    words = [w for w in _WORD.findall(rest) if w.isdigit() or (len(w) >= 3 and w.casefold() not in STOPWORDS)]
    return normalize_keywords([*quoted, *words])[:limit]


_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”')
_WORD = re.compile(r"\w[\w'’.-]*\w|\w")


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


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _one_generation(method: _Method) -> _Method:
    """An operation of the index that reads one generation, and one committed state of it, from start to end."""

    @functools.wraps(method)
    def pinned(self: Index, *args: Any, **kwargs: Any) -> Any:
        with self.consistent():
            return method(self, *args, **kwargs)

    return pinned  # type: ignore[return-value]


READERS_KEPT = 256  # principals whose readable documents a generation keeps worked out


class _Generation:
    """One generation of the index as a store serves it, with what is read of it once (its documents and their
    metadata, its titles): a new generation gets its own."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pins = 0  # operations reading it now (guarded by the index's lock)
        self.retired_at: float | None = None  # when a newer generation replaced it
        self.lock = threading.Lock()
        self._documents: list[DocumentRecord] | None = None
        self._by_id: dict[str, DocumentRecord] = {}
        self._titles: dict[str, list[tuple[str, ...]]] | None = None  # first word → titles as words
        # what each recent principal reads of it: its documents and their chunk rows (a server's readers repeat)
        self._readable: OrderedDict[Principal, tuple[list[DocumentRecord], Scope]] = OrderedDict()

    def documents(self) -> tuple[list[DocumentRecord], dict[str, DocumentRecord]]:
        with self.lock:
            if self._documents is None:
                self._documents = self.store.documents()
                self._by_id = {document.doc_id: document for document in self._documents}
            return self._documents, self._by_id

    def readable(self, principal: Principal) -> tuple[list[DocumentRecord], Scope]:
        """The documents ``principal`` may read and their chunk rows, worked out once per generation and principal
        (the most recent ``READERS_KEPT``)."""
        with self.lock:
            found = self._readable.get(principal)
            if found is not None:
                self._readable.move_to_end(principal)
                return found
        documents = [d for d in self.documents()[0] if principal.may_read(d.metadata)]
        rows = self.store.doc_chunk_rows()
        scope = Scope(
            frozenset(d.doc_id for d in documents), tuple(rows[d.doc_id] for d in documents if d.doc_id in rows)
        )
        with self.lock:
            self._readable[principal] = (documents, scope)
            while len(self._readable) > READERS_KEPT:
                self._readable.popitem(last=False)
        return documents, scope

    def titles(self) -> dict[str, list[tuple[str, ...]]]:
        documents, _ = self.documents()
        with self.lock:
            if self._titles is None:
                self._titles = {}
                for document in documents:
                    words = tuple(_title_words(title_of(document.doc_id)))
                    if words and len(" ".join(words)) >= 3:
                        self._titles.setdefault(words[0], []).append(words)
            return self._titles


@dataclass
class _Shared:
    """What an index and its views for principals (:meth:`Index.as_principal`) share: the generation read now,
    those replaced and not yet closed, when a newer one was last looked for, and the query embedder."""

    current: _Generation
    embedder: Embedder | None
    retired: list[_Generation] = field(default_factory=list)
    follow: tuple[str | Path, IndexSettings, float] | None = None  # (location, settings, check every s)
    checked: float = 0.0


class Index:
    """A read-only handle on an index. Thread-safe for concurrent searches.

    Every operation reads one generation of the index from start to end. An index that follows updates
    (:meth:`follow_updates`: ``arag serve``, ``arag mcp``) moves to a newer generation (a sync, an added file) when
    an operation starts after it was committed; operations already running finish on the one they began with."""

    # a replaced generation is closed once no operation reads it and it was replaced this long ago
    RETIRE_AFTER_S = 60.0

    def __init__(self, store: Store, embedder: Embedder | None = None, threads: int = 2) -> None:
        self._shared = _Shared(_Generation(store), embedder)  # one per index, shared by its principals' views
        self.threads = threads
        self._lock = threading.Lock()
        self._pinned = threading.local()  # the generation this thread's operation reads
        self._location: str | Path | None = None  # where it was opened, to open a newer generation
        self._settings: IndexSettings | None = None
        self.principal: Principal | None = None  # None: the local user, who reads every document
        self._on_denied: Callable[[str], None] | None = None

    @classmethod
    def open(
        cls,
        location: str | Path,
        embedder: Embedder | None = None,
        threads: int = 2,
        probes: int = ivf.DEFAULT_PROBES,
        ef_search: int | None = None,
        statement_timeout_s: float | None = None,
    ) -> Index:
        """Open an index directory or a ``postgresql://…?index=NAME`` URL (see :func:`arag.store.open_store`), with
        these search-time settings (the others: their defaults)."""
        searching: dict[str, float | None] = {"threads": threads, "ann_probes": probes, "hnsw_ef_search": ef_search}
        searching["pg_statement_timeout_s"] = statement_timeout_s
        settings = IndexSettings(**{k: v for k, v in searching.items() if v is not None})
        return cls.open_with(location, settings, embedder)

    @classmethod
    def open_with(cls, location: str | Path, settings: IndexSettings, embedder: Embedder | None = None) -> Index:
        """Open with the search-time settings of ``settings``: threads, IVF probes, HNSW ef_search, statement
        timeout."""
        index = cls(open_store(location, settings), embedder, settings.threads)
        index._location, index._settings = location, settings
        return index

    # ------------------------------------------------------------------ generations
    @property
    def store(self) -> Store:
        """The store of the generation this thread's operation reads (else the current one)."""
        pinned = getattr(self._pinned, "generation", None)
        return (pinned or self._shared.current).store

    def follow_updates(self, every_s: float = 1.0) -> None:
        """Move to a newer generation of the index when one is committed, checked at most every ``every_s``
        seconds when an operation starts (an index opened with :meth:`open` or :meth:`open_with`)."""
        location, settings = self._location, self._settings
        if location is None or settings is None:
            raise ValueError("follow_updates needs an index opened by location (Index.open / Index.open_with)")
        self._shared.follow = (location, settings, every_s)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Store]:
        """Read one generation for the whole block (nested blocks read the same one)."""
        pinned = getattr(self._pinned, "generation", None)
        if pinned is not None:
            yield pinned.store
            return
        self._maybe_follow()
        with self._lock:
            generation = self._shared.current
            generation.pins += 1
        self._pinned.generation = generation
        try:
            yield generation.store
        finally:
            self._pinned.generation = None
            with self._lock:
                generation.pins -= 1
            self._close_retired()

    @contextlib.contextmanager
    def consistent(self) -> Iterator[Store]:
        """Like :meth:`snapshot`, and every read inside sees one committed state of the store too (PostgreSQL:
        one read-only transaction, holding a connection: for an operation or a tool call, not for a question)."""
        with self.snapshot() as store, store.reading_as(self._reader_groups()), store.consistent():
            yield store

    def _reader_groups(self) -> frozenset[str] | None:
        """The groups the store is told this view reads as (None: every document)."""
        return None if self.principal is None else self.principal.every_group

    def _generation(self) -> _Generation:
        return getattr(self._pinned, "generation", None) or self._shared.current

    def _maybe_follow(self) -> None:
        follow = self._shared.follow
        if follow is None or time.monotonic() - self._shared.checked < follow[2]:
            return
        self._shared.checked = time.monotonic()
        location, settings, _every = follow
        current = self._shared.current
        try:
            latest = current.store.latest_generation()
        except ARagError:  # the index is being rewritten or briefly unreachable: keep reading what we have
            return
        if latest <= current.store.manifest.generation:
            return
        try:
            store = open_store(location, settings)
        except ARagError:
            return
        with self._lock:
            if self._shared.current is not current:  # another thread moved on first
                store.close()
                return
            current.retired_at = time.monotonic()
            self._shared.retired.append(current)
            self._shared.current = _Generation(store)

    def _close_retired(self) -> None:
        if not self._shared.retired:  # the common case, on every operation: nothing to close
            return
        now = time.monotonic()
        with self._lock:
            done = [
                g for g in self._shared.retired if g.pins == 0 and now - (g.retired_at or now) >= self.RETIRE_AFTER_S
            ]
            self._shared.retired = [g for g in self._shared.retired if g not in done]
        for generation in done:
            generation.store.close()

    @property
    def manifest(self):
        return self.store.manifest

    @property
    def embedder(self) -> Embedder:
        """The query embedder, loaded on first use and checked against the one that built the index."""
        if self._shared.embedder is None:
            spec = self.store.manifest.embedder["name"]
            self._shared.embedder = load_embedder(spec, threads=self.threads)
        expected = self.store.manifest.embedder.get("fingerprint")
        if expected and self._shared.embedder.fingerprint != expected:
            raise EmbedderError(
                f"query embedder {self._shared.embedder.fingerprint} differs from the one that built the index "
                f"({expected}); re-index with the current model or install the original weights"
            )
        return self._shared.embedder

    def titles_named_in(self, text: str) -> list[str]:
        """The document titles that ``text`` names: whole words, case and punctuation aside, a possessive "'s"
        dropped; a title is a document id without its trailing "(…)", folder and extension, of 3 or more
        characters ("Fortunella (film)" is named by "the director of film Fortunella")."""
        with self.snapshot():
            titles = self._generation().titles()
            readable = (
                None
                if self.principal is None
                else {" ".join(_title_words(title_of(d.doc_id))) for d in self.documents()}
            )
        said = _title_words(text)
        named = {
            " ".join(title)
            for i, word in enumerate(said)
            for title in titles.get(word, [])
            if tuple(said[i : i + len(title)]) == title
        }
        return sorted(named if readable is None else named & readable)

    # ------------------------------------------------------------------ metadata and filters
    def documents(self) -> list[DocumentRecord]:
        """Every document with its metadata (read once per generation) that the principal may read."""
        with self.snapshot():
            generation = self._generation()
            return generation.documents()[0] if self.principal is None else generation.readable(self.principal)[0]

    def as_principal(self, principal: Principal | None, on_denied: Callable[[str], None] | None = None) -> Index:
        """This index as ``principal`` sees it (None: the local user, every document): every operation of the
        view — searches, reads, counts, listings, outlines, tables — sees only the documents the principal may read
        (:mod:`arag.principals`), restricted before any scoring. The view shares the index's generations.
        A view of a view reads only what both principals may (``arag --as hr serve``: a token's groups within hr's).
        ``on_denied(doc_id)`` hears of each document the view was asked for by name and may not read (the server's
        audit log records these); the view answers as though it did not exist."""
        if self.principal is not None:  # a view of a view reads what both may: a view never widens
            principal = self.principal if principal is None else dataclasses.replace(principal, within=self.principal)
        view = copy.copy(self)
        view.principal, view._on_denied = principal, on_denied
        return view

    def _may_read(self, doc_id: str) -> bool:
        return self.principal is None or self.document(doc_id) is not None

    @_one_generation
    def list_documents(self, where: Filter | None = None, top_k: int = 20) -> tuple[int, list[DocumentEntry]]:
        """How many documents ``where`` lets through, and the first ``top_k`` of them in document order, each with
        its title, path, size (chunks, tokens) and first sentence."""
        scope = self.scope(where)
        documents = [d for d in self.documents() if scope is None or d.doc_id in scope.doc_ids]
        rows = self.store.doc_chunk_rows()
        entries = []
        for document in documents[: max(0, top_k)]:
            begin, end = rows.get(document.doc_id, (0, 0))
            records = self.store.chunks(range(begin, end))
            first = records.get(begin)
            sentence = ""
            if first is not None:
                spans = self._spans(first)
                sentence = first.text[spans[0][0] : spans[0][1]].strip() if spans else first.text.strip()
            metadata = document.metadata or {}
            entries.append(
                DocumentEntry(
                    document.doc_id,
                    str(metadata.get("title") or document.title or title_of(document.doc_id)),
                    str(metadata.get("path") or document.source),
                    end - begin,
                    sum(record.n_tokens for record in records.values()),
                    sentence,
                )
            )
        return len(documents), entries

    @_one_generation
    def metadata_fields(self) -> list[str]:
        """The metadata fields this index's documents have, the ones every document records first."""
        found: dict[str, None] = {}
        for document in self.documents():
            found.update(dict.fromkeys(document.metadata or {}))
        common = [f for f in ("path", "type", "title", "mtime") if f in found]
        return common + sorted(f for f in found if f not in common)

    @_one_generation
    def without_metadata(self) -> int:
        """How many documents were indexed before a-rag recorded metadata (they match no filter)."""
        return sum(1 for document in self.documents() if document.metadata is None)

    @_one_generation
    def scope(self, where: Filter | None) -> Scope | None:
        """The documents ``where`` lets through, of those the principal may read (None: no filter and the local
        user, every document)."""
        if where is None:
            return None if self.principal is None else self._generation().readable(self.principal)[1]
        matching = [d.doc_id for d in self.documents() if where.matches(d.metadata)]
        rows = self.store.doc_chunk_rows()
        return Scope(frozenset(matching), tuple(rows[d] for d in matching if d in rows))

    # ------------------------------------------------------------------ keyword
    @_one_generation
    def keyword_search(self, keywords: list[str], top_k: int = 5, where: Filter | None = None) -> list[SearchHit]:
        """The top_k chunks by Σ_k count · len(k), with the sentences that hold a keyword; only chunks of the
        documents ``where`` lets through, when given."""
        # a keyword holding NUL or a lone surrogate occurs in no stored text: it would only add 0
        keywords = [k for k in normalize_keywords(keywords) if not never_stored(k)]
        scope = self.scope(where)
        if not keywords or top_k <= 0 or (scope is not None and not scope.rows):
            return []
        lowered = [k.lower() for k in keywords]
        top = self.store.keyword_scores(keywords, top_k, scope)
        records = self.store.chunks(row for row, _ in top)
        # a row missing here belongs to a document replaced between the two reads (PostgreSQL, concurrent ingest)
        return [
            SearchHit(records[row].chunk_id, float(score), self._keyword_snippets(records[row], lowered), row)
            for row, score in top
            if row in records
        ]

    @_one_generation
    def keyword_chunk_count(self, keyword: str, limit: int) -> int:
        """Chunks containing ``keyword`` (case-insensitive), counted up to ``limit``."""
        keyword = keyword.strip()
        if not keyword or never_stored(keyword):
            return 0
        if self.principal is not None:  # counted among the chunks it may read only
            scope = self.scope(None)
            return len(self.store.keyword_scores([keyword], limit, scope)) if scope is not None and scope.rows else 0
        return self.store.keyword_chunk_count(keyword, limit)

    def _keyword_snippets(self, record: ChunkRecord, lowered: list[str]) -> list[str]:
        out = []
        for start, end in self._spans(record):
            sentence = record.text[start:end]
            low = sentence.lower()
            if any(k in low for k in lowered):
                out.append(row_as_fields(record.text, start, end) or sentence.strip())
        return out

    # ------------------------------------------------------------------ grep
    @_one_generation
    def grep(
        self, pattern: str, top_k: int = 5, where: Filter | None = None, case_sensitive: bool = False
    ) -> GrepResult:
        """A regular expression (RE2 syntax: linear time, no backreferences or lookaround) over every chunk's text,
        counted exactly — matches as RE2 finds them left to right, non-overlapping, an empty one not counted (the
        scan moves one character on after it): the chunks with the most matches first (then document order),
        each with the sentences that hold a match; only chunks of the documents ``where`` lets through, when given.
        Scans at most GREP_TIME_LIMIT_S seconds of text (``GrepResult.complete`` says whether it read everything);
        :class:`GrepError` for a pattern RE2 cannot compile."""
        compiled = compile_grep_pattern(pattern, case_sensitive)
        scope = self.scope(where)
        deadline = time.monotonic() + GREP_TIME_LIMIT_S
        counts: list[tuple[int, int, ChunkRecord]] = []
        matches = scanned = 0
        complete = True
        for record in self.store.iter_chunks():
            if scope is not None and record.doc_id not in scope.doc_ids:
                continue
            if time.monotonic() > deadline:
                complete = False
                break
            scanned += 1
            found = sum(1 for m in compiled.finditer(record.text) if m.end() > m.start())
            if found:
                matches += found
                counts.append((found, len(counts), record))
        counts.sort(key=lambda item: (-item[0], item[1]))
        hits = [
            SearchHit(record.chunk_id, float(found), self._grep_snippets(record, compiled), record.row)
            for found, _, record in counts[: max(0, top_k)]
        ]
        return GrepResult(matches, len(counts), scanned, complete, hits)

    @_one_generation
    def chunk_count(self) -> int:
        """How many chunks the principal may read (the local user: every chunk)."""
        allowed = self.scope(None)
        return self.store.n_chunks if allowed is None else sum(end - begin for begin, end in allowed.rows)

    @_one_generation
    def described(self) -> dict[str, Any]:
        """The manifest (``arag info``, ``/api/info``) with the counts of this generation and the metadata fields a
        filter can use; for a principal, counted over the documents it may read, without the files' sizes (they
        would tell the size of what it may not read)."""
        manifest = asdict(self.manifest)
        counted = {"documents": len(self.documents()), "chunks": self.chunk_count()}
        if self.principal is None:  # PostgreSQL's manifest holds the counts of its first build: these are now's
            manifest["counts"] = {**manifest["counts"], **counted, "sentences": self.store.n_sentences}
        else:
            manifest["counts"], manifest["files"] = counted, {}
        manifest["metadata_fields"] = self.metadata_fields()
        return manifest

    def iter_chunks(self) -> Iterator[ChunkRecord]:
        """Every chunk the principal may read, in document order (one store's iteration: PostgreSQL reads it from
        one snapshot)."""
        allowed = self.scope(None)
        store = self.store
        records = store.iter_chunks()
        with store.reading_as(self._reader_groups()):  # the store borrows its connection, as this reader, now
            first = next(records, None)
        for record in itertools.chain([first] if first is not None else [], records):
            if allowed is None or record.doc_id in allowed.doc_ids:
                yield record

    def _grep_snippets(self, record: ChunkRecord, compiled: Any) -> list[str]:
        starts = [m.start() for m in compiled.finditer(record.text) if m.end() > m.start()]
        out = []
        for start, end in self._spans(record):
            if any(start <= at < end for at in starts):
                out.append(row_as_fields(record.text, start, end) or record.text[start:end].strip())
        return out

    # ------------------------------------------------------------------ semantic
    @_one_generation
    def semantic_search(
        self, query: str, top_k: int = 5, exact: bool = True, where: Filter | None = None
    ) -> list[SearchHit]:
        """The top_k chunks by their best sentence's cosine with the query, with their best sentences; only
        chunks of the documents ``where`` lets through, when given (searched exactly)."""
        if not query.strip() or top_k <= 0 or self.store.n_sentences == 0:
            return []
        scope = self.scope(where)
        if scope is not None and not scope.rows:
            return []
        vector = self.embedder.embed_query(storable(query))
        return self.semantic_search_vector(vector, top_k, exact, scope)

    @_one_generation
    def semantic_search_vector(
        self, vector: np.ndarray, top_k: int = 5, exact: bool = True, scope: Scope | None = None
    ) -> list[SearchHit]:
        if self.principal is not None:  # a scope given by the caller is kept to what the principal may read
            allowed = self.scope(None)
            scope = allowed if scope is None or allowed is None else self._both(scope, allowed)
            if scope is not None and not scope.rows:
                return []
        matches = self.store.semantic_chunks(vector, top_k, exact, scope)
        records = self.store.chunks(m.row for m in matches)
        hits = []
        for match in matches:
            record = records.get(match.row)
            spans = self._spans(record) if record is not None else []
            if record is None or len(spans) != len(match.sentence_scores):
                continue  # the document was replaced between the two reads (PostgreSQL, concurrent ingest)
            snippets = self._semantic_snippets(record, spans, match.sentence_scores)
            hits.append(SearchHit(record.chunk_id, match.score, snippets, match.row))
        return hits

    # ------------------------------------------------------------------ fused
    @_one_generation
    def fused_search(
        self, query: str, top_k: int = 5, exact: bool = True, where: Filter | None = None
    ) -> tuple[list[str], list[SearchHit]]:
        """Keyword and semantic search fused by reciprocal rank (Cormack et al. 2009: Σ 1 / (60 + rank)): the
        keywords are the query's quoted phrases and its other words but common ones (:func:`query_keywords`), each
        search ranks FUSED_DEPTH chunks; ties keep the semantic order. A hit's snippets: its keyword sentences, then
        its best sentences by meaning. Returns the keywords used and the hits (score: the fused score)."""
        keywords = query_keywords(query)
        depth = max(FUSED_DEPTH, top_k)
        by_keyword = self.keyword_search(keywords, depth, where) if keywords else []
        by_meaning = self.semantic_search(query, depth, exact, where)
        fused: dict[str, float] = {}
        snippets: dict[str, list[str]] = {}
        rows: dict[str, int] = {}
        for hits in (by_meaning, by_keyword):
            for rank, hit in enumerate(hits, start=1):
                fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1.0 / (RRF_K + rank)
                rows[hit.chunk_id] = hit.row
        for hit in [*by_keyword, *by_meaning]:
            known = snippets.setdefault(hit.chunk_id, [])
            known += [s for s in hit.snippets if s not in known]
        order = sorted(fused, key=lambda chunk_id: -fused[chunk_id])  # stable: semantic rank first among ties
        return keywords, [SearchHit(c, fused[c], snippets[c], rows[c]) for c in order[:top_k]]

    @staticmethod
    def _both(first: Scope, second: Scope) -> Scope:
        doc_ids = first.doc_ids & second.doc_ids
        rows = set(second.rows)
        return Scope(doc_ids, tuple(r for r in first.rows if r in rows))

    @_one_generation
    def sentences(self, record: ChunkRecord, rows_as_fields: bool = False) -> list[str]:
        """A chunk's sentences, as indexed; with ``rows_as_fields``, a table row as search shows it: its header's
        fields ("Row: D; Harvest (kg): 230")."""
        spans = self._spans(record)
        if rows_as_fields:
            return [row_as_fields(record.text, a, b) or record.text[a:b].strip() for a, b in spans]
        return [record.text[start:end].strip() for start, end in spans]

    def _spans(self, record: ChunkRecord) -> list[tuple[int, int]]:
        return list(record.spans) if record.spans is not None else self.store.sentence_spans(record.row)

    @staticmethod
    def _semantic_snippets(record: ChunkRecord, spans: list[tuple[int, int]], sentence_scores: np.ndarray) -> list[str]:
        top = np.lexsort((np.arange(len(sentence_scores)), -np.asarray(sentence_scores)))[:SEMANTIC_SNIPPETS]
        return [
            row_as_fields(record.text, *spans[i]) or record.text[spans[i][0] : spans[i][1]].strip()
            for i in sorted(int(t) for t in top)
        ]

    # ------------------------------------------------------------------ read
    @_one_generation
    def read(self, chunk_ids: list[str], where: Filter | None = None) -> tuple[list[ChunkRecord], list[str]]:
        """Records of the known ids (in the order asked) and the ids that were not found; with ``where``, a chunk
        of a document it does not let through counts as not found."""
        rows = self.store.rows_for_ids(c for c in chunk_ids if not never_stored(c))  # others cannot exist
        records = self.store.chunks(rows.values())
        scope = self.scope(where)
        found = [
            records[rows[c]]
            for c in dict.fromkeys(chunk_ids)
            if c in rows and (scope is None or records[rows[c]].doc_id in scope.doc_ids)
        ]
        shown = {record.chunk_id for record in found}
        missing = [c for c in dict.fromkeys(chunk_ids) if c not in shown]
        if self._on_denied is not None:  # a chunk that exists, of a document the principal may not read
            for doc_id in {records[rows[c]].doc_id for c in missing if c in rows}:
                self._may_read(doc_id)
        return found, missing

    # ------------------------------------------------------------------ tables as data
    @_one_generation
    def tables(self, where: Filter | None = None) -> list[TableInfo] | None:
        """The tables found in the documents ``where`` lets through, in document order (None: the index was
        built before a-rag kept tables as data)."""
        catalog = self.store.table_catalog()
        scope = self.scope(where)
        if catalog is None or scope is None:
            return catalog
        return [table for table in catalog if table.doc_id in scope.doc_ids]

    @_one_generation
    def table_answer(self, table_id: str, query: TableQuery) -> TableAnswer:
        """A checked query's result over one table (arag.store.tabular: the query and its semantics)."""
        if self.principal is not None and table_id not in {t.table_id for t in self.tables() or []}:
            raise TableQueryError(f"no table has the id {table_id[:120]!r} here; use ids from table_list")
        return self.store.table_answer(table_id, query)

    @_one_generation
    def query_table(
        self,
        table_id: str,
        columns: list[str] | tuple[str, ...] = (),
        filters: list[str] | tuple[str, ...] = (),
        group_by: list[str] | tuple[str, ...] = (),
        aggregates: list[str] | tuple[str, ...] = (),
        order_by: str = "",
        descending: bool = False,
        limit: int = 20,
        where: Filter | None = None,
    ) -> tuple[TableInfo, TableQuery, TableAnswer]:
        """A table queried as the tool ``table_query`` takes it (arag.store.tabular.plan_query: the query's form),
        among the tables of the documents ``where`` lets through; :class:`~arag.store.tabular.TableQueryError`
        says what to change."""
        table = find_table(self.tables(where), table_id)
        query = plan_query(table, columns, filters, group_by, aggregates, order_by, descending, limit)
        return table, query, self.store.table_answer(table.table_id, query)

    # ------------------------------------------------------------------ documents' outlines
    @_one_generation
    def outline(self, doc_id: str) -> Outline | None:
        """A document's outline (arag.corpus.outline: headings, or places, pages, paragraphs, chunks); None: no
        such document."""
        records = self._document_chunks(doc_id)
        return None if records is None else outline_of(doc_id, records)

    @_one_generation
    def read_section(self, section_id: str, part: int = 1, max_tokens: int = SECTION_TOKENS) -> SectionPart | None:
        """Part ``part`` of the text under one node of a document's outline (``"<doc_id>#s<n>"``), at most
        ``max_tokens`` tokens a part; None: no such section."""
        found = section_number(section_id)
        records = self._document_chunks(found[0]) if found else None
        if found is None or records is None:
            return None
        return section_part(
            outline_of(found[0], records),
            records,
            found[1],
            part,
            max(16, max_tokens),
            self._spans,
            lambda text: count_tokens(text, self.manifest.chunker.get("encoding", "cl100k_base")),
        )

    @_one_generation
    def find_document(self, reference: str) -> str | None:
        """The document a reference names: its id, a chunk or section id of it, its path (or the end of it) or its
        title, case aside; None when none or several do."""
        reference = reference.strip()
        documents = self.documents()
        ids = {d.doc_id for d in documents}
        if reference in ids:
            return reference
        owner = section_number(reference)
        if owner and owner[0] in ids:
            return owner[0]
        if self.principal is not None and self._on_denied is not None:  # named by id, and not the principal's
            named = owner[0] if owner else reference
            if self._generation().documents()[1].get(named) is not None:
                self._on_denied(named)
                return None
        rows = self.store.rows_for_ids([reference]) if reference and not never_stored(reference) else {}
        if rows:
            owner_id = self.store.chunks(rows.values())[rows[reference]].doc_id
            if owner_id not in ids:
                self._may_read(owner_id)  # a chunk id of a document it may not read: a denial
            return owner_id if owner_id in ids else None
        wanted = reference.casefold().replace("\\", "/")
        for matches in (
            lambda d: d.doc_id.casefold() == wanted,
            lambda d: str((d.metadata or {}).get("path") or d.source).casefold() == wanted,
            lambda d: str((d.metadata or {}).get("title") or d.title or title_of(d.doc_id)).casefold() == wanted,
            lambda d: str((d.metadata or {}).get("path") or d.doc_id).casefold().endswith("/" + wanted),
        ):
            found = [d.doc_id for d in documents if matches(d)]
            if len(found) == 1:
                return found[0]
        return None

    def _document_chunks(self, doc_id: str) -> list[ChunkRecord] | None:
        if not self._may_read(doc_id):
            return None
        begin, end = self.store.doc_chunk_rows().get(doc_id, (0, 0))
        if end <= begin:
            return None
        records = self.store.chunks(range(begin, end))
        return [records[row] for row in sorted(records)]

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document's record (with its metadata), when the principal may read it."""
        with self.snapshot():
            document = self._generation().documents()[1].get(doc_id)
        if document is None or self.principal is None or self.principal.may_read(document.metadata):
            return document
        if self._on_denied is not None:
            self._on_denied(doc_id)
        return None

    def close(self) -> None:
        with self._lock:
            generations, self._shared.retired = [self._shared.current, *self._shared.retired], []
        for generation in generations:
            generation.store.close()


_TITLE_WORD = re.compile(r"\w+", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s\b")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
_DOCUMENT_EXTENSIONS = {"md", "markdown", "txt", "html", "htm", "pdf", "json", "jsonl", "csv", "rst"}


def title_of(doc_id: str) -> str:
    """A document's title: its id without folder, file extension or a trailing "(…)"."""
    name = doc_id.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    if dot and stem and extension.lower() in _DOCUMENT_EXTENSIONS:
        name = stem
    return _DISAMBIGUATION.sub("", name)


def _title_words(text: str) -> list[str]:
    return _TITLE_WORD.findall(_POSSESSIVE.sub("", text).lower())
