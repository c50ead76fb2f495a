"""The ``arag`` command run as a user runs it, against the scripted model server, on the fixture datasets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.scripted_server import ScriptedServer

DATASETS = Path(__file__).resolve().parent.parent / "fixtures" / "datasets"


def cli_env(server: ScriptedServer, cache: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "ARAG_BASE_URL": server.base_url,
        "ARAG_API_KEY": "k",
        "ARAG_MODEL": "gpt-4o-mini",
        "ARAG_CACHE_DIR": str(cache),
        "ARAG_INDEX__EMBEDDER": "fake",
    }


def run_cli(
    *args: str, server: ScriptedServer, cache: Path, timeout: float = 300, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arag", *args],
        capture_output=True,
        text=True,
        env={**cli_env(server, cache), **(extra_env or {})},
        timeout=timeout,
    )
