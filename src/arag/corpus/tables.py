"""Tables as text: one Markdown table per table read (a spreadsheet's sheet, a Word or PowerPoint table, a CSV file),
split by rows into tables that each fit a chunk, every part with the header row and the caption repeated.

A model reads a Markdown table's columns where a run of cell values loses them. The chunker keeps each part in one
chunk (:class:`arag.corpus.readers.Structure` ``blocks``), so a row is never cut from its header.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arag.corpus.chunking import count_tokens
from arag.store.tabular import SEPARATOR_LINE, markdown_cells

# A part of a long table: under the default chunk (1000 tokens) with room for a caption and the chunk's other text.
PART_TOKENS = 600
MAX_CELL_CHARS = 500  # a longer cell (a pasted paragraph) is cut: a table row is one sentence of the index


@dataclass(frozen=True, slots=True)
class TablePart:
    """One part of a table as text, and the rows of the table it holds (0-based, the header row aside)."""

    text: str
    first_row: int
    last_row: int


def cell_text(value: object) -> str:
    """A cell as one line of a Markdown table: whitespace folded, pipes escaped, cut at MAX_CELL_CHARS."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = " ".join(str(value).split())
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|")


def rectangular(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    """The rows as cell texts, every row as wide as the widest, rows and trailing columns with nothing left out."""
    cells = [[cell_text(v) for v in row] for row in rows]
    cells = [row for row in cells if any(row)]
    width = max((max((i + 1 for i, c in enumerate(row) if c), default=0) for row in cells), default=0)
    return [(row + [""] * width)[:width] for row in cells]


MAX_HEADER_ROWS = 3


def header_and_body(table: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """The header row and the rows under it. A report's table often heads its columns over two or three rows, the
    corner cell empty ("Years Ended September 30," over "2019 | 2018 | 2017"), and labels every row below in its
    first cell: those rows are one header, each column's cells joined top to bottom."""
    rows = 1
    while (
        rows < min(MAX_HEADER_ROWS, len(table) - 1)
        and not table[rows][0]
        and any(table[rows][1:])
        and not table[0][0]
        and all(row[0] for row in table[rows + 1 :])
    ):
        rows += 1
    if rows == 1:
        return table[0], table[1:]
    header = [" ".join(row[column] for row in table[:rows] if row[column]) for column in range(len(table[0]))]
    return header, table[rows:]


def markdown_rows(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def table_parts(
    rows: Sequence[Sequence[object]], caption: str = "", part_tokens: int = PART_TOKENS, encoding: str = "cl100k_base"
) -> list[TablePart]:
    """The table (its first row is the header) as Markdown tables of at most ``part_tokens`` tokens each (a
    single row over it stands alone), each with the caption line (a part after the first says so) and the header."""
    table = rectangular(rows)
    if not table or not table[0]:
        return []
    header, body = header_and_body(table)
    if not body:
        return [TablePart((f"{caption}\n" if caption else "") + markdown_rows(header, []), 0, -1)]
    parts: list[TablePart] = []
    first = 0
    while first < len(body):
        lead = f"{caption or 'Table'} (continued, rows {first + 1}–{len(body)})\n" if parts else ""
        lead = lead or (f"{caption}\n" if caption else "")
        budget = part_tokens - count_tokens(lead + markdown_rows(header, []), encoding)
        last = first
        used = count_tokens(markdown_rows(header, [body[first]]), encoding) - count_tokens(
            markdown_rows(header, []), encoding
        )
        while last + 1 < len(body):
            cost = count_tokens("| " + " | ".join(body[last + 1]) + " |\n", encoding)
            if used + cost > budget:
                break
            used += cost
            last += 1
        if parts:  # the rows it holds, now known
            lead = f"{caption or 'Table'} (continued, rows {first + 1}–{last + 1})\n"
        parts.append(TablePart(lead + markdown_rows(header, body[first : last + 1]), first, last))
        first = last + 1
    return parts


def row_as_fields(text: str, start: int, end: int) -> str | None:
    """The table row at ``text[start:end]`` written with its header, ``Column: value; …`` — what a row means — or
    None when that span is not a row under a Markdown header in ``text`` (the header itself, a separator, prose)."""
    row = text[start:end].strip()
    if not row.startswith("|") or "\n" in row or SEPARATOR_LINE.match(row):
        return None
    before = text[:start].rstrip("\n").split("\n")
    # the rows above it, up to the separator line; the header is the line above that
    for i in range(len(before) - 1, 0, -1):
        line = before[i].strip()
        if SEPARATOR_LINE.match(line):
            header = markdown_cells(before[i - 1])
            values = markdown_cells(row)
            if not before[i - 1].strip().startswith("|") or len(header) != len(values):
                return None
            pairs = zip(header, values, strict=True)
            return "; ".join(f"{name}: {value}" if name else value for name, value in pairs if value)
        if not line.startswith("|"):
            return None
    return None


def markdown_table_spans(text: str) -> list[tuple[int, int]]:
    """The spans of the Markdown tables written in a text (a header line, a separator line, the rows under them),
    outside fenced code: the chunker keeps each in one chunk when it fits, a row a sentence."""
    spans: list[tuple[int, int]] = []
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    fenced, i = False, 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif (
            not fenced
            and stripped.startswith("|")
            and i + 1 < len(lines)
            and SEPARATOR_LINE.match(lines[i + 1].strip())
        ):
            end = i + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            spans.append((starts[i], starts[end]))
            i = end
            continue
        i += 1
    return spans
