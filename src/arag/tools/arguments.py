"""Tool arguments as the model sends them: parsed and bounded (a bad argument becomes a message for the model, never
an exception), and the JSON schema the model is shown, derived from a tool's signature and docstring."""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import ValidationError, create_model

from arag.jsonsafe import clean_json_value, json_depth, loads_bounded

MAX_ARGUMENT_CHARS = 500
MAX_QUERY_CHARS = 2000
MAX_ARGUMENTS_JSON = 100_000  # a tool call's arguments as JSON text; real ones are a few hundred characters
MAX_JSON_DEPTH = 20


class ToolArgumentError(Exception):
    """A tool argument the model got wrong; its message is shown to the model."""


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """The model's arguments as a dict of clean values, or :class:`ToolArgumentError` saying what to fix.

    Accepts a JSON object or its text. Bounds what the model can send: text length, nesting depth, integer
    size (json refuses integers of more than 4,300 digits), and lone UTF-16 surrogates (which no encoder,
    database or tokenizer accepts) are replaced with U+FFFD."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (bytes, bytearray)):
        arguments = bytes(arguments).decode("utf-8", "replace")
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENTS_JSON:
            raise ToolArgumentError(f"arguments are longer than {MAX_ARGUMENTS_JSON} characters; send short values")
        try:
            arguments = loads_bounded(arguments)
        except RecursionError:
            raise ToolArgumentError("arguments are nested too deeply; send a flat JSON object") from None
        except ValueError as exc:  # JSONDecodeError, and integers too long to convert
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0]
            raise ToolArgumentError(f"arguments are not valid JSON ({detail}); send a JSON object") from None
    if not isinstance(arguments, dict):
        raise ToolArgumentError(
            f"arguments must be a JSON object with named parameters, not {_json_type(arguments)}; "
            'e.g. {"keywords": ["Lothair II"]}'
        )
    if json_depth(arguments, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ToolArgumentError("arguments are nested too deeply; send a flat JSON object")
    cleaned = clean_json_value(arguments)
    assert isinstance(cleaned, dict)
    return cleaned


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def validated_arguments_for_record(validated: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the tool received them, bounded for the trajectory record."""
    return {
        key: value[:MAX_QUERY_CHARS] if isinstance(value, str) else value[:100] if isinstance(value, list) else value
        for key, value in validated.items()
    }


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(fn.__doc__ or "")
    description, _, args_block = doc.partition("\nArgs:\n")
    params: dict[str, str] = {}
    current = None
    for line in args_block.splitlines():
        match = re.match(r"^\s{0,8}(\w+):\s*(.*)$", line)
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return " ".join(description.split()), params


def _arguments_model(fn: Callable[..., Any]) -> Any:
    # one model per function, not per call: building a pydantic model costs about a millisecond
    return _cached_arguments_model(getattr(fn, "__func__", fn))


@functools.cache
def _cached_arguments_model(fn: Callable[..., Any]) -> Any:
    hints = get_type_hints(fn)
    _, docs = _docstring_parts(fn)
    from pydantic import Field

    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name == "self":
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], Field(default, description=docs.get(name)))
    return create_model(f"{fn.__name__}_arguments", __config__={"extra": "forbid"}, **fields)


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI function-tool schema of a typed function, from its signature and docstring."""
    return copy.deepcopy(_cached_tool_schema(getattr(fn, "__func__", fn)))


@functools.cache
def _cached_tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    description, _ = _docstring_parts(fn)
    schema = _arguments_model(fn).model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return {"type": "function", "function": {"name": fn.__name__, "description": description, "parameters": schema}}


@functools.cache
def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    return get_type_hints(fn)


def validate_arguments(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    hints = _type_hints(getattr(fn, "__func__", fn))
    # Models often pass a single string where a list is expected; accept it rather than fail the step.
    fixed = {
        key: [value] if isinstance(value, str) and hints.get(key) in (list[str], list[str] | None) else value
        for key, value in args.items()
    }
    try:
        model = _arguments_model(fn).model_validate(fixed)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ToolArgumentError(f"invalid arguments for {fn.__name__}: {problems}") from None
    return {name: getattr(model, name) for name in type(model).model_fields}


def safe_arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as a dict; ones the tools would refuse as their raw text (for keys and records)."""
    try:
        return parse_arguments(arguments)
    except Exception:
        return {"_raw": str(arguments)}
