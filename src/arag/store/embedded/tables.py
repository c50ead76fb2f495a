"""The embedded store's tables as data: ``tables.sqlite`` in each generation, beside ``chunks.sqlite``.

``data_tables`` is the catalog (one row per table: its id, document, caption, columns and their kinds as JSON, row
count, chunks); each table is a typed SQLite table ``t{n}`` (``_row``, ``_chunk``, then per column ``c{i}`` — REAL
or TEXT — and, for a text column, ``l{i}``: its lower case as Python writes it). Queries come compiled from a
:class:`~arag.store.tabular.TableQuery` and run on a read-only, immutable connection whose authorizer allows
reading and the query's functions only (no writing, ATTACH, PRAGMA or extension loading), stopped at the time limit.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from arag.errors import StoreError
from arag.store.tabular import (
    QUERY_TIME_LIMIT_S,
    SQLITE,
    Column,
    DataTable,
    TableAnswer,
    TableInfo,
    TableQuery,
    TableQueryError,
    answer_header,
    compile_query,
    lowered,
)

TABLES_DATABASE = "tables.sqlite"
_CATALOG = """
CREATE TABLE data_tables (n INTEGER PRIMARY KEY, table_id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL,
                          number INTEGER NOT NULL, caption TEXT NOT NULL, columns TEXT NOT NULL,  -- [[name, kind]]
                          n_rows INTEGER NOT NULL, chunk_ids TEXT NOT NULL);  -- JSON list
"""
_ALLOWED_FUNCTIONS = frozenset({"count", "sum", "avg", "min", "max", "instr", "nullif"})


class TablesWriter:
    """Writes one generation's ``tables.sqlite`` (in its temporary folder, before the commit hashes it)."""

    def __init__(self, folder: Path) -> None:
        self._db = sqlite3.connect(folder / TABLES_DATABASE)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _CATALOG)
        self._n = 0

    def add(self, tables: list[DataTable]) -> None:
        for table in tables:
            info = table.info
            self._n += 1
            columns = ", ".join(
                f"c{i} {'REAL' if c.kind == 'number' else 'TEXT'}" + ("" if c.kind == "number" else f", l{i} TEXT")
                for i, c in enumerate(info.columns)
            )
            self._db.execute(
                f"CREATE TABLE t{self._n} (_row INTEGER PRIMARY KEY, _chunk TEXT NOT NULL{', ' if columns else ''}"
                f"{columns})"
            )
            names = ["_row", "_chunk"]
            for i, column in enumerate(info.columns):
                names += [f"c{i}"] if column.kind == "number" else [f"c{i}", f"l{i}"]
            rows = []
            for position, (row, chunk_id) in enumerate(zip(table.rows, table.row_chunks, strict=True)):
                values: list[object] = [position, chunk_id]
                for value, column in zip(row, info.columns, strict=True):
                    values += [value] if column.kind == "number" else [value, lowered(value)]
                rows.append(values)
            marks = ", ".join("?" * len(names))
            self._db.executemany(f"INSERT INTO t{self._n} ({', '.join(names)}) VALUES ({marks})", rows)
            self._db.execute(
                "INSERT INTO data_tables (n, table_id, doc_id, number, caption, columns, n_rows, chunk_ids) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self._n,
                    info.table_id,
                    info.doc_id,
                    info.number,
                    info.caption,
                    json.dumps([[c.name, c.kind] for c in info.columns], ensure_ascii=False),
                    info.n_rows,
                    json.dumps(info.chunk_ids, ensure_ascii=False),
                ),
            )

    def close(self) -> None:
        try:
            self._db.commit()
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"duplicate table ids while writing the index: {exc}") from None
        finally:
            self._db.close()


class TablesFile:
    """Read side: the catalog, and queries on read-only connections (one per thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._catalog: list[tuple[int, TableInfo]] | None = None
        self._by_id: dict[str, tuple[int, TableInfo]] | None = None

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = 1")
            conn.set_authorizer(_read_only)
            self._local.conn = conn
            self._connections.append(conn)
        return conn

    def catalog(self) -> list[tuple[int, TableInfo]]:
        if self._catalog is None:
            rows = self._connection().execute(
                "SELECT n, table_id, doc_id, number, caption, columns, n_rows, chunk_ids FROM data_tables ORDER BY n"
            )
            self._catalog = [
                (
                    n,
                    TableInfo(
                        table_id,
                        doc_id,
                        number,
                        caption,
                        [Column(name, kind) for name, kind in json.loads(columns)],
                        n_rows,
                        json.loads(chunk_ids),
                    ),
                )
                for n, table_id, doc_id, number, caption, columns, n_rows, chunk_ids in rows
            ]
        return self._catalog

    def find(self, table_id: str) -> tuple[int, TableInfo] | None:
        """The table's number and catalog entry, or None for an id no table has."""
        if self._by_id is None:
            self._by_id = {info.table_id: (n, info) for n, info in self.catalog()}
        return self._by_id.get(table_id)

    def answer(self, n: int, info: TableInfo, query: TableQuery) -> TableAnswer:
        """The query's result over the table ``t{n}``; a query over the time limit raises :class:`StoreError`."""
        compiled = compile_query(query, info, SQLITE, f"t{int(n)}")
        conn = self._connection()
        deadline = time.monotonic() + QUERY_TIME_LIMIT_S
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            rows = conn.execute(compiled.select, compiled.parameters).fetchall()
            total = int(conn.execute(compiled.count, compiled.parameters).fetchone()[0])
            if query.grouped:
                chunks = [chunk for (chunk,) in conn.execute(compiled.chunks, compiled.parameters)]
            else:
                chunks = list(dict.fromkeys(row[0] for row in rows))
                rows = [row[1:] for row in rows]
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise TableQueryError(f"the query took longer than {QUERY_TIME_LIMIT_S:g} s and was stopped") from None
            raise StoreError(f"the query failed: {exc}") from None
        finally:
            conn.set_progress_handler(None, 0)
        return TableAnswer(answer_header(query, info), [list(row) for row in rows], total, chunks)

    def close(self) -> None:
        for conn in self._connections:
            conn.close()
        self._connections.clear()


def _read_only(action: int, _first: str | None, second: str | None, _database: str | None, _view: str | None) -> int:
    """SQLite's authorizer: reading, and the functions queries use (a function's name is its second argument);
    nothing else (writes, ATTACH, PRAGMA…)."""
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (second or "").lower() in _ALLOWED_FUNCTIONS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY
