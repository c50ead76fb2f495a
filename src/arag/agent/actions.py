"""How the model acts: native tool calls, or constrained JSON actions (nested or flat). One :class:`ActionFormat`
turns an :class:`ActionSpec` (what the next action may be) into the request, and the reply into an
:class:`Action`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from arag.models.endpoint import ChatTurn
from arag.tools.toolkit import Toolkit

# "Yes", "No, both are American [chunk …]": llama.cpp's grammar takes anchored patterns without \b
YES_NO_PATTERN = r"^(Yes|No)([,.;:]? [^\n]*)?$"
FOUND_SCHEMA = {"type": "string", "minLength": 3, "maxLength": 200}  # one fact; every token costs ~0.1 s on 2 cores
PLAN_SCHEMA = {
    "type": "array",
    "items": {"type": "string"},
    "minItems": 1,
    "maxItems": 3,
    "description": "The searches needed, in order: one per fact to find (a multi-hop question needs two or three).",
}
# a JSON action's confidence, in tenths: a closed set the grammar enforces and a small model writes in 1-3 tokens
CONFIDENCE_SCHEMA: dict[str, Any] = {"type": "number", "enum": [round(0.1 * tenth, 1) for tenth in range(11)]}
NOT_ACTIONS = ("plan", "found", "thought", "confidence")  # keys of a flat action that name no tool
_JSON_CANDIDATES = 4  # tagged or fenced blocks tried per reply: enough for real replies, linear for hostile ones


def yes_no_pattern(max_chars: int | None) -> str:
    return YES_NO_PATTERN if max_chars is None else rf"^(Yes|No)([,.;:]? [^\n]{{0,{max_chars}}})?$"


@dataclass
class ToolCall:
    name: str
    arguments: Any
    call_id: str | None = None  # a native tool call's id, which its result must answer
    header: str | None = None  # a policy that changed the call says so in its result's first words


@dataclass
class Action:
    """One parsed model reply: tool calls, or an answer ("" when it gave neither)."""

    calls: list[ToolCall] = field(default_factory=list)
    answer: str = ""
    note: str = ""  # the free "thought" / "found" text
    plan: list[str] = field(default_factory=list)
    confidence: float | None = None  # a JSON action's "confidence" field (0-1), where the spec asked for one

    def stated_confidence(self) -> float | None:
        """How sure the model said it is: the JSON field where the action has one, else what its text states."""
        return self.confidence if self.confidence is not None else confidence_in_text(self.note)


@dataclass
class ActionSpec:
    """What the model's next action may be. The loop offers every enabled tool and the answer; policies narrow
    it before each model call. JSON actions enforce all of it by constrained decoding; native tool calls can only
    leave tools out."""

    tools: list[str]  # canonical names of the tools it may call
    constrained: bool = False  # the model acts in JSON under a grammar: the whole spec is enforced
    answer: bool = True  # it may give the final answer
    final: bool = False  # the forced final answer: no tools
    plan: bool = False  # the action starts with a plan of searches
    plan_on_answer: bool = False  # an answer given as the first action starts with the plan too
    note: str = "thought"  # the free-text field of a JSON action ("found" makes it a required, bounded note)
    note_on_calls: bool = True  # False: only the answer carries the note
    note_on_answer: bool = True  # False: only tool calls carry the note
    readable: list[str] | None = None  # chunk_read may only name these (None: any id; empty: no read)
    options: list[str] = field(default_factory=list)  # the answer is one of these
    yes_no: bool = False  # the answer starts with Yes or No
    answer_chars: int | None = None  # the longest answer
    confidence: bool = False  # a tool call states how sure the model is that what it read answers the question


class ActionFormat:
    """Native tool calls (the paper's): the endpoint's own function calling."""

    label = "native"
    json = False

    def request(self, spec: ActionSpec, toolkit: Toolkit, parallel: bool) -> dict[str, Any]:
        if spec.final:
            return {}
        offered = {toolkit.names[t] for t in spec.tools}
        tools = [s for s in toolkit.schemas() if s["function"]["name"] in offered]
        return {"tools": tools, "parallel_tool_calls": parallel}

    def parse(self, turn: ChatTurn, toolkit: Toolkit) -> Action:
        if turn.tool_calls:
            calls = [ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"]) for c in turn.tool_calls]
            return Action(calls, "", turn.content)
        return parse_text_action(turn.content, toolkit)


class JsonActions(ActionFormat):
    """Constrained JSON actions, {"action": "<tool>", "arguments": {…}} or {"action": "final_answer", "answer": …}:
    for models that print tool calls unreliably (the embedded one)."""

    label = "json"
    json = True
    flat = False

    def request(self, spec: ActionSpec, toolkit: Toolkit, parallel: bool) -> dict[str, Any]:
        return {"response_format": action_schema(None if spec.final else toolkit, spec, self.flat)}

    def parse(self, turn: ChatTurn, toolkit: Toolkit) -> Action:
        return parse_text_action(turn.content, toolkit)


class FlatJsonActions(JsonActions):
    """JSON actions without the frame: {"keyword_search": ["X"]}, {"answer": …} (~9 generated tokens fewer per
    action, each ~0.1 s on 2 cores)."""

    label = "flat json"
    flat = True


def action_format(mode: str) -> ActionFormat:
    return {"native": ActionFormat, "json": JsonActions, "flat-json": FlatJsonActions}[mode]()


def action_schema(toolkit: Toolkit | None, spec: ActionSpec, flat: bool = False) -> dict[str, Any]:
    """The response_format whose variants are the offered tools plus final_answer, shaped by ``spec``."""
    planned: dict[str, Any] = {"plan": PLAN_SCHEMA} if spec.plan else {}
    note = {spec.note: FOUND_SCHEMA if spec.note == "found" else {"type": "string"}}
    call_note = note if spec.note_on_calls else {}
    if spec.confidence:
        call_note = {**call_note, "confidence": CONFIDENCE_SCHEMA}
    variants = []
    for schema in toolkit.schemas() if toolkit else []:
        name, parameters = schema["function"]["name"], schema["function"]["parameters"]
        canonical = toolkit.canonical(name) if toolkit else name
        if canonical not in spec.tools:
            continue
        if canonical == "chunk_read" and spec.readable is not None:
            if not spec.readable:
                continue  # everything shown was read: a search or the answer is the only progress
            # a read can only name these, so it cannot name a chunk that would show no new text
            items = {"type": "string", "enum": spec.readable}
            parameters = {
                "type": "object",
                "properties": {"chunk_ids": {"type": "array", "items": items, "minItems": 1, "maxItems": 3}},
                "required": ["chunk_ids"],
                "additionalProperties": False,
            }
        if flat:
            only = list(parameters["properties"].values())
            call: dict[str, Any] = {name: only[0] if len(only) == 1 else parameters}
        else:
            call = {"action": {"type": "string", "enum": [name]}, "arguments": parameters}
        variants.append(_object({**planned, **call_note, **call}))
    if spec.answer or spec.final or not variants:
        final: dict[str, Any] = {} if flat else {"action": {"type": "string", "enum": ["final_answer"]}}
        answer_plan = planned if spec.plan_on_answer else {}
        answer_note = note if spec.note_on_answer else {}
        variants.append(_object({**answer_plan, **answer_note, **final, "answer": _answer_schema(spec)}))
    return {
        "type": "json_schema",
        "json_schema": {"name": "agent_action", "strict": True, "schema": {"anyOf": variants}},
    }


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _answer_schema(spec: ActionSpec) -> dict[str, Any]:
    if spec.options:
        return {"type": "string", "enum": spec.options}
    if spec.yes_no:
        return {"type": "string", "pattern": yes_no_pattern(spec.answer_chars)}
    return {"type": "string"} if spec.answer_chars is None else {"type": "string", "maxLength": spec.answer_chars}


def parse_text_action(content: str, toolkit: Toolkit) -> Action:
    """An action written as text: a JSON action (nested or flat; whole, tagged or fenced), an answer cut off by the
    token limit, or else the text itself as the answer."""
    data = json_object(content)
    if isinstance(data, dict):
        name = data.get("action") or data.get("name") or data.get("tool")
        note = as_text(data.get("thought", data.get("found", "")))
        raw_plan = data.get("plan")
        plan = [as_text(p) for p in raw_plan[:3] if as_text(p).strip()] if isinstance(raw_plan, list) else []
        arguments = data.get("arguments", data.get("parameters", data.get("action_input", {})))
        if not name:
            name, arguments = _flat_action(data, toolkit)
        if name == "final_answer":
            answer = data.get("answer")
            if answer is None and isinstance(arguments, dict):
                answer = arguments.get("answer")
            return Action([], as_text(answer), note, plan)
        if isinstance(name, str) and name:
            return Action([ToolCall(name, arguments)], "", note, plan, _confidence(data.get("confidence")))
    truncated = _cut_off_answer(content)
    if truncated is not None:
        return Action([], truncated)
    return Action([], content.strip())


_CONFIDENCE_TEXT = re.compile(r"confidence\s*[:=]?\s*(\d+(?:\.\d+)?)\s*(%?)", re.I)


def confidence_in_text(text: str) -> float | None:
    """The last ``confidence: 0.8`` (or ``80%``) in ``text``, as a fraction; None if it states none."""
    found = _CONFIDENCE_TEXT.findall(text or "")
    if not found:
        return None
    value, percent = found[-1]
    number = float(value) / (100 if percent or float(value) > 1 else 1)
    return number if 0 <= number <= 1 else None


def _confidence(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= 1 else None


def _flat_action(data: dict[str, Any], toolkit: Toolkit) -> tuple[str, Any]:
    """(tool or "final_answer", arguments) of a flat action: {"keyword_search": ["X"]}, {"keyword_search":
    {"keywords": ["X"]}}, {"answer": "…"}; ("", {}) when no key names one."""
    for key, value in data.items():
        if key in ("answer", "final_answer"):
            return "final_answer", {"answer": value}
        if key in NOT_ACTIONS or toolkit.canonical(key) not in toolkit.enabled:
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


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return ""


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
