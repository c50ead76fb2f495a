"""Offline indexing (paper §3.1): sources → documents → chunks → sentences → vectors → store.

Incremental: documents whose content is unchanged keep their chunks, and every sentence whose text
was embedded before reuses its vector, so only new text is embedded. Re-indexing a file replaces
all documents that came from it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arag.corpus.chunking import chunk_document, count_tokens, split_sentences
from arag.corpus.readers import Document, Problem, Structure, discover, iter_sources
from arag.corpus.tables import row_as_fields
from arag.embedding.embedders import Embedder, load_embedder
from arag.errors import IndexFormatError, IngestError
from arag.settings import IndexSettings
from arag.store import open_writer
from arag.store.base import (
    DocumentRecord,
    IndexWriter,
    KeptDocument,
    Manifest,
    PendingDocument,
    PreparedChunk,
)

# (total, advance) callbacks drive the CLI's progress bars without tying indexing to rich.
StageProgress = Callable[[str, int], Callable[[int], None]]


@dataclass(slots=True)
class IndexReport:
    documents: int = 0
    chunks: int = 0
    sentences: int = 0
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    problems: list[Problem] = field(default_factory=list)
    # without sync: stored documents whose file is gone from a source folder, kept (a sync would remove them)
    stale: list[str] = field(default_factory=list)


def sentence_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _prepare(doc: Document, settings: IndexSettings) -> list[PreparedChunk]:
    encoding = settings.chunker.encoding
    if doc.chunks is not None:  # already chunked (A-RAG chunks.json): ids and texts are kept as they are
        return [
            PreparedChunk(
                chunk_id, i, text, count_tokens(text, encoding), [(s.start, s.end) for s in split_sentences(text)]
            )
            for i, (chunk_id, text) in enumerate(doc.chunks)
        ]
    structure = doc.structure or Structure()
    return [
        PreparedChunk(
            f"{doc.doc_id}#{draft.ordinal}",
            draft.ordinal,
            draft.text,
            draft.n_tokens,
            [(s.start, s.end) for s in draft.sentences],
            structure.locate(draft.start, draft.end),
        )
        for draft in chunk_document(doc.text, settings.chunker.chunk_tokens, encoding, structure.blocks)
    ]


def _keep_known_doc_ids(new_docs: list[Document], old_docs: list[DocumentRecord]) -> None:
    """A file gets the same document id however it is named (alone, or inside a folder), so its chunk ids
    stay stable across re-indexing: a one-document source already in the index keeps its old id."""
    old_by_source: dict[str, list[str]] = {}
    for old in old_docs:
        old_by_source.setdefault(old.source, []).append(old.doc_id)
    new_by_source: dict[str, list[Document]] = {}
    for doc in new_docs:
        new_by_source.setdefault(doc.source, []).append(doc)
    for source, docs in new_by_source.items():
        known = old_by_source.get(source, [])
        if len(docs) == 1 and len(known) == 1 and docs[0].chunks is None and docs[0].doc_id != known[0]:
            if docs[0].metadata.get("path") == docs[0].doc_id:  # a file's path is its id: it keeps both
                docs[0].metadata["path"] = known[0]
            docs[0].doc_id = known[0]
            docs[0].content_hash = ""
            docs[0].__post_init__()


def build_index(
    sources: list[Path],
    location: str | Path,
    settings: IndexSettings,
    embedder: Embedder | None = None,
    rebuild: bool = False,
    progress: StageProgress | None = None,
    strict: bool = False,
    shards: list[str] | None = None,
    sync: bool = False,
) -> IndexReport:
    """Add ``sources`` to the index at ``location`` (created if missing): a directory, or a PostgreSQL URL
    (``shards``: the shard servers' URLs when a new PostgreSQL index is distributed). Returns what happened;
    sources that cannot be read are skipped and listed in ``report.problems`` (with ``strict``, nothing is
    written). One pipeline for every store: the store's :class:`~arag.store.base.IndexWriter` holds only what
    differs.

    With ``sync``, the index follows the sources: a stored document whose file lies in a source folder (or is a
    source file) and is gone is removed too (a renamed file: removed under its old name, added under the new one,
    its vectors reused); a file that is there but cannot be read keeps its stored documents (and is reported), so
    a file caught mid-write loses nothing. All of it is one generation (embedded) or one transaction (PostgreSQL):
    readers see the index before the sync or after it, never between."""
    report = IndexReport()
    writer = open_writer(location, settings, rebuild=rebuild, shards=shards or [])
    try:
        if writer.manifest is not None:
            _check_settings(writer.manifest, settings, writer.where)
        new_docs = _read_sources(sources, strict, report, progress)
        stored = writer.documents()
        if not new_docs and not stored:
            raise _nothing_to_index(report)
        gone = _gone(sources, stored, report)
        if not sync:
            report.stale, gone = sorted(r.doc_id for r in stored if r.source in gone), set()
        plan = _plan(stored, new_docs, report, gone)
        if writer.manifest is not None and not rebuild and _nothing_changed(plan, stored):
            counts = writer.manifest.counts  # no new generation for an index that would stay the same
            return _counted(report, counts)
        vectors = _Vectors(writer, settings, embedder, report, progress)
        writer.begin(vectors.dims)
        kept = {record.doc_id for record, new in plan if new is None}
        advance = progress("chunking", len(plan)) if progress else None
        batch: list[tuple[DocumentRecord, list[PreparedChunk] | None]] = []
        batch_sentences, chunk_ids = 0, set[str]()
        for record, new in plan:
            prepared = None
            if new is not None:
                prepared = _prepare(new, settings)
                for chunk in prepared:
                    if chunk.chunk_id in chunk_ids:
                        raise IngestError(f"chunk id {chunk.chunk_id!r} appears twice (document {record.doc_id!r})")
                    chunk_ids.add(chunk.chunk_id)
                batch_sentences += sum(len(chunk.spans) for chunk in prepared)
            batch.append((record, prepared))
            if advance:
                advance(1)
            if writer.batch_sentences is not None and batch_sentences >= writer.batch_sentences:
                _write_batch(writer, batch, vectors, kept, report)
                batch, batch_sentences = [], 0
        if batch:
            _write_batch(writer, batch, vectors, kept, report)
        # removed last: a renamed file's sentences find their vectors under its old name
        planned = {record.doc_id for record, _new in plan}
        writer.remove([record.doc_id for record in stored if record.doc_id not in planned])
        counts = writer.commit(vectors.info)
    finally:
        writer.close()
    return _counted(report, counts)


def _counted(report: IndexReport, counts: dict[str, int]) -> IndexReport:
    report.documents, report.chunks, report.sentences = counts["documents"], counts["chunks"], counts["sentences"]
    return report


def _nothing_changed(plan: list[tuple[DocumentRecord, Document | None]], stored: list[DocumentRecord]) -> bool:
    """The plan keeps every stored document as it is, in the same order."""
    return all(new is None for _record, new in plan) and [r.doc_id for r, _ in plan] == [r.doc_id for r in stored]


def _write_batch(
    writer: IndexWriter,
    batch: list[tuple[DocumentRecord, list[PreparedChunk] | None]],
    vectors: _Vectors,
    kept: set[str],
    report: IndexReport,
) -> None:
    """Write one batch of the plan in order: its new documents' sentences get their vectors (reused by text
    hash, else embedded), kept documents stay as they are. A chunk id a kept document holds cannot be reused."""
    new_ids = [chunk.chunk_id for _record, prepared in batch for chunk in prepared or []]
    for chunk_id, owner in writer.chunk_owners(new_ids).items():
        if owner in kept:
            raise IngestError(f"chunk id {chunk_id!r} already belongs to document {owner!r}")
    # a table row is embedded as its header's fields ("Depot: Depot 77; Crates: 539"), what a query about it names
    texts = [
        row_as_fields(chunk.text, a, b) or chunk.text[a:b].strip()
        for _r, prepared in batch
        for chunk in prepared or []
        for a, b in chunk.spans
    ]
    hashes = np.fromiter((sentence_hash(t) for t in texts), dtype=np.uint64, count=len(texts))
    found = vectors.for_sentences(texts, hashes)
    documents: list[PendingDocument | KeptDocument] = []
    start = 0
    for record, prepared in batch:
        if prepared is None:
            documents.append(KeptDocument(record))
            continue
        end = start + sum(len(chunk.spans) for chunk in prepared)
        documents.append(PendingDocument(record, prepared, hashes[start:end], found[start:end]))
        start = end
    report.reused_vectors += writer.write(documents)


class _Vectors:
    """One vector per sentence: one the index has for the same text (by hash), one embedded earlier in this
    ingest, or a new one, each distinct text embedded once. The embedder is loaded only when something needs
    embedding (or the index is new), and must be the one the index was built with."""

    def __init__(
        self,
        writer: IndexWriter,
        settings: IndexSettings,
        embedder: Embedder | None,
        report: IndexReport,
        progress: StageProgress | None,
    ) -> None:
        self.writer, self.settings, self.report, self.progress = writer, settings, report, progress
        self.embedder: Embedder | None = None
        self.fresh: dict[int, np.ndarray] = {}  # embedded in this ingest, by text hash
        if writer.manifest is None or embedder is not None:
            self._use(embedder or self._load())
        else:
            self.info = dict(writer.manifest.embedder)
        self.dims = int(self.info["dims"])

    def _load(self) -> Embedder:
        settings = self.settings
        return load_embedder(settings.embedder, threads=settings.threads, batch_size=settings.embed_batch_size)

    def _use(self, embedder: Embedder) -> None:
        built = self.writer.manifest.embedder.get("fingerprint") if self.writer.manifest is not None else None
        if built not in (None, embedder.fingerprint):
            raise IndexFormatError(
                f"the embedder now resolves to {embedder.fingerprint} but the index was built with {built}; "
                "use --rebuild"
            )
        self.embedder = embedder
        self.info = {"name": self.settings.embedder, "dims": embedder.dims, "fingerprint": embedder.fingerprint}

    def for_sentences(self, texts: list[str], hashes: np.ndarray) -> np.ndarray:
        """The vectors of these sentences (float32, one row each)."""
        keys = hashes.tolist()
        unknown = [h for h in dict.fromkeys(keys) if h not in self.fresh]
        known = self.writer.known_vectors(unknown) if unknown else {}
        missing = {h: t for h, t in zip(keys, texts, strict=True) if h not in known and h not in self.fresh}
        if missing:
            if self.embedder is None:
                self._use(self._load())
            assert self.embedder is not None
            advance = self.progress("embedding", len(missing)) if self.progress else None
            embedded = self.embedder.embed_documents(list(missing.values()), progress=advance)
            self.fresh.update(zip(missing, embedded, strict=True))
            self.report.embedded += len(missing)
        self.report.reused_vectors += sum(1 for h in keys if h not in missing)
        out = np.empty((len(keys), self.dims), dtype=np.float32)
        for i, h in enumerate(keys):
            out[i] = self.fresh[h] if h in self.fresh else known[h]
        return out


def _read_sources(
    sources: list[Path], strict: bool, report: IndexReport, progress: StageProgress | None = None
) -> list[Document]:
    new_docs: list[Document] = []
    # reading is the long stage for scans (OCR, about 1–2 s a page on 2 cores): counted file by file
    found = discover(sources)
    files, problems = found
    advance = progress("reading", len(files) + len(problems)) if progress and files else None
    for _path, result in iter_sources(sources, found):
        if isinstance(result, Problem):
            report.problems.append(result)
        else:
            new_docs.extend(result)
        if advance is not None:
            advance(1)
    if strict and report.problems:
        listed = "; ".join(str(p) for p in report.problems[:5])
        more = f" (+{len(report.problems) - 5} more)" if len(report.problems) > 5 else ""
        raise IngestError(f"nothing written (--strict): {len(report.problems)} unreadable source(s): {listed}{more}")
    return new_docs


def _nothing_to_index(report: IndexReport) -> IngestError:
    detail = "; ".join(str(p) for p in report.problems[:3])
    return IngestError(f"nothing to index{': ' + detail if detail else ''}")


def _gone(sources: list[Path], stored: list[DocumentRecord], report: IndexReport) -> set[str]:
    """The stored sources (files) a sync removes: under a source folder, or a source file, and no longer there
    (a file that is there but could not be read is kept)."""
    roots = [Path(s).resolve() for s in sources]
    unreadable = {str(Path(p.path).resolve()) for p in report.problems if Path(p.path).exists()}
    gone = set()
    for source in {record.source for record in stored}:
        path = Path(source)
        inside = any(path == root or path.is_relative_to(root) for root in roots)
        if inside and source not in unreadable and not path.is_file():
            gone.add(source)
    return gone


def _plan(
    previous: list[DocumentRecord], new_docs: list[Document], report: IndexReport, gone: set[str] | None = None
) -> list[tuple[DocumentRecord, Document | None]]:
    """The final document list: previous documents in order (replaced in place, or dropped when their source
    was re-read without them or is ``gone``), then new ones. ``None`` = keep the stored document as it is."""
    _keep_known_doc_ids(new_docs, previous)
    replaced_sources = {d.source for d in new_docs}
    new_by_id = {d.doc_id: d for d in new_docs}
    if len(new_by_id) != len(new_docs):
        dupes = sorted({d.doc_id for d in new_docs if sum(1 for x in new_docs if x.doc_id == d.doc_id) > 1})
        raise IngestError(f"two documents share the id {dupes[0]!r}; give them distinct ids")
    plan: list[tuple[DocumentRecord, Document | None]] = []
    for old in previous:
        new = new_by_id.pop(old.doc_id, None)
        if new is not None and new.source != old.source:
            raise IngestError(f"document id {old.doc_id!r} from {new.source} already exists from {old.source}")
        if new is not None and new.content_hash == old.content_hash:
            report.unchanged += 1
            plan.append((old, None))
        elif new is not None:
            report.replaced.append(old.doc_id)
            plan.append((_record(new), new))
        elif old.source in replaced_sources or old.source in (gone or ()):
            report.removed += 1
        else:
            plan.append((old, None))
    for new in new_docs:
        if new.doc_id in new_by_id:
            report.added.append(new.doc_id)
            plan.append((_record(new), new))
    return plan


def _record(doc: Document) -> DocumentRecord:
    return DocumentRecord(doc.doc_id, doc.source, doc.title, doc.content_hash, dict(doc.metadata))


def _check_settings(manifest: Manifest, settings: IndexSettings, where: str) -> None:
    built = (manifest.embedder.get("name"), manifest.chunker, manifest.vector_dtype, manifest.ann)
    wanted = (settings.embedder, settings.chunker.model_dump(), settings.vector_dtype, settings.ann)
    if built != wanted:
        raise IndexFormatError(
            f"index {where} was built with embedder={built[0]}, chunker={built[1]}, "
            f"vector_dtype={built[2]}, ann={built[3]}; these settings differ "
            "(use --rebuild to start a new index with them)"
        )
