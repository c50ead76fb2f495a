"""The tools against a brute-force implementation of the paper's formulas, on real-format text."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from arag.embedding import FakeEmbedder
from arag.index import Index
from arag.indexing import build_index
from arag.store.embedded import dequantize, quantize
from conftest import FIXTURES, fake_settings


def brute_keyword(index: Index, keywords: list[str], top_k: int) -> list[tuple[str, float, list[str]]]:
    """The reference approach: loop over every chunk, count each keyword, sort."""
    kws = []
    for k in keywords:
        k = k.strip()
        if k and k.lower() not in [x.lower() for x in kws]:
            kws.append(k)
    results = []
    for record in index.store.iter_chunks():
        low = record.text.lower()
        score = sum(low.count(k.lower()) * len(k) for k in kws)
        if score > 0:
            snippets = [
                record.text[a:b].strip()
                for a, b in index.store.sentence_spans(record.row)
                if any(k.lower() in record.text[a:b].lower() for k in kws)
            ]
            results.append((record.row, record.chunk_id, float(score), snippets))
    results.sort(key=lambda r: (-r[2], r[0]))
    return [(cid, score, snippets) for _, cid, score, snippets in results[:top_k]]


def brute_semantic(index: Index, query_vec: np.ndarray, top_k: int) -> list[tuple[str, float]]:
    # f16/i8 indexes compare in their storage precision: the query is quantized like the vectors.
    query_vec = dequantize(quantize(query_vec.reshape(1, -1), index.manifest.vector_dtype))[0]
    offsets = index.store.sentence_ranges()
    best = []
    for record in index.store.iter_chunks():
        begin, end = int(offsets[record.row]), int(offsets[record.row + 1])
        if end == begin:
            continue
        vecs = index.store.sentence_vectors(np.arange(begin, end))
        scores = [float(np.dot(v, query_vec)) for v in vecs]
        best.append((record.row, record.chunk_id, max(scores)))
    best.sort(key=lambda r: (-r[2], r[0]))
    return [(cid, s) for _, cid, s in best[:top_k]]


def keyword_queries(index: Index, n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    words = sorted({w for r in index.store.iter_chunks() for w in re.findall(r"[\w'’.-]+", r.text)})
    queries = [
        ["Lothair"],
        ["lothair ii", "LOTHAIR"],
        ["a"],
        ["ü"],
        ["Hatun", "ş"],
        ["3.14"],
        ["no-such-term-xyz"],
        ["st. maurice's abbey"],
        ["( died"],
        ["the", "of"],
        ["  ", "Tours"],
    ]
    for _ in range(n):
        picked = rng.sample(words, rng.randint(1, 3))
        # mix case, substrings and multi-word phrases
        picked = [w[: rng.randint(1, len(w))] if rng.random() < 0.3 else w for w in picked]
        picked = [w.upper() if rng.random() < 0.2 else w for w in picked]
        queries.append(picked)
    return queries


@pytest.mark.parametrize("which", ["hippo_index", "chunks_index"])
def test_keyword_search_equals_brute_force(which: str, request: pytest.FixtureRequest) -> None:
    index: Index = request.getfixturevalue(which)
    for top_k in (1, 3, 5, 50):
        for keywords in keyword_queries(index, 60, seed=top_k):
            got = [(h.chunk_id, h.score, h.snippets) for h in index.keyword_search(keywords, top_k)]
            assert got == brute_keyword(index, keywords, top_k), keywords


def _check_semantic(index: Index, embedder: FakeEmbedder, queries: list[str], tol: float) -> None:
    for query in queries:
        vec = embedder.embed_query(query)
        for top_k in (1, 5, 12):
            got = index.semantic_search(query, top_k)
            want = brute_semantic(index, vec, top_k)
            assert [h.chunk_id for h in got] == [cid for cid, _ in want], query
            assert np.allclose([h.score for h in got], [s for _, s in want], atol=tol)


QUERIES = [
    "When did Lothair II's mother die?",
    "Ottoman sultan conqueror of Constantinople",
    "indie rock album",
    "queen consort of France",
    "physicist measurement",
    "zzz unrelated words entirely",
]


@pytest.mark.parametrize("dtype,ann", [("f32", False), ("f16", False), ("i8", False), ("f32", True), ("i8", True)])
def test_semantic_exact_equals_brute_force(tmp_path: Path, dtype: str, ann: bool) -> None:
    path = tmp_path / "idx"
    build_index(
        [FIXTURES / "hipporag_corpus.json", FIXTURES / "arag_chunks.json"],
        path,
        fake_settings(vector_dtype=dtype, ann=ann),
    )
    index = Index.open(path, threads=1)
    _check_semantic(index, FakeEmbedder(), QUERIES, tol=1e-5 if dtype == "f32" else 1e-3)


def test_semantic_snippets_are_best_sentences_in_document_order(hippo_index: Index) -> None:
    embedder = FakeEmbedder()
    vec = embedder.embed_query("Lothair II king of Lotharingia")
    for hit in hippo_index.semantic_search("Lothair II king of Lotharingia", 5):
        spans = hippo_index.store.sentence_spans(hit.row)
        record = hippo_index.store.chunks([hit.row])[hit.row]
        sentences = [record.text[a:b].strip() for a, b in spans]
        scores = [float(np.dot(embedder.embed_query(s), vec)) for s in sentences]
        best = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:3]
        assert hit.snippets == [sentences[i] for i in sorted(best)]
        assert hit.score == pytest.approx(max(scores), abs=1e-5)


def test_approximate_search_recall(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], path, fake_settings(ann=True))
    index = Index.open(path, threads=1)
    agree = total = 0
    for query in QUERIES:
        exact = {h.chunk_id for h in index.semantic_search(query, 5, exact=True)}
        approx = {h.chunk_id for h in index.semantic_search(query, 5, exact=False)}
        agree += len(exact & approx)
        total += len(exact)
    assert agree / total >= 0.9


def test_reference_chunk_ids_and_texts_are_kept(chunks_index: Index) -> None:
    items = json.loads((FIXTURES / "arag_chunks.json").read_text())
    for item in items:
        number, text = item.split(":", 1)
        found, missing = chunks_index.read([number])
        assert not missing and found[0].text == text
    first, last = chunks_index.read(["0"])[0][0], chunks_index.read([str(len(items) - 1)])[0][0]
    assert first.prev_id is None and first.next_id == "1"
    assert last.next_id is None


def test_keyword_search_unicode_case_folding_equals_brute_force(tmp_path: Path) -> None:
    texts = [
        "İstanbul was Constantinople. ISTANBUL is its name now. Straße and STRASSE differ.",
        "ΟΔΟΣ means road; οδος is the same word. The Kelvin sign K is not a K.",
        "Ünïcödé ÜNÏCÖDÉ ünïcödé. Plain ASCII text about istanbul and strasse.",
        "aaaa aaa aa a — overlapping counts are non-overlapping: aaaa.",
    ]
    corpus = tmp_path / "unicode.jsonl"
    corpus.write_text(
        "\n".join(json.dumps({"id": f"u{i}", "text": t}, ensure_ascii=False) for i, t in enumerate(texts))
    )
    build_index([corpus], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    for keywords in (
        ["istanbul"],
        ["İstanbul"],
        ["i̇stanbul"],
        ["straße"],
        ["STRASSE"],
        ["οδος", "ΟΔΟΣ"],
        ["\u212a"],
        ["k"],
        ["ünïcödé"],
        ["aa"],
        ["aaa", "a"],
        ["é"],
        ["—"],
    ):
        for top_k in (1, 2, 10):
            got = [(h.chunk_id, h.score, h.snippets) for h in index.keyword_search(keywords, top_k)]
            assert got == brute_keyword(index, keywords, top_k), keywords


def test_opening_an_ann_index_then_loading_the_onnx_embedder_does_not_crash(tmp_path: Path) -> None:
    """usearch then onnxruntime crashes the interpreter; the store imports them in the safe order."""
    import subprocess
    import sys

    build_index([FIXTURES / "guide.md"], tmp_path / "idx", fake_settings(ann=True))
    code = (
        "from arag.index import Index; import sys; Index.open(sys.argv[1]).semantic_search_vector("
        "__import__('numpy').ones(64, 'float32') / 8, 1, exact=False); import onnxruntime; print('alive')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "idx")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "alive", proc.stderr[-500:]
