"""The paper's retrieval tools run directly: ``arag search keyword|semantic``, ``arag read``."""

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
    open_index,
    out,
    print_hits,
    print_json,
    scope_notes,
    search_app,
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
    from arag.filters import parse_filter

    keywords = nonempty(keywords, "keyword list")
    scope = parse_filter(where)
    idx = open_index(index_dir)
    scope_notes(idx, scope)
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
    from arag.filters import parse_filter

    query = nonempty([query], "query")[0]
    scope = parse_filter(where)
    idx = open_index(index_dir, probes=probes)
    scope_notes(idx, scope)
    print_hits(idx.semantic_search(query, top_k, exact=not approximate, where=scope), as_json)


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
    from arag.filters import parse_filter

    scope = parse_filter(where)
    idx = open_index(index_dir)
    scope_notes(idx, scope)
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
