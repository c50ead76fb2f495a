"""Every string the agent's model reads, in one place: the system prompts (``prompts/*.md``), the format of its
actions, and the messages the loop and its policies add to the conversation. (The tools' own descriptions are
their docstrings, in arag.tools.)"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from arag.errors import ConfigError


def system_prompt(name: str, override: Path | None = None) -> str:
    """A packaged prompt (``prompts/NAME``), or the user's file instead."""
    if override is not None:
        try:
            return override.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the system prompt {override}: {exc}") from None
    try:
        return resources.files("arag.agent").joinpath("prompts", name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"no packaged prompt {name!r}: {exc}") from None


def tools_line(names: list[str], max_steps: int) -> str:
    return f"\nAvailable tools: {', '.join(names)}. You have at most {max_steps} tool calls."


def tool_list(schemas: list[dict[str, Any]]) -> str:
    """The tools as text, for JSON actions: constrained decoding enforces the shape, but the model only knows the
    tools from this."""
    text = ""
    for schema in schemas:
        fn = schema["function"]
        params = ", ".join(
            f"{name}: {prop.get('type', 'any')}" for name, prop in fn["parameters"]["properties"].items()
        )
        text += f"\n- {fn['name']}({params}): {fn['description']}"
    return text


PAPER_JSON_FORMAT = (
    '\n\nReply with one JSON object per turn, either a tool call {"thought": "...", "action": '
    '"<tool>", "arguments": {...}} or the answer {"thought": "...", "action": "final_answer", '
    '"answer": "..."}.\nExample for the question "Where was the author of Hamlet born?": {"thought": '
    '"First find who wrote Hamlet.", "action": "keyword_search", "arguments": {"keywords": '
    '["Hamlet"], "top_k": 5}}'
)

COMPARISON_PLAN = (
    '\nA comparison needs one search per item: for "Who was born first, Ann Lee or Bo Chan?" the plan is '
    '["birth date of Ann Lee", "birth date of Bo Chan"].'
)
FOUND_FIRST = "nothing yet"  # the example's note before anything was read


def compact_format(
    search_tool: str,
    semantic: bool,
    flat: bool,
    note: str,
    plan: bool,
    note_on_calls: bool,
    note_on_answer: bool,
) -> str:
    """How the compact profile's JSON actions look: nested ({"action": …, "arguments": …}) or flat ({"<tool>":
    <argument>}); ``note`` is the free field ("found" with the found_notes policy, else "thought"), on every action,
    on the answer only or on tool calls only; with ``plan``, the first action starts with the plan of searches."""
    parameter, first, later = "keywords", '["Hamlet"]', '["William Shakespeare"]'
    if semantic:
        parameter, first, later = "query", '"who wrote Hamlet"', '"William Shakespeare birthplace"'
    found = note == "found"
    first_value = FOUND_FIRST if found else "First find who wrote Hamlet."
    later_value = (
        "Hamlet was written by William Shakespeare." if found else "Now find where William Shakespeare was born."
    )
    shape = f'"{note}": "...", ' if note_on_calls else ""
    first_note = f'"{note}": {json.dumps(first_value)}, ' if note_on_calls else ""
    later_note = f'"{note}": {json.dumps(later_value)}, ' if note_on_calls else ""
    answer_note = f'"{note}": "...", ' if note_on_answer else ""
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
    text = f"\n\n{reply}{shapes}"
    if found:
        text += '\n"found" is what the text you have read so far says that helps answer the question, in one sentence'
        text += (
            f' ("{FOUND_FIRST}" at first). When it holds the answer, give the final answer.' if note_on_calls else "."
        )
    example = 'Example for the question "Where was the author of Hamlet born?": '
    if plan:
        text += "\nYour first reply starts with your plan, one search per fact to find. " + example
        text += f'{{"plan": ["who wrote Hamlet", "where was that author born"], {first_note}{first_call}}}. '
        return text + f"Later: {{{later_note}{later_call}}}" + COMPARISON_PLAN
    return text + f"\n{example}{{{first_note}{first_call}}}. Later: {{{later_note}{later_call}}}"


