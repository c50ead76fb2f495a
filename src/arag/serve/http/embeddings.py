"""OpenAI-compatible ``/v1/models`` and ``/v1/embeddings`` with the embedder that built the index, so that another
process embeds exactly as the index did."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
from fastapi import APIRouter, HTTPException

from arag.serve.http.bodies import EmbeddingsQuery
from arag.serve.http.served import ServedIndex


def router(served: ServedIndex) -> APIRouter:
    """The embedding routes of one index."""
    router = APIRouter()
    index = served.index

    def served_model() -> dict[str, Any]:
        return {"id": index.manifest.embedder["name"], "object": "model", "owned_by": "a-rag",
                "created": 0, "fingerprint": index.manifest.embedder.get("fingerprint")}  # fmt: skip

    @router.get("/v1/models")
    async def models() -> dict[str, Any]:
        """OpenAI-compatible: the one model served here, the embedder that built this index."""
        return {"object": "list", "data": [served_model()]}

    @router.post("/v1/embeddings")
    async def embeddings(body: EmbeddingsQuery) -> dict[str, Any]:
        """OpenAI-compatible embeddings with the embedder that built this index (so a client embeds exactly as
        the index did: ``openai:MODEL`` with this URL up to ``/v1`` as its base URL). L2-normalised vectors, as
        floats or as base64 of little-endian float32; ``usage`` is not counted (0). Every text is embedded as a
        document: an asymmetric model's query prompt (e5, Qwen3-Embedding) is not applied."""
        texts = body.texts()
        model = served_model()
        if body.model not in (model["id"], model["fingerprint"]):
            raise HTTPException(
                404, f"model {body.model[:256]!r} is not served here: this index's embedder is {model['id']!r}"
            )
        dims = int(index.manifest.embedder["dims"])
        if body.dimensions is not None and body.dimensions != dims:
            raise HTTPException(422, f"dimensions: this embedder gives {dims}, and does not shorten its vectors")
        vectors = await served.bounded(lambda: index.embedder.embed_documents(texts))
        rows = np.asarray(vectors, dtype="<f4")
        data = [
            {"object": "embedding", "index": i,
             "embedding": base64.b64encode(row.tobytes()).decode() if body.encoding_format == "base64"
             else row.tolist()}
            for i, row in enumerate(rows)
        ]  # fmt: skip
        return {
            "object": "list",
            "data": data,
            "model": model["id"],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    return router
