"""The levels above the chunk, run directly: ``arag documents list|outline|read`` (the tools list_documents,
document_outline and section_read)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from arag.serve.cli.common import (
    IndexOpt,
    JsonOpt,
    WhereOpt,
    documents_app,
    err,
    open_index,
    open_scoped,
    out,
    print_json,
)


@documents_app.command("list")
def documents_list(
    index_dir: IndexOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100_000, help="Documents to list.")] = 100,
    where: WhereOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The documents a filter lets through, in order, with title, path, size and first sentence."""
    from dataclasses import asdict

    idx, scope = open_scoped(index_dir, where)
    total, entries = idx.list_documents(scope, top_k)
    if as_json:
        print_json({"total": total, "documents": [asdict(e) for e in entries]})
        return
    for entry in entries:
        out.print(f"[bold]{escape(entry.doc_id)}[/bold] {escape(entry.title)} — {entry.chunks} chunks, "
                  f"{entry.tokens} tokens", highlight=False)  # fmt: skip
        if entry.first_sentence:
            out.print(f"  {entry.first_sentence}", markup=False, highlight=False)
    err.print(f"{total} documents" + (f", the first {len(entries)} shown" if total > len(entries) else ""))


@documents_app.command("outline")
def documents_outline(
    document: Annotated[str, typer.Argument(help="A document's id, path or title (or a chunk id of it).")],
    index_dir: IndexOpt,
    depth: Annotated[int, typer.Option("--depth", min=1, max=6, help="Levels of headings to show.")] = 6,
    as_json: JsonOpt = False,
) -> None:
    """A document's outline: its headings as a tree (or pages, slides, sheets, paragraphs), with section ids."""
    from arag.tools.documents import outline_dict, outline_text

    idx = open_index(index_dir)
    found = idx.find_document(document)
    outline = idx.outline(found) if found else None
    if outline is None:
        err.print(f"no document {document!r} (arag documents list shows them)", markup=False, highlight=False)
        raise typer.Exit(1)
    if as_json:
        print_json(outline_dict(outline))
    else:
        out.print(outline_text(outline, depth, "arag documents read"), markup=False, highlight=False)


@documents_app.command("read")
def documents_read(
    section_id: Annotated[str, typer.Argument(help="A section id, as arag documents outline shows it.")],
    index_dir: IndexOpt,
    part: Annotated[int, typer.Option("--part", min=1, help="Which part of a long section.")] = 1,
    as_json: JsonOpt = False,
) -> None:
    """The text under one node of a document's outline, in parts of at most 1000 tokens."""
    from arag.tools.documents import continues, part_dict, part_header

    idx = open_index(index_dir)
    shown = idx.read_section(section_id, part)
    if shown is None or part > shown.parts:
        reason = (
            f"the section has {shown.parts} part{'s' if shown.parts > 1 else ''}"
            if shown
            else "arag documents outline shows the ids"
        )
        err.print(f"no section {section_id!r}, part {part} ({reason})", markup=False, highlight=False)
        raise typer.Exit(1)
    if as_json:
        print_json(part_dict(shown))
    else:
        out.print(f"{part_header(shown)}\n{shown.text}\n{continues(shown, 'arag documents read')}", markup=False,
                  highlight=False)  # fmt: skip
