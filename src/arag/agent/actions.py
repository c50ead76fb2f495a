"""How the model acts: native tool calls, or constrained JSON actions (nested or flat). One :class:`ActionFormat`
turns a :class:`~arag.harness.NextAction` (what the next action may be) into the request, and the reply into an
:class:`Action`."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from arag.harness.contract import NextAction
from arag.harness.grammar import THOUGHT, action_schema
from arag.jsonsafe import as_text
from arag.models.endpoint import ChatTurn
from arag.tools.toolkit import ToolCall, Toolkit

NOTE = THOUGHT.name  # the free-text field of a JSON action (a policy may ask for a note of its own instead)
_JSON_CANDIDATES = 4  # tagged or fenced blocks tried per reply: enough for real replies, linear for hostile ones


@dataclass
class Action:
    """One parsed model reply: tool calls, or an answer ("" when it gave neither)."""

    calls: list[ToolCall] = field(default_factory=list)
    answer: str = ""
    note: str = ""  # the free "thought" (or the note a policy asked for)
    fields: dict[str, Any] = field(default_factory=dict)  # the fields the harness asked for, as the model wrote them


class ActionFormat:
    """Native tool calls (the paper's): the endpoint's own function calling. ``notes`` and ``fields`` are the keys
    a JSON action may carry besides its tool or answer (the harness's)."""

    label = "native"
    json = False
    flat = False

    def __init__(self, notes: Collection[str] = (NOTE,), fields: Collection[str] = ()) -> None:
        self.notes, self.fields = tuple(notes), tuple(fields)

    def request(self, action: NextAction, toolkit: Toolkit, parallel: bool) -> dict[str, Any]:
        if action.final:
            return {}
        offered = {toolkit.names[t] for t in action.tools}
        tools = [s for s in toolkit.schemas() if s["function"]["name"] in offered]
        return {"tools": tools, "parallel_tool_calls": parallel}

    def parse(self, turn: ChatTurn, toolkit: Toolkit) -> Action:
        if turn.tool_calls:
            calls = [ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"]) for c in turn.tool_calls]
            return Action(calls, "", turn.content)
        return parse_text_action(turn.content, toolkit, self.notes, self.fields)


class JsonActions(ActionFormat):
    """Constrained JSON actions, {"action": "<tool>", "arguments": {…}} or {"action": "final_answer", "answer": …}:
    for models that print tool calls unreliably (the embedded one)."""

    label = "json"
    json = True

    def request(self, action: NextAction, toolkit: Toolkit, parallel: bool) -> dict[str, Any]:
        return {"response_format": action_schema(None if action.final else toolkit, action, self.flat)}


class FlatJsonActions(JsonActions):
    """JSON actions without the frame: {"keyword_search": ["X"]}, {"answer": …} (~9 generated tokens fewer per
    action, each ~0.1 s on 2 cores)."""

    label = "flat json"
    flat = True


def action_format(mode: str, notes: Collection[str] = (NOTE,), fields: Collection[str] = ()) -> ActionFormat:
    return {"native": ActionFormat, "json": JsonActions, "flat-json": FlatJsonActions}[mode](notes, fields)


def parse_text_action(
    content: str, toolkit: Toolkit, notes: Collection[str] = (NOTE,), fields: Collection[str] = ()
) -> Action:
    """An action written as text: a JSON action (nested or flat; whole, tagged or fenced), an answer cut off by the
    token limit, or else the text itself as the answer. ``notes``: the keys its free note may have, in order of
    preference; ``fields``: the other keys it may carry besides its tool or answer."""
    data = json_object(content)
    if isinstance(data, dict):
        name = data.get("action") or data.get("name") or data.get("tool")
        note = as_text(next((data[key] for key in notes if key in data), ""))
        extra = {key: data[key] for key in fields if key in data}
        arguments = data.get("arguments", data.get("parameters", data.get("action_input", {})))
        if not name:
            name, arguments = _flat_action(data, toolkit, {*notes, *fields})
        if name == "final_answer":
            answer = data.get("answer")
            if answer is None and isinstance(arguments, dict):
                answer = arguments.get("answer")
            return Action([], as_text(answer), note, extra)
        if isinstance(name, str) and name:
            return Action([ToolCall(name, arguments)], "", note, extra)
    truncated = _cut_off_answer(content)
    if truncated is not None:
        return Action([], truncated)
    return Action([], content.strip())


def _flat_action(data: dict[str, Any], toolkit: Toolkit, not_tools: Collection[str]) -> tuple[str, Any]:
    """(tool or "final_answer", arguments) of a flat action: {"keyword_search": ["X"]}, {"keyword_search":
    {"keywords": ["X"]}}, {"answer": "…"}; ("", {}) when no key names one (``not_tools``: keys that never do)."""
    for key, value in data.items():
        if key in ("answer", "final_answer"):
            return "final_answer", {"answer": value}
        if key in not_tools or toolkit.canonical(key) not in toolkit.enabled:
            continue
        if isinstance(value, dict):
            return key, value
        tool = toolkit.canonical(key)
        schema = next((s for s in toolkit.schemas() if toolkit.canonical(s["function"]["name"]) == tool), None)
        required = schema["function"]["parameters"].get("required", []) if schema else []
        return key, {required[0]: value} if required else value
    return "", {}


_CUT_OFF_ANSWER = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)


def _cut_off_answer(text: str) -> str | None:
    """The answer of an answer action (flat {"answer": …} or nested final_answer) cut off by the token limit (no
    closing quote or brace): its text so far, instead of the raw JSON becoming the answer."""
    match = _CUT_OFF_ANSWER.search(text)
    if match is None:
        return None
    raw = match.group(1)
    raw = raw[:-1] if raw.endswith("\\") and not raw.endswith("\\\\") else raw  # a cut escape
    try:
        return str(json.loads(f'"{raw}"')).strip() + " …"
    except ValueError:
        return raw.strip() + " …"


def json_object(text: str) -> Any:
    """A JSON object in model text: whole, in <tool_call> tags or ``` fences (models that print calls as
    text), or from the first "{" to the last "}". Linear in the text: at most a few candidates are parsed."""
    text = text.strip()
    for candidate in _json_candidates(text):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return None


def _json_candidates(text: str) -> Iterator[str]:
    yield text
    for opening, closing in (("<tool_call>", "</tool_call>"), ("```", "```")):
        start = 0
        for _ in range(_JSON_CANDIDATES):
            begin = text.find(opening, start)
            if begin < 0:
                break
            end = text.find(closing, begin + len(opening))
            if end < 0:
                break
            body = text[begin + len(opening) : end].strip()
            yield body[4:] if body.startswith("json") else body
            start = end + len(closing)
    brace = text.find("{")
    if brace >= 0:
        yield text[brace : text.rfind("}") + 1]
