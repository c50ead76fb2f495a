"""Sentence embedders (paper §3.1): the default all-MiniLM-L6-v2 int8 graph on onnxruntime (``bert_int8`` builds
it from the pinned weights), sentence-transformers models, OpenAI-compatible ``/embeddings`` endpoints, and a fake
one for tests (``embedders``)."""

from arag.embedding.embedders import Embedder, FakeEmbedder, load_embedder

__all__ = ["Embedder", "FakeEmbedder", "load_embedder"]
