"""The tables found in the documents, as data, over HTTP: ``GET /tables`` (listed, best for a query first) and
``POST /tables/query`` (one table filtered, grouped, aggregated, ordered; read-only, bounded). The tools
``table_list`` and ``table_query`` themselves are at ``/tools/NAME`` with the others."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from arag.filters import MAX_FILTER_CHARS
from arag.serve.http.bodies import TableQueryBody
from arag.serve.http.served import ServedIndex, where
from arag.tools.arguments import MAX_QUERY_CHARS
from arag.tools.tables import listed_tables, source_label
from arag.tools.toolkit import MAX_TOP_K


def router(served: ServedIndex) -> APIRouter:
    """The routes of one index's tables."""
    router = APIRouter()

    @router.get("/tables")
    async def tables(
        request: Request,
        query: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
        top_k: Annotated[int, Query(ge=1, le=MAX_TOP_K)] = MAX_TOP_K,
        where_text: Annotated[str | None, Query(alias="where", max_length=MAX_FILTER_CHARS)] = None,
    ) -> list[dict[str, Any]]:
        """The tables found in the documents (best for ``query`` first), each with its columns and where it is."""
        scope = where(where_text)
        return await served.bounded(listed_tables, served.view(request), query, scope, top_k)

    @router.post("/tables/query")
    async def table_query(body: TableQueryBody, request: Request) -> dict[str, Any]:
        """One table's rows, filtered, grouped, aggregated and ordered (read-only, bounded in rows and time)."""
        scope = where(body.where)
        index = served.view(request)

        def answered() -> dict[str, Any]:
            table, _query, answer = index.query_table(
                body.table_id, body.columns, body.filters, body.group_by, body.aggregates, body.order_by,
                body.descending, body.limit, scope,
            )  # fmt: skip
            return {"table_id": table.table_id, "source": source_label(index, table), **asdict(answer)}

        return await served.bounded(answered)

    return router
