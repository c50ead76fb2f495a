"""The levels above the chunk over HTTP: ``GET /documents`` (listed, a filter applied), ``GET /documents/outline``
(one document's headings, pages, slides or paragraphs with section ids) and ``GET /documents/section`` (the text
under one node, in parts). The tools list_documents, document_outline and section_read are at ``/tools/NAME``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request

from arag.filters import MAX_FILTER_CHARS
from arag.serve.http.served import ServedIndex, where
from arag.tools.arguments import MAX_ARGUMENT_CHARS
from arag.tools.documents import outline_dict, part_dict
from arag.tools.toolkit import MAX_DOCUMENTS_LISTED


def router(served: ServedIndex) -> APIRouter:
    """The routes of one index's documents."""
    router = APIRouter()

    @router.get("/documents")
    async def documents(
        request: Request,
        top_k: Annotated[int, Query(ge=1, le=MAX_DOCUMENTS_LISTED)] = MAX_DOCUMENTS_LISTED,
        where_text: Annotated[str | None, Query(alias="where", max_length=MAX_FILTER_CHARS)] = None,
    ) -> dict[str, Any]:
        """The documents the filter lets through, in order, with title, path, size and first sentence."""
        scope = where(where_text)
        total, entries = await served.bounded(served.view(request).list_documents, scope, top_k)
        return {"total": total, "documents": [asdict(entry) for entry in entries]}

    @router.get("/documents/outline")
    async def outline(
        request: Request, doc_id: Annotated[str, Query(min_length=1, max_length=MAX_ARGUMENT_CHARS)]
    ) -> dict[str, Any]:
        """A document's outline (by its id, path or title): each node with its section id, depth, title and size."""
        index = served.view(request)

        def outlined() -> dict[str, Any] | None:
            found = index.find_document(doc_id)
            shown = index.outline(found) if found else None
            return None if shown is None else outline_dict(shown)

        shown = await served.bounded(outlined)
        if shown is None:
            raise HTTPException(404, f"no document {doc_id!r}")
        return shown

    @router.get("/documents/section")
    async def section(
        request: Request,
        section_id: Annotated[str, Query(min_length=1, max_length=MAX_ARGUMENT_CHARS)],
        part: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    ) -> dict[str, Any]:
        """Part ``part`` of the text under one node of an outline, with the chunks it comes from."""
        shown = await served.bounded(served.view(request).read_section, section_id, part)
        if shown is None:
            raise HTTPException(404, f"no section {section_id!r}")
        if part > shown.parts:
            raise HTTPException(404, f"the section {section_id!r} has {shown.parts} part(s), not {part}")
        return part_dict(shown)

    return router