# ---------------------------------------------------------------- what the loop says
# Naive RAG's instruction (arag.eval.methods), and phrase_answer's: the answer read off the text in one call
SHORT_PHRASE = "Answer the question with a short phrase (a name, date, number or yes/no), no explanation."
PHRASE_ANSWER = SHORT_PHRASE + " Use the text read."
PHRASE_ANSWER_TEXT = "Text read:\n{text}\n\nQuestion: {question}"
FINAL = {
    "paper": "Stop searching now. Answer the question from what you have gathered, citing chunks as [chunk ID].",
    "compact": (
        "Stop searching now. Give the final answer in a few words (a name, a date, a number, or yes/no), then the "
        "ids of the chunks it comes from, like: Paris [chunk Paris#0]. Do not describe the chunks. If the text "
        'above does not contain the answer, give your best guess, never "nothing yet" or "unknown".'
    ),
}
EMPTY_REPLY = "Your reply was empty. Call a tool or give the final answer."
NOT_EXECUTED = "Not executed: one tool call per step. Call it again if needed."
REPEATED = "You already made this exact call; its result is above."
REFUSED = f"{REPEATED} Use it, try something different, or give the final answer."


def budget_note(steps_left: int, tokens_left: int | None) -> str:
    """Said after every step. A small model cannot use a token count, and every prompt token costs it time."""
    return (
        f"[{steps_left} steps left]" if tokens_left is None else f"[{steps_left} steps left, {tokens_left} tokens left]"
    )


def observation_message(tool: str, observation: str, labelled: bool) -> dict[str, str]:
    """A tool result for a model that acts in text (JSON actions): labelled with its tool, or as it is (a compact
    result names its tool or its chunks already)."""
    return {"role": "user", "content": f"Observation from {tool}:\n{observation}" if labelled else observation}


# ---------------------------------------------------------------- what the policies say
READ_BEFORE_ANSWER = (
    "You answered without reading any chunk in full, and snippets often miss the answer. The best hits are "
    "shown in full below. Answer from them (short, with [chunk ID]), or search again if they do not hold it."
)
# how the observation of a read the harness made in place of a repeated call begins
READ_INSTEAD = f"{REPEATED} Instead, "
SWITCH_SEARCH = {
    # no example query: a small model answered with the example's entity ("Ana Ruiz", from the prompt's example)
    "semantic_search": "{tool} with a few words describing the fact you still need.",
    "keyword_search": "{tool} for a name or title from what you read.",
}
SEARCH_ANOTHER_WAY = "{repeated} Search another way now: {how}"
ANSWER_OR_SWITCH = (
    '{repeated} Closest to the question in what you read: "{sentence}" [chunk {chunk_id}]. If this answers the '
    "question, give the final answer now; if not, search another way: {how}"
)
PLAN_NOT_DONE = (
    'You answered "{answer}" after {done} search(es), but your plan was: {steps}. If that is only an intermediate '
    'fact, continue with step {next} ("{next_step}"): keyword_search for the name you found in the text you read. '
    "If it already answers the whole question, give the same final answer again."
)
OPTION_NOT_READ = (
    'You answered "{answer}", but nothing you have read is about "{option}". To compare, you need the same fact '
    'about both: keyword_search for "{option}" and read its hit, then answer.'
)
CLOSEST_SENTENCE = (
    'Closest to the question: "{sentence}" [chunk {chunk_id}]. If this answers the question, give the final answer '
    "now; if it names something you must look up first, search for that."
)
NOT_AN_ANSWER = (
    '"{answer}" is not an answer. Give the answer that the text you read supports, in a few words, with [chunk ID]; '
    "if the text does not hold it, search again."
)
UNSUPPORTED_ANSWER = (
    'No text you read states "{claim}". Search for what would show it and read it, then answer; or answer only '
    "what the text you read supports, with [chunk ID]."
)
SAME_NAME = (
    'These hits are {count} different entities called "{name}"; make sure you use the one the question means:\n'
    "{entities}"
)
STATE_CONFIDENCE = (
    "With each action, state how sure you are that what you have read so far answers the question: "
    '"confidence", a number from 0 to 1.'
)
COMMON_LEFT_OUT = "({keywords} left out: in over {share} of the chunks)"
SHORTER_KEYWORDS = ": no chunk contains these keywords. Results for shorter keywords that match, {shorter}"
