"""What the table tools show: the catalog of tables ranked for a query, and a query's rows as a Markdown table with
where they come from. The tools themselves are the toolkit's ``table_list`` and ``table_query`` (their docstrings are
what the model reads); the query and its semantics are arag.store.tabular's."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from arag.citations import locate
from arag.filters import Filter
from arag.index import Index
from arag.store.tabular import (
    MAX_RESULT_ROWS,
    NOT_BUILT,
    TableAnswer,
    TableInfo,
    TableQuery,
    TableQueryError,
    plan_query,
    show_value,
)

SAMPLE_ROWS = 3
MAX_CELL_SHOWN = 80
MAX_CHUNKS_NAMED = 5
_WORD = re.compile(r"\w+")
_SHORT_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "in",
        "on",
        "for",
        "to",
        "by",
        "at",
        "is",
        "are",
        "was",
        "what",
        "which",
        "how",
        "many",
        "much",
    ]
)


@dataclass
class TablesShown:
    """A table tool's text, and the chunks whose rows it showed (they count as read: the rows are their text)."""

    text: str
    chunk_ids: list[str] = field(default_factory=list)


def rank_tables(index: Index, tables: list[TableInfo], query: str, where: Filter | None) -> list[TableInfo]:
    """The tables, best for ``query`` first: each scored by the query's words found in its caption, columns and
    document name, plus how high its chunks rank in a semantic search (its rows are sentences of the index);
    document order for ties and when there is no query."""
    words = {w for w in _WORD.findall(query.lower()) if w not in _SHORT_WORDS}
    if not words:
        return tables
    by_chunk: dict[str, int] = {}
    for position, hit in enumerate(index.semantic_search(query, top_k=20, where=where)):
        by_chunk.setdefault(hit.chunk_id, position)
    scored = []
    for position, table in enumerate(tables):
        text = " ".join([table.caption, table.doc_id, *(c.name for c in table.columns)]).lower()
        overlap = len(words & set(_WORD.findall(text)))
        best = min((by_chunk[c] for c in table.chunk_ids if c in by_chunk), default=None)
        score = overlap + (1.0 / (1 + best) if best is not None else 0.0)
        scored.append((-score, position, table))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [table for _, _, table in scored]


def listed_tables(index: Index, query: str, where: Filter | None, top_k: int) -> list[dict[str, Any]]:
    """The tables for ``query`` as data (each with its source label), for the CLI's and the HTTP API's listings;
    :class:`TableQueryError` for an index built before tables were kept."""
    found = index.tables(where)
    if found is None:
        raise TableQueryError(NOT_BUILT)
    return [{**asdict(t), "source": source_label(index, t)} for t in rank_tables(index, found, query, where)[:top_k]]


def source_label(index: Index, table: TableInfo) -> str:
    """Where the table is: its first chunk's citation label ("q3.xlsx, sheet Budget, cells A1:D9")."""
    found, _ = index.read(table.chunk_ids[:1])
    label = locate(index, found[0]).label if found else table.doc_id
    return f"{label}, table {table.number}" if "table" not in label else label


def list_tables(index: Index, tables: list[TableInfo], top_k: int) -> TablesShown:
    if not tables:
        return TablesShown("table_list: no tables in these documents. Use keyword_search or semantic_search.")
    lines = [f"table_list: {min(top_k, len(tables))} of {len(tables)} tables"]
    for rank, table in enumerate(tables[:top_k], start=1):
        caption = f' "{_cut(table.caption, 120)}"' if table.caption else ""
        lines.append(f"[{rank}] table {table.table_id}{caption} ({source_label(index, table)}; {table.n_rows} rows)")
        lines.append("  columns: " + "; ".join(f"{c.name} ({c.kind})" for c in table.columns))
        sample = index.table_answer(table.table_id, plan_query(table, limit=SAMPLE_ROWS))
        for row in sample.rows:
            lines.append("  | " + " | ".join(_cut(show_value(v), MAX_CELL_SHOWN) for v in row) + " |")
    lines.append("Query a table with table_query (its id, filters, group_by, aggregates, order_by).")
    return TablesShown("\n".join(lines))


def show_answer(index: Index, table: TableInfo, query: TableQuery, answer: TableAnswer, header: str) -> TablesShown:
    shown = len(answer.rows)
    if query.grouped:
        about = f"{answer.total} groups" if query.group_by else "1 row"
    else:
        about = _rows(answer.total, "matching row") if answer.total != table.n_rows else _rows(table.n_rows, "row")
    more = (
        f", showing the first {shown} (raise limit, up to {MAX_RESULT_ROWS}, or filter)" if answer.total > shown else ""
    )
    chunks = answer.chunk_ids[:MAX_CHUNKS_NAMED]
    named = ", ".join(chunks) + (
        f" and {len(answer.chunk_ids) - len(chunks)} more" if len(answer.chunk_ids) > len(chunks) else ""
    )
    lines = [f"{header}: {about}{more} (source: {source_label(index, table)}; chunks: {named or '-'})"]
    if not answer.rows:
        lines.append("No row meets the filters.")
        return TablesShown("\n".join(lines), [])
    lines.append("| " + " | ".join(answer.header) + " |")
    lines.append("|" + "---|" * len(answer.header))
    for row in answer.rows:
        lines.append("| " + " | ".join(_cut(show_value(v), MAX_CELL_SHOWN).replace("|", "\\|") for v in row) + " |")
    return TablesShown("\n".join(lines), list(answer.chunk_ids))


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rows(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
