"""A document's outline, and the text under one of its nodes, from what its chunks recorded when they were indexed.

The levels above the chunk (issue 50, beyond the paper's three tools): a chunk records the heading path at each
offset where it changes (``Structure.locate``), and the page or the place (slide, sheet) likewise. The outline is
rebuilt from those records, so an index built before the outline existed has one too. Its nodes, in order of
preference:

* **headings** (Markdown, HTML, Word): a tree, a node per heading, its depth that of its heading path;
* **places** (slides, sheets) or **pages** (PDF), when a document has no headings: a node per slide, sheet, page;
* **paragraphs** of a plain text (its line breaks), when there are at most :data:`MAX_PARAGRAPH_SECTIONS` of them;
* otherwise its **chunks**.

A section's text runs from its node to the next node of the same or a higher level (its subsections included). A
position in a document is ``(n, offset)``: the n-th chunk and an offset in its text (a chunk's text is a slice of
the document's, so positions are ordered like the text).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arag.store import ChunkRecord

SECTION_MARK = "#s"  # a section id is "<doc_id>#s<number>": a chunk id is "<doc_id>#<number>", never with an "s"
MAX_PARAGRAPH_SECTIONS = 300  # more lines than this are not an outline (a log, a list): chunks are shown instead
TITLE_CHARS = 80

Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Section:
    """One node of an outline: ``number`` from 1 in document order (0: the text before the first heading)."""

    section_id: str
    number: int
    depth: int  # 1: a top-level node
    title: str
    path: tuple[str, ...]  # the titles from the top level down to this one
    start: Position
    end: Position  # exclusive: where the next node of the same or a higher level starts (or the document ends)
    tokens: int  # about: its chunks' token counts, shared out by characters
    chunk_ids: tuple[str, ...]  # the chunks its text is in


@dataclass(frozen=True, slots=True)
class Outline:
    doc_id: str
    kind: str  # "headings", "places", "pages", "paragraphs" or "chunks"
    sections: tuple[Section, ...]
    chunks: int
    tokens: int
    located: bool  # False: the index recorded no structure for its chunks (built before a-rag recorded it)


@dataclass(frozen=True, slots=True)
class SectionPart:
    """Part ``part`` of ``parts`` of a section's text, at most a read's worth of tokens, with the chunks it shows
    (``whole``: every chunk whose text it shows entirely, which is then read)."""

    section: Section
    part: int
    parts: int
    text: str  # the text, a "[chunk ID]" line before each chunk's piece
    chunk_ids: tuple[str, ...]
    whole: tuple[str, ...]
    tokens: int
    next_section: Section | None  # the node after this section's text (None: the document ends with it)


def section_number(section_id: str) -> tuple[str, int] | None:
    """``("guide.md", 3)`` for ``"guide.md#s3"``; None for anything else."""
    doc_id, mark, number = section_id.rpartition(SECTION_MARK)
    if not mark or not doc_id or not number.isdigit() or len(number) > 9:
        return None
    return doc_id, int(number)


def outline_of(doc_id: str, records: Sequence[ChunkRecord]) -> Outline:
    """The outline of one document from its chunks, in order."""
    located = any(record.location for record in records)
    nodes: list[tuple[Position, int, tuple[str, ...]]] = []
    kind = "chunks"
    for kind, find in (("headings", _headings), ("places", _places), ("pages", _pages), ("paragraphs", _paragraphs)):
        nodes = find(records)
        if kind == "headings" and nodes and len(nodes) < len(_pages(records)):
            continue  # a PDF's title, or a heading every few pages, outlines it less than its pages do
        if nodes and not (kind == "paragraphs" and (len(nodes) < 2 or len(nodes) > MAX_PARAGRAPH_SECTIONS)):
            break
    else:
        kind, nodes = "chunks", [((n, 0), 1, (_title(record.text),)) for n, record in enumerate(records)]
    preamble = bool(nodes) and nodes[0][0] != (0, 0) and bool(_text(records, (0, 0), nodes[0][0]).strip())
    if preamble:
        nodes.insert(0, ((0, 0), 1, ("(before the first heading)" if kind == "headings" else "(start)",)))
    end_of_document = (len(records) - 1, len(records[-1].text)) if records else (0, 0)
    sections = []
    for i, (start, depth, path) in enumerate(nodes):
        end = next((other[0] for other in nodes[i + 1 :] if other[1] <= depth), end_of_document)
        number = i if preamble else i + 1
        sections.append(
            Section(
                f"{doc_id}{SECTION_MARK}{number}",
                number,
                depth,
                path[-1],
                path,
                start,
                end,
                _about_tokens(records, start, end),
                tuple(records[n].chunk_id for n in _chunk_range(records, start, end)),
            )
        )
    return Outline(doc_id, kind, tuple(sections), len(records), sum(r.n_tokens for r in records), located)


def section_part(
    outline: Outline,
    records: Sequence[ChunkRecord],
    number: int,
    part: int,
    max_tokens: int,
    spans_of: Callable[[ChunkRecord], Sequence[tuple[int, int]]],
    count: Callable[[str], int],
) -> SectionPart | None:
    """Part ``part`` (from 1) of the text of section ``number``, cut between sentences into parts of at most
    ``max_tokens`` tokens (a sentence longer than that is cut by characters); None: no such section."""
    section = next((s for s in outline.sections if s.number == number), None)
    if section is None:
        return None
    parts = _packed(_pieces(records, section.start, section.end, max_tokens, spans_of, count), max_tokens)
    part = min(max(part, 1), len(parts))
    chosen = parts[part - 1]
    shown: dict[int, tuple[int, int]] = {}  # chunk → the first and last offset shown (its pieces are contiguous)
    for n, begin, end, _tokens in chosen:
        shown[n] = (shown.get(n, (begin, end))[0], end)
    lines = [
        f"[chunk {records[n].chunk_id}]\n{records[n].text[begin:end].strip()}" for n, (begin, end) in shown.items()
    ]
    whole = tuple(
        records[n].chunk_id
        for n, (begin, end) in shown.items()
        if not records[n].text[:begin].strip() and not records[n].text[end:].strip()
    )
    after = next((s for s in outline.sections if s.start >= section.end and s.number > section.number), None)
    return SectionPart(
        section,
        part,
        len(parts),
        "\n".join(lines),
        tuple(records[n].chunk_id for n in shown),
        whole,
        sum(t for *_, t in chosen),
        after,
    )


# ---------------------------------------------------------------- the nodes of each kind: (position, depth, path)
def _headings(records: Sequence[ChunkRecord]) -> list[tuple[Position, int, tuple[str, ...]]]:
    nodes: list[tuple[Position, int, tuple[str, ...]]] = []
    current: tuple[str, ...] = ()
    for n, record in enumerate(records):
        for at, path in (record.location or {}).get("headings") or []:
            heading = tuple(str(title) for title in path)
            # an entry at a chunk's start is the path still open there, unless a heading starts the chunk
            if at == 0 and heading == current and not _starts_with(record.text, heading):
                continue
            current = heading
            if heading:
                nodes.append(((n, int(at)), len(heading), heading))
    return nodes


def _starts_with(text: str, path: tuple[str, ...]) -> bool:
    first = text.lstrip().split("\n", 1)[0].strip().strip("#").strip()
    return bool(path) and first == path[-1]


def _labelled(
    records: Sequence[ChunkRecord], key: str, name: Callable[[object], str]
) -> list[tuple[Position, int, tuple[str, ...]]]:
    nodes: list[tuple[Position, int, tuple[str, ...]]] = []
    current: object = None
    for n, record in enumerate(records):
        for at, value in (record.location or {}).get(key) or []:
            if value != current:
                current = value
                if name(value):
                    nodes.append(((n, int(at)), 1, (name(value),)))
    return nodes


def _places(records: Sequence[ChunkRecord]) -> list[tuple[Position, int, tuple[str, ...]]]:
    return _labelled(records, "places", lambda value: str(value or ""))


def _pages(records: Sequence[ChunkRecord]) -> list[tuple[Position, int, tuple[str, ...]]]:
    nodes = _labelled(records, "pages", lambda value: f"page {value}")
    return nodes if len(nodes) > 1 else []


def _paragraphs(records: Sequence[ChunkRecord]) -> list[tuple[Position, int, tuple[str, ...]]]:
    """A node at the document's start and after each line break (a break that falls between two chunks is not
    recorded: that paragraph continues the one before)."""
    nodes: list[tuple[Position, int, tuple[str, ...]]] = []
    for n, record in enumerate(records):
        starts = [0] if n == 0 else []
        starts += [m.end() for m in _LINE_BREAK.finditer(record.text) if record.text[m.end() :].strip()]
        for at in starts:
            nodes.append(((n, at), 1, (_title(record.text[at:]),)))
            if len(nodes) > MAX_PARAGRAPH_SECTIONS:
                return nodes
    return nodes


_LINE_BREAK = re.compile(r"\n\s*")


def _title(text: str) -> str:
    line = " ".join(text.strip().split("\n", 1)[0].split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


# ---------------------------------------------------------------- text between two positions
def _chunk_range(records: Sequence[ChunkRecord], start: Position, end: Position) -> range:
    last = end[0] if end[1] > 0 or end[0] == start[0] else end[0] - 1
    return range(start[0], max(start[0], last) + 1)


def _slices(records: Sequence[ChunkRecord], start: Position, end: Position) -> list[tuple[int, int, int]]:
    """(chunk, begin, end) of every chunk's piece of the text from ``start`` to ``end``."""
    out = []
    for n in _chunk_range(records, start, end):
        begin = start[1] if n == start[0] else 0
        stop = end[1] if n == end[0] else len(records[n].text)
        if stop > begin:
            out.append((n, begin, stop))
    return out


