"""Tables as data: every Markdown table in a document's chunks (the readers write each table they read as one, a
long one in parts that repeat its header) is also kept as a typed table, and queried read-only by a small
structured query — filters, groups, aggregates, an order and a limit — never by SQL text from outside.

This module is what both stores share: finding the tables in chunk text (:func:`tables_in`), typing their columns,
the query (:class:`TableQuery`, checked against the table's columns by :func:`plan_query`) and the SQL it compiles to
(:func:`compile_query`, for SQLite or PostgreSQL). A query's SQL names columns by their position (``c0``, ``c1``…),
never by a name from the query; every value from the query is a bound parameter. The stores add what keeps a query
read-only and bounded (arag.store.embedded.tables, arag.store.postgres.store).

Semantics, the same in both stores (tests compare them with a plain Python evaluation of the query):

* a column is a number column when every non-empty cell reads as a number ("1,234", "$5.2", "(3.1)" = −3.1,
  "12%" = 12; "-", "—", "n/a" are empty), else a text column; an empty cell is NULL and meets no condition;
* text compares case-insensitively (``=``, ``!=``, ``contains``), numbers numerically (``= != > >= < <=``);
* ``count(*)`` counts rows, ``count(col)`` non-empty cells; ``sum avg min max`` take number columns;
* rows come in table order unless ordered; ties keep table order; empty values sort last; text sorts by code point.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from arag.errors import ARagError
from arag.text import never_stored

MAX_RESULT_ROWS = 50
QUERY_TIME_LIMIT_S = 2.0
MAX_COLUMNS = 64  # a wider table keeps its first 64 columns as data (its text keeps them all)
MAX_CONDITIONS = 10

Value = float | str | None
Kind = Literal["number", "text"]

SEPARATOR_LINE = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+\s*$")
# a part after the first: "Budget (continued, rows 41–80)" (tables split by rows), "Table (page 2, continued)" (PDF)
_CONTINUED = re.compile(r"\((?:[^()]*,\s*)?continued\b[^()]*\)\s*$")


def markdown_cells(line: str) -> list[str]:
    """A Markdown table line's cells (escaped pipes and backslashes restored)."""
    stripped = line.strip()
    inner = stripped[1:-1] if stripped.endswith("|") and len(stripped) > 1 else stripped[1:]
    cells = re.split(r"(?<!\\)\|", inner)
    return [cell.strip().replace("\\|", "|").replace("\\\\", "\\") for cell in cells]


# ---------------------------------------------------------------------------------------------------- values
_NULLS = frozenset({"", "-", "—", "–", "n/a", "na", "nm", "none", "null", "nan"})
_NUMBER = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d{1,3})?$")
_CURRENCY = "$€£¥"


def is_empty_cell(text: str) -> bool:
    return text.strip().lower() in _NULLS


def parse_number(text: str) -> float | None:
    """The number a cell shows ("1,234.5", "$ 12", "(3)" = −3, "−4%" = −4), or None when it shows none."""
    value = text.strip().replace("\u2212", "-")
    negative = False
    if value.startswith("(") and value.endswith(")"):
        negative, value = True, value[1:-1].strip()
    if value.startswith(("+", "-")):
        negative, value = negative != (value[0] == "-"), value[1:].strip()
    value = value.lstrip(_CURRENCY).strip()
    if value.startswith(("+", "-")) and not negative:  # "$-5"
        negative, value = value[0] == "-", value[1:].strip()
    value = value.removesuffix("%").strip()
    if not value or not any(ch.isdigit() for ch in value) or not _NUMBER.match(value):
        return None
    number = float(value.replace(",", ""))
    if not math.isfinite(number):
        return None
    return -number if negative else number


def column_kind(cells: Sequence[str]) -> Kind:
    """ "number" when every non-empty cell reads as a number (and one does), else "text"."""
    values = [c for c in cells if not is_empty_cell(c)]
    return "number" if values and all(parse_number(c) is not None for c in values) else "text"


def typed_value(cell: str, kind: Kind) -> Value:
    if is_empty_cell(cell):
        return None
    return parse_number(cell) if kind == "number" else cell


