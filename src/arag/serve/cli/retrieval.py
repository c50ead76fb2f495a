"""The retrieval tools run directly: ``arag search keyword|semantic``, ``arag read`` (the paper's), ``arag search
grep`` (regular expressions) and ``arag tables list|query`` (tables as data)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from arag.serve.cli.common import (
    IndexOpt,
    JsonOpt,
    TopKOpt,
    WhereOpt,
    app,
    err,
    nonempty,
    open_scoped,
    out,
    print_hits,
    print_json,
    search_app,
    tables_app,
)
from arag.settings import IndexSettings, describe


@search_app.command("keyword")
def search_keyword(
    keywords: Annotated[list[str], typer.Argument(help="Keywords (exact, case-insensitive).")],
    index_dir: IndexOpt,
    top_k: TopKOpt = 5,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Keyword search: score = Σ count(k) · len(k)."""
    keywords = nonempty(keywords, "keyword list")
    idx, scope = open_scoped(index_dir, where)
    print_hits(idx.keyword_search(keywords, top_k, scope), as_json)


@search_app.command("semantic")
def search_semantic(
    query: Annotated[str, typer.Argument(help="Natural-language query.")],
    index_dir: IndexOpt,
    top_k: TopKOpt = 5,
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Scan only the nearest IVF lists (index built with --ann).")
    ] = False,
    probes: Annotated[
        int | None,
        typer.Option(min=1, max=65536, help=describe(IndexSettings, "ann_probes", "ARAG_INDEX__ANN_PROBES")),
    ] = None,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Semantic search: chunk score = its best sentence's cosine."""
    query = nonempty([query], "query")[0]
    idx, scope = open_scoped(index_dir, where, probes)
    print_hits(idx.semantic_search(query, top_k, exact=not approximate, where=scope), as_json)


@search_app.command("grep")
def search_grep(
    pattern: Annotated[str, typer.Argument(help="A regular expression (RE2: no backreferences or lookaround).")],
    index_dir: IndexOpt,
    top_k: TopKOpt = 5,
    case_sensitive: Annotated[bool, typer.Option("--case-sensitive", help="Tell upper from lower case.")] = False,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Regular-expression search over every chunk's text, counted exactly (matches and chunks on stderr)."""
    idx, scope = open_scoped(index_dir, where)
    found = idx.grep(pattern, top_k, scope, case_sensitive)
    scanned = "" if found.complete else f" (the first {found.scanned} chunks, within the time limit)"
    err.print(f"{found.matches} matches in {found.chunks} chunks{scanned}", highlight=False)
    print_hits(found.hits, as_json)


@app.command()
def read(
    chunk_ids: Annotated[
        list[str], typer.Argument(help="Chunk ids as search results and export show them, e.g. 'notes.md#0'.")
    ],
    index_dir: IndexOpt,
    where: WhereOpt = None,
    claim: Annotated[
        str | None,
        typer.Option("--claim", help="Also name the sentence of each chunk that best supports this text."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print chunks by id, with their neighbours' ids and where they come from (file, page, heading path)."""
    from arag.citations import locate

    idx, scope = open_scoped(index_dir, where)
    found, missing = idx.read(nonempty(chunk_ids, "chunk id list"), scope)
    sources = [locate(idx, r, claim) for r in found]
    if as_json:
        print_json(
            [
                {
                    "chunk_id": r.chunk_id,
                    "text": r.text,
                    "prev_id": r.prev_id,
                    "next_id": r.next_id,
                    "source": source.to_dict(),
                }
                for r, source in zip(found, sources, strict=True)
            ]
        )
    else:
        for r, source in zip(found, sources, strict=True):
            out.print(
                f"[bold]{escape(r.chunk_id)}[/bold] (prev {r.prev_id or '-'}, next {r.next_id or '-'}) — "
                f"{escape(source.label)}",
                highlight=False,
            )
            out.print(r.text, markup=False, highlight=False)
            if source.sentence:
                out.print(f"  supports the claim: “{source.sentence}”", markup=False, highlight=False)
    for chunk_id in missing:
        reason = "not found (or outside the filter)" if scope is not None else "not found"
        err.print(f"{reason}: {chunk_id}", highlight=False, markup=False)
    if missing:
        raise typer.Exit(1)


@tables_app.command("list")
def tables_list(
    index_dir: IndexOpt,
    query: Annotated[str, typer.Option("--query", "-q", help="Words for what the table should hold.")] = "",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=1000, help="Tables to list.")] = 20,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tables read from the documents (spreadsheets, CSV, and tables in Word, PowerPoint, PDF, web pages), each
    with its id, columns and their kinds, rows and where it is."""
    from arag.tools.tables import listed_tables

    idx, scope = open_scoped(index_dir, where)
    ranked = listed_tables(idx, query, scope, top_k)
    if as_json:
        print_json(ranked)
        return
    for table in ranked:
        caption = f" “{table['caption']}”" if table["caption"] else ""
        out.print(f"[bold]{escape(table['table_id'])}[/bold]{escape(caption)} — {escape(table['source'])}, "
                  f"{table['n_rows']} rows", highlight=False)  # fmt: skip
        columns = "; ".join(f"{c['name']} ({c['kind']})" for c in table["columns"])
        out.print(f"  {columns}", markup=False, highlight=False)
    if not ranked:
        err.print("no tables in these documents")


@tables_app.command("query")
def tables_query(
    table_id: Annotated[str, typer.Argument(help="A table's id, as arag tables list shows it.")],
    index_dir: IndexOpt,
    column: Annotated[
        list[str] | None,
        typer.Option("--column", "-c", help="A column to show, or one computed: '[2019] - [2018]' (repeatable)."),
    ] = None,
    filter_: Annotated[
        list[str] | None,
        typer.Option("--filter", "-f", help="'column operator value', = != > >= < <= contains (repeatable)."),
    ] = None,
    group_by: Annotated[list[str] | None, typer.Option("--group-by", "-g", help="A column to group by.")] = None,
    aggregate: Annotated[
        list[str] | None, typer.Option("--aggregate", "-a", help="count(*), sum(c), avg(c), min(c), max(c).")
    ] = None,
    order_by: Annotated[str, typer.Option("--order-by", "-o", help="A column or an aggregate.")] = "",
    descending: Annotated[bool, typer.Option("--descending", help="Largest first.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=50, help="Rows to show (1-50).")] = 20,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Query one table read-only: columns, filters, groups, aggregates, an order (arag/store/tabular.py)."""
    from dataclasses import asdict

    from arag.store.tabular import show_value
    from arag.tools.tables import source_label

    idx, scope = open_scoped(index_dir, where)
    table, _query, answer = idx.query_table(
        table_id, column or [], filter_ or [], group_by or [], aggregate or [], order_by, descending, limit, scope
    )
    if as_json:
        print_json({"table_id": table.table_id, "source": source_label(idx, table), **asdict(answer)})
        return
    from rich.table import Table

    grid = Table(*answer.header, title=f"{table.table_id} — {source_label(idx, table)}", title_justify="left")
    for row in answer.rows:
        grid.add_row(*(escape(show_value(value)) for value in row))
    out.print(grid)
    shown = len(answer.rows)
    err.print(f"{shown} of {answer.total} rows; chunks: {', '.join(answer.chunk_ids) or '-'}", highlight=False)
