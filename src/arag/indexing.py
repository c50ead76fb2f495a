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
from arag.errors import IndexFormatError, IndexNotFoundError, IngestError
from arag.settings import IndexSettings
from arag.store import DocumentRecord
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


def _check_compatible(previous: EmbeddedStore, settings: IndexSettings) -> None:
    manifest = previous.manifest
    built = (manifest.embedder.get("name"), manifest.chunker, manifest.vector_dtype, manifest.ann)
    wanted = (settings.embedder, settings.chunker.model_dump(), settings.vector_dtype, settings.ann)
    if built != wanted:
        raise IndexFormatError(
            f"index {previous.index_dir} was built with embedder={built[0]}, chunker={built[1]}, "
            f"vector_dtype={built[2]}, ann={built[3]}; these settings differ "
            "(use --rebuild to start a new index with them)"
        )


def build_index(
    sources: list[Path],
    index_dir: Path,
    settings: IndexSettings,
    embedder: Embedder | None = None,
    rebuild: bool = False,
    progress: StageProgress | None = None,
    strict: bool = False,
) -> IndexReport:
    """Add ``sources`` to the index at ``index_dir`` (created if missing). Returns what happened; sources
    that cannot be read are skipped and listed in ``report.problems`` (with ``strict``, nothing is written)."""
    report = IndexReport()
    previous: EmbeddedStore | None = None
    if not rebuild:
        try:
            previous = EmbeddedStore(index_dir, threads=settings.threads)
        except IndexNotFoundError:
            previous = None
    if previous is not None:
        _check_compatible(previous, settings)

    new_docs: list[Document] = []
    for _path, result in iter_sources(sources):
        if isinstance(result, Problem):
            report.problems.append(result)
        else:
            new_docs.extend(result)
    if strict and report.problems:
        if previous is not None:
            previous.close()
        listed = "; ".join(str(p) for p in report.problems[:5])
        more = f" (+{len(report.problems) - 5} more)" if len(report.problems) > 5 else ""
        raise IngestError(f"nothing written (--strict): {len(report.problems)} unreadable source(s): {listed}{more}")
    if not new_docs and previous is None:
        detail = "; ".join(str(p) for p in report.problems[:3])
        raise IngestError(f"nothing to index{': ' + detail if detail else ''}")

    if previous is not None:
        _keep_known_doc_ids(new_docs, previous.documents())
    replaced_sources = {d.source for d in new_docs}
    new_by_id = {d.doc_id: d for d in new_docs}
    if len(new_by_id) != len(new_docs):
        dupes = sorted({d.doc_id for d in new_docs if sum(1 for x in new_docs if x.doc_id == d.doc_id) > 1})
        raise IngestError(f"two documents share the id {dupes[0]!r}; give them distinct ids")

    # Plan the final document list: previous documents in order (replaced in place), then new ones.
    plan: list[tuple[DocumentRecord, Document | None]] = []  # (record, new document or None = copy old)
    old_ranges: dict[str, tuple[int, int]] = {}
    if previous is not None:
        old_ranges = previous.doc_chunk_rows()
        for old in previous.documents():
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