def show_value(value: Value) -> str:
    """A value as a result shows it: integers without ".0", other numbers to 10 significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    return str(value)


# ---------------------------------------------------------------------------------------------------- tables
@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: Kind


@dataclass(slots=True)
class TableInfo:
    """A table as the catalog lists it: ``table_id`` is ``DOC_ID#tN`` (its document's Nth table)."""

    table_id: str
    doc_id: str
    number: int
    caption: str
    columns: list[Column]
    n_rows: int
    chunk_ids: list[str]  # the chunks its text is in, in order

    def column_index(self, name: str) -> int | None:
        """The position of a column named ``name``: the same name whatever the case, else the only column whose
        words are the same whatever the punctuation ("Years ended August 31" for "Years ended August 31,"), else the
        only one whose words begin so; "column 3" is the third. None when no column is so named."""
        wanted = _plain_name(name)
        for i, column in enumerate(self.columns):
            if _plain_name(column.name) == wanted:
                return i
        words = _words(wanted)
        same = [i for i, column in enumerate(self.columns) if words and _words(column.name) == words]
        if len(same) == 1:
            return same[0]
        # the only column whose name begins with these words ("2018" for "2018 $ (restated, Note 3)")
        begins = [i for i, c in enumerate(self.columns) if words and _words(c.name)[: len(words)] == words]
        if len(begins) == 1:
            return begins[0]
        match = re.fullmatch(r"column\s*(\d{1,3})", wanted)
        if match and 1 <= int(match.group(1)) <= len(self.columns):
            return int(match.group(1)) - 1
        return None


def _plain_name(name: str) -> str:
    return " ".join(name.strip().strip("\"'`[]").split()).lower()


