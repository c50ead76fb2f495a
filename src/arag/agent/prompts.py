"""Every string the paper's loop says to the model: its system prompt (``prompts/system.md``), the format of its
JSON actions, and the messages the loop adds to the conversation. (The tools' own descriptions are their
docstrings, in arag.tools; a harness profile's prompt and its policies' messages are in arag.harness.)"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from arag.errors import ConfigError


def system_prompt(profile_prompt: str | None = None, override: Path | None = None) -> str:
    """The user's prompt file, else the profile's prompt, else the paper's (``prompts/system.md``)."""
    if override is not None:
        try:
            return override.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the system prompt {override}: {exc}") from None
    if profile_prompt is not None:
        return profile_prompt
    return resources.files("arag.agent").joinpath("prompts", "system.md").read_text(encoding="utf-8")


TABLES_HINT = (
    " For figures in tables (a value in a row, a sum, a count, the largest), find the table with table_list and "
    "compute with table_query; cite the chunks its result names."
)


def tools_line(names: list[str], max_steps: int) -> str:
    hint = TABLES_HINT if "table_query" in names else ""
    return f"\nAvailable tools: {', '.join(names)}. You have at most {max_steps} tool calls.{hint}"


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

# ---------------------------------------------------------------- what the loop says
FINAL = "Stop searching now. Answer the question from what you have gathered, citing chunks as [chunk ID]."
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
