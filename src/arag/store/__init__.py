"""Storage behind a small interface.

:class:`Store` is everything the rest of a-rag may know about where chunks, sentences and vectors
live. The embedded implementation (SQLite + NumPy files in one directory, ``store/embedded``) is the default;
PostgreSQL + pgvector (``store/postgres``) implements the same protocol. :func:`open_store` is the one place that
decides which of them serves an index.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from arag.store.base import (
    FORMAT_VERSION,
    ChunkRecord,
    DocumentRecord,
    FileDigest,
    IndexWriter,
    KeptDocument,
    Manifest,
    PendingDocument,
    PreparedChunk,
    Scope,
    SemanticMatch,
    Store,
    best_per_chunk,
    display_location,
    is_database_url,
    parse_manifest,
)

if TYPE_CHECKING:
    from arag.settings import IndexSettings

__all__ = [
    "FORMAT_VERSION",
    "ChunkRecord",
    "DocumentRecord",
    "FileDigest",
    "IndexWriter",
    "KeptDocument",
    "Manifest",
    "PendingDocument",
    "PreparedChunk",
    "Scope",
    "SemanticMatch",
    "Store",
    "best_per_chunk",
    "display_location",
    "is_database_url",
    "open_store",
    "open_writer",
    "parse_manifest",
]


def open_store(location: str | Path, settings: IndexSettings | None = None) -> Store:
    """The one place that decides which backend serves an index: a ``postgresql://`` URL is served by
    PostgreSQL + pgvector, anything else is an embedded index directory. Each backend takes its own search-time
    settings from ``settings`` (threads; IVF probes; HNSW ef_search and the statement timeout)."""
    from arag.settings import IndexSettings

    settings = settings or IndexSettings()
    if is_database_url(location):
        from arag.store.postgres.store import PgStore

        return PgStore(
            str(location),
            threads=settings.threads,
            ef_search=settings.hnsw_ef_search,
            statement_timeout_s=settings.pg_statement_timeout_s,
        )
    from arag.store.embedded.store import EmbeddedStore

    return EmbeddedStore(Path(location), threads=settings.threads, probes=settings.ann_probes)


def open_writer(
    location: str | Path, settings: IndexSettings, rebuild: bool = False, shards: list[str] | None = None
) -> IndexWriter:
    """The writer of one ingest into the index at ``location``, chosen as :func:`open_store` chooses the reader
    (``shards``: a new PostgreSQL index distributed over these servers)."""
    from arag.errors import ConfigError

    if is_database_url(location):
        from arag.store.postgres.store import PgWriter

        return PgWriter(str(location), rebuild=rebuild, settings=settings, shards=shards)
    if shards:
        raise ConfigError("--shard needs a PostgreSQL index (--index postgresql://…?index=NAME)")
    from arag.store.embedded.store import EmbeddedWriter

    return EmbeddedWriter(Path(location), settings, rebuild=rebuild)
