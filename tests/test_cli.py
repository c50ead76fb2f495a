from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES


def arag(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arag", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_round_trip(tmp_path: Path) -> None:
    idx = str(tmp_path / "idx")
    built = arag(
        "index",
        str(FIXTURES / "arag_chunks.json"),
        str(FIXTURES / "guide.md"),
        "--index",
        idx,
        "--embedder",
        "fake",
        "--json",
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["chunks"] == 7
    hits = json.loads(arag("search", "keyword", "lothair", "tours", "--index", idx, "--top-k", "2", "--json").stdout)
    assert [set(h) for h in hits] == [{"chunk_id", "score", "snippets"}] * 2 and hits[0]["chunk_id"] == "0"
    sem = json.loads(arag("search", "semantic", "Lothair mother", "--index", idx, "--json").stdout)
    assert len(sem) == 5 and sem[0]["score"] >= sem[-1]["score"]
    read = json.loads(arag("read", "1", "--index", idx, "--json").stdout)
    assert read == [{"chunk_id": "1", "text": read[0]["text"], "prev_id": "0", "next_id": "2"}]
    exported = [json.loads(line) for line in arag("export", "--index", idx).stdout.splitlines()]
    assert [e["chunk_id"] for e in exported] == ["0", "1", "2", "3", "4", "5", "guide.md#0"]
    assert exported[-1] == {"chunk_id": "guide.md#0", "doc_id": "guide.md", "text": (FIXTURES / "guide.md").read_text()}
    manifest = json.loads(arag("info", "--index", idx).stdout)
    assert manifest["embedder"]["name"] == "fake" and manifest["counts"]["chunks"] == 7
    assert manifest["chunker"] == {"chunk_tokens": 1000, "encoding": "cl100k_base"}


def test_errors_are_one_clear_line(tmp_path: Path) -> None:
    missing = arag("search", "keyword", "x", "--index", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "no index at" in missing.stderr
    (tmp_path / "bin.txt").write_bytes(b"\x00\x00")
    bad = arag("index", str(tmp_path / "bin.txt"), "--index", str(tmp_path / "i"), "--embedder", "fake")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "bin.txt" in bad.stderr and "binary" in bad.stderr
    unknown = arag("read", "zz", "--index", str(tmp_path / "nope"))
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    bad_embedder = arag("index", str(FIXTURES / "guide.md"), "--index", str(tmp_path / "j"), "--embedder", "nope")
    assert bad_embedder.returncode == 1 and "unknown embedder" in bad_embedder.stderr
    assert "Traceback" not in bad_embedder.stderr