def _text(records: Sequence[ChunkRecord], start: Position, end: Position) -> str:
    return "\n".join(records[n].text[begin:stop] for n, begin, stop in _slices(records, start, end))


def _about_tokens(records: Sequence[ChunkRecord], start: Position, end: Position) -> int:
    return sum(
        round(records[n].n_tokens * (stop - begin) / max(1, len(records[n].text)))
        for n, begin, stop in _slices(records, start, end)
    )


def _pieces(
    records: Sequence[ChunkRecord],
    start: Position,
    end: Position,
    max_tokens: int,
    spans_of: Callable[[ChunkRecord], Sequence[tuple[int, int]]],
    count: Callable[[str], int],
) -> list[tuple[int, int, int, int]]:
    """The section's text cut at its chunks' sentence starts: (chunk, begin, end, tokens) pieces in order; a piece
    of more than ``max_tokens`` tokens is cut into equal runs of characters."""
    pieces = []
    for n, begin, stop in _slices(records, start, end):
        text = records[n].text
        cuts = sorted({begin, *(s for s, _e in spans_of(records[n]) if begin < s < stop)})
        for a, b in zip(cuts, [*cuts[1:], stop], strict=True):
            tokens = count(text[a:b])
            runs = max(1, math.ceil(tokens / max_tokens))
            bounds = [a + (b - a) * k // runs for k in range(runs + 1)]
            pieces += [
                (n, x, y, count(text[x:y]) if runs > 1 else tokens) for x, y in itertools.pairwise(bounds) if y > x
            ]
    return pieces


def _packed(pieces: list[tuple[int, int, int, int]], max_tokens: int) -> list[list[tuple[int, int, int, int]]]:
    """The pieces in order, in as few parts of at most ``max_tokens`` tokens as filling each in turn makes."""
    parts: list[list[tuple[int, int, int, int]]] = [[]]
    total = 0
    for piece in pieces:
        if parts[-1] and total + piece[3] > max_tokens:
            parts.append([])
            total = 0
        parts[-1].append(piece)
        total += piece[3]
    return parts
