"""Files a-rag derives and checks: where it caches them, and their sha256."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """Where a-rag keeps files it derives (int8 encoder, assembled GGUF models, evaluation indexes)."""
    return Path(os.environ.get("ARAG_CACHE_DIR") or Path.home() / ".cache" / "arag")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
