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

from arag.chunking import chunk_document, count_tokens, split_sentences
from arag.corpus import Document, Problem, iter_sources
from arag.embedding import Embedder, load_embedder
from arag.errors import ConfigError, IndexFormatError, IndexNotFoundError, IngestError
from arag.settings import IndexSettings
from arag.store import DocumentRecord, Manifest, is_database_url
from arag.store.embedded import EmbeddedStore, GenerationWriter, dequantize

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


@dataclass(slots=True)
class _PreparedChunk:
    chunk_id: str
    ordinal: int
    text: str
    n_tokens: int
    spans: list[tuple[int, int]]


def sentence_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _prepare(doc: Document, settings: IndexSettings) -> list[_PreparedChunk]:
    encoding = settings.chunker.encoding
    if doc.chunks is not None:  # already chunked (A-RAG chunks.json): ids and texts are kept as they are
        return [
            _PreparedChunk(
                chunk_id, i, text, count_tokens(text, encoding), [(s.start, s.end) for s in split_sentences(text)]
            )
            for i, (chunk_id, text) in enumerate(doc.chunks)
        ]
    return [
        _PreparedChunk(
            f"{doc.doc_id}#{draft.ordinal}",
            draft.ordinal,
            draft.text,
            draft.n_tokens,
            [(s.start, s.end) for s in draft.sentences],
        )
        for draft in chunk_document(doc.text, settings.chunker.chunk_tokens, encoding)
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
) -> IndexReport:
    """Add ``sources`` to the index at ``location`` (created if missing): a directory, or a PostgreSQL URL
    (``shards``: the shard servers' URLs when a new PostgreSQL index is distributed). Returns what happened;
    sources that cannot be read are skipped and listed in ``report.problems`` (with ``strict``, nothing is
    written)."""
    if is_database_url(location):
        return _build_postgres(sources, str(location), settings, embedder, rebuild, progress, strict, shards or [])
    if shards:
        raise ConfigError("--shard needs a PostgreSQL index (--index postgresql://…?index=NAME)")
    return _build_embedded(sources, Path(location), settings, embedder, rebuild, progress, strict)


def _read_sources(sources: list[Path], strict: bool, report: IndexReport) -> list[Document]:
    new_docs: list[Document] = []
    for _path, result in iter_sources(sources):
        if isinstance(result, Problem):
            report.problems.append(result)
        else:
            new_docs.extend(result)
    if strict and report.problems:
        listed = "; ".join(str(p) for p in report.problems[:5])
        more = f" (+{len(report.problems) - 5} more)" if len(report.problems) > 5 else ""
        raise IngestError(f"nothing written (--strict): {len(report.problems)} unreadable source(s): {listed}{more}")
    return new_docs


def _nothing_to_index(report: IndexReport) -> IngestError:
    detail = "; ".join(str(p) for p in report.problems[:3])
    return IngestError(f"nothing to index{': ' + detail if detail else ''}")


def _plan(
    previous: list[DocumentRecord], new_docs: list[Document], report: IndexReport
) -> list[tuple[DocumentRecord, Document | None]]:
    """The final document list: previous documents in order (replaced in place, or dropped when their source
    was re-read without them), then new ones. ``None`` = keep the stored document as it is."""
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
            plan.append((DocumentRecord(new.doc_id, new.source, new.title, new.content_hash), new))
        elif old.source in replaced_sources:
            report.removed += 1
        else:
            plan.append((old, None))
    for new in new_docs:
        if new.doc_id in new_by_id:
            report.added.append(new.doc_id)
            plan.append((DocumentRecord(new.doc_id, new.source, new.title, new.content_hash), new))
    return plan


def _check_settings(manifest: Manifest, settings: IndexSettings, where: str) -> None:
    built = (manifest.embedder.get("name"), manifest.chunker, manifest.vector_dtype, manifest.ann)
    wanted = (settings.embedder, settings.chunker.model_dump(), settings.vector_dtype, settings.ann)
    if built != wanted:
        raise IndexFormatError(
            f"index {where} was built with embedder={built[0]}, chunker={built[1]}, "
            f"vector_dtype={built[2]}, ann={built[3]}; these settings differ "
            "(use --rebuild to start a new index with them)"
        )


