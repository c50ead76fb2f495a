"""The compact profile's strings: its system prompt (``prompts/compact.md``), how its JSON actions are explained,
and what the model is told at the step limit. Each policy's own messages are in its module."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources

from arag.errors import ConfigError
from arag.harness.contract import Field
from arag.harness.grammar import THOUGHT

FINAL = (
    "Stop searching now. Give the final answer in a few words (a name, a date, a number, or yes/no), then the "
    "ids of the chunks it comes from, like: Paris [chunk Paris#0]. Do not describe the chunks. If the text "
    'above does not contain the answer, answer: Not in the documents. Never "nothing yet".'
)
# the free note of the worked example when no policy asks for a note of its own
THOUGHT_EXAMPLE = replace(
    THOUGHT, example="First find who wrote Hamlet.", later="Now find where William Shakespeare was born."
)


def packaged_prompt(name: str) -> str:
    """A prompt file of the harness (``prompts/NAME``)."""
    try:
        return resources.files("arag.harness").joinpath("prompts", name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"no packaged prompt {name!r}: {exc}") from None


def compact_format(search_tool: str, semantic: bool, flat: bool, fields: Sequence[Field]) -> str:
    """How the compact profile's JSON actions look, nested ({"action": …, "arguments": …}) or flat ({"<tool>":
    <argument>}), with a worked example whose first action carries what the policies' ``fields`` introduce (a
    plan) and whose every action carries the note (a policy's, else the free "thought")."""
    parameter, first, later = "keywords", '["Hamlet"]', '["William Shakespeare"]'
    if semantic:
        parameter, first, later = "query", '"who wrote Hamlet"', '"William Shakespeare birthplace"'
    note = next((f for f in fields if f.place == "note"), THOUGHT_EXAMPLE)
    shape = f'"{note.name}": "...", ' if note.on_calls else ""
    first_note = f'"{note.name}": {json.dumps(note.example)}, ' if note.on_calls else ""
    later_note = f'"{note.name}": {json.dumps(note.later)}, ' if note.on_calls else ""
    answer_note = f'"{note.name}": "...", ' if note.on_answer else ""
    if flat:
        first_call, later_call = f'"{search_tool}": {first}', f'"{search_tool}": {later}'
        shapes = (
            f'a tool call {{{shape}"<tool>": <its argument>}}, e.g. {{{shape}{first_call}}}, '
            f'or the answer {{{answer_note}"answer": "..."}}.'
        )
        reply = "Reply with one JSON object per turn: "
    else:
        first_call, later_call = (
            f'"action": "{search_tool}", "arguments": {{"{parameter}": {argument}}}' for argument in (first, later)
        )
        shapes = (
            f'either a tool call {{{shape}"action": "<tool>", "arguments": {{...}}}} or the answer '
            f'{{{answer_note}"action": "final_answer", "answer": "..."}}.'
        )
        reply = "Reply with one JSON object per turn, "
    text = f"\n\n{reply}{shapes}{note.explain}"
    example = 'Example for the question "Where was the author of Hamlet born?": '
    introduced = [f for f in fields if f.intro]
    trailers = "".join(f.trailer for f in fields)
    if introduced:
        text += "\n" + " ".join(f.intro for f in introduced) + " " + example
        firsts = "".join(f'"{f.name}": {json.dumps(f.example)}, ' for f in introduced)
        text += f"{{{firsts}{first_note}{first_call}}}. "
        return text + f"Later: {{{later_note}{later_call}}}" + trailers
    return text + f"\n{example}{{{first_note}{first_call}}}. Later: {{{later_note}{later_call}}}" + trailers
