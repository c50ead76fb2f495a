"""Search filters on document metadata: which documents a search, a read or a whole question may use.

The syntax, one line (``arag search … --where``, the tools' ``where`` argument, the API's ``where`` field)::

    path=guidelines/*                        a glob on the document's path (* ? [..])
    type=pdf, year>=2020                     clauses joined by "," ";" or "and": all must hold
    title~"anal cancer"                      ~ : contains, case-insensitive
    author!=Smith                            != : the field is there and differs
    mtime>=2026-01-01 and mtime<2026-07-01   ranges: numbers compare as numbers, anything else as text
                                             (ISO dates and times compare correctly as text)

Fields are the metadata every document records (``path``, ``type``, ``title``, ``mtime``) and what its file says
about itself (Markdown front matter, HTML ``<meta>``, PDF info, a JSON Lines record's other fields); names are
case-insensitive. ``=`` and ``!=`` compare text exactly (a value with * ? or [ is a glob), numbers numerically,
``true``/``false`` with booleans. A field that holds a list matches when any of its items does (``!=``: when none
equals). A document without the field matches no clause on it, ``!=`` included; one indexed before a-rag recorded
metadata matches no filter.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from arag.errors import InputError

MAX_FILTER_CHARS = 1000
MAX_CLAUSES = 20
OPERATORS = ("!=", ">=", "<=", "=", ">", "<", "~")
SYNTAX = "field=value, field!=value, field>=value, field<value, field~text; a glob in =: path=guides/*"

_NAME = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*")
_SEPARATOR = re.compile(r"\s*(?:,|;|\band\b)\s*", re.I)
_GLOB = re.compile(r"[*?\[]")


class FilterError(InputError):
    """A filter that cannot be parsed; the message says where and shows the syntax."""


@dataclass(frozen=True)
class Clause:
    field: str
    op: str
    value: str

    def holds(self, metadata: dict[str, Any]) -> bool:
        if self.field not in metadata:
            return False
        present = metadata[self.field]
        items = present if isinstance(present, list) else [present]
        if self.op == "!=":
            return not any(_equal(item, self.value) for item in items)
        return any(_compare(item, self.op, self.value) for item in items)

    def __str__(self) -> str:
        plain = (
            self.value
            and not re.search(r"[\s,;\"]", self.value)
            and self.value.lower() != "and"
            and self.value[0] not in "=<>!~"
        )
        value = self.value if plain else '"' + self.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return f"{self.field}{self.op}{value}"


@dataclass(frozen=True)
class Filter:
    """All of its clauses must hold."""

    clauses: tuple[Clause, ...]

    def matches(self, metadata: dict[str, Any] | None) -> bool:
        """Whether a document with this metadata passes (None: no metadata recorded, so it does not)."""
        return metadata is not None and all(clause.holds(metadata) for clause in self.clauses)

    def also(self, other: Filter | None) -> Filter:
        """This filter and ``other`` both."""
        return self if other is None else Filter(self.clauses + other.clauses)

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(clause.field for clause in self.clauses))

    def __str__(self) -> str:
        return ", ".join(map(str, self.clauses))


def parse_filter(text: str | None) -> Filter | None:
    """The filter ``text`` says (None for an empty one); :class:`FilterError` if it cannot be read."""
    if text is None or not text.strip():
        return None
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"the filter is longer than {MAX_FILTER_CHARS} characters")
    clauses: list[Clause] = []
    position = 0
    while True:
        name = _NAME.match(text, position)
        if name is None:
            raise _error(text, position, "a field name")
        position = name.end()
        op = next((o for o in OPERATORS if text.startswith(o, position)), None)
        if op is None:
            raise _error(text, position, f"an operator ({' '.join(OPERATORS)}) after {name.group(1)!r}")
        value, position = _value(text, position + len(op))
        clauses.append(Clause(name.group(1).lower(), op, value))
        if len(clauses) > MAX_CLAUSES:
            raise FilterError(f"the filter has more than {MAX_CLAUSES} clauses")
        if position >= len(text.rstrip()):
            return Filter(tuple(clauses))
        separator = _SEPARATOR.match(text, position)
        if separator is None or separator.end() == position:
            raise _error(text, position, 'a separator ("," ";" or "and") between clauses')
        position = separator.end()


def _value(text: str, position: int) -> tuple[str, int]:
    """A clause's value (quoted, with \\" and \\\\ escapes, or bare up to the next separator) and where it ends."""
    while position < len(text) and text[position] in " \t":
        position += 1
    if position < len(text) and text[position] == '"':
        out, i = [], position + 1
        while i < len(text):
            char = text[i]
            if char == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
            elif char == '"':
                return "".join(out), i + 1
            else:
                out.append(char)
                i += 1
        raise _error(text, position, 'a closing " for the quoted value')
    separator = _SEPARATOR.search(text, position)
    end = separator.start() if separator else len(text)
    value = text[position:end].strip()
    if not value or value[0] in "=<>!~":  # "year >> 2020": a doubled operator, not a value starting with one
        raise _error(text, position, "a value (quote one that starts with = < > ! ~)")
    return value, end


def _error(text: str, position: int, wanted: str) -> FilterError:
    shown = text[position : position + 30] or "the end"
    return FilterError(f"cannot read the filter {text!r}: expected {wanted} at {shown!r} (syntax: {SYNTAX})")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value) if re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", value) else None
    except (TypeError, ValueError):
        return None


def _equal(item: Any, value: str) -> bool:
    if isinstance(item, bool):
        return value.lower() in ("true", "false") and item == (value.lower() == "true")
    if isinstance(item, int | float):
        number = _number(value)
        return number is not None and float(item) == number
    return fnmatch.fnmatchcase(str(item), value) if _GLOB.search(value) else str(item) == value


def _compare(item: Any, op: str, value: str) -> bool:
    if op == "=":
        return _equal(item, value)
    if op == "~":
        return value.lower() in str(item).lower()
    if isinstance(item, bool):
        return False
    left, right = (float(item), _number(value)) if isinstance(item, int | float) else (None, None)
    if left is None or right is None:
        if isinstance(item, int | float):
            return False  # a number against text that is no number: no order between them
        text = str(item)
        return {">": text > value, ">=": text >= value, "<": text < value, "<=": text <= value}[op]
    return {">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[op]
