"""PostgreSQL + pgvector behind the same :class:`~arag.store.Store` protocol (extra ``pg``).

Addressing: ``postgresql://[user[:password]@][host][:port]/dbname?index=NAME`` (``postgres://`` too; any
other query parameter is passed to libpq, e.g. ``host=/run/postgresql`` for a Unix socket). Credentials may
also come from ``PG*`` environment variables or a ``.pgpass`` file, as libpq reads them; they are never
printed. Each named index is one schema, ``arag_NAME``, so several indexes share a database.

Layout (per index schema):

* ``documents(doc_id, doc_seq, source, title, content_hash, n_chunks, n_sentences)``
* ``chunks(row, doc_id, chunk_id, text, text_lower, n_tokens, spans, prev_id, next_id)``: ``row`` is
  ``doc_seq << 32 | position``, so one document's rows are consecutive and document order is row order
  without renumbering the other documents when one is replaced; ``text_lower`` is Python's ``str.lower``
  (PostgreSQL's ``lower`` depends on the collation), with a ``pg_trgm`` GIN index for keyword candidates.
* ``sentences(chunk_row, ord, doc_id, hash, embedding)``: ``vector`` (f32) or ``halfvec`` (f16), with an
  HNSW index when the index is built with ``ann``.
* ``words(word)`` and ``chunk_words(word, chunk_row, doc_id, n)`` (one node): the word index of
  arag/store/words.py — the vocabulary of ``text_lower`` (trigram GIN) and each word's occurrences per chunk
  (B-tree on ``word``), so a keyword of word characters is counted from the postings of the vocabulary words
  that contain it instead of by ``replace`` over the text of every chunk that contains it. Indexes written
  before it (the manifest's ``word_index`` is absent) and distributed ones count every keyword in the text.
* ``word_postings(word, rows, counts)`` (one node, manifest ``word_postings``): each word's postings as two
  packed arrays (big-endian int8 rows, int4 counts), rebuilt at commit for the words an ingest touched: a
  common keyword ("film", "ii") then costs a few array reads and one NumPy sum instead of joining and grouping
  hundreds of thousands of ``chunk_words`` rows per request. Scoped searches keep the join.
* ``data_tables(table_id, doc_id, doc_seq, number, caption, columns, n_rows, chunk_ids)`` and
  ``data_rows(table_id, row_no, doc_id, chunk_id, cells)`` (on the coordinator; manifest ``data_tables``): the tables
  found in the chunks (arag/store/tabular.py), each row's typed values as JSON (``c0``…, and ``l0``… the lower case
  of a text cell), queried in the reader's read-only transaction with a statement timeout of its own.
* ``manifest(id = 1, body)``: the same manifest as the embedded store (format version, embedder, chunker).

Scale-out: with shards, the coordinator's three tables are hash partitions on ``doc_id`` whose partitions
are ``postgres_fdw`` foreign tables on the shard servers, so a document's chunks and sentences live on one
node. Top-k queries are written as one branch per partition (``UNION ALL``) so that each branch — scoring,
ordering and LIMIT — is pushed down whole to its node, and the branches run concurrently (``async_capable``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from arag.errors import ConfigError, IndexFormatError, IndexNotFoundError, MissingExtraError, StoreError
from arag.principals import access_groups
from arag.store.base import (
    METADATA_SINCE,
    ChunkRecord,
    DocumentRecord,
    KeptDocument,
    Manifest,
    PendingDocument,
    Scope,
    SemanticMatch,
    new_manifest,
    parse_manifest,
)
from arag.store.tabular import (
    POSTGRES,
    QUERY_TIME_LIMIT_S,
    Column,
    TableAnswer,
    TableInfo,
    TableQuery,
    TableQueryError,
    answer_header,
    compile_query,
    lowered,
    tables_in,
)
from arag.store.words import WORD, is_word, top_scores
from arag.text import never_stored

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

    from arag.settings import IndexSettings

ROW_BITS = 32  # row = doc_seq << ROW_BITS | position of the chunk in its document
DEFAULT_INDEX = "default"
DEFAULT_EF_SEARCH = 400  # recall@10 0.988 at ×10 2Wiki, p50 8.7 ms (docs/benchmarks.md)
STATEMENT_TIMEOUT_S = 30.0
# sentences embedded and written per batch of an ingest: bounds memory, not transactions (one per ingest)
PG_BATCH_SENTENCES = 8192
CONNECT_TIMEOUT_S = 10
_INDEX_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
VECTOR_TYPES = {"f32": "vector", "f16": "halfvec"}
# pgvector operators: inner product on the f32 vectors (L2-normalised when stored, so it is the cosine, computed
# as the embedded store computes it); cosine distance on halfvec (whose rounding breaks the unit norm).
_SCORE = {
    "vector": ("<#>", "-(embedding <#> {q})", "vector_ip_ops"),
    "halfvec": ("<=>", "1 - (embedding <=> {q})", "halfvec_cosine_ops"),
}


# The pool reports reconnection attempts as log warnings; a-rag reports failures as errors. A NullHandler keeps
# Python's last-resort handler from printing them when the application configured no logging.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
        from pgvector import psycopg as _pgvector  # noqa: F401
    except ImportError:
        raise MissingExtraError("a PostgreSQL index needs the 'pg' extra: pip install 'a-rag[pg]'") from None
    return psycopg


@dataclass(frozen=True, slots=True)
class PgLocation:
    conninfo: str  # for libpq: the URL without the index parameter
    index: str
    display: str  # for messages: no password

    @property
    def schema(self) -> str:
        return f"arag_{self.index}"


def parse_location(url: str) -> PgLocation:
    """Split ``?index=NAME`` off a PostgreSQL URL; a bad URL or index name is a :class:`ConfigError`."""
    psycopg = _psycopg()
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    names = [value for key, value in params if key == "index"]
    rest = [(key, value) for key, value in params if key != "index"]
    if len(set(names)) > 1:  # taking one of them silently wrote to an index the user did not mean
        raise ConfigError(f"the URL names {len(names)} indexes ({', '.join(map(repr, names))[:200]}): give one ?index=")
    index = names[-1] if names else DEFAULT_INDEX
    if not _INDEX_NAME.fullmatch(index):
        raise ConfigError(
            f"index name {index!r} in the URL: use 1-48 lower-case letters, digits or _ (starting with a letter)"
        )
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment))
    try:
        fields = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"not a valid PostgreSQL URL: {' '.join(str(exc).split())[:200]}") from None
    return PgLocation(conninfo, index, describe(fields, index))


def describe(fields: dict[str, Any], index: str | None = None) -> str:
    """``postgresql://user@host:port/db?index=NAME`` without the password, for messages and manifests."""
    user = f"{fields['user']}@" if fields.get("user") else ""
    host = str(fields.get("host") or "")
    port = f":{fields['port']}" if fields.get("port") else ""
    where = f"{user}{host}{port}" if not host.startswith("/") else f"{user}[{host}]{port}"
    suffix = f"?index={index}" if index else ""
    return f"postgresql://{where}/{fields.get('dbname') or ''}{suffix}"


