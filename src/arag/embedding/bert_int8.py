"""An int8 ONNX graph of a BERT sentence encoder (all-MiniLM-L6-v2), built from its weights.

Why build the graph instead of running an exported one: on 2 CPU cores a float32 BERT spends most of its
time in matrix products, and the int8 product kernels of onnxruntime (VNNI/AMX) are ~4x faster. The
exported int8 files we can get offline only store int8 *weights* and still multiply in float32.

Recipe (``RECIPE``), chosen by measuring cosine to sentence-transformers' float32 vectors on 2,000 real
sentences (``benchmarks/bench_embedder.py``; docs/benchmarks.md):

* weights: int8, symmetric, one scale per output column;
* activations: int8 with one scale per token (row). Per-tensor scales (onnxruntime's dynamic quantization)
  were ~10% faster but less exact (LayerNorm and GELU outputs carry a few very large channels), and they
  depend on the whole batch, so a text's vector would change with its batch-mates;
* V stays float32: its error goes straight into every token's output (int8 V cost ~0.001 mean cosine,
  and short inputs fell below 0.99);
* texts of at most ``SHORT_TOKENS`` tokens run on a float32 graph of the same weights: a mean over a handful
  of tokens averages little quantization error away ("Yes." fell to 0.989), and such inputs cost little.

Attention and embeddings use onnxruntime's fused contrib operators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arag.errors import EmbedderError

RECIPE = "int8-v2"
SHORT_TOKENS = 12  # inputs this short (special tokens included) use the float32 graph
_LINEARS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


@dataclass(frozen=True)
class BertShape:
    hidden: int
    heads: int
    layers: int
    eps: float = 1e-12


def infer_shape(weights: Mapping[str, np.ndarray], heads: int) -> BertShape:
    hidden = int(weights["embeddings.word_embeddings.weight"].shape[1])
    layers = 0
    while f"encoder.layer.{layers}.attention.self.query.weight" in weights:
        layers += 1
    if not layers or hidden % heads:
        raise EmbedderError(f"weights do not describe a BERT encoder with {heads} heads")
    return BertShape(hidden, heads, layers)


def weights_from_safetensors(path: Path) -> dict[str, np.ndarray]:
    """A Hugging Face ``BertModel`` checkpoint, names without the ``bert.`` prefix."""
    from safetensors.numpy import load_file

    return {_hub_name(name): value for name, value in load_file(str(path)).items()}


def _hub_name(name: str) -> str:
    """``BertModel`` parameter name without a wrapper's prefix (``bert.`` in checkpoints, ``inner.`` in
    the packaged export)."""
    return name.split(".", 1)[1] if name.startswith(("inner.", "bert.", "model.")) else name


def weights_from_onnx(path: Path) -> dict[str, np.ndarray]:
    """Weights of a torch-exported BERT ONNX file, in Hugging Face names and layout.

    Handles weight-only int8 exports (``W_q`` int8 -> Cast -> Mul ``W_scale``). A linear layer's matrix is
    an unnamed MatMul input; its name comes from the bias added to the MatMul's output.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    produced_by = {out: node for node in model.graph.node for out in node.output}
    for node in model.graph.node:  # fold the dequantisation pattern into float32 constants
        if node.op_type == "Mul" and all(i in tensors or i in produced_by for i in node.input):
            cast = produced_by.get(node.input[0])
            if cast is not None and cast.op_type == "Cast" and cast.input[0] in tensors and node.input[1] in tensors:
                tensors[node.output[0]] = tensors[cast.input[0]].astype(np.float32) * tensors[node.input[1]]
    consumers: dict[str, list] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    weights: dict[str, np.ndarray] = {}
    for name, value in tensors.items():
        plain = _hub_name(name)
        if plain.startswith(("embeddings.", "encoder.")) and value.dtype == np.float32:
            weights[plain] = value
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in tensors:
            continue
        for consumer in consumers.get(node.output[0], []):
            bias = next((i for i in consumer.input if i.endswith(".bias") and i in tensors), None)
            if consumer.op_type == "Add" and bias is not None:
                matrix = tensors[node.input[1]]  # [in, out]; Hugging Face keeps [out, in]
                weights[_hub_name(bias).removesuffix(".bias") + ".weight"] = matrix.T
    missing = [
        f"encoder.layer.{layer}.{linear}.weight"
        for layer in range(sum(1 for k in weights if k.endswith("attention.self.query.bias")))
        for linear in _LINEARS
        if f"encoder.layer.{layer}.{linear}.weight" not in weights
    ]
    if missing or "embeddings.word_embeddings.weight" not in weights:
        raise EmbedderError(f"{path} is not a BERT export this builder understands (missing {missing[:3]})")
    return weights