def _build_embedded(
    sources: list[Path],
    index_dir: Path,
    settings: IndexSettings,
    embedder: Embedder | None,
    rebuild: bool,
    progress: StageProgress | None,
    strict: bool,
) -> IndexReport:
    report = IndexReport()
    previous: EmbeddedStore | None = None
    if not rebuild:
        try:
            previous = EmbeddedStore(index_dir, threads=settings.threads)
        except IndexNotFoundError:
            previous = None
    try:
        if previous is not None:
            _check_settings(previous.manifest, settings, str(previous.index_dir))
        new_docs = _read_sources(sources, strict, report)
    except BaseException:
        if previous is not None:
            previous.close()
        raise
    if not new_docs and previous is None:
        raise _nothing_to_index(report)
    old_ranges = previous.doc_chunk_rows() if previous is not None else {}
    plan = _plan(previous.documents() if previous is not None else [], new_docs, report)

    manifest_base: dict[str, object] = {
        "chunker": settings.chunker.model_dump(),
        "vector_dtype": settings.vector_dtype,
        "ann": settings.ann,
    }
    writer = GenerationWriter(index_dir, manifest_base)
    try:
        offsets = [0]
        spans: list[tuple[int, int]] = []
        texts: list[str] = []
        chunk_ids: set[str] = set()
        advance = progress("chunking", len(plan)) if progress else None
        for record, new in plan:
            if new is None:
                assert previous is not None
                lo, hi = old_ranges.get(record.doc_id, (0, 0))
                old_chunks = previous.chunks(range(lo, hi))
                prepared = [
                    _PreparedChunk(c.chunk_id, i, c.text, c.n_tokens, previous.sentence_spans(c.row))
                    for i, c in enumerate(old_chunks[r] for r in range(lo, hi))
                ]
            else:
                prepared = _prepare(new, settings)
            writer.add_document(record)
            for chunk in prepared:
                if chunk.chunk_id in chunk_ids:
                    raise IngestError(f"chunk id {chunk.chunk_id!r} appears twice (document {record.doc_id!r})")
                chunk_ids.add(chunk.chunk_id)
                for start, end in chunk.spans:
                    spans.append((start, end))
                    texts.append(chunk.text[start:end].strip())
                offsets.append(len(spans))
            writer.add_chunks(record.doc_id, [(c.chunk_id, c.ordinal, c.text, c.n_tokens) for c in prepared])
            if advance:
                advance(1)

        hashes = np.fromiter((sentence_hash(t) for t in texts), dtype=np.uint64, count=len(texts))
        vectors, embedder_info = _vectors_for(texts, hashes, previous, settings, embedder, report, progress)
        report.documents, report.chunks, report.sentences = len(plan), len(offsets) - 1, len(texts)
        counts = {"documents": report.documents, "chunks": report.chunks, "sentences": report.sentences}
        writer.finish(
            np.asarray(offsets),
            np.asarray(spans, dtype=np.int32).reshape(-1, 2),
            hashes,
            vectors,
            settings.vector_dtype,
            settings.ann,
            settings.threads,
            counts,
        )
        if previous is not None:
            previous.close()
        writer.commit(embedder_info)
    except BaseException:
        writer.abort()
        raise
    return report


# sentences embedded and written per batch of a PostgreSQL ingest: bounds memory, not transactions
PG_BATCH_SENTENCES = 8192


