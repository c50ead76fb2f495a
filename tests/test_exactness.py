"""The tools against a brute-force implementation of the paper's formulas, on real-format text."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.embedding.embedders import FakeEmbedder
from arag.index import Index
from arag.store import DocumentRecord
from arag.store.embedded.store import EmbeddedStore, GenerationWriter, dequantize, quantize
from arag.store.words import WordIndexBuilder
from conftest import FIXTURES, FUZZ_SCALE, fake_settings


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


@pytest.mark.parametrize("which", ["hippo_index", "chunks_index"])
def test_keyword_chunk_count_equals_brute_force(which: str, request: pytest.FixtureRequest) -> None:
    """The count the compact profile uses to spot a common keyword: chunks containing it, capped at the limit."""
    index: Index = request.getfixturevalue(which)
    texts = [record.text.lower() for record in index.store.iter_chunks()]
    keywords = [k for query in keyword_queries(index, 60, seed=7) for k in query]
    assert any(sum(k.lower() in t for t in texts) > 3 for k in keywords), "the fixture must have common keywords"
    for keyword in keywords:
        expected = sum(keyword.strip().lower() in t for t in texts) if keyword.strip() else 0
        for limit in (1, 3, 1000):
            assert index.keyword_chunk_count(keyword, limit) == min(expected, limit), (keyword, limit)


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


def _clustered_store(tmp_path: Path, dtype: str, n_chunks: int = 400, per_chunk: int = 6) -> tuple[Path, np.ndarray]:
    """An ann index of synthetic sentence vectors around 40 topics (what real embeddings look like), written
    through the store's own writer, so the IVF has many lists to choose from."""
    from arag.store import DocumentRecord
    from arag.store.embedded.store import GenerationWriter

    rng = np.random.default_rng(7)
    topics = rng.normal(0, 1, (40, 48))
    vectors = topics[rng.integers(0, 40, n_chunks * per_chunk)] + rng.normal(0, 0.6, (n_chunks * per_chunk, 48))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    writer = GenerationWriter(tmp_path / "idx", {"chunker": {}, "vector_dtype": dtype, "ann": True})
    writer.add_document(DocumentRecord("d", "d", None, "h"))
    writer.add_chunks("d", [(f"c{i}", i, f"chunk {i}", 2) for i in range(n_chunks)])
    n = len(vectors)
    writer.finish(
        np.arange(0, n + 1, per_chunk),
        np.zeros((n, 2), np.int32),
        np.arange(n, dtype=np.uint64),
        vectors,
        dtype,
        True,
        1,
        {"documents": 1, "chunks": n_chunks, "sentences": n},
    )
    writer.commit({"name": "synthetic", "dims": 48})
    return tmp_path / "idx", vectors