def quantize_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per output column; ``matrix`` is [in, out]."""
    scale = np.maximum(np.abs(matrix).max(axis=0), 1e-12) / 127.0
    return np.clip(np.round(matrix / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


class _Graph:
    """Accumulates nodes and constants; names are unique by construction (prefix per layer)."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.constants: list = []
        self._token_quant: dict[str, tuple[str, str]] = {}

    def const(self, name: str, value: np.ndarray) -> str:
        self.constants.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], output: str, **attributes: Any) -> str:
        domain = "com.microsoft" if op_type in _CONTRIB else ""
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], domain=domain, **attributes))
        return output

    def per_token_quant(self, x: str) -> tuple[str, str]:
        """uint8 codes (zero point 128) and one float scale per row of ``x`` [batch, seq, channels]."""
        if x not in self._token_quant:
            p = f"{x}/tq_"
            absmax = self.op("ReduceMax", [self.op("Abs", [x], p + "abs")], p + "absmax", keepdims=1, axes=[-1])
            scale = self.op("Max", [self.op("Mul", [absmax, "c_inv127"], p + "s0"), "c_tiny"], p + "scale")
            flat_scale = self.op("Reshape", [scale, "c_flat"], p + "scale_flat")
            zero_points = self.op("Expand", ["c_zp128", self.op("Shape", [flat_scale], p + "rows")], p + "zp")
            width = self.op("Shape", [x], p + "width", start=-1)
            rows = self.op("Reshape", [x, self.op("Concat", ["c_flat", width], p + "2d", axis=0)], p + "x2d")
            codes = self.op("QuantizeLinear", [rows, flat_scale, zero_points], p + "codes2d", axis=0)
            self._token_quant[x] = (self.op("Reshape", [codes, self.op("Shape", [x], p + "shape")], p + "codes"), scale)
        return self._token_quant[x]

    def add_norm(self, x: str, bias: str, residual: str, gamma: str, beta: str, output: str, eps: float) -> str:
        """LayerNorm(x + bias + residual). Plain ops: onnxruntime's fused SkipLayerNormalization measured
        ~15% slower end to end here."""
        summed = self.op("Add", [self.op("Add", [x, bias], output + "/biased"), residual], output + "/sum")
        return self.op("LayerNormalization", [summed, gamma, beta], output, axis=-1, epsilon=eps)

    def linear(self, x: str, matrix: np.ndarray, mode: str, name: str) -> str:
        """``x @ matrix`` (no bias) with ``matrix`` [in, out], in float32 or int8 per token."""
        if mode == "float32":
            return self.op("MatMul", [x, self.const(name + "/w", matrix.astype(np.float32))], name)
        codes, scales = quantize_columns(matrix)
        w, w_scale = self.const(name + "/wq", codes), self.const(name + "/ws", scales)
        codes_x, row_scale = self.per_token_quant(x)
        unscaled = self.op("MatMulIntegerToFloat", [codes_x, w, "c_one", w_scale, "c_zp128"], name + "/unscaled")
        return self.op("Mul", [unscaled, row_scale], name)


_CONTRIB = {"EmbedLayerNormalization", "MultiHeadAttention", "Gelu", "MatMulIntegerToFloat"}
# which int8 scheme each linear layer uses (see the module docstring)
_MODES = {
    "attention.self.query": "token",
    "attention.self.key": "token",
    "attention.self.value": "float32",
    "attention.output.dense": "token",
    "intermediate.dense": "token",
    "output.dense": "token",
}


def build_encoder(weights: Mapping[str, np.ndarray], heads: int, int8: bool = True) -> bytes:
    """Serialized ONNX model: inputs input_ids/attention_mask/token_type_ids [batch, seq] int64, output
    last_hidden_state [batch, seq, hidden] float32 (pooling stays with the caller). ``int8=False`` builds
    the same graph with every product in float32."""
    from onnx import TensorProto, helper

    modes = _MODES if int8 else dict.fromkeys(_MODES, "float32")
    shape = infer_shape(weights, heads)
    g = _Graph()
    g.const("c_inv127", np.array(1 / 127, np.float32))
    g.const("c_tiny", np.array(1e-10, np.float32))
    g.const("c_zp128", np.array(128, np.uint8))
    g.const("c_one", np.array(1.0, np.float32))
    g.const("c_flat", np.array([-1], np.int64))
    ids = g.op("Cast", ["input_ids"], "ids32", to=TensorProto.INT32)
    segments = g.op("Cast", ["token_type_ids"], "segments32", to=TensorProto.INT32)
    mask = g.op("Cast", ["attention_mask"], "mask32", to=TensorProto.INT32)
    emb = "embeddings."
    g.nodes.append(
        helper.make_node(
            "EmbedLayerNormalization",
            [ids, segments]
            + [
                g.const(emb + part, weights[emb + part])
                for part in (
                    "word_embeddings.weight",
                    "position_embeddings.weight",
                    "token_type_embeddings.weight",
                    "LayerNorm.weight",
                    "LayerNorm.bias",
                )
            ]
            + [mask],
            ["embedded", "mask_index"],
            domain="com.microsoft",
            epsilon=shape.eps,
        )
    )
    x = "embedded"
    for layer in range(shape.layers):
        p = f"encoder.layer.{layer}."

        def proj(linear: str, source: str, p: str = p) -> str:
            return g.linear(source, weights[p + linear + ".weight"].T, modes[linear], p + linear)

        def param(name: str, p: str = p) -> str:
            return g.const(p + name, weights[p + name])

        q, k, v = (proj(f"attention.self.{t}", x) for t in ("query", "key", "value"))
        qkv_bias = g.const(
            p + "qkv.bias", np.concatenate([weights[p + f"attention.self.{t}.bias"] for t in ("query", "key", "value")])
        )
        context = g.op("MultiHeadAttention", [q, k, v, qkv_bias, mask], p + "context", num_heads=shape.heads)
        attended = g.add_norm(
            proj("attention.output.dense", context),
            param("attention.output.dense.bias"),
            x,
            param("attention.output.LayerNorm.weight"),
            param("attention.output.LayerNorm.bias"),
            p + "attended",
            shape.eps,
        )
        up = g.op("Add", [proj("intermediate.dense", attended), param("intermediate.dense.bias")], p + "up")
        x = g.add_norm(
            proj("output.dense", g.op("Gelu", [up], p + "gelu")),
            param("output.dense.bias"),
            attended,
            param("output.LayerNorm.weight"),
            param("output.LayerNorm.bias"),
            "last_hidden_state" if layer == shape.layers - 1 else p + "out",
            shape.eps,
        )
    graph = helper.make_graph(
        g.nodes,
        f"bert-{RECIPE}",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", shape.hidden])],
        g.constants,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    return bytes(model.SerializeToString())