def _build_postgres(
    sources: list[Path],
    url: str,
    settings: IndexSettings,
    embedder: Embedder | None,
    rebuild: bool,
    progress: StageProgress | None,
    strict: bool,
    shards: list[str],
) -> IndexReport:
    """Ingest into PostgreSQL: only new or changed documents are written (COPY, in one transaction), and
    every sentence whose text is already in the index reuses its vector."""
    import datetime

    from arag import __version__
    from arag.store import FORMAT_VERSION
    from arag.store.postgres import PendingDocument, PgWriter

    report = IndexReport()
    new_docs = _read_sources(sources, strict, report)
    writer = PgWriter(url, rebuild=rebuild)
    try:
        with writer.errors():
            where = writer.location.display
            if writer.manifest is not None:
                _check_settings(writer.manifest, settings, where)
            stored = writer.documents()
            if not new_docs and not stored:
                raise _nothing_to_index(report)
            plan = _plan([record for record, _seq in stored], new_docs, report)
            seq_of = {record.doc_id: seq for record, seq in stored}
            next_seq = max(seq_of.values(), default=-1) + 1

            if writer.manifest is None or embedder is not None:
                embedder = embedder or load_embedder(
                    settings.embedder, threads=settings.threads, batch_size=settings.embed_batch_size
                )
                embedder_info: dict[str, object] = {
                    "name": settings.embedder,
                    "dims": embedder.dims,
                    "fingerprint": embedder.fingerprint,
                }
            else:
                embedder_info = dict(writer.manifest.embedder)
            writer.begin(settings.vector_dtype, int(embedder_info["dims"]), settings.ann, shards)  # type: ignore[call-overload]

            kept = {record.doc_id for record, _new in plan}
            writer.remove([record.doc_id for record, _seq in stored if record.doc_id not in kept])
            to_write = [(record, new) for record, new in plan if new is not None]
            rewriting = {record.doc_id for record, _new in to_write}
            advance = progress("writing", len(to_write)) if progress else None
            seen_chunk_ids: set[str] = set()
            batch: list[tuple[DocumentRecord, int, list[_PreparedChunk], list[str]]] = []
            batch_sentences = 0

            def flush() -> None:
                nonlocal embedder, batch_sentences
                batch_ids = [c.chunk_id for _r, _s, prepared, _t in batch for c in prepared]
                for chunk_id, owner in writer.chunk_id_owners(batch_ids).items():
                    if owner not in rewriting:
                        raise IngestError(f"chunk id {chunk_id!r} already belongs to document {owner!r}")
                texts = [t for _r, _s, _c, doc_texts in batch for t in doc_texts]
                hashes = np.fromiter((sentence_hash(t) for t in texts), dtype=np.uint64, count=len(texts)).view(
                    np.int64
                )
                known = writer.known_vectors(hashes.tolist())
                missing = {int(h): t for h, t in zip(hashes.tolist(), texts, strict=True) if int(h) not in known}
                if missing:
                    if embedder is None:
                        embedder = load_embedder(
                            settings.embedder, threads=settings.threads, batch_size=settings.embed_batch_size
                        )
                        if embedder.fingerprint != embedder_info.get("fingerprint"):
                            raise IndexFormatError(
                                f"the embedder now resolves to {embedder.fingerprint} but the index was built with "
                                f"{embedder_info.get('fingerprint')}; use --rebuild"
                            )
                    fresh = embedder.embed_documents(list(missing.values()))
                    known.update(zip(missing, fresh, strict=True))
                    report.embedded += len(missing)
                report.reused_vectors += sum(1 for h in hashes.tolist() if int(h) not in missing)
                pending = []
                start = 0
                for record, seq, prepared, doc_texts in batch:
                    end = start + len(doc_texts)
                    doc_hashes = hashes[start:end]
                    vectors = (
                        np.stack([known[int(h)] for h in doc_hashes.tolist()]) if end > start else np.zeros((0, 1))
                    )
                    chunks = [(c.chunk_id, c.text, c.n_tokens, c.spans) for c in prepared]
                    pending.append(PendingDocument(record, seq, chunks, doc_hashes, vectors))
                    start = end
                writer.write(pending)
                if advance:
                    advance(len(batch))
                batch.clear()
                batch_sentences = 0

            for record, new in to_write:
                assert new is not None
                prepared = _prepare(new, settings)
                for chunk in prepared:
                    if chunk.chunk_id in seen_chunk_ids:
                        raise IngestError(f"chunk id {chunk.chunk_id!r} appears twice (document {record.doc_id!r})")
                    seen_chunk_ids.add(chunk.chunk_id)
                doc_texts = [c.text[a:b].strip() for c in prepared for a, b in c.spans]
                seq = seq_of.get(record.doc_id, -1)
                if seq < 0:
                    seq, next_seq = next_seq, next_seq + 1
                batch.append((record, seq, prepared, doc_texts))
                batch_sentences += len(doc_texts)
                if batch_sentences >= PG_BATCH_SENTENCES:
                    flush()
            if batch:
                flush()
            counts = writer.counts()
            report.documents, report.chunks, report.sentences = (
                counts["documents"],
                counts["chunks"],
                counts["sentences"],
            )
            manifest = Manifest(
                format_version=FORMAT_VERSION,
                generation=writer.next_generation(),
                embedder=embedder_info,
                chunker=settings.chunker.model_dump(),
                vector_dtype=settings.vector_dtype,
                ann=settings.ann,
                counts=counts,
                created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                arag_version=__version__,
            )
            writer.commit(manifest)
    finally:
        writer.close()
    return report


