"""The rough edges a new user met in one afternoon (issue 52), each closed the general way and kept closed here."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import FIXTURES, fake_settings
from support.scripted_server import ScriptedServer, completion, tool_call

ROOT = Path(__file__).resolve().parent.parent


def arag(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arag", *args], capture_output=True, text=True, timeout=300, env=env)


def test_an_index_kept_inside_the_folder_it_indexes_never_indexes_itself(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "team").mkdir(parents=True)
    (docs / "a.md").write_text("Alpha is the first letter.\n", encoding="utf-8")
    (docs / "team" / "b.md").write_text("Beta is the second letter.\n", encoding="utf-8")
    index = docs / "idx"  # where the "no index at" hint led a new user
    for _ in range(2):
        built = arag("index", str(docs), "--index", str(index), "--embedder", "fake", "--json")
        assert built.returncode == 0, built.stderr  # no "skipped: docs/idx/manifest.json …"
        summary = json.loads(built.stdout)
        assert summary["documents"] == 2 and summary["problems"] == []
    # another a-rag index inside the folder is no document either, wherever it lies
    other = docs / "team" / "old-index"
    assert arag("index", str(docs / "a.md"), "--index", str(other), "--embedder", "fake").returncode == 0
    again = json.loads(arag("index", str(docs), "--index", str(index), "--embedder", "fake", "--json").stdout)
    assert again["documents"] == 2 and again["problems"] == []
    exported = [json.loads(line)["doc_id"] for line in arag("export", "--index", str(index)).stdout.splitlines()]
    assert sorted(exported) == ["docs/a.md", "docs/team/b.md"]


def test_indexing_again_after_files_were_deleted_says_sync_removes_them(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (docs / name).write_text(f"{name} holds one sentence about {name[0]}.\n", encoding="utf-8")
    index = str(tmp_path / "idx")
    assert arag("index", str(docs), "--index", index, "--embedder", "fake").returncode == 0
    (docs / "b.md").unlink()
    (docs / "c.md").unlink()
    kept = arag("index", str(docs), "--index", index, "--embedder", "fake")
    assert kept.returncode == 0
    assert "2 document(s) kept whose file is gone from the sources (docs/b.md, docs/c.md): --sync removes them" in (
        kept.stderr
    )
    as_json = json.loads(arag("index", str(docs), "--index", index, "--embedder", "fake", "--json").stdout)
    assert as_json["stale"] == ["docs/b.md", "docs/c.md"] and as_json["documents"] == 3
    synced = arag("index", str(docs), "--index", index, "--embedder", "fake", "--sync")
    assert synced.returncode == 0 and "--sync removes them" not in synced.stderr and "2 removed" in synced.stderr


def test_info_lists_the_fields_a_filter_can_use(tmp_path: Path) -> None:
    records = tmp_path / "notes.jsonl"
    records.write_text('{"id": "n1", "text": "Alpha is first.", "year": 2021, "team": "ops"}\n', encoding="utf-8")
    index = str(tmp_path / "idx")
    assert arag("index", str(records), "--index", index, "--embedder", "fake").returncode == 0
    info = json.loads(arag("info", "--index", index).stdout)
    fields = info["metadata_fields"]
    assert fields[:2] == ["path", "type"] and {"mtime", "team", "year"} <= set(fields)  # the record's own too
    assert info["counts"]["documents"] == 1


def test_serve_needs_no_extra_beyond_the_main_setup() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {dep.split(">")[0].split("=")[0].split("[")[0].strip().lower() for dep in project["dependencies"]}
    assert {"fastapi", "uvicorn"} <= required
    assert project["optional-dependencies"]["serve"] == []  # the old extra's name still installs


def test_ask_verify_checks_each_claim_and_shows_it(tmp_path: Path, server: ScriptedServer) -> None:
    from arag.corpus.build import build_index

    build_index([FIXTURES / "hipporag_corpus.json"], tmp_path / "idx", fake_settings())
    replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Teutberga"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Teutberga#0"]}, "call_2")]),
        completion("Teutberga died on 11 November 875 [chunk Teutberga#0]. She ruled Spain [chunk Teutberga#0]."),
    ]
    env = {"ARAG_BASE_URL": server.base_url, "ARAG_API_KEY": "k", "ARAG_MODEL": "m", "PATH": "/usr/bin:/bin"}
    question = ["ask", "When did Teutberga die?", "--index", str(tmp_path / "idx")]
    server.replies = list(replies)
    shown = arag(*question, "--verify", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "supported: Teutberga died on 11 November 875" in shown.stdout
    assert "NOT supported by anything read: She ruled Spain." in shown.stdout
    server.replies = list(replies)
    recorded = json.loads(arag(*question, "--verify", "--json", env=env).stdout)
    assert [claim["supported"] for claim in recorded["verification"]["claims"]] == [True, False]
    server.replies = list(replies)
    assert json.loads(arag(*question, "--json", env=env).stdout)["verification"] is None  # off unless asked


def test_a_chunk_without_a_claim_is_labelled_with_the_section_its_text_is_in(tmp_path: Path) -> None:
    import arag
    from arag.citations import locate
    from arag.corpus.build import build_index

    guide = tmp_path / "clinic.md"
    body = " ".join(f"Radiation planning step {n} uses a CT scan of the area." for n in range(12))
    guide.write_text(f"# Clinic\n\nOpen daily.\n\n## Radiation planning\n\n{body}\n", encoding="utf-8")
    build_index([guide], tmp_path / "idx", fake_settings())
    index = arag.open_index(tmp_path / "idx")
    try:
        (record,), _ = index.read(["clinic.md#0"])
        assert locate(index, record).label.endswith("› Clinic › Radiation planning")
        assert locate(index, record, "Open daily.").label.endswith("› Clinic")  # a claim: its sentence's section
    finally:
        index.close()
