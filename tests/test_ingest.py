from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arag.corpus.build import build_index
from arag.corpus.readers import read_source
from arag.errors import IngestError
from arag.index import Index
from conftest import FIXTURES, fake_settings
from support.indexing import SLOW_INDEXER


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` in Helvetica, with a correct xref table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_every_format(tmp_path: Path) -> None:
    (tmp_path / "paper.pdf").write_bytes(minimal_pdf("Mehmed II conquered Constantinople in 1453."))
    docs = {
        p.name: read_source(p)
        for p in [*FIXTURES.iterdir(), tmp_path / "paper.pdf"]
        if p.suffix in {".md", ".html", ".jsonl", ".json", ".pdf"} and p.name != "questions.json"
    }
    assert "Constantinople" in docs["paper.pdf"][0].text
    html = docs["page.html"][0]
    assert html.title == "Ottoman sultans" and "Murad II ruled from 1421." in html.text
    assert "var x" not in html.text and "color:red" not in html.text
    assert docs["guide.md"][0].text.startswith("# Field guide")
    assert [d.doc_id for d in docs["docs.jsonl"]] == ["p0", "p1", "p2", "p3", "p4"]
    hippo = docs["hipporag_corpus.json"]
    assert len(hippo) == 16 and hippo[1].doc_id == "Lothair II" and hippo[1].text.startswith("Lothair II\n")
    graph = docs["graphrag_corpus.json"]
    assert [d.doc_id for d in graph] == ["Novel-1", "Novel-2"]
    reference = docs["arag_chunks.json"]
    assert len(reference) == 1 and reference[0].chunks is not None and reference[0].chunks[0][0] == "0"


@pytest.mark.parametrize(
    "name,content,reason",
    [
        ("blob.txt", b"\x00\x01\x02binary", "binary"),
        ("empty.md", b"   \n", "empty"),
        ("latin1.txt", "café".encode("latin-1"), "not UTF-8"),
        ("bad.json", b"{not json", "invalid JSON"),
        ("other.json", b'{"a": 1}', "unknown JSON corpus format"),
        ("bad.jsonl", b'{"text": "ok"}\n{"title": "no text"}\n', "line 2"),
        ("broken.pdf", b"%PDF-1.4 garbage", "PDF"),
        ("chunks.json", b'["0:a", "x"]', "not an A-RAG chunk"),
    ],
)
def test_bad_inputs_are_reported(tmp_path: Path, name: str, content: bytes, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(IngestError, match=reason):
        read_source(path)


def test_folder_reports_problems_and_indexes_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("Waldrada was the wife of Lothair II.")
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / "bad.txt").write_bytes(b"\xff\xfe\x00")
    (folder / ".hidden.md").write_text("skip me")
    report = build_index([folder], tmp_path / "idx", fake_settings())
    problems = {Path(p.path).name: p.reason for p in report.problems}
    assert set(problems) == {"image.png", "bad.txt"}
    assert report.documents == 1
    assert Index.open(tmp_path / "idx").read(["docs/good.md#0"])[0][0].text.startswith("Waldrada")


class CountingEmbedder:
    def __init__(self) -> None:
        from arag.embedding.embedders import FakeEmbedder

        self.inner = FakeEmbedder()
        self.name, self.dims, self.fingerprint = "fake", 64, self.inner.fingerprint
        self.embedded: list[str] = []

    def embed_documents(self, texts, progress=None):  # type: ignore[no-untyped-def]
        self.embedded.extend(texts)
        return self.inner.embed_documents(texts, progress)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.inner.embed_query(text)


def test_incremental_add_and_replace(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Alpha one. Alpha two.")
    (folder / "b.md").write_text("Beta one. Shared sentence.")
    idx = tmp_path / "idx"
    first = CountingEmbedder()
    build_index([folder], idx, fake_settings(), embedder=first)  # type: ignore[arg-type]
    assert sorted(first.embedded) == ["Alpha one.", "Alpha two.", "Beta one.", "Shared sentence."]

    (folder / "c.md").write_text("Gamma one. Shared sentence.")
    second = CountingEmbedder()
    report = build_index([folder / "c.md"], idx, fake_settings(), embedder=second)  # type: ignore[arg-type]
    assert second.embedded == ["Gamma one."]  # nothing already embedded is embedded again
    assert report.documents == 3 and report.reused_vectors == 5

    (folder / "a.md").write_text("Alpha changed. Alpha two.")
    third = CountingEmbedder()
    report = build_index([folder], idx, fake_settings(), embedder=third)  # type: ignore[arg-type]
    assert third.embedded == ["Alpha changed."]
    assert report.replaced == ["docs/a.md"] and report.unchanged == 2
    index = Index.open(idx)
    assert index.read(["docs/a.md#0"])[0][0].text == "Alpha changed. Alpha two."
    assert index.keyword_search(["Alpha one"]) == []
    # vectors stay aligned with their sentences after reuse
    for hit in index.semantic_search("Gamma one.", 1):
        assert hit.chunk_id == "c.md#0" and hit.score == pytest.approx(1.0, abs=1e-5)


def test_incompatible_settings_need_rebuild(tmp_path: Path) -> None:
    from arag.errors import IndexFormatError

    build_index([FIXTURES / "guide.md"], tmp_path / "idx", fake_settings())
    with pytest.raises(IndexFormatError, match="--rebuild"):
        build_index([FIXTURES / "guide.md"], tmp_path / "idx", fake_settings(vector_dtype="i8"))
    build_index([FIXTURES / "guide.md"], tmp_path / "idx", fake_settings(vector_dtype="i8"), rebuild=True)


def test_kill_during_index_leaves_previous_index_openable(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    build_index([FIXTURES / "guide.md"], idx, fake_settings())
    first = Index.open(idx)
    before = [(h.chunk_id, h.score) for h in first.keyword_search(["Crane"])]
    first.close()  # an open reader holds its generation: left to the garbage collector, the cleanup below raced it
    script = tmp_path / "slow.py"
    script.write_text(SLOW_INDEXER)
    for delay in (0.0, 0.3, 0.8):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(FIXTURES / "hipporag_corpus.json"), str(idx)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "embedding"  # it is mid-write
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        index = Index.open(idx)
        assert [(h.chunk_id, h.score) for h in index.keyword_search(["Crane"])] == before
        assert index.manifest.counts["documents"] == 1
        index.close()
    # the next write cleans up the leftovers of the killed ones and succeeds
    build_index([FIXTURES / "hipporag_corpus.json"], idx, fake_settings())
    assert sorted(p.name for p in idx.iterdir()) == [".writer.lock", "gen-000002", "manifest.json"]
    assert json.loads((idx / "manifest.json").read_text())["counts"]["documents"] == 17


def test_rebuild_over_an_index_of_another_format_version(tmp_path: Path) -> None:
    from arag.errors import IndexFormatError

    idx = tmp_path / "idx"
    build_index([FIXTURES / "guide.md"], idx, fake_settings())
    manifest = json.loads((idx / "manifest.json").read_text())
    manifest["format_version"] = 0
    (idx / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="--rebuild"):
        Index.open(idx)
    with pytest.raises(IndexFormatError, match="--rebuild"):
        build_index([FIXTURES / "guide.md"], idx, fake_settings())
    build_index([FIXTURES / "guide.md"], idx, fake_settings(), rebuild=True)
    assert Index.open(idx).keyword_search(["Crane"])[0].chunk_id == "guide.md#0"
