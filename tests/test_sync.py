"""Sync: an index that follows its folder (added, changed, deleted, renamed and unreadable files) on both stores,
in one generation or one transaction; kill -9 during a sync; readers during a sync; a long-lived index that moves
to a new generation without a restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arag.corpus.build import build_index
from arag.index import Index
from conftest import fake_settings
from support.indexing import SLOW_INDEXER
from support.pg import PgNode


@pytest.fixture(scope="module")
def node() -> Iterator[PgNode]:
    started = PgNode()
    yield started
    started.stop()


@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "embedded":
        return str(tmp_path / "idx")
    pg: PgNode = request.getfixturevalue("node")
    return pg.database("sync", index=f"t{abs(hash(str(tmp_path))) % 10**8}")


def _doc_ids(location: str) -> list[str]:
    index = Index.open(location, threads=1)
    try:
        return sorted(d.doc_id for d in index.documents())
    finally:
        index.close()


def test_sync_makes_the_index_equal_to_the_folder(location: str, tmp_path: Path) -> None:
    folder = tmp_path / "team"
    (folder / "sub").mkdir(parents=True)
    (folder / "keep.md").write_text("Keep this sentence. It never changes.")
    (folder / "change.md").write_text("Before the change. Second sentence.")
    (folder / "delete.md").write_text("Doomed text lives here.")
    (folder / "sub" / "rename.md").write_text("Wandering text moves folders.")
    (folder / "broken.md").write_text("Readable until it is not.")
    outside = tmp_path / "outside.md"
    outside.write_text("Outside the synced folder.")
    build_index([folder, outside], location, fake_settings())
    assert _doc_ids(location) == [
        "outside.md", "team/broken.md", "team/change.md", "team/delete.md", "team/keep.md", "team/sub/rename.md"
    ]  # fmt: skip

    (folder / "change.md").write_text("After the change. Second sentence.")
    (folder / "delete.md").unlink()
    (folder / "sub" / "rename.md").rename(folder / "renamed.md")
    (folder / "broken.md").write_bytes("caf\xe9 half-written".encode("latin-1"))  # unreadable now: kept
    (folder / "new.md").write_text("A new arrival appears.")
    report = build_index([folder], location, fake_settings(), sync=True)

    assert sorted(report.added) == ["team/new.md", "team/renamed.md"]
    assert report.replaced == ["team/change.md"]
    assert report.removed == 2  # delete.md and the old name of the renamed file
    assert report.unchanged == 1  # keep.md, read again and the same
    assert report.documents == 6  # broken.md (unreadable: kept as it was) and outside.md (not under the folder) too
    assert [Path(p.path).name for p in report.problems] == ["broken.md"]
    assert report.reused_vectors >= 2  # the renamed file's sentence and the changed file's unchanged one
    assert _doc_ids(location) == [
        "outside.md", "team/broken.md", "team/change.md", "team/keep.md", "team/new.md", "team/renamed.md"
    ]  # fmt: skip
    index = Index.open(location, threads=1)
    try:
        assert index.keyword_search(["Doomed"]) == []
        assert [h.chunk_id for h in index.keyword_search(["Wandering"])] == ["team/renamed.md#0"]
        assert index.keyword_search(["Before the change"]) == []
        assert [h.chunk_id for h in index.keyword_search(["After the change"])] == ["team/change.md#0"]
        assert [h.chunk_id for h in index.keyword_search(["Readable until"])] == ["team/broken.md#0"]
        assert index.store.verify() == []
    finally:
        index.close()

    # a file that is removed while unreadable goes on the next sync; a sync with no change writes nothing new
    (folder / "broken.md").unlink()
    assert build_index([folder], location, fake_settings(), sync=True).removed == 1
    again = build_index([folder], location, fake_settings(), sync=True)
    assert (again.removed, again.added, again.replaced, again.embedded) == (0, [], [], 0)


def test_without_sync_deleted_files_stay(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Alpha text.")
    (folder / "b.md").write_text("Beta text.")
    build_index([folder], tmp_path / "idx", fake_settings())
    (folder / "b.md").unlink()
    assert build_index([folder], tmp_path / "idx", fake_settings()).removed == 0
    assert _doc_ids(str(tmp_path / "idx")) == ["docs/a.md", "docs/b.md"]


def test_cli_index_sync(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Alpha text.")
    (folder / "b.md").write_text("Beta text.")
    idx = tmp_path / "idx"

    def arag(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COLUMNS": "200"}
        return subprocess.run([sys.executable, "-m", "arag", *args], capture_output=True, text=True, env=env)

    assert arag("index", str(folder), "--index", str(idx), "--embedder", "fake").returncode == 0
    (folder / "b.md").unlink()
    done = arag("index", str(folder), "--index", str(idx), "--embedder", "fake", "--sync")
    assert done.returncode == 0, done.stderr
    assert "1 removed" in done.stderr
    assert _doc_ids(str(idx)) == ["docs/a.md"]


def _generation_of(index: Index) -> tuple[str, ...]:
    return tuple(sorted(d.doc_id for d in index.documents()))


def test_kill_9_during_a_sync_leaves_the_old_or_the_new_generation(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(30):
        (folder / f"old{i}.md").write_text(f"Old document {i} says old things. " * 5)
    idx = tmp_path / "idx"
    build_index([folder], idx, fake_settings())
    old = _generation_of(Index.open(idx))
    for i in range(30):
        (folder / f"old{i}.md").unlink()
        (folder / f"new{i}.md").write_text(f"New document {i} says new things number {i}. " * 5)
    script = tmp_path / "slow.py"
    script.write_text(SLOW_INDEXER)
    new = tuple(sorted(f"docs/new{i}.md" for i in range(30)))
    for delay in (0.0, 0.2, 0.5):
        command = [sys.executable, str(script), str(folder), str(idx), "--sync"]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "embedding"  # mid-sync
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        index = Index.open(idx)
        assert _generation_of(index) == old
        assert index.keyword_search(["new things"]) == [] and index.keyword_search(["old things"])
        index.close()
    build_index([folder], idx, fake_settings(), sync=True)
    index = Index.open(idx)
    assert _generation_of(index) == new and index.keyword_search(["old things"]) == []
    index.close()


def _versioned(folder: Path, tag: str, n: int = 12) -> None:
    """n files, each naming the version in every sentence; version "b" also renames half of them."""
    for path in folder.glob("*.md"):
        path.unlink()
    for i in range(n):
        name = f"doc{i}-{tag}.md" if tag == "b" and i % 2 else f"doc{i}.md"
        (folder / name).write_text(f"Document {i} is version {tag}. " * 20)


def test_ten_readers_during_syncs_see_one_generation_and_no_error(location: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    _versioned(folder, "a")
    build_index([folder], location, fake_settings(chunker={"chunk_tokens": 40}))
    index = Index.open(location, threads=1)
    index.follow_updates(every_s=0)
    stop = threading.Event()
    failures: list[str] = []
    seen: list[str] = []

    def read_constantly() -> None:
        while not stop.is_set():
            try:
                hits = index.keyword_search(["is version"], 200)  # one operation: one generation
                tags = {tag for hit in hits for tag in ("a", "b") if f"version {tag}." in " ".join(hit.snippets)}
                ids = {hit.chunk_id.split("#")[0] for hit in hits}
                if len(tags) != 1 or len(ids) != 12:
                    failures.append(f"{sorted(tags)} from {len(ids)} documents")
                seen.extend(tags)
                with index.consistent():  # several operations on one state of the index (as in a tool call)
                    hits = index.semantic_search("version", 200)
                    records, missing = index.read(sorted(hit.chunk_id for hit in hits))
                    texts = {tag for r in records for tag in ("a", "b") if f"version {tag}." in r.text}
                    if missing or len(texts) != 1:
                        failures.append(f"read: {len(missing)} missing, {sorted(texts)}")
            except Exception as exc:  # any error at all is a failure of the test
                failures.append(repr(exc))

    readers = [threading.Thread(target=read_constantly) for _ in range(10)]
    for reader in readers:
        reader.start()
    try:
        for tag in ("b", "a", "b"):
            time.sleep(0.3)
            _versioned(folder, tag)
            build_index([folder], location, fake_settings(chunker={"chunk_tokens": 40}), sync=True)
        time.sleep(0.5)
    finally:
        stop.set()
        for reader in readers:
            reader.join(timeout=60)
    try:
        assert not failures, failures[:5]
        assert set(seen) == {"a", "b"} and seen[-1] == "b"  # they moved to each new generation
    finally:
        index.close()


def test_a_long_lived_index_moves_to_new_generations_and_closes_old_ones(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Alpha text.")
    idx = tmp_path / "idx"
    build_index([folder], idx, fake_settings())
    fixed, following = Index.open(idx), Index.open(idx)
    following.follow_updates(every_s=0)
    following.RETIRE_AFTER_S = 0
    (folder / "b.md").write_text("Beta text.")
    build_index([folder], idx, fake_settings(), sync=True)
    assert [h.chunk_id for h in following.keyword_search(["Beta"])] == ["docs/b.md#0"]
    assert following.metadata_fields() and following.document("docs/b.md") is not None
    assert fixed.keyword_search(["Beta"]) == []  # an index that does not follow keeps what it opened
    fixed.close()
    following.keyword_search(["Alpha"])  # the replaced generation is closed once nothing reads it
    build_index([folder], idx, fake_settings(), sync=True)  # nothing changed: no new generation
    (folder / "a.md").unlink()
    build_index([folder], idx, fake_settings(), sync=True)
    assert following.keyword_search(["Alpha"]) == []
    following.close()
    assert sorted(p.name for p in idx.iterdir() if p.name.startswith("gen-")) == ["gen-000003"]


def test_arag_watch_follows_the_folder_until_ctrl_c(tmp_path: Path) -> None:
    import queue

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Alpha text.")
    idx = folder / ".index"  # inside the watched folder: its own writes must not trigger syncs
    env = {**os.environ, "COLUMNS": "200"}
    command = [sys.executable, "-m", "arag", "watch", str(folder), "--index", str(idx), "--embedder", "fake"]
    proc = subprocess.Popen(
        [*command, "--debounce-ms", "200"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # the Ctrl-C below must reach it even when the tests run where SIGINT is ignored (as in a background job)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()  # type: ignore[union-attr]

    def next_sync() -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                assert proc.poll() is None, "arag watch exited"
                continue
            assert "Traceback" not in line and "failed" not in line, line
            if line.startswith("synced"):
                return line
        raise AssertionError("no sync within 60 s")

    try:
        assert "1 added" in next_sync()
        (folder / "b.md").write_text("Beta text.")
        assert "1 added" in next_sync()
        assert _doc_ids(str(idx)) == ["docs/a.md", "docs/b.md"]
        (folder / "a.md").rename(folder / "c.md")
        assert "1 added" in (line := next_sync()) and "1 removed" in line
        (folder / "b.md").unlink()
        assert "1 removed" in next_sync()
        assert _doc_ids(str(idx)) == ["docs/c.md"]
        time.sleep(1)
        assert lines.empty(), "the index's own writes started another sync"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    time.sleep(0.5)  # the reader thread takes the last lines
    rest = "".join(lines.get_nowait() for _ in range(lines.qsize()))
    assert "stopped" in rest and "Traceback" not in rest
