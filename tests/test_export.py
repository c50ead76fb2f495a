"""arag eval export: runs written as fine-tuning data, validated against the published formats (OpenAI chat
fine-tuning with tools; LLaMA-Factory's ShareGPT with function calls), filtered, deduplicated, split by question."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from arag.eval.export import export_runs, held_out

NAME = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
TEXT = {"type": "string"}


def _object(required: list[str], properties: dict[str, Any], closed: bool = True) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": not closed}


TOOL_CALL = _object(
    ["id", "type", "function"],
    {
        "id": TEXT,
        "type": {"const": "function"},
        "function": _object(["name", "arguments"], {"name": NAME, "arguments": TEXT}),
    },
)
MESSAGE = {
    "oneOf": [
        _object(["role", "content"], {"role": {"enum": ["system", "user"]}, "content": TEXT}),
        _object(
            ["role", "content"],
            {
                "role": {"const": "assistant"},
                "content": {"type": ["string", "null"]},
                "weight": {"enum": [0, 1]},
                "tool_calls": {"type": "array", "minItems": 1, "items": TOOL_CALL},
            },
        ),
        _object(
            ["role", "tool_call_id", "content"], {"role": {"const": "tool"}, "tool_call_id": TEXT, "content": TEXT}
        ),
    ]
}
FUNCTION = _object(["name", "parameters"], {"name": NAME, "description": TEXT, "parameters": {"type": "object"}}, False)
OPENAI_CHAT = _object(  # https://platform.openai.com/docs/guides/fine-tuning (chat format, function calling)
    ["messages"],
    {
        "messages": {"type": "array", "minItems": 2, "items": MESSAGE},
        "tools": {
            "type": "array",
            "items": _object(["type", "function"], {"type": {"const": "function"}, "function": FUNCTION}),
        },
        "parallel_tool_calls": {"type": "boolean"},
    },
)
SHAREGPT = {  # https://github.com/hiyouga/LLaMA-Factory/blob/main/data/README.md (sharegpt, function calling)
    "type": "object",
    "required": ["conversations"],
    "properties": {
        "conversations": {"type": "array", "minItems": 2, "items": {
            "type": "object", "required": ["from", "value"], "additionalProperties": False,
            "properties": {"from": {"enum": ["human", "gpt", "function_call", "observation"]},
                           "value": {"type": "string"}}}},
        "system": {"type": "string"},
        "tools": {"type": "string"},
    },
}  # fmt: skip


def _step(tool: str, arguments: dict[str, Any], observation: str, origin: str = "model") -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments, "observation": observation, "retrieved_tokens": 10,
            "latency_s": 0.01, "thought": "", "origin": origin, "why": ""}  # fmt: skip


def _record(qid: str, question: str, prediction: str, correct: int | None, stop: str = "answered", steps: Any = None):
    trajectory = (
        steps
        if steps is not None
        else [
            _step("keyword_search", {"keywords": ["Lothair II"], "top_k": 5}, "keyword_search: 1 chunk\n[1] chunk L#0"),
            _step("chunk_read", {"chunk_ids": ["L#0"]}, "chunk L#0: Lothair II's mother was Ermengarde.", "harness"),
        ]
    )
    return {"id": qid, "question": question, "gold": ["x"], "prediction": prediction, "contain_acc": correct,
            "stop_reason": stop, "steps": len(trajectory), "trajectory": trajectory, "error": None,
            "latency_s": 1.0, "retrieved_tokens": 20,
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}  # fmt: skip


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    tools = ["keyword_search", "semantic_search", "chunk_read"]
    config = {"dataset": "fixture", "method": "arag-full", "settings": {"agent": {"max_steps": 5, "tools": tools}}}
    (run / "config.json").write_text(json.dumps(config))
    records = [_record(f"q{i}", f"Who was the mother of person {i}?", f"Ermengarde [L#0] {i}", 1) for i in range(40)]
    records += [
        _record("wrong", "Who was Lothair's father?", "Louis", 0),
        _record("stalled", "Who?", "nothing found", 1, stop="stalled"),
        _record("forced", "When did she die?", "851 [L#0]", 1, stop="max_steps"),
        _record("direct", "What is 2+2?", "4", 1, steps=[]),
        {**_record("q0", "Who was the mother of  person 0?", "Ermengarde [L#0] 0", 1), "id": "q0-again"},  # duplicate
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_openai_chat_lines_follow_the_published_format(run_dir: Path, tmp_path: Path) -> None:
    report = export_runs([run_dir], tmp_path / "out", "openai-chat", only_correct=True, heldout_share=0.2)
    assert (report.skipped_wrong, report.skipped_unanswered, report.duplicates) == (1, 1, 1)
    lines = _lines(tmp_path / "out" / "train.jsonl") + _lines(tmp_path / "out" / "heldout.jsonl")
    assert len(lines) == report.examples + report.heldout == 42  # 40 + forced + direct
    for line in lines:
        jsonschema.validate(line, OPENAI_CHAT)
        messages, tools = line["messages"], {t["function"]["name"] for t in line["tools"]}
        assert [m["role"] for m in messages[:2]] == ["system", "user"] and messages[-1]["role"] == "assistant"
        assert messages[-1]["content"] and "tool_calls" not in messages[-1]
        for before, message in itertools.pairwise(messages):
            if message["role"] == "tool":  # answers the call just made, by its id
                assert before["role"] == "assistant" and before["tool_calls"][0]["id"] == message["tool_call_id"]
            if message["role"] == "assistant" and message.get("tool_calls"):
                call = message["tool_calls"][0]["function"]
                assert call["name"] in tools and isinstance(json.loads(call["arguments"]), dict)
        assert all("where" not in t["function"]["parameters"]["properties"] for t in line["tools"])
        assert "at most 5 tool calls" in messages[0]["content"]


def test_sharegpt_lines_follow_llama_factorys_format(run_dir: Path, tmp_path: Path) -> None:
    export_runs([run_dir], tmp_path / "out", "sharegpt", only_correct=False, heldout_share=0.0)
    lines = _lines(tmp_path / "out" / "train.jsonl")
    assert len(lines) == 43 and _lines(tmp_path / "out" / "heldout.jsonl") == []  # the wrong one too
    for line in lines:
        jsonschema.validate(line, SHAREGPT)
        turns = line["conversations"]
        for position, turn in enumerate(turns, 1):  # human/observation odd, gpt/function_call even
            assert turn["from"] in (("human", "observation") if position % 2 else ("gpt", "function_call"))
        assert turns[-1]["from"] == "gpt"
        functions = json.loads(line["tools"])
        assert {f["name"] for f in functions} == {"keyword_search", "semantic_search", "chunk_read"}
        for turn in turns:
            if turn["from"] == "function_call":
                call = json.loads(turn["value"])
                assert set(call) == {"name", "arguments"} and isinstance(call["arguments"], dict)


def test_the_held_out_split_is_by_question_and_stable(run_dir: Path, tmp_path: Path) -> None:
    export_runs([run_dir], tmp_path / "a", heldout_share=0.3)
    export_runs([run_dir], tmp_path / "b", heldout_share=0.3)
    assert (tmp_path / "a" / "heldout.jsonl").read_text() == (tmp_path / "b" / "heldout.jsonl").read_text()

    def questions(path: Path) -> set[str]:
        return {line["messages"][1]["content"] for line in _lines(path)}

    train, heldout = questions(tmp_path / "a" / "train.jsonl"), questions(tmp_path / "a" / "heldout.jsonl")
    assert heldout and train and not train & heldout
    assert 0.1 < sum(held_out(f"q{i}", 0.3) for i in range(1000)) / 1000 < 0.5


def test_cli_export_and_its_errors(run_dir: Path, tmp_path: Path) -> None:
    def arag(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COLUMNS": "200"}
        return subprocess.run(
            [sys.executable, "-m", "arag", "eval", "export", *args], capture_output=True, text=True, env=env
        )

    done = arag(str(run_dir), "--out", str(tmp_path / "out"), "--only-correct", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["duplicates"] == 1
    bad = arag(str(run_dir), "--out", str(tmp_path / "x"), "--format", "alpaca")
    assert bad.returncode == 1 and "format 'alpaca'" in bad.stderr and "Traceback" not in bad.stderr
    missing = arag(str(tmp_path / "nope"), "--out", str(tmp_path / "y"))
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
