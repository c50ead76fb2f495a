"""Fault injection: every input boundary fuzzed (tool arguments, model replies), time bounds against a
never-answering and a dripping endpoint, and an evaluation run that survives broken model replies.

Nothing here asserts on wall-clock figures: the time-bound tests assert that a call *ends*, and why."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.agent import STOP_REASONS, Agent
from arag.agent.actions import json_object
from arag.errors import InputError, LLMError
from arag.index import Index
from arag.models.endpoint import ChatModel, parse_completion
from arag.settings import AgentSettings, LLMSettings
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from conftest import FUZZ_SCALE
from support.scripted_server import Drip, Hang, Raw, ScriptedServer, completion
from support.strategies import json_values, numbers, texts


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


argument_texts = (
    st.builds(json.dumps, json_values)
    | st.sampled_from(
        [
            "{not json",
            "[1, 2]",
            "42",
            '"keywords"',
            "null",
            '{"keywords": ' + _nested(100_000) + "}",
            '{"top_k": ' + "9" * 5000 + ', "keywords": ["x"]}',
            '{"query": "\\ud800\\udc00\\ud800"}',
            '{"chunk_ids": ["\\udfff", "Waldrada#0"]}',
        ]
    )
    | texts
)


@settings(max_examples=400 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from([*TOOL_NAMES, "web_search", ""]), arguments=json_values | argument_texts)
def test_tools_never_raise_on_any_argument(hippo_index: Index, name: str, arguments: Any) -> None:
    toolkit = Toolkit(hippo_index)
    result = toolkit.call(name, arguments)
    assert isinstance(result.observation, str) and result.observation
    json.dumps(result.arguments)  # recordable in a trajectory
    result.observation.encode("utf-8")  # no lone surrogate reaches the model
    if not result.ok:
        assert result.observation.startswith("Error: ")


@settings(max_examples=200 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keywords=st.lists(texts, min_size=1, max_size=5),
    query=texts,
    ids=st.lists(texts, max_size=5),
    top_k=numbers,
)
def test_tools_never_raise_on_typed_arguments(
    hippo_index: Index, keywords: list[str], query: str, ids: list[str], top_k: Any
) -> None:
    toolkit = Toolkit(hippo_index)
    for name, arguments in (
        ("keyword_search", {"keywords": keywords, "top_k": top_k}),
        ("semantic_search", {"query": query, "top_k": top_k}),
        ("chunk_read", {"chunk_ids": ids}),
    ):
        result = toolkit.call(name, arguments)
        assert isinstance(result.observation, str)
        result.observation.encode("utf-8")


# ------------------------------------------------------------------ model replies
message_fields = st.fixed_dictionaries(
    {},
    optional={
        "role": json_values,
        "content": json_values,
        "tool_calls": json_values
        | st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": json_values,
                    "type": json_values,
                    "function": json_values
                    | st.fixed_dictionaries(
                        {},
                        optional={
                            "name": st.sampled_from(TOOL_NAMES) | json_values,
                            "arguments": json_values | argument_texts,
                        },
                    ),
                },
            ),
            max_size=3,
        ),
    },
)
choice = st.fixed_dictionaries(
    {}, optional={"message": st.none() | message_fields | json_values, "finish_reason": json_values}
)
bodies = (
    st.fixed_dictionaries(
        {},
        optional={
            "choices": st.lists(choice | json_values, max_size=2) | json_values,
            "usage": json_values
            | st.fixed_dictionaries({}, optional={"prompt_tokens": numbers, "completion_tokens": numbers}),
            "error": json_values,
            "timings": json_values
            | st.fixed_dictionaries(
                {},
                optional={
                    "prompt_ms": numbers | json_values,
                    "predicted_ms": numbers,
                    "draft_n": numbers | json_values,
                    "draft_n_accepted": numbers,
                },
            ),
        },
    ).map(lambda body: json.dumps(body).encode())
    | st.builds(lambda v: json.dumps(v).encode(), json_values)
    | st.binary(max_size=200)
    | st.sampled_from([b"", b"<html>502 Bad Gateway</html>", b"{", b"null", _nested(50_000).encode()])
)


@settings(max_examples=1000 * FUZZ_SCALE, deadline=None)
@given(body=bodies)
def test_any_reply_body_parses_or_is_one_clear_error(body: bytes) -> None:
    try:
        turn = parse_completion(body)
    except LLMError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    assert isinstance(turn.content, str)
    assert set(turn.timings) <= {"prompt_ms", "generation_ms", "drafted_tokens", "accepted_drafts"}
    assert all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in turn.timings.values())
    assert all(isinstance(turn.timings[k], int) for k in ("drafted_tokens", "accepted_drafts") if k in turn.timings)
    for call in turn.tool_calls:
        assert isinstance(call["id"], str) and isinstance(call["function"]["name"], str)
        assert isinstance(call["function"]["arguments"], str)
    json.dumps(turn.message)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def _model(server: ScriptedServer, **llm: Any) -> ChatModel:
    options: dict[str, Any] = {"max_retries": 0, "timeout_s": 10.0, **llm}
    return ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted", **options))


@settings(max_examples=120 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replies=st.lists(bodies, min_size=1, max_size=3))
def test_agent_ends_with_a_stop_reason_on_any_reply(hippo_index: Index, replies: list[bytes]) -> None:
    scripted = ScriptedServer()
    try:
        scripted.replies = [Raw(body) for body in replies]
        scripted.default = completion("done")
        agent = Agent(hippo_index, _model(scripted), AgentSettings(max_steps=2, stall_limit=2))
        result = agent.run("When did Lothair II's mother die?")
    finally:
        scripted.close()
    assert result.stop_reason in STOP_REASONS
    assert (result.stop_reason == "error") == (result.error is not None)
    json.dumps(result.to_dict())


@pytest.mark.parametrize(
    "reply,expected",
    [
        (Raw(json.dumps({"choices": [{"message": None}]}).encode()), "answered"),
        (Raw(b"this is not json"), "error"),
        (Raw(b"[1, 2, 3]"), "error"),
        (Raw(json.dumps({"error": {"message": "model overloaded"}}).encode()), "error"),
        (Raw(json.dumps({"choices": [{"message": {"content": 42}}]}).encode()), "answered"),
        (Raw(json.dumps({"choices": [{"message": {"content": ["a", "b"]}}]}).encode()), "answered"),
        (completion('{"thought": "t", "action": "keyword_search", "arguments": "Lothair"}'), "answered"),
        (completion('{"thought": "t", "action": "chunk_read", "arguments": ["Waldrada#0"]}'), "answered"),
        (completion('{"action": "final_answer", "arguments": ["x"]}'), "answered"),
    ],
)
def test_broken_replies_end_the_step_or_the_run(
    hippo_index: Index, server: ScriptedServer, reply: Any, expected: str
) -> None:
    server.replies = [reply]
    server.default = completion("Ermengarde died in 851.")
    result = Agent(hippo_index, _model(server), AgentSettings(max_steps=3)).run("q?")
    assert result.stop_reason == expected, result
    if expected == "error":
        assert result.error and "\n" not in result.error and "Traceback" not in result.error
    else:
        assert result.answer


def test_json_action_arguments_that_are_not_objects_become_observations(
    hippo_index: Index, server: ScriptedServer
) -> None:
    server.replies = [
        completion('{"thought": "t", "action": "keyword_search", "arguments": ["Lothair"]}'),
        completion('{"thought": "t", "action": "semantic_search", "arguments": 7}'),
        completion("It was 851."),
    ]
    result = Agent(hippo_index, _model(server), AgentSettings(max_steps=4)).run("q?")
    assert result.stop_reason == "answered"
    assert [s.observation.split(";")[0] for s in result.trajectory] == [
        "Error: arguments must be a JSON object with named parameters, not an array",
        "Error: arguments must be a JSON object with named parameters, not a number",
    ]


def test_pathological_content_is_parsed_in_linear_time() -> None:
    # tens of thousands of markers: the old regex scan was quadratic (minutes); this returns at once
    for text in (
        "<tool_call>" * 50_000,
        "<tool_call></tool_call>" * 30_000,
        "```" * 50_000,
        "{" * 100_000,
        "<tool_call>{" * 30_000 + "}",
        "[chunk " * 50_000,
    ):
        assert json_object(text) is None


def test_empty_question_is_rejected_before_any_model_call(hippo_index: Index, server: ScriptedServer) -> None:
    agent = Agent(hippo_index, _model(server))
    for question in ("", "   \n\t "):
        with pytest.raises(InputError, match="question is empty"):
            agent.run(question)
    assert server.requests == []


# ------------------------------------------------------------------ bounded time
def test_never_answering_endpoint_ends_the_question(hippo_index: Index, server: ScriptedServer) -> None:
    server.default = Hang()
    model = _model(server, timeout_s=0.5, max_retries=1, retry_timeouts=True)
    result = Agent(hippo_index, model, AgentSettings(max_steps=3)).run("q?")
    assert result.stop_reason == "error"
    assert result.error is not None and "did not send a complete reply within 0.5 s (2 attempts)" in result.error


@pytest.mark.parametrize("fault", [Hang(), Drip(interval_s=0.1)], ids=["hangs", "drips"])
def test_by_default_a_timed_out_request_is_not_retried(hippo_index: Index, server: ScriptedServer, fault: Any) -> None:
    # the defaults but a short deadline: retries stay on for 429/5xx, a timeout is final (worst case: one timeout_s)
    server.default = fault
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted", timeout_s=0.6))
    assert model.settings.max_retries == 3 and not model.settings.retry_timeouts
    result = Agent(hippo_index, model, AgentSettings(max_steps=3)).run("q?")
    assert result.stop_reason == "error" and result.error is not None
    assert "within 0.6 s (1 attempt; a timed-out request is not retried)" in result.error
    assert "\n" not in result.error and "Traceback" not in result.error
    assert len(server.requests) == 1


def test_three_transient_failures_in_a_row_are_retried_honouring_retry_after(
    hippo_index: Index, server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    error = {"error": {"message": "busy", "type": "server_error"}}
    server.replies = [(500, error), (500, error), (429, error, {"Retry-After": "1"}), completion("It was 851.")]
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted"))  # the defaults
    caplog.set_level(logging.INFO, logger="openai._base_client")  # the SDK says each wait before it waits
    result = Agent(hippo_index, model, AgentSettings(max_steps=3)).run("q?")
    assert result.stop_reason == "answered" and result.answer.startswith("It was 851")
    assert len(server.requests) == 4
    waits = [r.args for r in caplog.records if r.getMessage().startswith("Retrying request in")]
    assert [(retry, of) for _wait, retry, of in waits] == [(1, 3), (2, 3), (3, 3)]
    assert waits[2][0] == 1.0  # the 429's Retry-After: the backoff of a third retry would be 1.5-2 s


def test_a_fourth_transient_failure_ends_the_question_with_one_line(hippo_index: Index, server: ScriptedServer) -> None:
    error = {"error": {"message": "busy", "type": "server_error"}}
    server.replies = [(503, error)] * 4 + [completion("never reached")]
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted"))
    result = Agent(hippo_index, model, AgentSettings(max_steps=3)).run("q?")
    assert result.stop_reason == "error" and result.error is not None and "HTTP 503" in result.error
    assert "\n" not in result.error and len(server.requests) == 4


def test_dripping_endpoint_is_bounded_per_whole_request(hippo_index: Index, server: ScriptedServer) -> None:
    # one byte every 0.1 s never trips a per-read timeout; the whole-request deadline ends it
    server.default = Drip(interval_s=0.1)
    model = _model(server, timeout_s=0.6, max_retries=0)
    result = Agent(hippo_index, model, AgentSettings(max_steps=3)).run("q?")
    assert result.stop_reason == "error" and result.error and "did not send a complete reply" in result.error


def test_time_budget_per_question_ends_a_slow_run(hippo_index: Index, server: ScriptedServer) -> None:
    server.default = Drip(interval_s=0.05)
    model = _model(server, timeout_s=60, max_retries=5)  # the request deadline alone would allow minutes
    result = Agent(hippo_index, model, AgentSettings(max_steps=3, time_budget_s=0.8)).run("q?")
    assert result.stop_reason == "time_budget"
    assert result.error is not None and "agent.time_budget_s" in result.error


def test_local_model_timeout_says_local(hippo_index: Index, server: ScriptedServer) -> None:
    server.default = Hang()
    model = ChatModel(LLMSettings(base_url=server.base_url, model="qwen", timeout_s=0.3, max_retries=3), local=True)
    result = Agent(hippo_index, model, AgentSettings(max_steps=2)).run("q?")
    assert result.stop_reason == "error" and result.error is not None
    assert result.error.startswith("the local model did not answer within 0.3 s")
    assert len(server.requests) == 1  # the embedded model is never retried: it would queue behind itself


# ------------------------------------------------------------------ evaluation survives broken questions
def test_eval_run_records_failed_questions_and_goes_on(tmp_path: Path, server: ScriptedServer) -> None:
    from test_eval import DATASETS, run_cli

    server.replies = [
        Raw(json.dumps({"choices": [{"message": None}]}).encode()),
        Raw(b"not json at all"),
        (500, {"error": {"message": "boom"}}),
        Raw(b"[]"),
    ]
    server.default = completion("20 March 851")
    out = tmp_path / "run"
    proc = run_cli(
        "eval",
        "run",
        "--dataset",
        str(DATASETS / "hippo-mini"),
        "--method",
        "direct",
        "--out",
        str(out),
        server=server,
        cache=tmp_path / "cache",
        extra_env={"ARAG_LLM__MAX_RETRIES": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    errors = [r for r in records if r["error"]]
    assert summary["questions"] == len(records) == 3 and summary["errors"] == len(errors) == 2
    assert summary["stop_reasons"]["error"] == 2
    assert any("not JSON" in r["error"] for r in errors) and any("HTTP 500" in r["error"] for r in errors)


# ------------------------------------------------------------------ input files
file_bodies = (
    st.binary(max_size=300)
    | st.builds(lambda v: json.dumps(v).encode(), json_values)
    | st.builds(lambda t: t.encode("utf-8", "surrogatepass"), texts)
    | st.sampled_from(
        [
            b"%PDF-1.4\n%broken",
            b"<html><body><script>x</script><p>Hi.</p>",
            b'[{"title": 1, "text": null}]',
            b'[{"corpus_name": "c", "context": 5}]',
            b'{"0": "text"}',
            b'["0:chunk zero", "1:chunk one"]',
            b"\xef\xbb\xbfBOM text.",
            b"[" * 10_000,
        ]
    )
)


@settings(max_examples=300 * FUZZ_SCALE, deadline=None)
@given(body=file_bodies, suffix=st.sampled_from([".txt", ".md", ".html", ".pdf", ".json", ".jsonl", ".csv"]))
def test_any_input_file_is_read_or_reported(tmp_path_factory: pytest.TempPathFactory, body: bytes, suffix: str) -> None:
    from arag.corpus.readers import Problem, iter_sources

    path = tmp_path_factory.mktemp("file") / f"input{suffix}"
    path.write_bytes(body)
    for _path, result in iter_sources([path]):
        if isinstance(result, Problem):
            assert result.reason and "\n" not in str(result)
        else:
            for document in result:
                document.text.encode("utf-8")  # indexable: no lone surrogates


def test_a_reply_over_the_size_cap_says_so_not_that_the_endpoint_cannot_be_reached(
    hippo_index: Index, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arag.models import endpoint

    monkeypatch.setattr(endpoint, "MAX_REPLY_BYTES", 4096)  # the cap (16 MiB) scaled down, the reply with it
    server.default = Raw(json.dumps(completion("x" * 10_000)).encode())
    result = Agent(hippo_index, _model(server, max_retries=2), AgentSettings(max_steps=1)).run("q?")
    assert result.stop_reason == "error" and result.error is not None
    assert "sent a reply larger than 0.00390625 MiB; refused unread" in result.error
    assert "cannot reach" not in result.error
