from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from arag.corpus.build import build_index
from arag.embedding.embedders import FakeEmbedder, OpenAIEmbedder, instruction_prefixes, load_embedder
from arag.errors import EmbedderError
from arag.index import Index
from arag.settings import IndexSettings
from conftest import FIXTURES
from support.scripted_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def test_openai_compatible_embeddings_endpoint(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARAG_EMBED_BASE_URL", server.base_url)
    embedder = load_embedder("openai:scripted-embed")
    assert isinstance(embedder, OpenAIEmbedder) and embedder.dims == 8
    vectors = embedder.embed_documents(["abc", "zzz", "abc"])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(vectors[0], vectors[2]) and not np.allclose(vectors[0], vectors[1])  # order kept
    server.embedding_requests.clear()
    build_index([FIXTURES / "guide.md"], tmp_path / "idx", IndexSettings(embedder="openai:scripted-embed", threads=1))
    sent = [text for request in server.embedding_requests for text in request["input"]]
    assert sent.count("dimension probe") == 1 and len(sent) == len(set(sent))  # each sentence sent once
    index = Index.open(tmp_path / "idx")
    assert index.manifest.embedder["dims"] == 8
    assert index.semantic_search("Lothair", 1)[0].chunk_id == "guide.md#0"


def test_an_endpoint_model_trained_with_prefixes_gets_them_on_queries_and_passages(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARAG_EMBED_BASE_URL", server.base_url)
    plain = load_embedder("openai:text-embedding-3-small")
    e5 = load_embedder("openai:intfloat/e5-small-v2")
    server.embedding_requests.clear()
    e5.embed_documents(["Lothair II died in 869."])
    e5.embed_query("When did Lothair II die?")
    plain.embed_query("When did Lothair II die?")
    sent = [text for request in server.embedding_requests for text in request["input"]]
    assert sent == ["passage: Lothair II died in 869.", "query: When did Lothair II die?", "When did Lothair II die?"]
    # the stored vectors differ with the prefixes: so does the fingerprint an index is checked against
    assert "prefixes" in e5.fingerprint and "prefixes" not in plain.fingerprint
    assert instruction_prefixes("nomic-ai/nomic-embed-text-v1.5") == ("search_query: ", "search_document: ")
    assert instruction_prefixes("intfloat/multilingual-e5-large-instruct") == ("", "")  # a task instruction
    assert instruction_prefixes("bge5-large") == ("", "")


def test_unknown_embedder_and_mismatched_query_embedder(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="unknown embedder"):
        load_embedder("word2vec")
    build_index([FIXTURES / "guide.md"], tmp_path / "idx", IndexSettings(embedder="fake", threads=1))
    index = Index.open(tmp_path / "idx", embedder=FakeEmbedder(dims=32))
    with pytest.raises(EmbedderError, match="differs from the one that built the index"):
        index.semantic_search("anything", 1)


@pytest.mark.model
def test_default_minilm_offline_and_verified() -> None:
    embedder = load_embedder("sentence-transformers/all-MiniLM-L6-v2", threads=2)
    from arag.embedding.bert_int8 import RECIPE

    assert embedder.dims == 384 and embedder.fingerprint.endswith(f"+{RECIPE}")
    vectors = embedder.embed_documents(
        ["A cat sat on the mat.", "A kitten was sitting on a rug.", "Quarterly revenue grew by 4 percent."]
    )
    similar, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert similar > 0.5 > unrelated
    assert np.allclose(embedder.embed_query("A cat sat on the mat."), vectors[0], atol=1e-5)


@pytest.mark.model
def test_minilm_float32_is_the_same_model_in_float32_arithmetic() -> None:
    int8, float32 = load_embedder("minilm", threads=1), load_embedder("minilm-f32", threads=1)
    assert float32.fingerprint != int8.fingerprint and float32.fingerprint.endswith("+f32")
    texts = ["Lothair II was the king of Lotharingia from 855 until his death.", "Yes.", "A kitten sat on a rug."]
    a, b = int8.embed_documents(texts), float32.embed_documents(texts)
    assert float((a * b).sum(axis=1).min()) > 0.99  # the int8 recipe's bound against the float32 original
    assert np.allclose(float32.embed_documents(texts[:1]), b[:1], atol=1e-5)  # batch-independent


@pytest.mark.model
def test_built_encoder_is_cached_verified_and_rebuilt_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arag.embedding import bert_int8

    monkeypatch.setenv("ARAG_CACHE_DIR", str(tmp_path / "cache"))
    first = load_embedder("minilm", threads=1).embed_query("Where was Ludwig II born?")
    cached = sorted((tmp_path / "cache" / "models").glob("*.onnx"))  # the float32 graph for short texts, the int8
    assert len(cached) == 2 and all(path.with_suffix(".sha256").is_file() for path in cached)

    builds = []
    real_build = bert_int8.build_encoder
    monkeypatch.setattr(bert_int8, "build_encoder", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    assert np.allclose(load_embedder("minilm", threads=1).embed_query("Where was Ludwig II born?"), first)
    assert builds == []  # served from the cache
    cached[1].write_bytes(cached[1].read_bytes()[:-10] + b"0123456789")  # int8 graph damaged in place
    assert np.allclose(load_embedder("minilm", threads=1).embed_query("Where was Ludwig II born?"), first)
    assert builds == [1]  # the digest no longer matched: rebuilt, not trusted

    monkeypatch.setenv("ARAG_CACHE_DIR", "/proc/no-such-dir")  # unwritable: still works, built in memory
    assert np.allclose(load_embedder("minilm", threads=1).embed_query("Where was Ludwig II born?"), first)


def test_wordllama_static_embedder_is_wordllamas_own_inference() -> None:
    """The same vectors as the wordllama package's own code, from the table and tokenizer it ships."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference  # configures the root logger on import
    finally:
        root.handlers[:], root.level = handlers, level
    from arag.embedding import embedders

    embedder = load_embedder("wordllama")
    assert embedder.dims == 256 and embedder.fingerprint.endswith(embedders.WORDLLAMA_TABLE.sha256)
    table = embedders._package_file("wordllama", "weights", "l2_supercat_256.safetensors")
    tokenizer = embedders._package_file("wordllama", "tokenizers", "l2_supercat_tokenizer_config.json")
    assert table is not None and tokenizer is not None
    reference = WordLlamaInference(load_file(str(table))["embedding.weight"], Tokenizer.from_file(str(tokenizer)))
    texts = [
        "Lothair II was the king of Lotharingia from 855 until his death.",
        "Who directed the film Titanic?",
        "naïve café — 東京 ✓",
        "x" * 3000,  # longer than any transformer's window: no truncation
    ]
    ours = embedder.embed_documents(texts)
    assert np.allclose(ours, reference.embed(texts, norm=True), atol=1e-6)
    assert np.allclose(embedder.embed_query(texts[1]), ours[1], atol=1e-6)  # batch-independent
    empty = embedder.embed_documents([""])
    assert not np.isnan(empty).any() and not empty.any()  # WordLlama divides 0 by 0 here; we return zeros
    related, unrelated = embedder.embed_documents(
        ["James Cameron directed Titanic in 1997.", "The heart pumps blood through the body."]
    )
    assert float(ours[1] @ related) > float(ours[1] @ unrelated) + 0.2


def test_wordllama_weights_are_checked_and_missing_ones_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arag.embedding import embedders

    real = embedders._package_file

    def damaged(module: str, *parts: str) -> Path | None:
        path = real(module, *parts)
        if module != "wordllama" or path is None or not parts[-1].endswith(".safetensors"):
            return path
        copy = tmp_path / parts[-1]
        data = bytearray(path.read_bytes())
        data[-1] ^= 1
        copy.write_bytes(bytes(data))
        return copy

    monkeypatch.setattr(embedders, "_package_file", damaged)
    with pytest.raises(EmbedderError, match="does not match the pinned size/sha256"):
        load_embedder("wordllama")
    monkeypatch.setattr(embedders, "_package_file", lambda module, *parts: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbedderError, match=r"pip install 'a-rag\[wordllama\]'"):
        load_embedder("wordllama")


def test_index_built_and_searched_with_the_static_embedder(tmp_path: Path) -> None:
    build_index([FIXTURES / "guide.md"], tmp_path / "idx", IndexSettings(embedder="wordllama", threads=1))
    index = Index.open(tmp_path / "idx")
    assert index.manifest.embedder["dims"] == 256 and "word-llama" in index.manifest.embedder["fingerprint"]
    assert index.semantic_search("Lothair", 1)[0].chunk_id == "guide.md#0"
