"""confident_stop (beyond the paper, off by default): the model states a confidence with each action; a call made
at or above the threshold is its last, the next action the answer; arag eval sweep --confidence runs the curve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arag.agent import Agent
from arag.agent.actions import parse_text_action
from arag.eval.runs import completed, confident_stop_threshold, threshold_changes
from arag.harness.policies.confident_stop import STATE_CONFIDENCE, confidence_in_text, stated
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.tools.toolkit import Toolkit
from support.agents import local_json_agent
from support.eval_cli import DATASETS, run_cli
from support.scripted_server import ScriptedServer, completion, tool_call


@pytest.mark.parametrize(
    "text,value",
    [
        ("confidence: 0.8", 0.8),
        ("Confidence=0.35, reading on", 0.35),
        ("I am fairly sure. confidence 90%", 0.9),
        ("confidence: 0.2 ... then confidence: 0.7", 0.7),
        ("confidence: 85", 0.85),
        ("no number here", None),
        ("confidence: 250", None),
        ("", None),
    ],
)
def test_confidence_in_text(text: str, value: float | None) -> None:
    assert confidence_in_text(text) == value


def _agent(index: Index, server: ScriptedServer, threshold: float) -> Agent:
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted", max_retries=0))
    policy = {"confident_stop": {"threshold": threshold}}
    settings = AgentSettings(max_steps=6, profile="paper", policies=["+confident_stop"], policy=policy)
    return Agent(index, model, settings)


SEARCH = completion("confidence: 0.3", tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})])
READ = completion("confidence: 0.9", tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})])
SEARCH_AGAIN = completion("confidence: 0.95", tool_calls=[tool_call("keyword_search", {"keywords": ["Tours"]})])
ANSWER = completion("She died on 20 March 851 [Ermengarde of Tours#0].")


def test_a_confident_call_is_the_last_one(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [SEARCH, READ, ANSWER]
    result = _agent(hippo_index, server, 0.8).run("When did Ermengarde of Tours die?")
    assert result.stop_reason == "answered" and result.steps == 2 and result.answer.startswith("She died")
    assert "tools" in server.requests[1] and "tools" not in server.requests[2]  # the answer was asked for
    assert result.policies_acted == {"confident_stop": 1}
    assert any(STATE_CONFIDENCE in str(m.get("content")) for m in server.requests[0]["messages"])
    assert result.policy_records["confident_stop"] == {"stated": [0.3, 0.9]}  # each of the model's steps


def test_a_higher_threshold_searches_on(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [SEARCH, READ, SEARCH_AGAIN, ANSWER]
    result = _agent(hippo_index, server, 0.92).run("When did Ermengarde of Tours die?")
    assert result.steps == 3 and result.stop_reason == "answered"
    assert "tools" in server.requests[2] and "tools" not in server.requests[3]


def test_without_a_stated_confidence_nothing_changes(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})]),
        ANSWER,
    ]
    result = _agent(hippo_index, server, 0.0).run("When did Ermengarde of Tours die?")
    assert result.steps == 2 and not result.policies_acted and all("tools" in r for r in server.requests[:2])


def test_sweep_over_thresholds(tmp_path: Path, server: ScriptedServer) -> None:
    server.default = completion("confidence: 0.9 She died on 20 March 851.")
    sweep = run_cli(
        "eval", "sweep", "--dataset", str(DATASETS / "hippo-mini"), "--method", "arag-full",
        "--out", str(tmp_path / "sweep"), "--max-steps", "3", "--confidence", "0.5,0.9", "--first", "2",
        server=server, cache=tmp_path / "cache",
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    for name, threshold in (("steps-3-confidence-0.5", 0.5), ("steps-3-confidence-0.9", 0.9)):
        config = json.loads((tmp_path / "sweep" / name / "config.json").read_text())
        agent = config["settings"]["agent"]
        assert "+confident_stop" in agent["policies"] and agent["policy"]["confident_stop"]["threshold"] == threshold
        answered = (tmp_path / "sweep" / name / "results.jsonl").read_text().splitlines()
        assert [json.loads(line)["id"] for line in answered] == ["q1", "q2"]  # --first 2 of the 3
    # the questions where one threshold would act, re-run at it alone (ids as benchmarks/would_act.py writes them)
    (tmp_path / "ids.json").write_text('["q3"]')
    searched = completion("confidence: 0.9", [tool_call("keyword_search", {"keywords": ["Tours"]})])
    server.replies = [searched]  # below the threshold of 1: the search goes on, its confidence is recorded
    subset = run_cli(
        "eval", "sweep", "--dataset", str(DATASETS / "hippo-mini"), "--method", "arag-full",
        "--out", str(tmp_path / "subset"), "--max-steps", "3", "--confidence", "1", "--ids-file",
        str(tmp_path / "ids.json"), server=server, cache=tmp_path / "cache",
    )  # fmt: skip
    assert subset.returncode == 0, subset.stderr
    answered = (tmp_path / "subset" / "steps-3-confidence-1" / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in answered] == ["q3"]
    record = json.loads(answered[0])
    assert [s["tool"] for s in record["trajectory"] if s["origin"] == "model"] == ["keyword_search"]
    assert record["policy_records"]["confident_stop"]["stated"] == [0.9]
    bad = run_cli("eval", "sweep", "--method", "arag-full", "--out", str(tmp_path / "x"), "--confidence", "2",
                  "--dataset", str(DATASETS / "hippo-mini"), server=server, cache=tmp_path / "cache")  # fmt: skip
    assert bad.returncode == 1 and "--confidence" in bad.stderr and "Traceback" not in bad.stderr


def test_a_json_action_states_its_confidence_in_a_field_the_grammar_enforces(
    hippo_index: Index, server: ScriptedServer
) -> None:
    # the embedded model acts in constrained JSON: told to write a confidence into its note, it did not (the
    # policy never acted on 10 2Wiki questions), so the field is part of every call's schema
    agent = local_json_agent(hippo_index, server, max_steps=6, action_mode="json", policies=["+confident_stop"])
    search = {"action": "keyword_search", "arguments": {"keywords": ["Ermengarde"]}}
    read = {"action": "chunk_read", "arguments": {"chunk_ids": ["hit 1"]}}
    server.replies = [
        completion(json.dumps({"plan": ["her death"], "found": "nothing yet", "confidence": 0.2, **search})),
        completion(json.dumps({"found": "Ermengarde of Tours is named.", "confidence": 0.9, **read})),
        completion(
            json.dumps({"found": "She died on 20 March 851.", "action": "final_answer", "answer": "20 March 851"})
        ),
    ]
    result = agent.run("When did Ermengarde of Tours die?")
    assert result.stop_reason == "answered" and result.answer.startswith("20 March 851")
    assert [s.tool for s in result.trajectory] == ["keyword_search", "chunk_read"]
    assert [s.fields["confidence"] for s in result.trajectory] == [0.2, 0.9]  # as the model wrote them
    assert result.policy_records["confident_stop"] == {"stated": [0.2, 0.9]}  # where each threshold would stop
    assert result.policies_acted.get("confident_stop") == 1
    first, last = (
        r["response_format"]["json_schema"]["schema"]["anyOf"] for r in (server.requests[0], server.requests[2])
    )
    calls = [v for v in first if "arguments" in v["properties"]]
    assert calls and all(v["properties"]["confidence"]["enum"][-1] == 1.0 for v in calls)
    assert all("confidence" in v["required"] for v in calls)
    assert [v["properties"]["action"]["enum"] for v in last] == [["final_answer"]]  # the answer was asked for


@pytest.mark.parametrize("value", [0.9, 1, 0])
def test_a_confidence_field_is_read(hippo_index: Index, value: float) -> None:
    toolkit = Toolkit(hippo_index)
    reply = {"found": "x", "confidence": value, "action": "keyword_search", "arguments": {"keywords": ["Tours"]}}
    action = parse_text_action(json.dumps(reply), toolkit, fields=["confidence"])
    assert stated(action.fields, action.note) == float(value)


@pytest.mark.parametrize("value", [1.5, -0.1, "0.9", True, None, [0.5]])
def test_a_confidence_that_is_no_fraction_is_none(hippo_index: Index, value: object) -> None:
    toolkit = Toolkit(hippo_index)
    reply = {"found": "x", "confidence": value, "action": "keyword_search", "arguments": {"keywords": ["Tours"]}}
    action = parse_text_action(json.dumps(reply), toolkit, fields=["confidence"])
    assert stated(action.fields, action.note) is None and action.calls[0].name == "keyword_search"


def _record(stated: list[float | None], stopped: bool, recorded: bool = True) -> dict[str, object]:
    steps = [{"tool": "keyword_search", "origin": "model", **({"confidence": c} if recorded else {})} for c in stated]
    steps.insert(1, {"tool": "chunk_read", "origin": "harness", "confidence": None})  # the loop's read: no say
    return {"trajectory": steps, "policies_acted": {"confident_stop": 1} if stopped else {}}


@pytest.mark.parametrize(
    ("stated", "stopped", "threshold", "changes"),
    [
        ([0.2, 0.9], True, 0.8, False),  # the same threshold: the same path
        ([0.2, 0.9], True, 1.0, True),  # 0.9 no longer stops it
        ([0.2, 1.0], True, 1.0, False),  # 1.0 stops it where 0.8 did
        ([0.2, 0.9], True, 0.5, False),  # nothing earlier reaches 0.5: it stops where it stopped
        ([0.6, 0.9], True, 0.5, True),  # the first call already states 0.6
        ([0.6, 0.7, 0.3], False, 0.5, True),  # never 0.8, but 0.6 at once
        ([0.2, None, 0.3], False, 0.5, False),  # never 0.5
        ([0.2, 0.7], False, 1.0, False),  # never stopped, and a higher threshold stops no more
        ([], False, 0.1, False),  # the model called no tool itself: no threshold can stop it
    ],
)
def test_where_another_threshold_takes_another_path(
    stated: list[float | None], stopped: bool, threshold: float, changes: bool
) -> None:
    assert threshold_changes(_record(stated, stopped), 0.8, threshold) is changes


def test_the_policys_record_of_confidences_is_read_as_the_steps_were() -> None:
    for stated_values, stopped, threshold, changes in (([0.2, 0.9], True, 1.0, True), ([0.6, 0.9], True, 0.5, True)):
        old = _record(stated_values, stopped)
        new = {**old, "policy_records": {"confident_stop": {"stated": stated_values}}}
        new["trajectory"] = [{k: v for k, v in step.items() if k != "confidence"} for step in old["trajectory"]]
        assert threshold_changes(new, 0.8, threshold) is changes is threshold_changes(old, 0.8, threshold)


def test_a_run_without_recorded_confidences_gives_the_superset() -> None:
    assert threshold_changes(_record([0.2, 0.9], True, recorded=False), 0.8, 1.0)
    assert not threshold_changes(_record([0.2, 0.9], False, recorded=False), 0.8, 1.0)
    assert threshold_changes(_record([0.2, 0.9], False, recorded=False), 0.8, 0.5)


def test_a_subset_run_is_completed_by_the_run_its_questions_came_from(tmp_path: Path) -> None:
    base = {"records": [{"id": "q1", "contain_acc": 1.0}, {"id": "q2", "contain_acc": 0.0}]}
    rerun = {"records": [{"id": "q2", "contain_acc": 1.0}]}
    records, ran = completed(rerun, base)
    assert ran == 1 and [(r["id"], r["contain_acc"]) for r in records] == [("q1", 1.0), ("q2", 1.0)]
    for policies, threshold in ((["+confident_stop"], 0.8), ([], None)):
        agent = {"policies": policies, "policy": {"confident_stop": {"threshold": 0.8}}}
        (tmp_path / "config.json").write_text(json.dumps({"settings": {"agent": agent}}))
        assert confident_stop_threshold(tmp_path) == threshold
