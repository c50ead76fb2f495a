"""Trajectories to train on: ``arag eval export`` writes the runs of ``arag eval run`` as supervised fine-tuning
data, in the chat format each fine-tuning tool expects.

* ``openai-chat``: one JSON object per line, ``{"messages": [...], "tools": [...], "parallel_tool_calls": false}``
  — the format of OpenAI's chat fine-tuning with function calling (and of the tools that read it: TRL, Axolotl,
  torchtune's OpenAI-style messages): a system message, the question, then per step an assistant message with one
  ``tool_calls`` entry (its ``arguments`` a JSON string) and the ``tool`` message answering it by
  ``tool_call_id``, and the final answer as the last assistant message.
* ``sharegpt``: LLaMA-Factory's ShareGPT layout with tools, ``{"conversations": [...], "system": ..., "tools":
  "<JSON list of functions>"}``, turns ``human``, ``function_call`` (``{"name", "arguments"}`` as JSON),
  ``observation``, ``gpt``: human/observation at odd positions, gpt/function_call at even ones.

What goes in: questions the run answered (stop reason ``answered`` or ``max_steps``, a prediction, no error),
optionally only the correct ones (``--only-correct``: Contain-Acc, LLM-Acc or key terms, whichever the record
has, by ``--by``).
The system prompt and the tool schemas are the paper profile's (native tool calls): the trajectories of any
profile are written as the calls and observations the model saw, a call the loop made for the model
(``origin: harness``) as the call the model should have made. Identical examples (question, calls, answer) are
written once. The held-out split is by question id (a hash), so no question is in both files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from arag.errors import InputError

Format = Literal["openai-chat", "sharegpt"]
FORMATS: tuple[Format, ...] = ("openai-chat", "sharegpt")
ENDED = ("answered", "max_steps")  # an answer of the model's, on its own or at the step limit
SCORES = {"contain": "contain_acc", "llm": "llm_acc", "key-terms": "key_terms_acc"}


@dataclass
class ExportReport:
    examples: int = 0
    heldout: int = 0
    skipped_unanswered: int = 0
    skipped_wrong: int = 0
    skipped_unscored: int = 0
    duplicates: int = 0
    files: list[str] = field(default_factory=list)


def system_and_tools(tools: list[str], max_steps: int) -> tuple[str, list[dict[str, Any]]]:
    """The paper profile's system message and the OpenAI tool schemas of ``tools`` (canonical names)."""
    from arag.agent import prompts
    from arag.tools.arguments import tool_schema
    from arag.tools.toolkit import TOOL_NAMES, Toolkit

    unknown = sorted(set(tools) - set(TOOL_NAMES))
    if unknown:
        raise InputError(f"the run used tools this version does not know: {unknown}")
    schemas = []
    for name in tools:
        schema = tool_schema(getattr(Toolkit, name))
        schema["function"]["parameters"]["properties"].pop("where", None)  # an index's own fields: not in training
        schemas.append(schema)
    system = prompts.system_prompt() + prompts.tools_line(tools, max_steps)
    return system, schemas


def _correct(record: dict[str, Any], by: str) -> bool | None:
    keys = [SCORES[by]] if by != "any" else list(SCORES.values())
    values = [record.get(key) for key in keys if record.get(key) is not None]
    if not values:
        return None
    return any(bool(v) for v in values)


def _messages(record: dict[str, Any], system: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Question: {record['question']}"},
    ]
    for number, step in enumerate(record.get("trajectory") or [], 1):
        call_id = f"call_{number}"
        function = {"name": str(step["tool"]), "arguments": json.dumps(step.get("arguments") or {})}
        call = {"id": call_id, "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": str(step.get("observation") or "")})
    messages.append({"role": "assistant", "content": str(record["prediction"])})
    return messages


def to_openai_chat(record: dict[str, Any], system: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"messages": _messages(record, system), "tools": tools, "parallel_tool_calls": False}


def to_sharegpt(record: dict[str, Any], system: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    turns: list[dict[str, str]] = [{"from": "human", "value": f"Question: {record['question']}"}]
    for step in record.get("trajectory") or []:
        call = {"name": str(step["tool"]), "arguments": step.get("arguments") or {}}
        turns.append({"from": "function_call", "value": json.dumps(call, ensure_ascii=False)})
        turns.append({"from": "observation", "value": str(step.get("observation") or "")})
    turns.append({"from": "gpt", "value": str(record["prediction"])})
    functions = [schema["function"] for schema in tools]
    return {"conversations": turns, "system": system, "tools": json.dumps(functions, ensure_ascii=False)}


def _fingerprint(record: dict[str, Any]) -> str:
    calls = [(s["tool"], s.get("arguments")) for s in record.get("trajectory") or []]
    key = json.dumps([" ".join(str(record["question"]).lower().split()), calls, record["prediction"]], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()


def held_out(question_id: str, share: float) -> bool:
    """Whether a question belongs to the held-out split (stable: by a hash of its id)."""
    digest = int.from_bytes(hashlib.sha256(question_id.encode()).digest()[:8], "big")
    return digest / 2**64 < share


def export_runs(
    run_dirs: Iterable[Path],
    out_dir: Path,
    fmt: Format = "openai-chat",
    only_correct: bool = False,
    by: str = "any",
    heldout_share: float = 0.1,
    key_terms: Path | None = None,
) -> ExportReport:
    """Write ``out_dir/train.jsonl`` and ``out_dir/heldout.jsonl`` from the runs; returns what was written.
    ``key_terms``: score the answers by these key terms first (GraphRAG-Bench Medical)."""
    from arag.eval.metrics import KeyTerms
    from arag.eval.runs import load_runs

    if fmt not in FORMATS:
        raise InputError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    if by not in (*SCORES, "any"):
        raise InputError(f"--by {by!r}: one of {', '.join([*SCORES, 'any'])}")
    if not 0 <= heldout_share < 1:
        raise InputError("the held-out share is a fraction in [0, 1)")
    report = ExportReport()
    convert = to_openai_chat if fmt == "openai-chat" else to_sharegpt
    seen: set[str] = set()
    splits: dict[str, list[str]] = {"train": [], "heldout": []}
    for run_dir in run_dirs:
        (run,) = load_runs([run_dir], KeyTerms.load(key_terms) if key_terms else None)
        config = (
            json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
            if (run_dir / "config.json").is_file()
            else {}
        )
        agent = (config.get("settings") or {}).get("agent") or {}
        enabled = list(agent.get("tools") or ["keyword_search", "semantic_search", "chunk_read"])
        system, tools = system_and_tools(enabled, int(agent.get("max_steps") or 10))
        for record in run["records"]:
            if record.get("stop_reason") not in ENDED or record.get("error") or not record.get("prediction"):
                report.skipped_unanswered += 1
                continue
            if only_correct:
                correct = _correct(record, by)
                if correct is None:
                    report.skipped_unscored += 1
                    continue
                if not correct:
                    report.skipped_wrong += 1
                    continue
            fingerprint = _fingerprint(record)
            if fingerprint in seen:
                report.duplicates += 1
                continue
            seen.add(fingerprint)
            split = "heldout" if held_out(str(record["id"]), heldout_share) else "train"
            splits[split].append(json.dumps(convert(record, system, tools), ensure_ascii=False))
    out_dir.mkdir(parents=True, exist_ok=True)
    for split, lines in splits.items():
        path = out_dir / f"{split}.jsonl"
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        tmp.replace(path)
        report.files.append(str(path))
    report.examples, report.heldout = len(splits["train"]), len(splits["heldout"])
    return report