def _message(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


class _Relations:
    """The relations a query reads: the table itself on one node, or one foreign partition per shard."""

    def __init__(self, schema: str, shards: int) -> None:
        self.schema = schema
        self.shards = shards

    def table(self, name: str) -> sql.Identifier:
        from psycopg import sql

        return sql.Identifier(self.schema, name)

    def parts(self, name: str) -> list[sql.Identifier]:
        from psycopg import sql

        if not self.shards:
            return [sql.Identifier(self.schema, name)]
        return [sql.Identifier(self.schema, f"{name}_s{i}") for i in range(self.shards)]


def _fan_out(
    branch: Callable[[sql.Identifier], sql.Composable],
    relations: list[sql.Identifier],
    params: list[Any],
    outer_order: sql.SQL | None = None,
    limit: int = 0,
) -> tuple[sql.Composable, list[Any]]:
    """One query over every partition: the branch per relation, each shipped whole to its node, then merged
    (ordered and cut to ``limit`` when ``outer_order`` is given; the branches then end in the same ORDER BY …
    LIMIT)."""
    from psycopg import sql

    if len(relations) == 1:
        return branch(relations[0]), params
    union = sql.SQL(" UNION ALL ").join(sql.SQL("({})").format(branch(r)) for r in relations)
    if outer_order is None:
        return union, params * len(relations)
    query = sql.SQL("SELECT * FROM ({}) AS merged ORDER BY {} LIMIT %s").format(union, outer_order)
    return query, params * len(relations) + [limit]


class PgStore:
    """Read side of an index in PostgreSQL. Thread-safe: each call borrows a pooled connection."""

    def __init__(
        self,
        url: str,
        threads: int = 2,
        ef_search: int | None = None,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
        pool_size: int | None = None,
    ) -> None:
        psycopg = _psycopg()
        from psycopg_pool import ConnectionPool

        self.location = parse_location(url)
        self.threads = threads
        self.ef_search = ef_search or DEFAULT_EF_SEARCH
        self.statement_timeout_s = statement_timeout_s
        self._psycopg = psycopg
        self._pool = ConnectionPool(
            self.location.conninfo,
            min_size=1,
            max_size=pool_size or max(4, 2 * threads),
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            configure=self._configure,
            check=ConnectionPool.check_connection,
            timeout=CONNECT_TIMEOUT_S,  # waiting for a connection: a server that is down answers no sooner
            reconnect_timeout=CONNECT_TIMEOUT_S,
            open=False,
            name=f"arag-{self.location.index}",
        )
        self._closed = False
        self._pinned = threading.local()  # the connection of this thread's consistent() block
        self._row_security = False  # until the manifest says the rows carry their groups
        self._reader = threading.local()  # the groups this thread's operation reads as (None: every document)
        try:
            # one direct attempt first: it fails at once with libpq's reason, where the pool would retry
            psycopg.connect(self.location.conninfo, connect_timeout=CONNECT_TIMEOUT_S).close()
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 5)
        except Exception as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to PostgreSQL at {self.location.display}: {_message(exc)}") from None
        self.manifest = self._read_manifest()
        self._vector_type = VECTOR_TYPES.get(self.manifest.vector_dtype, "vector")
        self._relations = _Relations(self.location.schema, len(self.manifest.extra.get("shards") or []))
        self._word_index = bool(self.manifest.extra.get("word_index")) and not self._relations.shards
        self._word_postings = self._word_index and bool(self.manifest.extra.get("word_postings"))
        self._row_security = bool(self.manifest.extra.get("row_security"))

    # ------------------------------------------------------------------ connections
    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        from pgvector.psycopg import register_vector

        timeout_ms = int(self.statement_timeout_s * 1000)
        conn.execute(f"SET statement_timeout = {timeout_ms}")
        conn.execute("SET jit = off")  # JIT compiles for longer than these queries run
        conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        conn.execute("SET hnsw.iterative_scan = strict_order")  # LIMIT m is filled even beyond ef_search
        with contextlib.suppress(self._psycopg.ProgrammingError):
            register_vector(conn)  # absent before the first index is written; _read_manifest says so

    @contextlib.contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; database failures become one :class:`StoreError` line. A connection broken by a
        server restart is discarded by the pool, so the next call reconnects."""
        if self._closed:
            raise IndexFormatError(f"index {self.location.display} was closed")
        errors = self._psycopg.errors
        pinned = getattr(self._pinned, "conn", None)
        try:
            if pinned is not None:
                yield pinned
                return
            with self._pool.connection() as conn:
                if self._row_security:  # this borrow reads as this thread's operation's reader
                    self._name_reader(conn, local=False)
                yield conn
        except errors.QueryCanceled:
            raise StoreError(
                f"PostgreSQL at {self.location.display} did not answer within the statement timeout "
                f"({self.statement_timeout_s:g} s)"
            ) from None
        except errors.UndefinedTable:
            raise IndexNotFoundError(f"the index {self.location.display} was removed") from None
        except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as exc:
            raise StoreError(f"PostgreSQL at {self.location.display} is unavailable: {_message(exc)}") from None
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg"):
                raise StoreError(f"PostgreSQL at {self.location.display}: {_message(exc)}") from None
            raise

    @contextlib.contextmanager
    def consistent(self) -> Iterator[None]:
        """Every query of this thread inside the block reads one snapshot (one read-only REPEATABLE READ
        transaction): an ingest that commits meanwhile is seen by none of them or, after the block, by all."""
        if getattr(self._pinned, "conn", None) is not None:
            yield
            return
        with self._conn() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if self._row_security:
                self._name_reader(conn, local=True)
            self._pinned.conn = conn
            try:
                yield
            finally:
                self._pinned.conn = None

    @contextlib.contextmanager
    def reading_as(self, groups: frozenset[str] | None) -> Iterator[None]:
        """This thread's reads inside the block are those of a reader of ``groups`` (None: every document): on a
        role other than the index's owner, the database's row-level security holds them to the open rows and those
        groups' (arag.reader, arag.groups), whatever a-rag's own filter above does."""
        before = getattr(self._reader, "groups", None), getattr(self._reader, "set", False)
        self._reader.groups, self._reader.set = groups, True
        try:
            yield
        finally:
            self._reader.groups, self._reader.set = before

    def _name_reader(self, conn: psycopg.Connection[Any], local: bool) -> None:
        groups: frozenset[str] | None = getattr(self._reader, "groups", None)
        reader, names = ("all", "") if groups is None else ("groups", ",".join(sorted(groups)))
        conn.execute("SELECT set_config('arag.reader', %s, %s), set_config('arag.groups', %s, %s)",
                     [reader, local, names, local])  # fmt: skip

    def _fetch(self, query: sql.Composable | str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]

    def _read_manifest(self) -> Manifest:
        from psycopg import sql

        where = self.location.display
        try:
            rows = self._fetch(
                sql.SQL("SELECT body FROM {} WHERE id = 1").format(sql.Identifier(self.location.schema, "manifest"))
            )
        except IndexNotFoundError:
            rows = []
        except StoreError:
            self.close()
            raise
        if not rows:
            self.close()
            raise IndexNotFoundError(f"no a-rag index at {where} (create one: arag index SOURCES --index URL)")
        return parse_manifest(rows[0][0], f"the manifest of {where}", f"index {where}")

    def latest_generation(self) -> int:
        """Each ingest commits its rows and its manifest together; this store reads the rows as they are now,
        and its opener (arag.index) reopens it for a newer manifest (format, document metadata)."""
        from psycopg import sql

        query = sql.SQL("SELECT body->'generation' FROM {} WHERE id = 1").format(
            sql.Identifier(self.location.schema, "manifest")
        )
        rows = self._fetch(query)
        return int(rows[0][0]) if rows else self.manifest.generation

    # ------------------------------------------------------------------ sizes and records
    def _counts(self) -> tuple[int, int]:
        """From the manifest row, which every ingest rewrites in its own transaction: one local row, where
        summing the documents would touch every shard (it is asked on each semantic search)."""
        from psycopg import sql

        query = sql.SQL("SELECT body->'counts'->'chunks', body->'counts'->'sentences' FROM {} WHERE id = 1").format(
            sql.Identifier(self.location.schema, "manifest")
        )
        rows = self._fetch(query)
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def _sql(self, text: str) -> sql.Composed:
        from psycopg import sql

        tables = {name: self._relations.table(name) for name in ("documents", "chunks", "sentences")}
        data = {name: sql.Identifier(self.location.schema, name) for name in ("data_tables", "data_rows")}
        return sql.SQL(text).format(**tables, **data)

    @property
    def n_chunks(self) -> int:
        return self._counts()[0]

    @property
    def n_sentences(self) -> int:
        return self._counts()[1]

    def rows_for_ids(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        ids = [i for i in dict.fromkeys(chunk_ids) if not never_stored(i)]  # no such id can exist
        if not ids:
            return {}
        return {
            cid: int(row)
            for cid, row in self._fetch(self._sql("SELECT chunk_id, row FROM {chunks} WHERE chunk_id = ANY(%s)"), [ids])
        }

    @property
    def _COLUMNS(self) -> str:
        location = "location" if self.manifest.format_version >= METADATA_SINCE else "NULL"
        return f"row, chunk_id, doc_id, text, n_tokens, prev_id, next_id, spans, {location}"

    @staticmethod
    def _record(values: tuple[Any, ...]) -> ChunkRecord:
        row, chunk_id, doc_id, text, n_tokens, prev_id, next_id, spans, location = values
        flat = list(spans)
        pairs = tuple((int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2))
        located = location if isinstance(location, dict) else None
        return ChunkRecord(int(row), chunk_id, doc_id, text, int(n_tokens), prev_id, next_id, pairs, located)

    def chunks(self, rows: Iterable[int]) -> dict[int, ChunkRecord]:
        wanted = sorted({int(r) for r in rows})
        if not wanted:
            return {}
        found = self._fetch(self._sql(f"SELECT {self._COLUMNS} FROM {{chunks}} WHERE row = ANY(%s)"), [wanted])
        return {record.row: record for record in map(self._record, found)}

    def iter_chunks(self, batch: int = 1000) -> Iterator[ChunkRecord]:
        """Every chunk in row order, page by page, all pages from one snapshot: a sync that commits while an
        export runs is in none of them or, after it, in all (paging across commits gave both versions of a
        document). The export holds one connection, its own read-only transaction, while it is consumed."""
        query = self._sql(f"SELECT {self._COLUMNS} FROM {{chunks}} WHERE row > %s ORDER BY row LIMIT %s")
        with self._conn() as conn, contextlib.ExitStack() as inside:
            if getattr(self._pinned, "conn", None) is None:  # not already in a consistent() block's snapshot
                inside.enter_context(conn.transaction())
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            after = -1
            while True:
                found = conn.execute(query, [after, batch]).fetchall()
                yield from map(self._record, found)
                if len(found) < batch:
                    return
                after = int(found[-1][0])

    def documents(self) -> list[DocumentRecord]:
        metadata = "metadata" if self.manifest.format_version >= METADATA_SINCE else "NULL"
        query = self._sql(f"SELECT doc_id, source, title, content_hash, {metadata} FROM {{documents}} ORDER BY doc_seq")
        return [
            DocumentRecord(doc_id, source, title, content_hash, fields if isinstance(fields, dict) else None)
            for doc_id, source, title, content_hash, fields in self._fetch(query)
        ]

    def doc_chunk_rows(self) -> dict[str, tuple[int, int]]:
        query = self._sql("SELECT doc_id, doc_seq, n_chunks FROM {documents} WHERE n_chunks > 0 ORDER BY doc_seq")
        return {doc_id: (seq << ROW_BITS, (seq << ROW_BITS) + n) for doc_id, seq, n in self._fetch(query)}

    def doc_chunk_range(self, doc_id: str) -> tuple[int, int]:
        if never_stored(doc_id):
            return (0, 0)
        found = self._fetch(
            self._sql("SELECT doc_seq, n_chunks FROM {documents} WHERE doc_id = %s AND n_chunks > 0"), [doc_id]
        )
        if not found:
            return (0, 0)
        seq, n = found[0]
        return (seq << ROW_BITS, (seq << ROW_BITS) + n)

    def sentence_spans(self, row: int) -> list[tuple[int, int]]:
        record = self.chunks([row]).get(row)
        return list(record.spans or ()) if record else []

    # ------------------------------------------------------------------ keyword
    def keyword_scores(self, keywords: list[str], top_k: int, scope: Scope | None = None) -> list[tuple[int, int]]:
        """Σ_k count(lower(k), lower(chunk)) · len(k) in SQL: the occurrences of k are
        (length(t) − length(replace(t, k, ''))) / length(k), non-overlapping from the left like ``str.count``;
        candidates are the chunks matching any ``LIKE '%k%'``, which the trigram GIN index answers. With the word
        index, a keyword of word characters is counted in the vocabulary words that contain it instead, each
        count times the word's occurrences in the chunk (exact: arag/store/words.py)."""
        from psycopg import sql

        # a keyword with NUL or a lone surrogate occurs in no stored text (nor can PostgreSQL receive it): it adds 0
        keywords = [k for k in keywords if not never_stored(k)]
        if not keywords or top_k <= 0:
            return []
        by_word = [k for k in keywords if self._word_index and is_word(k.lower())]
        by_text = [k for k in keywords if k not in by_word]
        if not by_word:
            return self._text_scores(by_text, top_k, scope)
        if self._word_postings and scope is None:
            return self._packed_scores(by_word, by_text, top_k)
        branches: list[sql.Composable] = []
        params: list[Any] = []
        in_scope = sql.SQL(" AND p.doc_id = ANY(%s)" if scope is not None else "")
        for keyword in by_word:
            low = keyword.lower()
            branches.append(
                sql.SQL(
                    "SELECT p.chunk_row AS row, (sum(p.n::bigint * ((length(w.word) - length(replace(w.word, %s, '')))"
                    " / %s::int)) * %s::bigint)::bigint AS score FROM {words} w JOIN {postings} p ON p.word = w.word "
                    "WHERE w.word LIKE %s{in_scope} GROUP BY p.chunk_row"
                ).format(
                    words=self._relations.table("words"),
                    postings=self._relations.table("chunk_words"),
                    in_scope=in_scope,
                )
            )
            params += [low, len(low), len(keyword), f"%{_like_escape(low)}%"]
            params += [sorted(scope.doc_ids)] if scope is not None else []
        if by_text:
            text_query, text_params = self._text_query(by_text, scope, self._relations.table("chunks"))
            branches.append(text_query)
            params += text_params
        query = sql.SQL(
            "SELECT row, sum(score)::bigint AS total FROM ({}) AS parts GROUP BY row ORDER BY total DESC, row LIMIT %s"
        ).format(sql.SQL(" UNION ALL ").join(branches))
        return [(int(row), int(score)) for row, score in self._fetch(query, [*params, top_k]) if score > 0]

    def _packed_scores(self, by_word: list[str], by_text: list[str], top_k: int) -> list[tuple[int, int]]:
        """keyword_scores from the packed postings of the vocabulary words containing each word keyword (one read
        of a few arrays, summed with NumPy), plus the text counts of the other keywords; the same top-k, ties by
        row, as the SQL paths."""
        from psycopg import sql

        lowered = [(k.lower(), len(k)) for k in by_word]
        words_query = sql.SQL(
            "SELECT p.word, p.rows, p.counts FROM {words} w JOIN {postings} p ON p.word = w.word "
            "WHERE w.word LIKE ANY(%s)"
        ).format(words=self._relations.table("words"), postings=self._relations.table("word_postings"))
        counted: list[tuple[Any, ...]] = []
        with self.consistent():  # both reads of one committed state
            found = self._fetch(words_query, [[f"%{_like_escape(low)}%" for low, _ in lowered]])
            if by_text:
                counted = self._fetch(*self._text_query(by_text, None, self._relations.table("chunks")))
        rows: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for word, packed_rows, packed_counts in found:
            weight = sum(word.count(low) * length for low, length in lowered)  # str.count, as everywhere
            if weight:
                rows.append(np.frombuffer(packed_rows, ">i8"))
                weights.append(np.frombuffer(packed_counts, ">i4").astype(np.int64) * weight)
        if counted:
            rows.append(np.fromiter((int(r) for r, _ in counted), np.int64, len(counted)))
            weights.append(np.fromiter((int(score) for _, score in counted), np.int64, len(counted)))
        if not rows:
            return []
        every, inverse = np.unique(np.concatenate(rows), return_inverse=True)
        # float64 sums of integers stay exact far beyond any count here (2**53)
        totals = np.bincount(inverse, weights=np.concatenate(weights), minlength=len(every)).astype(np.int64)
        return [(int(every[i]), int(score)) for i, score in top_scores(totals, top_k)]

    def _text_query(
        self, keywords: list[str], scope: Scope | None, relation: sql.Identifier
    ) -> tuple[sql.Composable, list[Any]]:
        """(row, score) of every chunk that contains one of the keywords, counted in its text."""
        from psycopg import sql

        lowered = [k.lower() for k in keywords]
        terms = sql.SQL(" + ").join(
            sql.SQL("((length(text_lower) - length(replace(text_lower, %s, ''))) / %s::int) * %s::bigint")
            for _ in lowered
        )
        in_scope = sql.SQL(" AND doc_id = ANY(%s)" if scope is not None else "")
        query = sql.SQL("SELECT row, {terms} AS score FROM {rel} WHERE text_lower LIKE ANY(%s){in_scope}").format(
            terms=terms, rel=relation, in_scope=in_scope
        )
        params: list[Any] = []
        for keyword, low in zip(keywords, lowered, strict=True):
            params += [low, len(low), len(keyword)]
        params += [[f"%{_like_escape(low)}%" for low in lowered]]
        params += [sorted(scope.doc_ids)] if scope is not None else []
        return query, params

    def _text_scores(self, keywords: list[str], top_k: int, scope: Scope | None) -> list[tuple[int, int]]:
        """Every keyword counted in the text: one branch per partition, each ordered and cut to top_k on its node."""
        from psycopg import sql

        parts = self._relations.parts("chunks")
        _, params = self._text_query(keywords, scope, parts[0])

        def branch(rel: sql.Identifier) -> sql.Composable:
            query, _ = self._text_query(keywords, scope, rel)
            return sql.SQL("{} ORDER BY score DESC, row LIMIT %s").format(query)

        query, args = _fan_out(branch, parts, [*params, top_k], sql.SQL("score DESC, row"), top_k)
        return [(int(row), int(score)) for row, score in self._fetch(query, args) if score > 0]

    def keyword_chunk_count(self, keyword: str, limit: int) -> int:
        """Each partition counts its matches up to ``limit`` (the trigram index finds them); the sum is capped.
        With the word index, a keyword of word characters counts the chunks in its words' postings."""
        from psycopg import sql

        if never_stored(keyword) or not keyword or limit <= 0:
            return 0
        pattern = f"%{_like_escape(keyword.lower())}%"
        if self._word_index and is_word(keyword.lower()):
            by_words = sql.SQL(
                "SELECT count(*) FROM (SELECT DISTINCT p.chunk_row FROM {words} w JOIN {postings} p ON p.word = w.word"
                " WHERE w.word LIKE %s LIMIT %s) AS hit"
            ).format(words=self._relations.table("words"), postings=self._relations.table("chunk_words"))
            return min(limit, int(self._fetch(by_words, [pattern, limit])[0][0]))
        template = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {rel} WHERE text_lower LIKE %s LIMIT %s) AS hit")
        query, args = _fan_out(lambda rel: template.format(rel=rel), self._relations.parts("chunks"), [pattern, limit])
        return min(limit, sum(int(count) for (count,) in self._fetch(query, args)))

    # ------------------------------------------------------------------ semantic
    def _query_value(self, query: np.ndarray) -> Any:
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        if self._vector_type == "halfvec":
            from pgvector import HalfVector

            return HalfVector(vector)
        return vector

    def _score_sql(self) -> sql.SQL:
        from psycopg import sql

        _op, score, _ops = _SCORE[self._vector_type]
        return sql.SQL(score.replace("{q}", "%s"))

    def semantic_chunks(
        self, query: np.ndarray, top_k: int, exact: bool, scope: Scope | None = None
    ) -> list[SemanticMatch]:
        from psycopg import sql

        if top_k <= 0:
            return []
        value = self._query_value(query)
        parts = self._relations.parts("sentences")
        if exact or not self.manifest.ann or scope is not None:
            in_scope = sql.SQL("WHERE doc_id = ANY(%s) " if scope is not None else "")
            template = sql.SQL(
                "SELECT chunk_row, max({score}) AS score FROM {rel} {in_scope}GROUP BY chunk_row "
                "ORDER BY score DESC, chunk_row LIMIT %s"
            )
            score = self._score_sql()
            params = [value, sorted(scope.doc_ids), top_k] if scope is not None else [value, top_k]
            q, args = _fan_out(
                lambda rel: template.format(score=score, rel=rel, in_scope=in_scope),
                parts,
                params,
                sql.SQL("score DESC, chunk_row"),
                top_k,
            )
            ranked = [(int(row), float(score)) for row, score in self._fetch(q, args)]
            per_chunk = self._sentence_scores(value, [row for row, _ in ranked])
        else:
            # HNSW gives candidate chunks; each is then scored by its best sentence, exactly
            candidates = self._hnsw_candidates(value, top_k, parts)
            per_chunk = self._sentence_scores(value, candidates)
            best = {row: float(scores.max()) for row, scores in per_chunk.items() if len(scores)}
            ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:top_k]
        empty = np.zeros(0, np.float32)
        return [SemanticMatch(row, score, per_chunk.get(row, empty)) for row, score in ranked]

    def _hnsw_candidates(self, value: Any, top_k: int, parts: list[sql.Identifier]) -> list[int]:
        """The chunks of the m nearest sentences by the HNSW index (iterative scans fill LIMIT m); m grows until
        they are top_k distinct chunks."""
        from psycopg import sql

        op = sql.SQL(_SCORE[self._vector_type][0])
        # selecting the ORDER BY expression keeps each branch a plain foreign scan, so the shards run concurrently
        template = sql.SQL("SELECT chunk_row, embedding {op} %s AS distance FROM {rel} ORDER BY distance LIMIT %s")
        m, total = max(64, 8 * top_k), None
        while True:
            q, args = _fan_out(lambda rel: template.format(op=op, rel=rel), parts, [value, m])
            rows = list(dict.fromkeys(int(row) for row, _distance in self._fetch(q, args)))
            if len(rows) >= top_k:
                return rows
            total = self.n_sentences if total is None else total
            if m >= total:
                return rows
            m = min(total, m * 4)

    def sentence_scores(self, query: np.ndarray, row: int) -> np.ndarray:
        return self._sentence_scores(self._query_value(query), [row]).get(row, np.zeros(0, np.float32))

    def _sentence_scores(self, value: Any, rows: list[int]) -> dict[int, np.ndarray]:
        """Each chunk's sentence scores in sentence order, computed where the rows live (an aggregate, so
        postgres_fdw ships the computation, not the vectors)."""
        from psycopg import sql

        if not rows:
            return {}
        template = sql.SQL(
            "SELECT chunk_row, array_agg({score} ORDER BY ord) FROM {rel} WHERE chunk_row = ANY(%s) GROUP BY chunk_row"
        )
        score = self._score_sql()
        q, args = _fan_out(
            lambda rel: template.format(score=score, rel=rel), self._relations.parts("sentences"), [value, rows]
        )
        return {int(row): np.asarray(scores, dtype=np.float32) for row, scores in self._fetch(q, args)}

    # ------------------------------------------------------------------ checks
    # ------------------------------------------------------------------ tables as data
    def table_catalog(self) -> list[TableInfo] | None:
        if not self.manifest.extra.get("data_tables"):
            return None  # written before a-rag kept tables
        rows = self._fetch(
            self._sql(
                "SELECT table_id, doc_id, number, caption, columns, n_rows, chunk_ids FROM {data_tables} "
                "ORDER BY doc_seq, number"
            )
        )
        return [
            TableInfo(table_id, doc_id, number, caption, [Column(n, k) for n, k in columns], n_rows, chunk_ids)
            for table_id, doc_id, number, caption, columns, n_rows, chunk_ids in rows
        ]

    def table_answer(self, table_id: str, query: TableQuery) -> TableAnswer:
        found = None
        if self.manifest.extra.get("data_tables") and not never_stored(table_id):
            found = self._fetch(
                self._sql(
                    "SELECT table_id, doc_id, number, caption, columns, n_rows, chunk_ids FROM {data_tables} "
                    "WHERE table_id = %s"
                ),
                [table_id],
            )
        if not found:
            raise TableQueryError(f"no table has the id {table_id!r}; use ids from table_list")
        tid, doc_id, number, caption, columns, n_rows, chunk_ids = found[0]
        info = TableInfo(tid, doc_id, number, caption, [Column(n, k) for n, k in columns], n_rows, chunk_ids)
        # the schema's name is checked to be arag_[a-z0-9_]+ (parse_location): safe to write into the statement
        rows_table = f'"{self.location.schema}"."data_rows"'
        compiled = compile_query(query, info, POSTGRES, f"(SELECT * FROM {rows_table} WHERE table_id = %s) AS t")
        parameters = [table_id, *compiled.parameters]
        errors = self._psycopg.errors
        with self.consistent(), self._conn() as conn:
            try:
                with conn.transaction():  # a savepoint: a stopped query leaves the reader's transaction usable
                    conn.execute(f"SET LOCAL statement_timeout = {int(QUERY_TIME_LIMIT_S * 1000)}")
                    rows = conn.execute(compiled.select, parameters).fetchall()
                    count = conn.execute(compiled.count, parameters).fetchone()
                    chunks = []
                    if query.grouped:
                        chunks = [c for (c,) in conn.execute(compiled.chunks, parameters)]
                    conn.execute(f"SET LOCAL statement_timeout = {int(self.statement_timeout_s * 1000)}")
            except errors.QueryCanceled:
                raise TableQueryError(f"the query took longer than {QUERY_TIME_LIMIT_S:g} s and was stopped") from None
        if not query.grouped:
            chunks = list(dict.fromkeys(row[0] for row in rows))
            rows = [row[1:] for row in rows]
        return TableAnswer(answer_header(query, info), [list(r) for r in rows], int(count[0]) if count else 0, chunks)

    def verify(self) -> list[str]:
        """Counts per document against its chunks and sentences, spans against sentences, vector dimensions."""
        problems: list[str] = []
        checks = {
            "documents whose n_chunks differs from their chunks": (
                "SELECT d.doc_id FROM {documents} d "
                "LEFT JOIN (SELECT doc_id, count(*) AS n FROM {chunks} GROUP BY doc_id) c "
                "USING (doc_id) WHERE d.n_chunks <> coalesce(c.n, 0) LIMIT 5"
            ),
            "documents whose n_sentences differs from their sentences": (
                "SELECT d.doc_id FROM {documents} d "
                "LEFT JOIN (SELECT doc_id, count(*) AS n FROM {sentences} GROUP BY doc_id) s "
                "USING (doc_id) WHERE d.n_sentences <> coalesce(s.n, 0) LIMIT 5"
            ),
            "chunks whose sentence spans differ from their sentences": (
                "SELECT c.chunk_id FROM {chunks} c LEFT JOIN (SELECT chunk_row, count(*) AS n FROM {sentences} "
                "GROUP BY chunk_row) s ON s.chunk_row = c.row "
                "WHERE cardinality(c.spans) <> 2 * coalesce(s.n, 0) LIMIT 5"
            ),
            "chunks without a document": (
                "SELECT c.chunk_id FROM {chunks} c LEFT JOIN {documents} d USING (doc_id) "
                "WHERE d.doc_id IS NULL LIMIT 5"
            ),
        }
        for label, query in checks.items():
            bad = [str(r[0]) for r in self._fetch(self._sql(query))]
            if bad:
                problems.append(f"{label}: {', '.join(bad)}")
        dims = int(self.manifest.embedder.get("dims") or 0)
        wrong = self._fetch(self._sql("SELECT count(*) FROM {sentences} WHERE vector_dims(embedding) <> %s"), [dims])
        if dims and wrong[0][0]:
            problems.append(f"{wrong[0][0]} sentence vectors do not have {dims} dimensions")
        return problems

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# ---------------------------------------------------------------------- writing