@pytest.mark.parametrize("dtype", ["f32", "i8"])
def test_inverted_file_probes_lists_and_scores_exactly(tmp_path: Path, dtype: str) -> None:
    from arag.store.embedded import ivf

    path, vectors = _clustered_store(tmp_path, dtype)
    lists = ivf.list_count(len(vectors))
    assert lists > 8
    queries = np.random.default_rng(8).normal(0, 1, (30, 48)).astype(np.float32)
    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    everything = Index.open(path, threads=1, probes=lists)
    few = Index.open(path, threads=1, probes=max(1, lists // 5))
    # the stored vectors come back in sentence order, whatever the list order on disk
    rows = np.array([0, 5, len(vectors) - 1, 1234])
    assert np.allclose(everything.store.sentence_vectors(rows), vectors[rows], atol=2e-2 if dtype == "i8" else 1e-6)
    agree = 0
    for query in queries:
        exact = [(h.chunk_id, h.score) for h in everything.semantic_search_vector(query, 10, exact=True)]
        # probing every list is exact search: same ids in the same order, same scores (BLAS may round the
        # last bit differently on a slice)
        probed_all = [(h.chunk_id, h.score) for h in everything.semantic_search_vector(query, 10, exact=False)]
        assert [c for c, _ in probed_all] == [c for c, _ in exact]
        assert [s for _, s in probed_all] == pytest.approx([s for _, s in exact], abs=1e-6)
        approx = few.semantic_search_vector(query, 10, exact=False)
        exact_scores = dict(
            (h.chunk_id, h.score) for h in everything.semantic_search_vector(query, len(vectors), exact=True)
        )
        assert all(h.score == pytest.approx(exact_scores[h.chunk_id], abs=1e-6) for h in approx)  # exact scores
        assert [h.score for h in approx] == sorted((h.score for h in approx), reverse=True)
        agree += len({c for c, _ in exact} & {h.chunk_id for h in approx})
    assert agree / (10 * len(queries)) >= 0.8  # a fifth of the lists finds most of the true top 10


@pytest.mark.model
def test_ivf_build_and_onnx_embedder_share_a_process() -> None:
    """faiss (k-means at build time) and onnxruntime bundle their own thread runtimes; both import orders
    must work in one process (another ANN library crashed the interpreter in one order)."""
    import subprocess
    import sys

    for first, second in (("faiss", "onnxruntime"), ("onnxruntime", "faiss")):
        code = (
            f"import {first}, {second}, numpy; from arag.store.embedded import ivf; "
            "from arag.embedding import load_embedder; "
            "vectors = numpy.random.default_rng(0).normal(0, 1, (4000, 32)).astype('float32'); "
            "centroids, order, offsets = ivf.build(vectors, threads=2); assert len(centroids) > 1; "
            "load_embedder('minilm', threads=1).embed_query('still alive?'); print('alive')"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip().endswith("alive"), proc.stderr[-500:]


# letters whose lower case changes length or depends on context, marks that split words, digits and
# separators: the word index must count exactly where str.lower() and \w disagree with intuition
_LETTERS = st.sampled_from([*"aAbB_1²ßẞİıIiΣσςΟΔΚKéÉ", "\u0307", "\u212a", "ﬁ", "aa", "ab", " ", ".", "-", "'", "—"])
_FUZZ_TEXT = st.lists(_LETTERS, max_size=40).map("".join)


def _written_store(folder: Path, texts: list[str]) -> EmbeddedStore:
    """A store holding ``texts`` as chunks (no sentences: keyword search reads only the text)."""
    writer = GenerationWriter(folder, {"chunker": {}, "vector_dtype": "f32", "ann": False})
    writer.add_document(DocumentRecord("d", "d", None, "h"))
    writer.add_chunks("d", [(f"c{i}", i, text, 1) for i, text in enumerate(texts)])
    n = len(texts)
    empty = np.zeros((0, 4), np.float32)
    writer.finish(np.zeros(n + 1, np.int64), np.zeros((0, 2)), np.zeros(0), empty, "f32", False, 1, {"chunks": n})
    writer.commit({"name": "none", "dims": 4})
    return EmbeddedStore(folder, threads=1)


def _brute_scores(texts: list[str], keywords: list[str], top_k: int) -> list[tuple[int, int]]:
    scored = [(row, sum(t.lower().count(k.lower()) * len(k) for k in keywords)) for row, t in enumerate(texts)]
    return sorted(((r, s) for r, s in scored if s > 0), key=lambda rs: (-rs[1], rs[0]))[:top_k]


@settings(max_examples=150 * FUZZ_SCALE, deadline=None)
@given(
    texts=st.lists(_FUZZ_TEXT, min_size=1, max_size=6),
    keywords=st.lists(_FUZZ_TEXT.filter(bool), min_size=1, max_size=3),
    top_k=st.integers(1, 8),
)
def test_word_index_counts_equal_str_count(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], keywords: list[str], top_k: int
) -> None:
    """Scores and chunk counts through the word index (keywords of word characters) and the trigram path (the
    others) against str.count on the lower-cased texts: case folding, overlapping matches, Unicode."""
    store = _written_store(tmp_path_factory.mktemp("words"), texts)
    try:
        assert store.keyword_scores(keywords, top_k) == _brute_scores(texts, keywords, top_k), (texts, keywords)
        for keyword in keywords:
            expected = sum(keyword.lower() in t.lower() for t in texts)
            assert store.keyword_chunk_count(keyword, 3) == min(3, expected), (texts, keyword)
    finally:
        store.close()


def test_word_index_holds_every_word_once_per_chunk(tmp_path: Path) -> None:
    texts = ["The the THE other", "ſtraße İstanbul", "", "—", "lothair_ii 1990s 1990"]
    store = _written_store(tmp_path / "idx", texts)
    words = store._words.get()
    assert words is not None
    vocabulary = (store.path / "words.txt").read_text(encoding="utf-8").split("\n")
    # "İ" lowers to "i" + a combining dot, which is not a word character: the word splits there
    assert vocabulary == ["the", "other", "ſtraße", "i", "stanbul", "lothair_ii", "1990s", "1990"]
    assert words.chunk_count("the", 10) == 1 and words.chunk_count("990", 10) == 1
    scores = np.zeros(len(texts), np.int64)
    words.add_scores(scores, "the", 3)
    assert scores.tolist() == [(3 + 1) * 3, 0, 0, 0, 0]  # "the" ×3 and once inside "other"
    store.close()


def test_phrases_find_their_words_by_start_end_and_whole(tmp_path: Path) -> None:
    """A phrase's inner word runs must be whole words, its first run a word's end, its last a word's start
    (found by bisection in the sorted vocabulary): neighbours in sort order, the first and last words, Unicode."""
    texts = ["el tonto", "hotel tontos", "del tont", "tonto el", "elk tonto", "ΣΑΣ σας σα", "zz zzz", "a b c", "ab bc"]
    store = _written_store(tmp_path / "idx", texts)
    try:
        for keyword in ["el tonto", "l tont", ". tonto", "el ", " el", "σας σ", "ς σα", "zz z", "z zz", "a b c", "b c"]:
            assert store.keyword_scores([keyword], 10) == _brute_scores(texts, [keyword], 10), keyword
    finally:
        store.close()


def test_phrases_with_a_common_word_stay_exact(tmp_path: Path) -> None:
    """A run far more common than the phrase's rarest one is not gathered (words.COMMON_RUN): the candidates are
    a superset, counted exactly in their text."""
    texts = ["the other one, then the end"] * 150 + ["The Heart of Doreon, the heart", "heart of the", "hearth"]
    store = _written_store(tmp_path / "idx", texts)
    try:
        for keyword in ["The Heart Of Doreon", "the heart", "heart of the", "of the", "the o", "he "]:
            assert store.keyword_scores([keyword], 5) == _brute_scores(texts, [keyword], 5), keyword
    finally:
        store.close()


def test_index_without_word_files_counts_by_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index written before the word index existed: every keyword takes the trigram path, with equal results."""
    monkeypatch.setattr(WordIndexBuilder, "save", lambda self, folder: None)
    texts = ["Lothair II and Lothair I", "the other ii", "II III", "nothing"]
    store = _written_store(tmp_path / "idx", texts)
    assert store._words.get() is None
    for keywords in (["ii"], ["the", "Lothair"], ["i"], ["lothair ii"]):
        assert store.keyword_scores(keywords, 3) == _brute_scores(texts, keywords, 3), keywords
    store.close()