def _vectors_for(
    texts: list[str],
    hashes: np.ndarray,
    previous: EmbeddedStore | None,
    settings: IndexSettings,
    embedder: Embedder | None,
    report: IndexReport,
    progress: StageProgress | None,
) -> tuple[np.ndarray, dict[str, object]]:
    """One vector per sentence: reused from the previous generation by text hash, else embedded once per text."""
    reuse: dict[int, int] = {}
    if previous is not None and previous.n_sentences:
        old_hashes = previous.sentence_hashes()
        reuse = {int(h): i for i, h in enumerate(old_hashes.tolist())}
    missing_texts: dict[int, str] = {}
    for h, text in zip(hashes.tolist(), texts, strict=True):
        if h not in reuse and h not in missing_texts:
            missing_texts[h] = text
    if embedder is None and (missing_texts or previous is None):
        embedder = load_embedder(settings.embedder, threads=settings.threads, batch_size=settings.embed_batch_size)
    if embedder is not None:
        info: dict[str, object] = {
            "name": settings.embedder,
            "dims": embedder.dims,
            "fingerprint": embedder.fingerprint,
        }
    else:
        assert previous is not None
        info = dict(previous.manifest.embedder)
    if (
        embedder is not None
        and previous is not None
        and previous.manifest.embedder.get("fingerprint") not in (None, embedder.fingerprint)
    ):
        raise IndexFormatError(
            f"the embedder now resolves to {embedder.fingerprint} but the index was built with "
            f"{previous.manifest.embedder['fingerprint']}; use --rebuild"
        )
    dims = int(info["dims"])  # type: ignore[call-overload]
    fresh_hashes = list(missing_texts)
    advance = progress("embedding", len(fresh_hashes)) if progress else None
    fresh = (
        embedder.embed_documents([missing_texts[h] for h in fresh_hashes], progress=advance)
        if embedder is not None and fresh_hashes
        else np.zeros((0, dims), np.float32)
    )
    fresh_row = {h: i for i, h in enumerate(fresh_hashes)}
    report.embedded = len(fresh_hashes)
    out = np.empty((len(texts), dims), dtype=np.float32)
    reused_rows = [(i, reuse[h]) for i, h in enumerate(hashes.tolist()) if h not in fresh_row]
    if reused_rows:
        assert previous is not None
        targets = np.fromiter((i for i, _ in reused_rows), dtype=np.int64, count=len(reused_rows))
        sources = np.fromiter((j for _, j in reused_rows), dtype=np.int64, count=len(reused_rows))
        out[targets] = previous.sentence_vectors(sources)
        if previous.manifest.vector_dtype != "f32":
            out[targets] = dequantize(out[targets])
    for i, h in enumerate(hashes.tolist()):
        row = fresh_row.get(h)
        if row is not None:
            out[i] = fresh[row]
    report.reused_vectors = len(reused_rows)
    return out, info