_NODE_TABLES = """
CREATE TABLE IF NOT EXISTS {documents} (
    doc_id text NOT NULL PRIMARY KEY, doc_seq bigint NOT NULL, source text NOT NULL, title text,
    content_hash text NOT NULL, n_chunks integer NOT NULL, n_sentences integer NOT NULL, metadata jsonb);
CREATE TABLE IF NOT EXISTS {chunks} (
    row bigint NOT NULL PRIMARY KEY, doc_id text NOT NULL, chunk_id text NOT NULL UNIQUE, text text NOT NULL,
    text_lower text NOT NULL, n_tokens integer NOT NULL, spans integer[] NOT NULL, prev_id text, next_id text,
    location jsonb);
CREATE INDEX IF NOT EXISTS chunks_doc ON {chunks} (doc_id);
CREATE TABLE IF NOT EXISTS {sentences} (
    chunk_row bigint NOT NULL, ord integer NOT NULL, doc_id text NOT NULL, hash bigint NOT NULL,
    embedding {vector_type}({dims}) NOT NULL, PRIMARY KEY (chunk_row, ord));
CREATE INDEX IF NOT EXISTS sentences_hash ON {sentences} (hash);
CREATE INDEX IF NOT EXISTS sentences_doc ON {sentences} (doc_id);
"""
_SEARCH_INDEXES = "CREATE INDEX IF NOT EXISTS chunks_trgm ON {chunks} USING gin (text_lower gin_trgm_ops);"
_WORD_TABLES = """
CREATE TABLE IF NOT EXISTS {words} (word text NOT NULL PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {chunk_words} (word text NOT NULL, chunk_row bigint NOT NULL, doc_id text NOT NULL,
    n integer NOT NULL);
CREATE TABLE IF NOT EXISTS {word_postings} (word text NOT NULL PRIMARY KEY, rows bytea NOT NULL, counts bytea NOT NULL);
"""
# the packed postings of the words given (all words: NULL), from chunk_words in row order
_PACK_POSTINGS = """
INSERT INTO {word_postings} (word, rows, counts)
SELECT word, string_agg(int8send(chunk_row), ''::bytea ORDER BY chunk_row),
       string_agg(int4send(n), ''::bytea ORDER BY chunk_row)
FROM {chunk_words} WHERE %(words)s::text[] IS NULL OR word = ANY(%(words)s::text[]) GROUP BY word
"""
# postings are read by word (covering: no heap visit) and deleted by document; words are found by substring
_WORD_INDEXES = """
CREATE INDEX IF NOT EXISTS chunk_words_word ON {chunk_words} (word) INCLUDE (chunk_row, n, doc_id);
CREATE INDEX IF NOT EXISTS chunk_words_doc ON {chunk_words} (doc_id);
CREATE INDEX IF NOT EXISTS words_trgm ON {words} USING gin (word gin_trgm_ops);
"""
_HNSW_INDEX = "CREATE INDEX IF NOT EXISTS sentences_hnsw ON {sentences} USING hnsw (embedding {opclass});"
_COORDINATOR_TABLES = """
CREATE TABLE {documents} (doc_id text NOT NULL, doc_seq bigint NOT NULL, source text NOT NULL, title text,
    content_hash text NOT NULL, n_chunks integer NOT NULL, n_sentences integer NOT NULL, metadata jsonb)
    PARTITION BY HASH (doc_id);
CREATE TABLE {chunks} (row bigint NOT NULL, doc_id text NOT NULL, chunk_id text NOT NULL, text text NOT NULL,
    text_lower text NOT NULL, n_tokens integer NOT NULL, spans integer[] NOT NULL, prev_id text, next_id text,
    location jsonb) PARTITION BY HASH (doc_id);
CREATE TABLE {sentences} (chunk_row bigint NOT NULL, ord integer NOT NULL, doc_id text NOT NULL, hash bigint NOT NULL,
    embedding {vector_type}({dims}) NOT NULL) PARTITION BY HASH (doc_id);
"""
# a version-3 index (no metadata, no locations) gains the columns on its next ingest; its old rows stay NULL
_MIGRATE_TO_4 = """
ALTER TABLE {documents} ADD COLUMN IF NOT EXISTS metadata jsonb;
ALTER TABLE {chunks} ADD COLUMN IF NOT EXISTS location jsonb;
"""
# who reads (issue 51): each chunk and sentence row carries its document's access groups (NULL: open to all). The
# owning role (ingest) is not subject to the policies; any other role reads under them, restricted to the open rows
# and its groups' whenever its transaction (or session, or the role's default) names a reader of groups
# (arag.reader = 'groups', arag.groups = 'hr,eng'). PgStore.reading_as sets both for each operation of a principal.
_READABLE = (
    "current_setting('arag.reader', true) IS DISTINCT FROM 'groups' OR access IS NULL "
    "OR access && string_to_array(coalesce(current_setting('arag.groups', true), ''), ',')"
)
_ROW_SECURITY = f"""
ALTER TABLE {{chunks}} ADD COLUMN IF NOT EXISTS access text[];
ALTER TABLE {{sentences}} ADD COLUMN IF NOT EXISTS access text[];
ALTER TABLE {{chunks}} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {{sentences}} ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS arag_reader ON {{chunks}};
DROP POLICY IF EXISTS arag_reader ON {{sentences}};
CREATE POLICY arag_reader ON {{chunks}} FOR SELECT USING ({_READABLE});
CREATE POLICY arag_reader ON {{sentences}} FOR SELECT USING ({_READABLE});
"""
# the word index: a chunk's word counts carry its groups like its text; the packed postings (one row per word, every
# document's chunks in it) are for the reader of every document, and a reader of groups scores from chunk_words
_WORD_ROW_SECURITY = f"""
ALTER TABLE {{chunk_words}} ADD COLUMN IF NOT EXISTS access text[];
ALTER TABLE {{chunk_words}} ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS arag_reader ON {{chunk_words}};
CREATE POLICY arag_reader ON {{chunk_words}} FOR SELECT USING ({_READABLE});
"""
# a word is seen by a reader of groups when it occurs in a chunk it may read (chunk_words, under its own policy)
_VOCABULARY_ROW_SECURITY = """
ALTER TABLE {words} ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS arag_reader ON {words};
CREATE POLICY arag_reader ON {words} FOR SELECT
    USING (current_setting('arag.reader', true) IS DISTINCT FROM 'groups'
           OR EXISTS (SELECT 1 FROM {chunk_words} AS counted WHERE counted.word = {words}.word));
"""
_POSTINGS_ROW_SECURITY = """
ALTER TABLE {word_postings} ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS arag_reader ON {word_postings};
CREATE POLICY arag_reader ON {word_postings} FOR SELECT
    USING (current_setting('arag.reader', true) IS DISTINCT FROM 'groups');
"""
_DATA_TABLES = """
CREATE TABLE IF NOT EXISTS {data_tables} (
    table_id text NOT NULL PRIMARY KEY, doc_id text NOT NULL, doc_seq bigint NOT NULL, number integer NOT NULL,
    caption text NOT NULL, columns jsonb NOT NULL, n_rows integer NOT NULL, chunk_ids jsonb NOT NULL);
CREATE INDEX IF NOT EXISTS data_tables_doc ON {data_tables} (doc_id);
CREATE TABLE IF NOT EXISTS {data_rows} (
    table_id text NOT NULL, row_no integer NOT NULL, doc_id text NOT NULL, chunk_id text NOT NULL,
    cells jsonb NOT NULL, PRIMARY KEY (table_id, row_no));
CREATE INDEX IF NOT EXISTS data_rows_doc ON {data_rows} (doc_id);
"""
_MANIFEST_TABLE = "CREATE TABLE IF NOT EXISTS {manifest} (id integer PRIMARY KEY CHECK (id = 1), body jsonb NOT NULL);"
# libpq keywords that go into a user mapping rather than the foreign server's options
_USER_KEYS = {"user", "password", "sslpassword"}


