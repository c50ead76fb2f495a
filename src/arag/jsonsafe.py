"""JSON from a model or a client, bounded: integers of at most 18 digits, no lone UTF-16 surrogates, a limit on
nesting. Tool arguments, model replies and MCP messages all pass through here."""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_json_value(value: Any) -> Any:
    """``value`` with lone UTF-16 surrogates replaced by U+FFFD and integers bounded to 18 digits: no encoder,
    database or tokenizer accepts the former, and an integer of thousands of digits cannot even be printed."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {clean_json_value(str(key)): clean_json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json_value(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-(10**18), min(10**18, value))
    return value


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` with integers bounded to 18 digits (json refuses, or spends quadratic time on, integers of
    thousands of digits; no field a-rag reads needs more)."""
    return json.loads(text, parse_int=_bounded_int)


def _bounded_int(digits: str) -> int:
    magnitude = digits.lstrip("-")
    if len(magnitude) > 18:
        return -(10**18) if digits.startswith("-") else 10**18
    return int(digits)


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted iteratively and no further than ``limit + 1``."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def as_text(value: Any) -> str:
    """A JSON value a model wrote where text belongs: the text itself, else its JSON ("" for null or a value that
    cannot be written)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return ""
