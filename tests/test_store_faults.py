"""Damaged index files and re-indexing under concurrent readers (threads and processes)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arag.corpus.build import build_index
from arag.errors import IndexFormatError
from arag.index import Index
from arag.store.embedded.store import MANIFEST
from conftest import FIXTURES, fake_settings


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index with every kind of file: f16 vectors (+ norms) and an inverted file."""
    path = tmp_path_factory.mktemp("pristine") / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], path, fake_settings(vector_dtype="f16", ann=True))
    return path


def _use(path: Path) -> None:
    """Everything a reader does: open, both searches (exact and approximate), read, export."""
    index = Index.open(path, threads=1)
    try:
        index.keyword_search(["Lothair", "of"], 5)
        index.semantic_search("Lothair mother", 5)
        index.semantic_search("Lothair mother", 5, exact=False)
        index.read(["Waldrada#0", "nope"])
        list(index.store.iter_chunks())
        index.store.documents()
        index.store.sentence_hashes()
    finally:
        index.close()


DAMAGES = {
    "empty": lambda data: b"",
    "truncated": lambda data: data[: len(data) // 2],
    "header byte": lambda data: data[:8] + bytes([data[8] ^ 0x5A]) + data[9:],
    "middle byte": lambda data: (
        data[: len(data) // 2] + bytes([data[len(data) // 2] ^ 0x01]) + data[len(data) // 2 + 1 :]
    ),
    "last byte": lambda data: data[:-1] + bytes([data[-1] ^ 0x80]),
}


def test_every_index_file_damaged_is_a_clear_error_or_caught_by_verify(pristine: Path, tmp_path: Path) -> None:
    generation = next(pristine.glob("gen-*"))
    files = sorted(p.name for p in generation.iterdir())
    assert {"chunks.sqlite", "vectors.npy", "vector_norms.npy", "ivf_order.npy", "sent_hash.npy"} <= set(files)
    outcomes: dict[str, int] = {"open or use failed clearly": 0, "verify caught it": 0}
    for name in files:
        for damage, change in DAMAGES.items():
            copy = tmp_path / f"{name}-{damage.replace(' ', '-')}"
            shutil.copytree(pristine, copy)
            target = copy / generation.name / name
            target.write_bytes(change(target.read_bytes()))
            try:
                _use(copy)
            except IndexFormatError as exc:
                message = str(exc)
                assert name in message or "ivf_*" in message, (name, damage, message)
                assert "re-index" in message and "\n" not in message
                outcomes["open or use failed clearly"] += 1
                continue
            # a damage that changes no size can go unnoticed on open; the checksums must see it
            index = Index.open(copy, threads=1)
            problems = index.store.verify()
            index.close()
            assert problems and any(name in p for p in problems), (name, damage)
            outcomes["verify caught it"] += 1
    assert sum(outcomes.values()) == len(files) * len(DAMAGES)
    assert outcomes["open or use failed clearly"] >= len(files) * 2  # empty and truncated always fail on open


@pytest.mark.parametrize(
    "change",
    [
        lambda m: {k: v for k, v in m.items() if k != "generation"},
        lambda m: {**m, "generation": "seven"},
        lambda m: {**m, "counts": ["chunks", 3]},
        lambda m: {**m, "embedder": {"dims": 8}},
        lambda m: {**m, "files": {"gen-000001/vectors.npy": {"size": "big"}}},
        lambda m: {**m, "format_version": None},
        lambda m: [m],
        lambda m: "manifest",
    ],
)
def test_manifest_with_wrong_types_or_missing_fields(pristine: Path, tmp_path: Path, change) -> None:
    copy = tmp_path / "idx"
    shutil.copytree(pristine, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    (copy / MANIFEST).write_text(json.dumps(change(manifest)))
    with pytest.raises(IndexFormatError, match=r"manifest\.json is not a valid a-rag manifest .*re-index"):
        Index.open(copy)


@pytest.mark.parametrize("content", [b"", b"{", b"\xff\xfe\x00", b"null"])
def test_manifest_unreadable(pristine: Path, tmp_path: Path, content: bytes) -> None:
    copy = tmp_path / "idx"
    shutil.copytree(pristine, copy)
    (copy / MANIFEST).write_bytes(content)
    with pytest.raises(IndexFormatError, match=r"manifest\.json"):
        Index.open(copy)


def test_verify_passes_on_an_intact_index_and_records_every_file(pristine: Path) -> None:
    index = Index.open(pristine)
    assert index.store.verify() == []
    recorded = {Path(name).name for name in index.manifest.files}
    assert recorded == {p.name for p in next(pristine.glob("gen-*")).iterdir()}
    assert all(len(d.sha256) == 64 and d.size > 0 for d in index.manifest.files.values())
    index.close()


def test_cli_reports_damage_in_one_line(pristine: Path, tmp_path: Path) -> None:
    copy = tmp_path / "idx"
    shutil.copytree(pristine, copy)
    vectors = next(copy.glob("gen-*")) / "vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-3] ^= 0xFF
    vectors.write_bytes(bytes(data))
    verify = subprocess.run(
        [sys.executable, "-m", "arag", "info", "--index", str(copy), "--verify"], capture_output=True, text=True
    )
    assert verify.returncode == 1 and "Traceback" not in verify.stderr
    assert "vectors.npy: sha256 differs from the manifest" in verify.stderr
    vectors.write_bytes(b"")
    search = subprocess.run(
        [sys.executable, "-m", "arag", "search", "semantic", "x", "--index", str(copy)], capture_output=True, text=True
    )
    assert search.returncode == 1 and "Traceback" not in search.stderr and "Aborted" not in search.stderr
    lines = search.stderr.strip().splitlines()
    assert len(lines) == 1 and "vectors.npy" in lines[0] and "re-index" in lines[0]


# ------------------------------------------------------------------ readers during re-index
CORPORA = [FIXTURES / "hipporag_corpus.json", FIXTURES / "guide.md"]


def _signature(index: Index) -> tuple[int, list[str]]:
    """What a reader sees of one generation: its chunk count and its keyword hits, read consistently."""
    hits = index.keyword_search(["the"], 3)
    found, _ = index.read([h.chunk_id for h in hits])
    assert [r.chunk_id for r in found] == [h.chunk_id for h in hits]
    return index.store.n_chunks, [h.chunk_id for h in hits]


def _expected_signatures(tmp_path: Path) -> set[tuple[int, tuple[str, ...]]]:
    out = set()
    for i, corpus in enumerate(CORPORA):
        path = tmp_path / f"expected-{i}"
        build_index([corpus], path, fake_settings())
        index = Index.open(path)
        count, ids = _signature(index)
        index.close()
        out.add((count, tuple(ids)))
    return out


def test_long_lived_reader_keeps_its_generation_across_reindex(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    build_index([CORPORA[0]], idx, fake_settings())
    index = Index.open(idx)
    before = _signature(index)
    build_index([CORPORA[1]], idx, fake_settings(), rebuild=True)
    seen: list[object] = []
    # a new thread opens a new SQLite connection: the old generation must still be there for it
    worker = threading.Thread(target=lambda: seen.append(_signature(index)))
    worker.start()
    worker.join()
    assert seen == [before]
    assert len(list(idx.glob("gen-*"))) == 2  # kept while the reader holds it
    index.close()
    assert len(list(idx.glob("gen-*"))) == 1  # removed when the last reader lets go
    fresh = Index.open(idx)
    assert _signature(fresh) != before
    fresh.close()


def test_readers_in_threads_during_reindex(tmp_path: Path) -> None:
    expected = _expected_signatures(tmp_path)
    idx = tmp_path / "idx"
    build_index([CORPORA[0]], idx, fake_settings())
    long_lived = Index.open(idx)
    long_lived_view = _signature(long_lived)
    stop = threading.Event()
    failures: list[BaseException] = []
    seen: set[tuple[int, tuple[str, ...]]] = set()

    def reader() -> None:
        try:
            while not stop.is_set():
                index = Index.open(idx, threads=1)
                try:
                    count, ids = _signature(index)
                finally:
                    index.close()
                seen.add((count, tuple(ids)))
                assert _signature(long_lived) == long_lived_view
        except BaseException as exc:  # collected and re-raised in the test thread
            failures.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for i in range(8):
        build_index([CORPORA[(i + 1) % 2]], idx, fake_settings(), rebuild=True)
    stop.set()
    for thread in threads:
        thread.join()
    long_lived.close()
    assert not failures, failures[0]
    assert seen <= expected and seen  # every reader saw one whole generation, never a mix
    assert len(list(idx.glob("gen-*"))) == 1


READER_PROCESS = """
import sys
from pathlib import Path
from arag.index import Index
path, rounds = Path(sys.argv[1]), int(sys.argv[2])
seen = set()
print("ready", flush=True)
for _ in range(rounds):
    index = Index.open(path, threads=1)
    hits = index.keyword_search(["the"], 3)
    found, missing = index.read([h.chunk_id for h in hits])
    assert not missing and len(found) == len(hits)
    seen.add((index.store.n_chunks, tuple(h.chunk_id for h in hits)))
    index.semantic_search("Lothair", 3)
    index.close()
print(repr(sorted(seen)))
"""


def test_readers_in_processes_during_reindex(tmp_path: Path) -> None:
    expected = _expected_signatures(tmp_path)
    idx = tmp_path / "idx"
    build_index([CORPORA[0]], idx, fake_settings())
    script = tmp_path / "reader.py"
    script.write_text(READER_PROCESS)
    readers = [
        subprocess.Popen([sys.executable, str(script), str(idx), "150"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for proc in readers:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    reindexes = 0
    # re-index for as long as the readers read (bounded: the readers end after their rounds)
    while any(proc.poll() is None for proc in readers) and reindexes < 400:
        build_index([CORPORA[(reindexes + 1) % 2]], idx, fake_settings(), rebuild=True)
        reindexes += 1
    assert reindexes >= 2
    seen_all: set[tuple[int, tuple[str, ...]]] = set()
    for proc in readers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        seen_all |= {(count, tuple(ids)) for count, ids in ast.literal_eval(out.decode())}
    assert seen_all <= expected and len(seen_all) == 2  # both generations were read, each whole


def test_a_postgres_url_naming_two_indexes_is_refused_not_one_of_them_taken() -> None:
    from arag.errors import ConfigError
    from arag.store.postgres.store import parse_location

    with pytest.raises(ConfigError, match=r"names 2 indexes \('wiki', 'legal'\)"):
        parse_location("postgresql://me@db/rag?index=wiki&index=legal")
    assert parse_location("postgresql://me@db/rag?index=wiki&index=wiki").index == "wiki"  # the same one twice
    assert parse_location("postgresql://me@db/rag?sslmode=disable&index=legal").index == "legal"
