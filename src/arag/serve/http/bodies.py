"""The bodies of the API's requests, each bounded (lengths, counts, ranges) before a route sees it."""

from __future__ import annotations

from typing import Literal

from fastapi import HTTPException
from pydantic import BaseModel, Field

from arag.filters import MAX_FILTER_CHARS
from arag.store.tabular import MAX_RESULT_ROWS
from arag.tools.arguments import MAX_ARGUMENT_CHARS, MAX_QUERY_CHARS
from arag.tools.toolkit import MAX_KEYWORDS, MAX_READ, MAX_TOP_K

_WHERE = Field(None, max_length=MAX_FILTER_CHARS, description="A filter on document metadata (arag.filters).")


class KeywordQuery(BaseModel):
    keywords: list[str] = Field(min_length=1, max_length=MAX_KEYWORDS)
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    where: str | None = _WHERE


class SemanticQuery(BaseModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    where: str | None = _WHERE


class ReadQuery(BaseModel):
    chunk_ids: list[str] = Field(min_length=1, max_length=MAX_READ)
    where: str | None = _WHERE
    claim: str | None = Field(None, max_length=MAX_QUERY_CHARS, description="Name each chunk's sentence that best "
                              "supports this text.")  # fmt: skip


class TableQueryBody(BaseModel):
    """A query of one table, as the tool table_query takes it (arag.store.tabular: its form and semantics)."""

    table_id: str = Field(min_length=1, max_length=MAX_ARGUMENT_CHARS)
    columns: list[str] = Field(default_factory=list, max_length=64)
    filters: list[str] = Field(default_factory=list, max_length=20)
    group_by: list[str] = Field(default_factory=list, max_length=20)
    aggregates: list[str] = Field(default_factory=list, max_length=20)
    order_by: str = Field("", max_length=MAX_ARGUMENT_CHARS)
    descending: bool = False
    limit: int = Field(20, ge=1, le=MAX_RESULT_ROWS)
    where: str | None = _WHERE


MAX_EMBEDDING_INPUTS = 2048  # OpenAI's own bound per request
MAX_EMBEDDING_CHARS = 20_000  # per input; the embedders truncate long texts anyway


class EmbeddingsQuery(BaseModel):
    """OpenAI's embeddings request, for text inputs (token-id inputs are refused)."""

    input: str | list[str] = Field(
        description=f"A text or a list of at most {MAX_EMBEDDING_INPUTS} texts, none empty, each at most "
        f"{MAX_EMBEDDING_CHARS} characters."
    )
    model: str = Field(min_length=1, max_length=256, description="The index's embedder (GET …/v1/models names it).")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1, description="Only the embedder's own dimension is accepted.")
    user: str | None = Field(None, max_length=256)

    def texts(self) -> list[str]:
        texts = [self.input] if isinstance(self.input, str) else self.input
        if not 1 <= len(texts) <= MAX_EMBEDDING_INPUTS:
            raise HTTPException(422, f"input: between 1 and {MAX_EMBEDDING_INPUTS} texts")
        if any(not text or len(text) > MAX_EMBEDDING_CHARS for text in texts):
            raise HTTPException(
                422, f"input: every text must be non-empty and at most {MAX_EMBEDDING_CHARS} characters"
            )
        return texts


class AskQuery(BaseModel):
    question: str = Field(min_length=1, max_length=20_000)
    max_steps: int | None = Field(None, ge=1, le=50)
    where: str | None = _WHERE


class NewConversation(BaseModel):
    where: str | None = _WHERE  # every question of the conversation stays within it
    max_steps: int | None = Field(None, ge=1, le=50)


class FollowUp(BaseModel):
    question: str = Field(min_length=1, max_length=20_000)
    where: str | None = _WHERE  # this question only (else the conversation's)
