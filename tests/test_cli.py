from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
    source = read[0]["source"]  # an A-RAG chunks.json records no offsets, pages or headings: the file only
    assert read == [{"chunk_id": "1", "text": read[0]["text"], "prev_id": "0", "next_id": "2", "source": source}]
    assert source["path"] == "arag_chunks.json" and source["label"] == "arag_chunks.json" and not source["pages"]
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


def test_version_and_every_option_has_help_and_default() -> None:
    import click
    import typer.main

    from arag import __version__
    from arag.serve.cli import app

    version = arag("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"a-rag {__version__}"

    def walk(command: click.Command, path: str) -> list[tuple[str, click.Option]]:
        found = [(path, p) for p in command.params if isinstance(p, click.Option)]
        for name, sub in getattr(command, "commands", {}).items():
            found += walk(sub, f"{path} {name}")
        return found

    missing = []
    for path, option in walk(typer.main.get_command(app), "arag"):
        if option.name in ("help", "version"):
            continue
        has_default = "[default:" in (option.help or "") or (
            option.default not in (None, False) and option.show_default
        )
        if not option.help or (not option.is_flag and not has_default):
            missing.append(f"{path} {option.opts[0]}")
    assert missing == []


def test_cli_validates_like_the_tools(tmp_path: Path) -> None:
    idx = str(tmp_path / "idx")
    assert arag("index", str(FIXTURES / "guide.md"), "--index", idx, "--embedder", "fake").returncode == 0
    for args, message in (
        (["search", "keyword", "x", "--top-k", "0"], "--top-k"),
        (["search", "keyword", "x", "--top-k", "-3"], "--top-k"),
        (["search", "keyword", "  "], "the keyword list is empty"),
        (["search", "semantic", ""], "the query is empty"),
        (["read", " "], "the chunk id list is empty"),
        (["ask", "   "], "the question is empty"),
    ):
        proc = arag(*args, "--index", idx)
        assert proc.returncode in (1, 2) and message in proc.stderr and "Traceback" not in proc.stderr, args


def test_errors_are_never_hard_wrapped(tmp_path: Path) -> None:
    deep = tmp_path / ("a-very-long-folder-name-" * 8) / "index"
    proc = arag("search", "keyword", "x", "--index", str(deep))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and str(deep) in lines[0]


def test_index_skips_bad_sources_once_and_strict_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "good.md").write_text("Head gardener Ottoline Varga keeps the roses. She starts at dawn.")
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02")
    (folder / "broken.json").write_text("{")
    (folder / "photo.xyz").write_text("?")
    idx = tmp_path / "idx"
    proc = arag("index", str(folder), "--index", str(idx), "--embedder", "fake")
    assert proc.returncode == 3, proc.stderr
    for name in ("binary.txt", "broken.json", "photo.xyz"):
        assert proc.stderr.count(name) == 1, proc.stderr
    assert "indexed 1 documents" in proc.stderr
    hits = json.loads(arag("search", "keyword", "Ottoline", "--index", str(idx), "--json").stdout)
    assert [h["chunk_id"] for h in hits] == ["notes/good.md#0"]
    strict = arag("index", str(folder), "--index", str(tmp_path / "strict"), "--embedder", "fake", "--strict")
    assert strict.returncode == 1 and "nothing written (--strict): 3 unreadable source(s)" in strict.stderr
    assert not (tmp_path / "strict" / "manifest.json").exists()


def test_unknown_environment_variable_warns(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "ARAG_MAX_STEPS": "3"}
    proc = subprocess.run(
        [sys.executable, "-m", "arag", "info", "--index", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "warning: ARAG_MAX_STEPS is not an a-rag setting; ignored" in proc.stderr


def test_report_without_matplotlib_writes_tables_and_names_the_extra(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    summary = {"method": "direct", "dataset": "d", "questions": 2, "contain_acc": 0.5, "max_steps": None}
    (run / "summary.json").write_text(json.dumps(summary))
    code = (
        "import sys; sys.modules['matplotlib'] = None; sys.argv = ['arag', *sys.argv[1:]]; "
        "from arag.serve.cli import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "eval", "report", str(run), "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "plots skipped: the plots need matplotlib: pip install 'a-rag[eval]'" in proc.stderr
    assert "| Direct answer | – | 50.0 |" in (tmp_path / "report" / "report.md").read_text()


def test_a_read_in_place_of_a_repeated_call_is_labelled(capsys: pytest.CaptureFixture[str]) -> None:
    from arag.agent import Step
    from arag.agent.prompts import REPEATED
    from arag.serve.cli.agent import _show_step

    observation = f"{REPEATED} Instead, here is the best hit you have not read yet:\nx"
    read = Step(
        "chunk_read", {"chunk_ids": ["a#0"]}, observation, 5, 0.0, origin="harness", why="in place of its repeated call"
    )
    _show_step(read)
    shown = capsys.readouterr().err.splitlines()
    assert shown[0] == '→ chunk_read {"chunk_ids": ["a#0"]} (made for the model in place of its repeated call)'
    refused = Step("keyword_search", {"keywords": ["a"]}, f"{REPEATED} Use it, try something different.", 0, 0.0)
    _show_step(refused)
    assert capsys.readouterr().err.splitlines()[0] == '→ keyword_search {"keywords": ["a"]}'  # the model's own call


def test_policies_are_listed_with_their_settings() -> None:
    listed = arag("policies")
    assert listed.returncode == 0, listed.stderr
    assert "agent.policy.short_answer.max_chars = 200: Longest answer" in listed.stdout
    rows = {row["name"]: row for row in json.loads(arag("policies", "--json").stdout)}
    assert rows["read_allowance"]["settings"]["reads_per_search"]["default"] == 2
    assert rows["same_name"]["profiles"] == [] and rows["same_name"]["settings"] == {}
