"""The grammar of JSON actions: the response_format whose variants are the offered tools and the answer, shaped by
a :class:`~arag.harness.contract.NextAction` (llama.cpp turns it into a grammar the model's output must follow)."""

from __future__ import annotations

from typing import Any

from arag.harness.contract import Field, NextAction
from arag.tools.toolkit import Toolkit

# "Yes", "No, both are American [chunk …]": llama.cpp's grammar takes anchored patterns without \b
YES_NO_PATTERN = r"^(Yes|No)([,.;:]? [^\n]*)?$"
MAX_READ_IDS = 3  # ids one constrained read may name
# the free-text note of an action when no policy asks for a note of its own (the paper's JSON format)
THOUGHT = Field("thought", {"type": "string"}, place="note", on_calls=True, on_answer=True)


def yes_no_pattern(max_chars: int | None) -> str:
    return YES_NO_PATTERN if max_chars is None else rf"^(Yes|No)([,.;:]? [^\n]{{0,{max_chars}}})?$"


def action_schema(toolkit: Toolkit | None, action: NextAction, flat: bool = False) -> dict[str, Any]:
    """The response_format whose variants are the offered tools (none without ``toolkit``) plus final_answer."""
    fields = _with_note(action.fields)
    call_fields = {f.name: f.schema for f in fields if f.on_calls}
    answer_fields = {f.name: f.schema for f in fields if f.on_answer}
    variants = []
    for schema in toolkit.schemas() if toolkit else []:
        name, parameters = schema["function"]["name"], schema["function"]["parameters"]
        canonical = toolkit.canonical(name) if toolkit else name
        if canonical not in action.tools:
            continue
        if canonical == "chunk_read" and action.readable is not None:
            if not action.readable:
                continue  # everything shown was read: a search or the answer is the only progress
            # a read can only name these, so it cannot name a chunk that would show no new text
            items = {"type": "string", "enum": list(action.readable)}
            parameters = {
                "type": "object",
                "properties": {"chunk_ids": {"type": "array", "items": items, "minItems": 1, "maxItems": MAX_READ_IDS}},
                "required": ["chunk_ids"],
                "additionalProperties": False,
            }
        if flat:
            only = list(parameters["properties"].values())
            call: dict[str, Any] = {name: only[0] if len(only) == 1 else parameters}
        else:
            call = {"action": {"type": "string", "enum": [name]}, "arguments": parameters}
        variants.append(_object({**call_fields, **call}))
    if action.answer or action.final or not variants:
        final: dict[str, Any] = {} if flat else {"action": {"type": "string", "enum": ["final_answer"]}}
        variants.append(_object({**answer_fields, **final, "answer": _answer_schema(action)}))
    return {
        "type": "json_schema",
        "json_schema": {"name": "agent_action", "strict": True, "schema": {"anyOf": variants}},
    }


def _with_note(fields: tuple[Field, ...]) -> list[Field]:
    """The action's fields in the order the model writes them: those before the note, the note (a policy's, else
    the free "thought"), those after it."""
    if not any(f.place == "note" for f in fields):
        fields = (*fields, THOUGHT)
    place = {"first": 0, "note": 1, "last": 2}
    return sorted(fields, key=lambda f: place[f.place])


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _answer_schema(action: NextAction) -> dict[str, Any]:
    if action.options:
        return {"type": "string", "enum": list(action.options)}
    if action.yes_no:
        return {"type": "string", "pattern": yes_no_pattern(action.answer_chars)}
    return {"type": "string"} if action.answer_chars is None else {"type": "string", "maxLength": action.answer_chars}
