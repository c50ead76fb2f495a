"""A build a test can kill mid-way: a subprocess whose embedder is slow and says when it embeds."""

SLOW_INDEXER = """
import sys, time
from pathlib import Path
from arag.embedding.embedders import FakeEmbedder
from arag.corpus.build import build_index
from arag.settings import IndexSettings

class Slow(FakeEmbedder):
    def embed_documents(self, texts, progress=None):
        out = []
        for t in texts:
            print("embedding", flush=True)
            time.sleep(0.02)
            out.append(super().embed_documents([t])[0])
        import numpy as np
        return np.stack(out)

build_index([Path(sys.argv[1])], Path(sys.argv[2]), IndexSettings(embedder="fake", threads=1), embedder=Slow(),
            sync=sys.argv[3:] == ["--sync"])
print("done", flush=True)
"""