def _words(name: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\w+", name.lower()))


@dataclass(slots=True)
class DataTable:
    """A table found in a document: its catalog entry, its typed rows, and the chunk each row's text is in."""

    info: TableInfo
    rows: list[list[Value]] = field(default_factory=list)
    row_chunks: list[str] = field(default_factory=list)


def column_names(header: Sequence[str]) -> list[str]:
    """The header's cells as column names: an empty one is "column N", a repeated one gets " (2)"."""
    names: list[str] = []
    seen: set[str] = set()
    for i, cell in enumerate(header):
        name = " ".join(cell.split())[:200] or f"column {i + 1}"
        base, n = name, 2
        while name.lower() in seen:
            name, n = f"{base} ({n})", n + 1
        seen.add(name.lower())
        names.append(name)
    return names


def tables_in(doc_id: str, chunks: Sequence[tuple[str, str]]) -> list[DataTable]:
    """The tables in one document's chunks ``(chunk_id, text)``, in order: every Markdown table (a header line, a
    separator line, rows); a part whose caption says it continues ("(continued, rows a–b)", "(page 2, continued)")
    joins the table before it when their headers are the same; a chunk that begins with rows and no header goes on
    with a table that ran to the end of the chunk before (a table longer than a chunk, split between rows). The
    caption is the line right above the header, when it is not part of a table."""
    found: list[tuple[str, list[str], list[tuple[list[str], str]], list[str]]] = []  # caption, header, rows, chunks
    open_table = False  # the last table ran to the end of the chunk before: a chunk may go on with its rows

    def rows_from(lines: list[str], i: int, width: int, chunk_id: str) -> tuple[list[tuple[list[str], str]], int]:
        rows = []
        while i < len(lines) and lines[i].strip().startswith("|") and not SEPARATOR_LINE.match(lines[i].strip()):
            rows.append(((markdown_cells(lines[i]) + [""] * width)[:width], chunk_id))
            i += 1
        return rows, i

    for chunk_id, text in chunks:
        lines = text.split("\n")
        i = 0
        # a table longer than a chunk, split between rows (a Markdown file's own): its rows go on here, headerless
        first = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
        is_header = first + 1 < len(lines) and SEPARATOR_LINE.match(lines[first + 1].strip())
        if open_table and first < len(lines) and lines[first].strip().startswith("|") and not is_header:
            rows, i = rows_from(lines, first, len(found[-1][1]), chunk_id)
            found[-1][2].extend(rows)
            found[-1][3].append(chunk_id)
            open_table = not any(line.strip() for line in lines[i:])
        else:
            open_table = False
        fenced = False
        while i + 1 < len(lines):
            line = lines[i].strip()
            if line.startswith(("```", "~~~")):
                fenced = not fenced
            if fenced or not (line.startswith("|") and SEPARATOR_LINE.match(lines[i + 1].strip())):
                i += 1
                continue
            header = markdown_cells(line)[:MAX_COLUMNS]
            caption = lines[i - 1].strip() if i > 0 and not lines[i - 1].strip().startswith("|") else ""
            rows, i = rows_from(lines, i + 2, len(header), chunk_id)
            open_table = not any(line.strip() for line in lines[i:])
            continued = _CONTINUED.search(caption)
            if continued and found and found[-1][1] == header:
                found[-1][2].extend(rows)
                if chunk_id not in found[-1][3]:
                    found[-1][3].append(chunk_id)
                continue
            found.append((caption, header, rows, [chunk_id]))
    found = [table for table in found if table[2]]  # a header without rows holds no data
    tables = []
    for number, (caption, text_header, text_rows, chunk_ids) in enumerate(found, start=1):
        header, rows = _header_rows_folded(text_header, text_rows)
        kinds = [column_kind([cells[c] for cells, _ in rows]) for c in range(len(header))]
        columns = [Column(name, kind) for name, kind in zip(column_names(header), kinds, strict=True)]
        info = TableInfo(f"{doc_id}#t{number}", doc_id, number, caption[:500], columns, len(rows), chunk_ids)
        typed = [[typed_value(cell, kind) for cell, kind in zip(cells, kinds, strict=True)] for cells, _ in rows]
        tables.append(DataTable(info, typed, [chunk for _, chunk in rows]))
    return tables


MAX_FOLDED_ROWS = 3


def _header_rows_folded(
    header: list[str], rows: list[tuple[list[str], str]]
) -> tuple[list[str], list[tuple[list[str], str]]]:
    """A report's table often goes on heading its columns in its first rows ("(in thousands) | $ | $",
    "Revenue by country | $M | $M", "| | (restated)"): up to three first rows whose cells after the first are each
    empty, a unit ("$", "$M", "%", "in millions") or a remark in parentheses, above a row with a number, are part of
    the header — each column's name gets their text — so the columns under them read as numbers. (A row of data is
    never folded: its cells are values.)"""

    def has_number(cells: list[str]) -> bool:
        return any(parse_number(cell) is not None for cell in cells[1:])

    folded = 0
    while folded < min(MAX_FOLDED_ROWS, len(rows) - 1) and _heading_row(rows[folded][0]):
        folded += 1
    if not folded or not has_number(rows[folded][0]):
        return header, rows
    names = [
        " ".join(part for part in [header[c], *(cells[c] for cells, _ in rows[:folded])] if part.strip())
        for c in range(len(header))
    ]
    return names, rows[folded:]


def _heading_row(cells: list[str]) -> bool:
    """A row that heads columns: after its first cell only units, remarks and empty cells, and either a unit among
    them or nothing but a remark in its first cell ("Ann | (unknown)" is a row of data)."""
    first = cells[0].strip() if cells else ""
    rest = cells[1:]
    if not all(_heading_cell(cell) for cell in rest):
        return False
    return any(_UNIT.match(cell.strip()) for cell in rest) or not first or _heading_cell(first)


_UNIT = re.compile(
    r"^(?:(?:us|a|c)?[$€£¥]\s?(?:'?000s?|m|mn|bn|k|millions?|thousands?|billions?)?|%|(?:in )?(?:'?000s?|m|mn|bn|"
    r"millions?|thousands?|billions?)(?: of [a-z ]+)?)$",
    re.I,
)


def _heading_cell(cell: str) -> bool:
    """An empty cell, a unit ("$", "$M", "£'000", "%", "in millions") or a remark in parentheses: a column's heading,
    never a value."""
    text = cell.strip()
    remark = text.startswith("(") and text.endswith(")") and parse_number(text) is None
    return not text or remark or bool(_UNIT.match(text))


def lowered(value: Value) -> str | None:
    """What text compares by: Python's lower case (the same in both stores, whatever their collation)."""
    return value.lower() if isinstance(value, str) else None


# ---------------------------------------------------------------------------------------------------- queries
Operator = Literal["=", "!=", ">", ">=", "<", "<=", "contains"]
OPERATORS: tuple[Operator, ...] = ("!=", ">=", "<=", "=", ">", "<", "contains")  # longest first, for parsing
AGGREGATES = ("count", "sum", "avg", "min", "max")


class TableQueryError(ARagError, ValueError):
    """A query the table cannot answer as asked (or an unknown table id); the message says what to change."""


@dataclass(frozen=True, slots=True)
class Condition:
    column: int
    operator: Operator
    value: float | str


@dataclass(frozen=True, slots=True)
class Aggregate:
    function: str  # one of AGGREGATES
    column: int | None  # None: count(*)

    def label(self, info: TableInfo) -> str:
        return f"{self.function}({'*' if self.column is None else info.columns[self.column].name})"


@dataclass(frozen=True, slots=True)
class Computed:
    """A computed column: number columns in [brackets], numbers, + - * / and parentheses ("[2019] - [2018]").
    ``tree`` is ("num", value) | ("col", index) | ("neg", tree) | (operator, left, right); a division by zero, or an
    empty cell, gives an empty value."""

    label: str
    tree: tuple[Any, ...]


MAX_EXPRESSION_TOKENS = 60
_TOKEN = re.compile(r"\s*(?:(\[[^\]]*\])|(\d+(?:\.\d+)?(?:[eE][+-]?\d{1,3})?)|([-+*/()]))")


def parse_computed(info: TableInfo, text: str) -> Computed:
    """A computed column as written, checked against the table's number columns."""
    tokens: list[tuple[str, str]] = []
    position, stripped = 0, text.strip()
    while position < len(stripped):
        match = _TOKEN.match(stripped, position)
        if not match or match.end() == position:
            raise TableQueryError(
                f"computed column {stripped[:80]!r}: write number columns in [brackets] with numbers, + - * / and "
                'parentheses, e.g. "([2019] - [2018]) / [2018] * 100"'
            )
        column, number, operator = match.groups()
        tokens.append(("col", column[1:-1]) if column else ("num", number) if number else ("op", operator))
        position = match.end()
    if len(tokens) > MAX_EXPRESSION_TOKENS:
        raise TableQueryError(f"computed column {stripped[:80]!r} is longer than {MAX_EXPRESSION_TOKENS} terms")
    at = 0

    def peek() -> tuple[str, str] | None:
        return tokens[at] if at < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal at
        if at >= len(tokens):
            raise TableQueryError(f"computed column {stripped[:80]!r} ends too early")
        at += 1
        return tokens[at - 1]

    def expression(depth: int) -> tuple[Any, ...]:
        if depth > 20:
            raise TableQueryError(f"computed column {stripped[:80]!r} is nested too deeply")
        tree = term(depth)
        while (token := peek()) is not None and token in (("op", "+"), ("op", "-")):
            take()
            tree = (token[1], tree, term(depth))
        return tree

    def term(depth: int) -> tuple[Any, ...]:
        tree = factor(depth)
        while (token := peek()) is not None and token in (("op", "*"), ("op", "/")):
            take()
            tree = (token[1], tree, factor(depth))
        return tree

    def factor(depth: int) -> tuple[Any, ...]:
        kind, value = take()
        if (kind, value) == ("op", "-"):
            return ("neg", factor(depth + 1))
        if (kind, value) == ("op", "("):
            tree = expression(depth + 1)
            if take() != ("op", ")"):
                raise TableQueryError(f"computed column {stripped[:80]!r}: a parenthesis is not closed")
            return tree
        if kind == "num":
            return ("num", float(value))
        if kind == "col":
            index = info.column_index(value)
            if index is None:
                names = ", ".join(c.name for c in info.columns)
                raise TableQueryError(
                    f"computed column: no column [{value[:60]}] in {info.table_id}; its columns: {names}"
                )
            if info.columns[index].kind != "number":
                raise TableQueryError(f"computed column: {info.columns[index].name} is a text column")
            return ("col", index)
        raise TableQueryError(f"computed column {stripped[:80]!r}: {value!r} is out of place")

    tree = expression(0)
    if at != len(tokens):
        raise TableQueryError(f"computed column {stripped[:80]!r}: {tokens[at][1]!r} is out of place")
    if not _has_column(tree):
        raise TableQueryError(f"computed column {stripped[:80]!r} names no column in [brackets]")
    return Computed(" ".join(stripped.split()), tree)


def _has_column(tree: tuple[Any, ...]) -> bool:
    return tree[0] == "col" or any(isinstance(part, tuple) and _has_column(part) for part in tree[1:])


def computed_value(tree: tuple[Any, ...], row: Sequence[Value]) -> float | None:
    """The computed column's value in one row (Python's definition of what the stores' SQL computes)."""
    kind = tree[0]
    if kind == "num":
        return float(tree[1])
    if kind == "col":
        value = row[tree[1]]
        return float(value) if isinstance(value, (int, float)) else None
    if kind == "neg":
        inner = computed_value(tree[1], row)
        return None if inner is None else -inner
    left, right = computed_value(tree[1], row), computed_value(tree[2], row)
    if left is None or right is None:
        return None
    if kind == "/":
        return None if right == 0 else left / right
    result = left + right if kind == "+" else left - right if kind == "-" else left * right
    return result if math.isfinite(result) else None


@dataclass(frozen=True, slots=True)
class TableQuery:
    """A checked query over one table: what to show (``columns``: a column's position or a computed column; or the
    groups and aggregates), which rows (``conditions``, all must hold), the order (``order``: ("column", i),
    ("aggregate", i) or ("computed", i): the ith of ``columns``) and how many."""

    columns: tuple[int | Computed, ...]
    conditions: tuple[Condition, ...] = ()
    group_by: tuple[int, ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    order: tuple[str, int] | None = None
    descending: bool = False
    limit: int = 20

    @property
    def grouped(self) -> bool:
        return bool(self.aggregates or self.group_by)


@dataclass(slots=True)
class TableAnswer:
    """A query's result: the columns shown, the rows (at most the limit), how many rows the query gives in all,
    and the chunks the rows it read are in (for citations)."""

    header: list[str]
    rows: list[list[Value]]
    total: int
    chunk_ids: list[str]


def plan_query(
    info: TableInfo,
    columns: Sequence[str] = (),
    filters: Sequence[str] = (),
    group_by: Sequence[str] = (),
    aggregates: Sequence[str] = (),
    order_by: str = "",
    descending: bool = False,
    limit: int = 20,
) -> TableQuery:
    """The query as the model or a user writes it, checked against the table: column names, filters written
    "column operator value", aggregates written "sum(column)". Raises :class:`TableQueryError` saying what to fix."""
    names = ", ".join(c.name for c in info.columns)

    def column(name: str, role: str) -> int:
        index = info.column_index(str(name))
        if index is None:
            raise TableQueryError(f"{role}: no column {str(name)[:80]!r} in {info.table_id}; its columns: {names}")
        return index

    if len(filters) > MAX_CONDITIONS:
        raise TableQueryError(f"at most {MAX_CONDITIONS} filters")
    conditions = tuple(_condition(info, str(text), names) for text in filters)
    groups = tuple(dict.fromkeys(column(name, "group_by") for name in group_by))
    aggregate_list = tuple(dict.fromkeys(_aggregate(info, str(text), column) for text in aggregates))
    if len(aggregate_list) > 8:
        raise TableQueryError("at most 8 aggregates")
    shown: tuple[int | Computed, ...] = tuple(
        dict.fromkeys(parse_computed(info, name) if "[" in name else column(name, "columns") for name in columns)
    )
    if groups or aggregate_list:
        if any(isinstance(c, Computed) for c in shown):
            raise TableQueryError("computed columns are for queries without group_by and aggregates")
        outside = [info.columns[c].name for c in shown if isinstance(c, int) and c not in groups]
        if outside:
            raise TableQueryError(
                f"columns {outside} are neither grouped nor aggregated: add them to group_by, or aggregate them "
                '(e.g. "sum(column)")'
            )
        shown = groups
    elif not shown:
        shown = tuple(range(len(info.columns)))
    order = _order(info, order_by, groups, aggregate_list, shown, column) if order_by.strip() else None
    if not 1 <= limit <= MAX_RESULT_ROWS:
        raise TableQueryError(f"limit must be between 1 and {MAX_RESULT_ROWS} (got {limit})")
    return TableQuery(shown, conditions, groups, aggregate_list, order, bool(descending), limit)


_OPERATOR_IN_FILTER = re.compile(r"(!=|>=|<=|==|<>|=|>|<|\bcontains\b)", re.I)


def _condition(info: TableInfo, text: str, names: str) -> Condition:
    """A filter "column operator value": the first operator whose left side names a column (a name may hold
    spaces, punctuation and operator characters; TableInfo.column_index says what names a column)."""
    stripped = text.strip()
    for match in _OPERATOR_IN_FILTER.finditer(stripped):
        left = stripped[: match.start()].strip()
        index = info.column_index(left) if left else None
        if index is None:
            continue
        written = match.group(1).lower()
        operator: Operator = {"==": "=", "<>": "!="}.get(written, written)  # type: ignore[assignment]
        return _checked(info, index, operator, stripped[match.end() :].strip(), stripped)
    raise TableQueryError(
        f'filter {stripped[:80]!r} is not "column operator value" (operators: = != > >= < <= contains) over a '
        f"column of {info.table_id} ({names})"
    )


def _checked(info: TableInfo, index: int, operator: Operator, raw: str, text: str) -> Condition:
    column = info.columns[index]
    value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'" else raw
    if not value:
        raise TableQueryError(f"filter {text[:80]!r} has no value")
    if never_stored(value):
        raise TableQueryError(
            f"filter {text[:80]!r}: its value holds characters no document holds (NUL, a lone surrogate)"
        )
    if column.kind == "number":
        if operator == "contains":
            raise TableQueryError(f"{column.name} is a number column: compare it with = != > >= < <=")
        number = parse_number(value)
        if number is None:
            raise TableQueryError(f"{column.name} is a number column; {value[:40]!r} is not a number")
        return Condition(index, operator, number)
    if operator not in ("=", "!=", "contains"):
        raise TableQueryError(f"{column.name} is a text column: use =, != or contains")
    return Condition(index, operator, value.lower())


_AGGREGATE = re.compile(r"^\s*(\w+)\s*\(\s*(.*?)\s*\)\s*$", re.S)


def _aggregate(info: TableInfo, text: str, column: Any) -> Aggregate:
    match = _AGGREGATE.match(text)
    function = match.group(1).lower() if match else ""
    if function == "average":
        function = "avg"
    if not match or function not in AGGREGATES:
        raise TableQueryError(f"aggregate {text[:80]!r} is not one of count(*), sum(c), avg(c), min(c), max(c)")
    argument = match.group(2)
    if argument in ("*", ""):
        if function != "count":
            raise TableQueryError(f"{function}() needs a column, e.g. {function}(column)")
        return Aggregate("count", None)
    index = column(argument, "aggregates")
    if function != "count" and info.columns[index].kind != "number":
        raise TableQueryError(f"{info.columns[index].name} is a text column: {function}() needs a number column")
    return Aggregate(function, index)


def _order(
    info: TableInfo,
    order_by: str,
    groups: tuple[int, ...],
    aggregates: tuple[Aggregate, ...],
    shown: tuple[int | Computed, ...],
    column: Any,
) -> tuple[str, int]:
    wanted = "".join(order_by.split()).lower()
    for i, aggregate in enumerate(aggregates):
        if "".join(aggregate.label(info).split()).lower() == wanted:
            return ("aggregate", i)
    for i, item in enumerate(shown):
        if isinstance(item, Computed) and "".join(item.label.split()).lower() == wanted:
            return ("computed", i)
    index = column(order_by, "order_by")
    if (groups or aggregates) and index not in groups:
        raise TableQueryError("order_by: a grouped query is ordered by a group_by column or an aggregate")
    return ("column", index)


# ---------------------------------------------------------------------------------------------------- SQL
@dataclass(frozen=True)
class Dialect:
    """How a store names a cell and a parameter: SQLite's typed tables (``c0``, ``l0``: the lower-cased text) or
    PostgreSQL's rows (``cells->'c0'``)."""

    name: Literal["sqlite", "postgres"]

    @property
    def parameter(self) -> str:
        return "?" if self.name == "sqlite" else "%s"

    def value(self, column: int, kind: Kind) -> str:
        if self.name == "sqlite":
            return f"c{column}"
        return f"(cells->>'c{column}')::float8" if kind == "number" else f"(cells->>'c{column}')"

    def lower(self, column: int) -> str:
        return f"l{column}" if self.name == "sqlite" else f"(cells->>'l{column}')"

    def contains(self, column: int) -> str:
        found = "instr" if self.name == "sqlite" else "strpos"
        return f"{found}({self.lower(column)}, {self.parameter}) > 0"

    def sort_text(self, expression: str) -> str:
        # byte order of UTF-8 is code point order: SQLite's BINARY, PostgreSQL's "C"
        return expression if self.name == "sqlite" else f'{expression} COLLATE "C"'


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgres")


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    """A query's SQL: its rows (``select``: the row's chunk first in a plain query), how many rows it gives in all
    (``count``), the chunks of the rows it reads, in table order (``chunks``), and their shared ``parameters``
    (after the source's own)."""

    select: str
    count: str
    chunks: str
    parameters: list[Any]


def compile_query(query: TableQuery, info: TableInfo, dialect: Dialect, source: str) -> CompiledQuery:
    """The query as SQL over ``source`` (a FROM clause: SQLite's typed table, or PostgreSQL's rows of one table with
    a parameter of its own). Every column is named by its position, every value is a parameter."""
    p = dialect.parameter
    where, parameters = [], []
    for condition in query.conditions:
        kind = info.columns[condition.column].kind
        if condition.operator == "contains":
            where.append(dialect.contains(condition.column))
        elif kind == "number":
            where.append(f"{dialect.value(condition.column, kind)} {condition.operator} {p}")
        else:
            where.append(f"{dialect.lower(condition.column)} {condition.operator} {p}")
        parameters.append(condition.value)
    where_sql = f" WHERE {' AND '.join(where)}" if where else ""
    key, chunk = ("_row", "_chunk") if dialect.name == "sqlite" else ("row_no", "chunk_id")
    chunks = f"SELECT {chunk} FROM {source}{where_sql} GROUP BY {chunk} ORDER BY min({key})"

    def value(column: int) -> str:
        return dialect.value(column, info.columns[column].kind)

    def sort(column: int) -> str:
        expression = value(column)
        return dialect.sort_text(expression) if info.columns[column].kind == "text" else expression

    direction = "DESC" if query.descending else "ASC"
    if query.grouped:
        aggregates = [f"{a.function}({'*' if a.column is None else value(a.column)})" for a in query.aggregates]
        selected = [value(c) for c in query.group_by] + aggregates
        group_sql = f" GROUP BY {', '.join(value(c) for c in query.group_by)}" if query.group_by else ""
        order_terms = []
        if query.order is not None:
            kind_of, i = query.order
            term = aggregates[i] if kind_of == "aggregate" else sort(i)
            order_terms.append(f"{term} {direction} NULLS LAST")
        order_terms.append(f"min({key}) ASC")  # ties, and no order given: the group's first row in the table
        select = (
            f"SELECT {', '.join(selected)} FROM {source}{where_sql}{group_sql} ORDER BY {', '.join(order_terms)} "
            f"LIMIT {query.limit}"
        )
        # aggregates over every row give one row (the statement takes the same parameters as the others)
        count = f"SELECT 1 + 0 * count(*) FROM {source}{where_sql}"
        if query.group_by:
            count = f"SELECT count(*) FROM (SELECT 1 FROM {source}{where_sql}{group_sql}) AS g"
        return CompiledQuery(select, count, chunks, parameters)

    def item(shown: int | Computed) -> str:
        return value(shown) if isinstance(shown, int) else _computed_sql(shown.tree, info, dialect)

    order_terms = []
    if query.order is not None:
        kind_of, i = query.order
        term = item(query.columns[i]) if kind_of == "computed" else sort(i)
        order_terms.append(f"{term} {direction} NULLS LAST")
    order_terms.append(f"{key} ASC")
    shown = ", ".join([chunk, *(item(c) for c in query.columns)])
    select = f"SELECT {shown} FROM {source}{where_sql} ORDER BY {', '.join(order_terms)} LIMIT {query.limit}"
    return CompiledQuery(select, f"SELECT count(*) FROM {source}{where_sql}", chunks, parameters)


def _computed_sql(tree: tuple[Any, ...], info: TableInfo, dialect: Dialect) -> str:
    """A computed column as SQL: numbers written as literals of floats (digits only), a division by zero NULL."""
    kind = tree[0]
    if kind == "num":
        return repr(float(tree[1]))
    if kind == "col":
        return dialect.value(tree[1], "number")
    if kind == "neg":
        return f"(-{_computed_sql(tree[1], info, dialect)})"
    left, right = _computed_sql(tree[1], info, dialect), _computed_sql(tree[2], info, dialect)
    if kind == "/":
        return f"({left} / NULLIF({right}, 0))"
    return f"({left} {kind} {right})"


def answer_header(query: TableQuery, info: TableInfo) -> list[str]:
    if query.grouped:
        return [info.columns[c].name for c in query.group_by] + [a.label(info) for a in query.aggregates]
    return [info.columns[c].name if isinstance(c, int) else c.label for c in query.columns]


def evaluate(query: TableQuery, table: DataTable) -> TableAnswer:
    """The query evaluated in plain Python: the definition both stores' SQL is tested against."""
    info = table.info

    def holds(row: list[Value], condition: Condition) -> bool:
        cell = row[condition.column]
        if cell is None:
            return False
        if condition.operator == "contains":
            return str(condition.value) in str(lowered(cell))
        left: Any = lowered(cell) if isinstance(cell, str) else cell
        right: Any = condition.value
        return {
            "=": left == right,
            "!=": left != right,
            ">": left > right,
            ">=": left >= right,
            "<": left < right,
            "<=": left <= right,
        }[condition.operator]

    matching = [(i, row) for i, row in enumerate(table.rows) if all(holds(row, c) for c in query.conditions)]

    def ordered(items: list[Any], key_of: Any) -> list[Any]:
        present = [item for item in items if key_of(item) is not None]
        absent = [item for item in items if key_of(item) is None]
        present.sort(key=key_of, reverse=query.descending)  # stable: ties keep table order
        return present + absent

    def shown(row: list[Value], item: int | Computed) -> Value:
        return row[item] if isinstance(item, int) else computed_value(item.tree, row)

    if not query.grouped:
        if query.order is not None:
            kind_of, column = query.order
            by: int | Computed = query.columns[column] if kind_of == "computed" else column
            matching = ordered(matching, lambda entry: shown(entry[1], by))
        rows = [[shown(row, c) for c in query.columns] for _, row in matching[: query.limit]]
        chunks = [table.row_chunks[i] for i, _ in matching[: query.limit]]
        return TableAnswer(answer_header(query, info), rows, len(matching), list(dict.fromkeys(chunks)))
    groups: dict[tuple[Value, ...], list[tuple[int, list[Value]]]] = {}
    for i, row in matching:
        groups.setdefault(tuple(row[c] for c in query.group_by), []).append((i, row))
    if not query.group_by and not groups:
        groups[()] = []
    results = []
    for key, members in groups.items():
        values = [_aggregate_value(a, [row for _, row in members]) for a in query.aggregates]
        first = members[0][0] if members else 0
        results.append((first, [*key, *values]))
    results.sort(key=lambda item: item[0])
    if query.order is not None:
        kind_of, i = query.order
        position = len(query.group_by) + i if kind_of == "aggregate" else query.group_by.index(i)
        results = ordered(results, lambda item: item[1][position])
    chunks = [table.row_chunks[i] for i, _ in matching]
    return TableAnswer(
        answer_header(query, info),
        [values for _, values in results[: query.limit]],
        len(results) if query.group_by else 1,
        list(dict.fromkeys(chunks)),
    )


def _aggregate_value(aggregate: Aggregate, rows: list[list[Value]]) -> Value:
    if aggregate.column is None:
        return len(rows)
    values = [row[aggregate.column] for row in rows if row[aggregate.column] is not None]
    if aggregate.function == "count":
        return len(values)
    if not values:
        return None
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return {
        "sum": lambda: math.fsum(numbers),
        "avg": lambda: math.fsum(numbers) / len(numbers),
        "min": lambda: min(numbers),
        "max": lambda: max(numbers),
    }[aggregate.function]()


def find_table(tables: list[TableInfo] | None, table_id: str) -> TableInfo:
    """The table of this id among ``tables`` (exactly, else ignoring case, else the one whose id ends with it after a
    folder: "sales.csv#t1" for "reports/sales.csv#t1"); :class:`TableQueryError` when there is none."""
    if tables is None:
        raise TableQueryError(NOT_BUILT)
    wanted = table_id.strip().strip("\"'`[]")
    for table in tables:
        if table.table_id == wanted:
            return table
    for table in tables:
        if table.table_id.lower() == wanted.lower():
            return table
    ending = [t for t in tables if t.table_id.lower().endswith("/" + wanted.lower())]
    if len(ending) == 1:
        return ending[0]
    raise TableQueryError(f"no table has the id {wanted[:120]!r} here; use ids from table_list")


NOT_BUILT = "This index was built before a-rag kept tables as data: re-index the sources with --rebuild to query them."
