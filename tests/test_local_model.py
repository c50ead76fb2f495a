"""End to end with the real embedded model (Qwen2.5-Coder-0.5B Q4_K_M via xllamacpp) and the real embedder.

Runs ``arag`` in a subprocess: llama.cpp gets a process of its own, as in real use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arag.agent import STOP_REASONS
from conftest import FIXTURES


@pytest.mark.model
def test_local_model_answers_over_indexed_fixture(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARAG_", "OPENAI_"))}
    env["ARAG_CACHE_DIR"] = str(tmp_path / "cache")
    idx = str(tmp_path / "idx")
    arag = [sys.executable, "-m", "arag"]
    built = subprocess.run(
        [*arag, "index", str(FIXTURES / "hipporag_corpus.json"), "--index", idx, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["sentences"] > 0
    info = json.loads(subprocess.run([*arag, "info", "--index", idx], capture_output=True, text=True).stdout)
    assert info["embedder"]["name"] == "sentence-transformers/all-MiniLM-L6-v2" and info["embedder"]["dims"] == 384
    asked = subprocess.run(
        [
            *arag,
            "ask",
            "Who was the mother of Lothair II?",
            "--index",
            idx,
            "--json",
            "--local-model",
            "qwen2.5-coder-0.5b",
            "--max-steps",
            "3",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert result["stop_reason"] in STOP_REASONS and result["stop_reason"] != "error"
    assert result["answer"].strip()
    assert 1 <= result["steps"] <= 3 and len(result["trajectory"]) == result["steps"]
    first = result["trajectory"][0]
    assert first["tool"] in {"keyword_search", "semantic_search"} and first["retrieved_tokens"] > 0
    for step in result["trajectory"]:
        assert step["tool"] in {"keyword_search", "semantic_search", "chunk_read"}
        assert step["observation"] and step["retrieved_tokens"] >= 0 and step["latency_s"] >= 0
    assert result["usage"]["calls"] >= 2 and result["usage"]["completion_tokens"] > 0
    for citation in result["citations"]:
        assert citation["verified"] == (citation["chunk_id"] in result["seen_chunks"])