def _database_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    """A writer method whose database failures become one :class:`StoreError` line (the transaction is lost)."""

    @functools.wraps(method)
    def translated(self: PgWriter, *args: Any, **kwargs: Any) -> Any:
        with self.errors():
            return method(self, *args, **kwargs)

    return translated


class PgWriter:
    """One ingest into a PostgreSQL index (an :class:`~arag.store.base.IndexWriter`): holds the index's advisory
    lock (one writer at a time) and writes everything in one transaction, so readers see the old state until
    :meth:`commit` and a killed ingest leaves the previous state intact. Readers are never blocked: they read the
    last committed rows. Only new or changed documents are written; a kept one stays where it is."""

    batch_sentences: int | None = PG_BATCH_SENTENCES

    def __init__(
        self, url: str, rebuild: bool = False, settings: IndexSettings | None = None, shards: list[str] | None = None
    ) -> None:
        from arag.settings import IndexSettings

        psycopg = _psycopg()
        self._psycopg = psycopg
        self.location = parse_location(url)
        self.where = self.location.display
        self.rebuild = rebuild
        self.settings = settings or IndexSettings()
        self._shards_given = list(shards or [])
        self._seq_of: dict[str, int] = {}
        try:
            self.conn = psycopg.connect(
                self.location.conninfo, connect_timeout=CONNECT_TIMEOUT_S, application_name="arag-index"
            )
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.location.display}: {_message(exc)}") from None
        self._vector_type = "vector"
        try:
            locked = self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [f"arag:{self.location.schema}"])
            got = locked.fetchone()
            self.conn.commit()
            if not got or not got[0]:
                raise IndexFormatError(
                    f"another process is writing the index {self.location.display}; "
                    "wait for it to finish, then run again"
                )
            self.manifest = None if rebuild else self._existing_manifest()
            self._words = bool(self.manifest and self.manifest.extra.get("word_index"))
        except psycopg.Error as exc:
            self.conn.close()
            raise StoreError(f"PostgreSQL at {self.location.display}: {_message(exc)}") from None
        except BaseException:
            self.conn.close()
            raise

    def _ident(self, name: str) -> sql.Identifier:
        from psycopg import sql

        return sql.Identifier(self.location.schema, name)

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Database failures during the ingest become one :class:`StoreError` line (the transaction is lost)."""
        try:
            yield
        except self._psycopg.errors.QueryCanceled:
            raise StoreError(
                f"PostgreSQL at {self.location.display} cancelled the ingest (statement timeout)"
            ) from None
        except self._psycopg.Error as exc:
            raise StoreError(f"writing to PostgreSQL at {self.location.display} failed: {_message(exc)}") from None

    def _tables(self, **extra: Any) -> dict[str, Any]:
        names: tuple[str, ...] = ("documents", "chunks", "sentences", "manifest", "words", "chunk_words")
        names += ("word_postings", "data_tables", "data_rows")
        return {name: self._ident(name) for name in names} | extra

    def _existing_manifest(self) -> Manifest | None:
        from psycopg import sql

        exists = self.conn.execute("SELECT to_regclass(%s)", [f"{self.location.schema}.manifest"]).fetchone()
        if not exists or exists[0] is None:
            self.conn.commit()
            return None
        row = self.conn.execute(sql.SQL("SELECT body FROM {} WHERE id = 1").format(self._ident("manifest"))).fetchone()
        self.conn.commit()
        return (
            parse_manifest(row[0], f"the manifest of {self.location.display}", f"index {self.location.display}")
            if row
            else None
        )

    @property
    def shards(self) -> list[str]:
        return list(self.manifest.extra.get("shards") or []) if self.manifest else []

    def _extensions(self, conn: psycopg.Connection[Any], names: tuple[str, ...], where: str) -> None:
        for name in names:
            try:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
                conn.commit()
            except self._psycopg.Error as exc:
                conn.rollback()
                raise StoreError(
                    f"PostgreSQL at {where} needs the extension {name} ({_message(exc)}); "
                    f"an administrator can run: CREATE EXTENSION {name};"
                ) from None

    @_database_errors
    def documents(self) -> list[DocumentRecord]:
        """The stored documents in document order (their doc_seq kept: a replaced document keeps its place)."""
        from psycopg import sql

        if self.manifest is None:
            return []
        metadata = sql.SQL("metadata" if self.manifest.format_version >= METADATA_SINCE else "NULL")
        rows = self.conn.execute(
            sql.SQL("SELECT doc_id, source, title, content_hash, doc_seq, {} FROM {} ORDER BY doc_seq").format(
                metadata, self._ident("documents")
            )
        ).fetchall()
        self.conn.commit()
        self._seq_of = {str(row[0]): int(row[4]) for row in rows}
        return [
            DocumentRecord(doc_id, source, title, content_hash, fields if isinstance(fields, dict) else None)
            for doc_id, source, title, content_hash, _seq, fields in rows
        ]

    @_database_errors
    def begin(self, dims: int) -> None:
        """Open the ingest transaction; create the schema (and, with shards, the distributed layout) if new."""
        self.create(self.settings.vector_dtype, dims, self.settings.ann, self._shards_given or None)

    def create(self, vector_dtype: str, dims: int, ann: bool, shards: list[str] | None) -> None:
        """:meth:`begin` with the layout given directly (benchmarks write prepared rows this way)."""
        from psycopg import sql

        if vector_dtype not in VECTOR_TYPES:
            raise ConfigError(
                f"vector_dtype {vector_dtype} is for the embedded store; "
                "PostgreSQL stores f32 (vector) or f16 (halfvec)"
            )
        given = [self._shard_location(url).display.split("?")[0] for url in shards or []]
        if shards and self.manifest is not None and given != self.shards:
            described = ", ".join(self.shards) or "one node"
            raise ConfigError(
                f"the index {self.location.display} is laid out on {described}; use --rebuild to change its shards"
            )
        self._shard_urls = list(shards or [])
        self._vector_type = VECTOR_TYPES[vector_dtype]
        self._ann = ann
        create = self.manifest is None
        self._extensions(
            self.conn,
            ("vector", "pg_trgm") if not (shards or self.shards) else ("vector", "postgres_fdw"),
            self.location.display,
        )
        from pgvector.psycopg import register_vector

        register_vector(self.conn)
        self._new_shards: list[str] = []
        if create:
            self.conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.location.schema)))
            self.conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.location.schema)))
            fmt = self._tables(vector_type=sql.SQL(self._vector_type), dims=sql.Literal(int(dims)))
            if shards:
                self._new_shards = self._create_shards(shards, dims, ann)
                self.conn.execute(sql.SQL(_COORDINATOR_TABLES).format(**fmt))
                self._attach_shards(shards)
            else:
                self.conn.execute(sql.SQL(_NODE_TABLES).format(**fmt))
                self.conn.execute(sql.SQL(_WORD_TABLES).format(**fmt))
            self.conn.execute(sql.SQL(_MANIFEST_TABLE).format(**fmt))
            self.conn.execute(sql.SQL(_DATA_TABLES).format(**fmt))
        elif self.manifest is not None and self.manifest.format_version < METADATA_SINCE:
            if self.shards:
                raise ConfigError(
                    f"the distributed index {self.location.display} was built by an a-rag without document metadata; "
                    "re-index it with --rebuild"
                )
            self.conn.execute(sql.SQL(_MIGRATE_TO_4).format(**self._tables()))
        self._distributed = bool(shards or self.shards)
        self._fresh = create
        # row-level security on one node (shards' foreign tables cannot carry policies: a-rag filters above them)
        self._row_security = not self._distributed
        if self._row_security:
            self._secure_rows(backfill=not create)
        # an index written before a-rag kept tables gets them for the documents written from now on; its manifest
        # says it has them only once every document was written with them (--rebuild)
        self._data_tables = create or bool(self.manifest and self.manifest.extra.get("data_tables"))
        if not create:
            self.conn.execute(sql.SQL(_DATA_TABLES).format(**self._tables()))
        # the word index is part of every new one-node index; one written before it goes on without
        self._words = (create and not self._distributed) or bool(
            self.manifest and self.manifest.extra.get("word_index")
        )
        self._packed = (create and not self._distributed) or bool(
            self._words and self.manifest and self.manifest.extra.get("word_postings")
        )
        # documents whose postings this writer wrote: in a new index only they can have postings to delete, and
        # chunk_words' doc_id index is built at commit, so a delete of any other document would scan the table
        self._postings_written: set[str] = set()
        self._touched_words: set[str] = set()  # whose packed postings the commit rebuilds (a new index: all)

    def _secure_rows(self, backfill: bool) -> None:
        """The access column and the policies (idempotent); an index written before them gets each stored
        document's groups on its rows, in this ingest's transaction."""
        from psycopg import sql

        schema = self.location.schema
        present = {
            name
            for (name,) in self.conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", [schema]
            ).fetchall()
        }
        tables = [t for t in ("chunks", "sentences", "chunk_words", "words", "word_postings") if t in present]
        secured = self.conn.execute(
            "SELECT count(*) FROM pg_policies WHERE schemaname = %s AND policyname = 'arag_reader' "
            "AND tablename = ANY(%s)",
            [schema, tables],
        ).fetchone()
        if secured and secured[0] == len(tables):
            return  # in place: no DDL, whose locks would hold the readers for the whole ingest
        unfilled = {
            table
            for table in ("chunks", "sentences", "chunk_words")
            if table in present
            and not self.conn.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "AND column_name = 'access'",
                [schema, table],
            ).fetchone()
        }
        self.conn.execute(sql.SQL(_ROW_SECURITY).format(**self._tables()))
        if "chunk_words" in present:
            self.conn.execute(sql.SQL(_WORD_ROW_SECURITY).format(**self._tables()))
            if "words" in present:
                self.conn.execute(sql.SQL(_VOCABULARY_ROW_SECURITY).format(**self._tables()))
        if "word_postings" in present:
            self.conn.execute(sql.SQL(_POSTINGS_ROW_SECURITY).format(**self._tables()))
        if not backfill or not unfilled:
            return
        for document in self.documents():
            groups = access_groups(document.metadata)
            if groups is not None:
                for table in sorted(unfilled):
                    self.conn.execute(
                        sql.SQL("UPDATE {} SET access = %s WHERE doc_id = %s").format(self._ident(table)),
                        [groups, document.doc_id],
                    )

    def _shard_location(self, url: str) -> PgLocation:
        return parse_location(
            url if "index=" in url else url + ("&" if "?" in url else "?") + f"index={self.location.index}"
        )

    def _shard_connection(self, shard: PgLocation) -> psycopg.Connection[Any]:
        try:
            return self._psycopg.connect(shard.conninfo, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False)
        except self._psycopg.Error as exc:
            raise StoreError(f"cannot connect to the shard {shard.display}: {_message(exc)}") from None

    def _create_shards(self, shards: list[str], dims: int, ann: bool) -> list[str]:
        """The node tables on every shard (their search indexes are built after the load, by :meth:`commit`).
        Returns the shards' descriptions."""
        from psycopg import sql

        described = []
        for url in shards:
            shard = self._shard_location(url)
            described.append(shard.display.split("?")[0])
            conn = self._shard_connection(shard)
            with conn:
                standalone = conn.execute("SELECT to_regclass(%s)", [f"{self.location.schema}.manifest"]).fetchone()
                if standalone and standalone[0] is not None:
                    raise ConfigError(
                        f"the shard {shard.display} already holds an a-rag index named {self.location.index}; "
                        "name the distributed index differently (?index=NAME) or remove that one"
                    )
                self._extensions(conn, ("vector", "pg_trgm"), shard.display)
                schema = sql.Identifier(self.location.schema)
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
                fmt = self._tables(vector_type=sql.SQL(self._vector_type), dims=sql.Literal(int(dims)))
                conn.execute(sql.SQL(_NODE_TABLES).format(**fmt))
                conn.commit()
        return described

    def _search_indexes(self, conn: psycopg.Connection[Any]) -> None:
        """The trigram GIN index and (with ann) the HNSW index, built in one pass over rows already loaded:
        much faster than maintaining them row by row during a bulk load."""
        from psycopg import sql

        fmt = self._tables()
        conn.execute(  # at least 1 GB for the HNSW graph; a server configured with more keeps its setting
            "SELECT set_config('maintenance_work_mem', '1GB', false) "
            "WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('1GB')"
        )
        conn.execute(sql.SQL(_SEARCH_INDEXES).format(**fmt))
        if self._words and conn is self.conn:
            conn.execute(sql.SQL(_WORD_INDEXES).format(**fmt))
        if self._ann:
            conn.execute(sql.SQL(_HNSW_INDEX).format(**fmt, opclass=sql.SQL(_SCORE[self._vector_type][2])))

    def _attach_shards(self, shards: list[str]) -> None:
        """Foreign servers and user mappings for the shards, and the coordinator's hash partitions on them."""
        from psycopg import sql

        psycopg = self._psycopg
        for i, url in enumerate(shards):
            server = sql.Identifier(f"{self.location.schema}_s{i}")
            fields = psycopg.conninfo.conninfo_to_dict(parse_location(url).conninfo)
            server_options = {k: str(v) for k, v in fields.items() if k not in _USER_KEYS}
            server_options |= {
                "extensions": "vector",
                "async_capable": "true",
                "fetch_size": "10000",
                "batch_size": "1000",
                "options": f"-c hnsw.iterative_scan=strict_order -c hnsw.ef_search={DEFAULT_EF_SEARCH} -c jit=off",
            }
            user_options = {k: str(v) for k, v in fields.items() if k in _USER_KEYS}
            self.conn.execute(sql.SQL("DROP SERVER IF EXISTS {} CASCADE").format(server))
            self.conn.execute(
                sql.SQL("CREATE SERVER {} FOREIGN DATA WRAPPER postgres_fdw OPTIONS ({})").format(
                    server, _options(server_options)
                )
            )
            mapping = sql.SQL("CREATE USER MAPPING FOR CURRENT_USER SERVER {}").format(server)
            if user_options:
                mapping = sql.SQL("{} OPTIONS ({})").format(mapping, _options(user_options))
            self.conn.execute(mapping)
            for table in ("documents", "chunks", "sentences"):
                self.conn.execute(
                    sql.SQL(
                        "CREATE FOREIGN TABLE {part} PARTITION OF {parent} "
                        "FOR VALUES WITH (MODULUS {n}, REMAINDER {i}) "
                        "SERVER {server} OPTIONS (schema_name {schema}, table_name {table})"
                    ).format(
                        part=self._ident(f"{table}_s{i}"),
                        parent=self._ident(table),
                        n=sql.Literal(len(shards)),
                        i=sql.Literal(i),
                        server=server,
                        schema=sql.Literal(self.location.schema),
                        table=sql.Literal(table),
                    )
                )

    @_database_errors
    def known_vectors(self, hashes: list[int]) -> dict[int, np.ndarray]:
        """Vectors already in the index (committed, or written earlier in this ingest) for these sentence hashes
        (uint64; stored as the int64 of the same bits)."""
        from psycopg import sql

        wanted = list({_signed(h) for h in hashes})
        if not wanted:
            return {}
        found = self.conn.execute(
            sql.SQL("SELECT DISTINCT ON (hash) hash, embedding FROM {} WHERE hash = ANY(%s)").format(
                self._ident("sentences")
            ),
            [wanted],
        ).fetchall()
        return {
            int(h) % 2**64: np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)
            for h, v in found
        }

    @_database_errors
    def remove(self, doc_ids: list[str]) -> None:
        from psycopg import sql

        if not doc_ids:
            return
        for table in ("sentences", "chunks", "documents", "data_rows", "data_tables"):
            self.conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = ANY(%s)").format(self._ident(table)), [doc_ids])
        with_postings = [d for d in doc_ids if d in self._postings_written] if self._fresh else doc_ids
        if self._words and with_postings:
            gone = self.conn.execute(
                sql.SQL(
                    "WITH gone AS (DELETE FROM {} WHERE doc_id = ANY(%s) RETURNING word) SELECT DISTINCT word FROM gone"
                ).format(self._ident("chunk_words")),
                [with_postings],
            )
            self._touched_words.update(word for (word,) in gone.fetchall())
            self._postings_written.difference_update(with_postings)

    @_database_errors
    def write(self, documents: list[PendingDocument | KeptDocument]) -> int:
        """Replace the pending documents (delete their old rows, COPY the new ones) inside the ingest transaction;
        a kept document's rows stay as they are."""
        pending = []
        for document in documents:
            if isinstance(document, PendingDocument):
                seq = self._seq_of.get(document.record.doc_id)
                if seq is None:
                    seq = self._seq_of[document.record.doc_id] = max(self._seq_of.values(), default=-1) + 1
                pending.append((seq, document))
        self.write_rows(pending)
        return 0

    def write_rows(self, documents: list[tuple[int, PendingDocument]]) -> None:
        """:meth:`write` with each document's doc_seq given (benchmarks write prepared rows this way)."""
        from psycopg import sql

        self.remove([d.record.doc_id for _seq, d in documents])
        vector_value: Any = np.asarray
        if self._vector_type == "halfvec":
            from pgvector import HalfVector

            vector_value = HalfVector
        from psycopg.types.json import Jsonb

        def jsonb(value: dict[str, Any] | None) -> Jsonb | None:
            return None if value is None else Jsonb(value)

        documents_copy = sql.SQL(
            "COPY {} (doc_id, doc_seq, source, title, content_hash, n_chunks, n_sentences, metadata) "
            "FROM STDIN (FORMAT BINARY)"
        ).format(self._ident("documents"))
        with self.conn.cursor() as cur:
            with cur.copy(documents_copy) as copy:
                copy.set_types(["text", "int8", "text", "text", "text", "int4", "int4", "jsonb"])
                for seq, doc in documents:
                    record = doc.record
                    copy.write_row(
                        (
                            record.doc_id,
                            seq,
                            record.source,
                            record.title,
                            record.content_hash,
                            len(doc.chunks),
                            len(doc.hashes),
                            jsonb(record.metadata),
                        )
                    )
            secured = getattr(self, "_row_security", False)  # the rows carry their document's groups
            access = sql.SQL(", access" if secured else "")
            chunks_copy = sql.SQL(
                "COPY {} (row, doc_id, chunk_id, text, text_lower, n_tokens, spans, prev_id, next_id, location{}) "
                "FROM STDIN (FORMAT BINARY)"
            ).format(self._ident("chunks"), access)
            with cur.copy(chunks_copy) as copy:
                types = ["int8", "text", "text", "text", "text", "int4", "int4[]", "text", "text", "jsonb"]
                copy.set_types(types + ["text[]"] * secured)
                for seq, doc in documents:
                    ids = [c.chunk_id for c in doc.chunks]
                    groups = (access_groups(doc.record.metadata),) if secured else ()
                    for position, chunk in enumerate(doc.chunks):
                        chunk_id, text, n_tokens, spans = chunk.chunk_id, chunk.text, chunk.n_tokens, chunk.spans
                        copy.write_row(
                            (
                                (seq << ROW_BITS) + position,
                                doc.record.doc_id,
                                chunk_id,
                                text,
                                text.lower(),
                                n_tokens,
                                [v for span in spans for v in span],
                                ids[position - 1] if position else None,
                                ids[position + 1] if position + 1 < len(ids) else None,
                                jsonb(chunk.location),
                                *groups,
                            )
                        )
            sentences_copy = sql.SQL(
                "COPY {} (chunk_row, ord, doc_id, hash, embedding{}) FROM STDIN (FORMAT BINARY)"
            ).format(self._ident("sentences"), access)
            with cur.copy(sentences_copy) as copy:
                copy.set_types(["int8", "int4", "text", "int8", self._vector_type] + ["text[]"] * secured)
                for seq, doc in documents:
                    i = 0
                    groups = (access_groups(doc.record.metadata),) if secured else ()
                    for position, chunk in enumerate(doc.chunks):
                        row = (seq << ROW_BITS) + position
                        for ordinal in range(len(chunk.spans)):
                            hash_value = _signed(int(doc.hashes[i]))
                            vector = vector_value(doc.vectors[i])
                            copy.write_row((row, ordinal, doc.record.doc_id, hash_value, vector, *groups))
                            i += 1
            if self._words:
                self._write_words(cur, documents)
            self._write_data_tables(cur, documents)

    def _write_data_tables(self, cur: psycopg.Cursor[Any], documents: list[tuple[int, PendingDocument]]) -> None:
        """The tables found in the documents' chunks: their catalog rows, and their rows' typed values."""
        from psycopg import sql
        from psycopg.types.json import Jsonb

        catalog: list[tuple[Any, ...]] = []
        row_values: list[tuple[Any, ...]] = []
        for seq, doc in documents:
            for table in tables_in(doc.record.doc_id, [(c.chunk_id, c.text) for c in doc.chunks]):
                info = table.info
                columns = [[c.name, c.kind] for c in info.columns]
                catalog.append(
                    (info.table_id, info.doc_id, seq, info.number, info.caption, Jsonb(columns), info.n_rows,
                     Jsonb(info.chunk_ids))
                )  # fmt: skip
                for position, (row, chunk_id) in enumerate(zip(table.rows, table.row_chunks, strict=True)):
                    cells: dict[str, Any] = {}
                    for i, (value, column) in enumerate(zip(row, info.columns, strict=True)):
                        cells[f"c{i}"] = value
                        if column.kind == "text":
                            cells[f"l{i}"] = lowered(value)
                    row_values.append((info.table_id, position, info.doc_id, chunk_id, Jsonb(cells)))
        if catalog:
            cur.executemany(
                sql.SQL(
                    "INSERT INTO {} (table_id, doc_id, doc_seq, number, caption, columns, n_rows, chunk_ids) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                ).format(self._ident("data_tables")),
                catalog,
            )
        if row_values:
            copy_rows = sql.SQL("COPY {} (table_id, row_no, doc_id, chunk_id, cells) FROM STDIN (FORMAT BINARY)")
            with cur.copy(copy_rows.format(self._ident("data_rows"))) as copy:
                copy.set_types(["text", "int4", "text", "text", "jsonb"])
                for values in row_values:
                    copy.write_row(values)

    def _write_words(self, cur: psycopg.Cursor[Any], documents: list[tuple[int, PendingDocument]]) -> None:
        """The documents' postings, and the words new to the vocabulary (arag/store/words.py)."""
        from psycopg import sql

        vocabulary: set[str] = set()
        secured = getattr(self, "_row_security", False)
        postings = sql.SQL("COPY {} (word, chunk_row, doc_id, n{}) FROM STDIN (FORMAT BINARY)").format(
            self._ident("chunk_words"), sql.SQL(", access" if secured else "")
        )
        with cur.copy(postings) as copy:
            copy.set_types(["text", "int8", "text", "int4"] + ["text[]"] * secured)
            for seq, doc in documents:
                self._postings_written.add(doc.record.doc_id)
                groups = (access_groups(doc.record.metadata),) if secured else ()
                for position, chunk in enumerate(doc.chunks):
                    counted = Counter(WORD.findall(chunk.text.lower()))
                    vocabulary.update(counted)
                    row = (seq << ROW_BITS) + position
                    for word, n in counted.items():
                        copy.write_row((word, row, doc.record.doc_id, n, *groups))
        cur.execute(
            sql.SQL("INSERT INTO {} (word) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING").format(
                self._ident("words")
            ),
            [sorted(vocabulary)],
        )
        self._touched_words.update(vocabulary)

    @_database_errors
    def commit(self, embedder: dict[str, Any]) -> dict[str, int]:
        """Build the search indexes of a new single-node index, record the manifest, commit; the index's counts."""
        counts = self.counts()
        settings = self.settings
        self.commit_manifest(
            new_manifest(
                self.next_generation(),
                embedder,
                settings.chunker.model_dump(),
                settings.vector_dtype,
                settings.ann,
                counts,
            )
        )
        return counts

    def _pack_postings(self) -> None:
        """(Re)write the packed postings: of every word in a new index, else of the words this ingest touched."""
        from psycopg import sql

        fmt = self._tables()
        if self._fresh:
            self.conn.execute(sql.SQL(_PACK_POSTINGS).format(**fmt), {"words": None})
            return
        if not self._touched_words:
            return
        touched = sorted(self._touched_words)
        self.conn.execute(sql.SQL("DELETE FROM {} WHERE word = ANY(%s)").format(fmt["word_postings"]), [touched])
        self.conn.execute(sql.SQL(_PACK_POSTINGS).format(**fmt), {"words": touched})
        self._touched_words.clear()

    def commit_manifest(self, manifest: Manifest) -> None:
        """:meth:`commit` with the manifest given (benchmarks write prepared rows this way)."""
        from psycopg import sql

        if self._fresh and not self._distributed:
            self._search_indexes(self.conn)
        if self._packed:
            self._pack_postings()
        shards = self._new_shards or self.shards
        manifest.extra = {**manifest.extra, "store": "postgresql", **({"shards": shards} if shards else {})}
        if self._words:
            manifest.extra["word_index"] = True
        if self._packed:
            manifest.extra["word_postings"] = True
        if self._data_tables:
            manifest.extra["data_tables"] = True
        if getattr(self, "_row_security", False):
            manifest.extra["row_security"] = True
        self.conn.execute(
            sql.SQL(
                "INSERT INTO {} (id, body) VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body"
            ).format(self._ident("manifest")),
            [json.dumps(asdict(manifest))],
        )
        self.conn.commit()
        # the shards' rows became visible with the commit: build their search indexes now (a no-op when they
        # exist); each shard's own statistics first, then the coordinator's samples of them
        for url in self._shard_urls:
            with self._shard_connection(self._shard_location(url)) as conn:
                self._search_indexes(conn)
                conn.commit()
                conn.autocommit = True
                for table in ("documents", "chunks", "sentences"):
                    conn.execute(sql.SQL("ANALYZE {}").format(self._ident(table)))
        words = ("words", "chunk_words", *(("word_postings",) if self._packed else ())) if self._words else ()
        for table in ("documents", "chunks", "sentences", *words):
            with contextlib.suppress(self._psycopg.Error):
                self.conn.execute(sql.SQL("ANALYZE {}").format(self._ident(table)))
                self.conn.commit()

    @_database_errors
    def chunk_owners(self, chunk_ids: list[str]) -> dict[str, str]:
        """The documents that hold any of these chunk ids now (in this ingest's view)."""
        from psycopg import sql

        if not chunk_ids:
            return {}
        query = sql.SQL("SELECT chunk_id, doc_id FROM {} WHERE chunk_id = ANY(%s)").format(self._ident("chunks"))
        return dict(self.conn.execute(query, [chunk_ids]).fetchall())

    def counts(self) -> dict[str, int]:
        from psycopg import sql

        query = sql.SQL("SELECT count(*), coalesce(sum(n_chunks), 0), coalesce(sum(n_sentences), 0) FROM {}").format(
            self._ident("documents")
        )
        row = self.conn.execute(query).fetchone()
        assert row is not None
        return {"documents": int(row[0]), "chunks": int(row[1]), "sentences": int(row[2])}

    def next_generation(self) -> int:
        return (self.manifest.generation if self.manifest else 0) + 1

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.rollback()
        with contextlib.suppress(Exception):
            self.conn.close()  # ends the session: the advisory lock goes with it


def _signed(hash_value: int) -> int:
    """A uint64 sentence hash as the int64 PostgreSQL stores (the same 64 bits)."""
    return hash_value - 2**64 if hash_value >= 2**63 else hash_value


def _options(options: dict[str, str]) -> sql.Composed:
    from psycopg import sql

    return sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in options.items())
