"""Failure tags on hand-made records with known gold, intervals against known values, `eval analyze`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arag.eval.analyze import tag_record
from arag.eval.stats import accuracy, paired_difference, wilson


def record(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "q",
        "prediction": "Paris",
        "contain_acc": 0.0,
        "stop_reason": "answered",
        "retrieval_recall": 1.0,
        "read_recall": 1.0,
        "error": None,
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    "fields,method,tag",
    [
        ({"contain_acc": 1.0}, "arag-full", "correct"),
        ({"error": "HTTP 500", "prediction": ""}, "arag-full", "error"),
        ({"prediction": "  "}, "arag-full", "no_answer"),
        ({"stop_reason": "stalled"}, "arag-full", "stalled"),
        ({"stop_reason": "max_steps"}, "arag-full", "budget"),
        ({"stop_reason": "time_budget"}, "arag-full", "budget"),
        ({"retrieval_recall": 0.0, "read_recall": 0.0}, "arag-full", "retrieval_miss"),
        ({"retrieval_recall": 1.0, "read_recall": 0.0}, "arag-full", "seen_not_read"),
        ({"retrieval_recall": 1.0, "read_recall": 0.5}, "arag-full", "seen_not_read"),
        ({"retrieval_recall": 0.5, "read_recall": 0.5}, "arag-full", "partial"),
        ({"retrieval_recall": 1.0, "read_recall": 1.0}, "arag-full", "reasoning"),
        ({"retrieval_recall": None, "read_recall": None}, "arag-full", "no_gold"),
        # Naive RAG pastes whole chunks: what it retrieved, the model read
        ({"retrieval_recall": 1.0, "read_recall": None}, "naive-rag", "reasoning"),
        ({"retrieval_recall": 0.0, "read_recall": 0.0}, "direct", "retrieval_miss"),
    ],
)
def test_tags(fields: dict[str, object], method: str, tag: str) -> None:
    assert tag_record(record(**fields), method)["tag"] == tag


def test_judge_disagreement_is_a_flag_on_any_tag() -> None:
    assert tag_record(record(contain_acc=1.0, llm_acc=0.0))["flags"] == ["judge_disagreement"]
    assert tag_record(record(contain_acc=0.0, llm_acc=1.0))["flags"] == ["judge_disagreement"]
    assert tag_record(record(contain_acc=1.0, llm_acc=1.0))["flags"] == []


def test_wilson_matches_known_values() -> None:
    # reference values of the Wilson score interval (z = 1.96)
    one_of_three = wilson(1, 3)
    assert (round(one_of_three.low, 4), round(one_of_three.high, 4)) == (0.0615, 0.7923)
    all_of_ten = wilson(10, 10)
    assert round(all_of_ten.low, 4) == 0.7225 and all_of_ten.high == pytest.approx(1.0)
    assert accuracy([1.0, 0.0, None, 0.0]).n == 3
    assert accuracy([1.0, 0.0, None, 0.0]).percent() == "33.3 [6.1, 79.2] (n=3)"


def test_paired_difference_uses_shared_questions_and_is_reproducible() -> None:
    first = {str(i): float(i % 2) for i in range(40)}
    second = {str(i): 1.0 for i in range(40)} | {"extra": 0.0}
    diff = paired_difference(first, second)
    assert diff is not None and diff.n == 40 and diff.value == pytest.approx(0.5)
    assert diff.low < 0.5 < diff.high and diff == paired_difference(first, second)
    assert paired_difference({"a": 1.0}, {"b": 1.0}) is None


def test_eval_analyze_on_a_fixture_run_dir(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    records = [
        record(id="1", contain_acc=1.0),
        record(id="2", retrieval_recall=0.0, read_recall=0.0),
        record(id="3", retrieval_recall=1.0, read_recall=0.0),
        record(id="4"),
        record(id="5", stop_reason="stalled", contain_acc=0.0, llm_acc=1.0),
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "config.json").write_text(json.dumps({"method": "arag-full", "dataset": "fixture"}))
    proc = subprocess.run(
        [sys.executable, "-m", "arag", "eval", "analyze", str(run), "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    [analysis] = json.loads(proc.stdout)
    assert analysis["wrong"] == 4 and analysis["judge_disagreements"] == 1
    assert {k: v for k, v in analysis["tags"].items() if v} == {
        "correct": 1,
        "retrieval_miss": 1,
        "seen_not_read": 1,
        "reasoning": 1,
        "stalled": 1,
    }
    tags = [json.loads(line) for line in (run / "analysis.jsonl").read_text().splitlines()]
    assert [t["tag"] for t in tags] == ["correct", "retrieval_miss", "seen_not_read", "reasoning", "stalled"]
    text = subprocess.run(
        [sys.executable, "-m", "arag", "eval", "analyze", str(run)], capture_output=True, text=True
    ).stdout
    assert "| A-RAG (Full) · run | fixture | 5 | 4 |" in text


def test_chunks_read_takes_hit_labels_from_what_the_read_showed() -> None:
    from arag.eval.runs import chunks_read

    record = {
        "trajectory": [
            {"tool": "keyword_search", "arguments": {"keywords": ["Fortunella"]}, "observation": "[1] chunk F#0"},
            {
                "tool": "chunk_read",
                "arguments": {"chunk_ids": ["hit 1"]},
                "observation": "[chunk Fortunella (film)#0]\nFortunella (film)\nFortunella is a 1958 film.",
            },
            {
                "tool": "chunk_read",
                "arguments": {"chunk_ids": ["Medical#0", "Medical#6"]},
                "observation": "[chunk Medical#0] (prev: -, next: Medical#1)\ntext [chunk cited#1] in it\n\n"
                "[chunk Medical#6] (prev: Medical#5, next: Medical#7)\ntext",
            },
            {"tool": "chunk_read", "arguments": {"chunk_ids": ["Made up#2"]}, "observation": "already read"},
        ],
        "retrieved_chunks": ["ignored#0"],
    }
    assert chunks_read(record) == ["Fortunella (film)#0", "Made up#2", "Medical#0", "Medical#6"]
    assert chunks_read({"trajectory": [], "retrieved_chunks": ["b#0", "a#0"]}) == ["a#0", "b#0"]
