"""The ``Index``: opened once, shared by every tool. Exact keyword and semantic search, chunk reads.

Formulas (paper §3.2):

* keyword:  score(c) = Σ_k count(lower(k), lower(c)) · len(k), counting non-overlapping occurrences
  (Python's ``str.count``); ties broken by document order (chunk row ascending).
* semantic: score(c) = max over sentences s of c of cos(q, s); ties broken by document order.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arag.corpus.readers import never_stored, storable
from arag.embedding.embedders import Embedder, load_embedder
from arag.errors import EmbedderError
from arag.filters import Filter
from arag.settings import IndexSettings
from arag.store import ChunkRecord, DocumentRecord, Scope, Store, open_store
from arag.store.embedded import ivf

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
        self._titles: dict[str, list[tuple[str, ...]]] | None = None  # first word → titles as words
        self._titles_lock = threading.Lock()
        self._documents: list[DocumentRecord] | None = None  # with their metadata, read once for filters
        self._documents_by_id: dict[str, DocumentRecord] = {}
        self._documents_lock = threading.Lock()

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
        return cls(open_store(location, settings), embedder, settings.threads)

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

    def titles_named_in(self, text: str) -> list[str]:
        """The document titles that ``text`` names: whole words, case and punctuation aside, a possessive "'s"
        dropped; a title is a document id without its trailing "(…)", folder and extension, of 3 or more
        characters ("Fortunella (film)" is named by "the director of film Fortunella")."""
        with self._titles_lock:
            if self._titles is None:
                self._titles = {}
                for document in self.store.documents():
                    words = tuple(_title_words(_title_of(document.doc_id)))
                    if words and len(" ".join(words)) >= 3:
                        self._titles.setdefault(words[0], []).append(words)
        said = _title_words(text)
        named = {
            " ".join(title)
            for i, word in enumerate(said)
            for title in self._titles.get(word, [])
            if tuple(said[i : i + len(title)]) == title
        }
        return sorted(named)

    # ------------------------------------------------------------------ metadata and filters
    def documents(self) -> list[DocumentRecord]:
        """Every document with its metadata (read once: an opened index's documents do not change)."""
        with self._documents_lock:
            if self._documents is None:
                self._documents = self.store.documents()
                self._documents_by_id = {document.doc_id: document for document in self._documents}
            return self._documents

    def metadata_fields(self) -> list[str]:
        """The metadata fields this index's documents have, the ones every document records first."""
        found: dict[str, None] = {}
        for document in self.documents():
            found.update(dict.fromkeys(document.metadata or {}))
        common = [f for f in ("path", "type", "title", "mtime") if f in found]
        return common + sorted(f for f in found if f not in common)

    def without_metadata(self) -> int:
        """How many documents were indexed before a-rag recorded metadata (they match no filter)."""
        return sum(1 for document in self.documents() if document.metadata is None)

    def scope(self, where: Filter | None) -> Scope | None:
        """The documents ``where`` lets through (None: no filter, every document)."""
        if where is None:
            return None
        matching = [d.doc_id for d in self.documents() if where.matches(d.metadata)]
        rows = self.store.doc_chunk_rows()
        return Scope(frozenset(matching), tuple(rows[d] for d in matching if d in rows))

    # ------------------------------------------------------------------ keyword
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

    def keyword_chunk_count(self, keyword: str, limit: int) -> int:
        """Chunks containing ``keyword`` (case-insensitive), counted up to ``limit``."""
        keyword = keyword.strip()
        if not keyword or never_stored(keyword):
            return 0
        return self.store.keyword_chunk_count(keyword, limit)

    def _keyword_snippets(self, record: ChunkRecord, lowered: list[str]) -> list[str]:
        out = []
        for start, end in self._spans(record):
            sentence = record.text[start:end]
            low = sentence.lower()
            if any(k in low for k in lowered):
                out.append(sentence.strip())
        return out

    # ------------------------------------------------------------------ semantic
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

    def semantic_search_vector(
        self, vector: np.ndarray, top_k: int = 5, exact: bool = True, scope: Scope | None = None
    ) -> list[SearchHit]:
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

    def sentences(self, record: ChunkRecord) -> list[str]:
        """A chunk's sentences, as indexed."""
        return [record.text[start:end].strip() for start, end in self._spans(record)]

    def _spans(self, record: ChunkRecord) -> list[tuple[int, int]]:
        return list(record.spans) if record.spans is not None else self.store.sentence_spans(record.row)

    @staticmethod
    def _semantic_snippets(record: ChunkRecord, spans: list[tuple[int, int]], sentence_scores: np.ndarray) -> list[str]:
        top = np.lexsort((np.arange(len(sentence_scores)), -np.asarray(sentence_scores)))[:SEMANTIC_SNIPPETS]
        return [record.text[spans[i][0] : spans[i][1]].strip() for i in sorted(int(t) for t in top)]

    # ------------------------------------------------------------------ read
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
        return found, missing

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document's record (with its metadata)."""
        self.documents()
        return self._documents_by_id.get(doc_id)

    def close(self) -> None:
        self.store.close()


_TITLE_WORD = re.compile(r"\w+", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s\b")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
_DOCUMENT_EXTENSIONS = {"md", "markdown", "txt", "html", "htm", "pdf", "json", "jsonl", "csv", "rst"}


def _title_of(doc_id: str) -> str:
    """A document's title: its id without folder, file extension or a trailing "(…)"."""
    name = doc_id.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    if dot and stem and extension.lower() in _DOCUMENT_EXTENSIONS:
        name = stem
    return _DISAMBIGUATION.sub("", name)


def _title_words(text: str) -> list[str]:
    return _TITLE_WORD.findall(_POSSESSIVE.sub("", text).lower())
