"""What the document tools show: a document's outline as an indented tree of section ids, and one part of a
section's text with where it continues (the levels above the chunk: arag.corpus.outline)."""

from __future__ import annotations

from typing import Any

from arag.corpus.outline import Outline, Section, SectionPart

MAX_OUTLINE_LINES = 120  # an outline longer than this is cut, saying how many sections were left out
KIND_NAMES = {
    "headings": "headings",
    "places": "slides or sheets",
    "pages": "pages",
    "paragraphs": "paragraphs (no headings)",
    "chunks": "chunks (no headings)",
}


def outline_text(outline: Outline, depth: int, section_read: str = "section_read", note: str = "") -> str:
    """The outline down to ``depth`` levels: one line per section (id, title, about how many tokens), indented by
    level; a section with deeper subsections says how many. ``note``: a line said after the first."""
    shown = [s for s in outline.sections if s.depth <= depth]
    lines = [
        f"document_outline {outline.doc_id}: {len(outline.sections)} sections by {KIND_NAMES[outline.kind]} "
        f"({outline.chunks} chunks, {outline.tokens} tokens)"
    ]
    if note:
        lines.append(note)
    for section in shown[:MAX_OUTLINE_LINES]:
        hidden = _hidden_below(outline, section, depth)
        more = f", {hidden} subsections" if hidden else ""
        lines.append(
            f"{'  ' * (section.depth - 1)}{section.section_id} {section.title} (~{section.tokens} tokens{more})"
        )
    if len(shown) > MAX_OUTLINE_LINES:
        lines.append(f"… {len(shown) - MAX_OUTLINE_LINES} more sections not shown (a smaller depth shows fewer)")
    lines.append(f"Call {section_read} with a section id to read the text under it.")
    return "\n".join(lines)


def _hidden_below(outline: Outline, section: Section, depth: int) -> int:
    if section.depth != depth:
        return 0
    return sum(1 for s in outline.sections if s.depth > depth and section.start < s.start < section.end)


def part_header(part: SectionPart) -> str:
    """``section_read guide.md#s3 "Install › On Linux" (part 1 of 2, ~420 tokens)``."""
    path = " › ".join(part.section.path)
    of = f"part {part.part} of {part.parts}, " if part.parts > 1 else ""
    return f'section_read {part.section.section_id} "{path}" ({of}{part.tokens} tokens)'


def continues(part: SectionPart, section_read: str = "section_read") -> str:
    """Where the text goes on: the section's next part, or the section after it."""
    if part.part < part.parts:
        return f'(continues: {section_read}("{part.section.section_id}", part={part.part + 1}))'
    after = part.next_section
    if after is None:
        return "(the end of the document)"
    return f"(next section: {after.section_id} {after.title})"


def outline_dict(outline: Outline) -> dict[str, Any]:
    """The outline as the CLI's --json and the HTTP API give it."""
    return {
        "doc_id": outline.doc_id,
        "kind": outline.kind,
        "chunks": outline.chunks,
        "tokens": outline.tokens,
        "sections": [
            {
                "section_id": s.section_id,
                "depth": s.depth,
                "title": s.title,
                "path": list(s.path),
                "tokens": s.tokens,
                "chunk_ids": list(s.chunk_ids),
            }
            for s in outline.sections
        ],
    }


def part_dict(part: SectionPart) -> dict[str, Any]:
    """One part of a section's text as the CLI's --json and the HTTP API give it."""
    after = part.next_section
    return {
        "section_id": part.section.section_id,
        "path": list(part.section.path),
        "part": part.part,
        "parts": part.parts,
        "tokens": part.tokens,
        "text": part.text,
        "chunk_ids": list(part.chunk_ids),
        "next_section": None if after is None else {"section_id": after.section_id, "title": after.title},
    }
