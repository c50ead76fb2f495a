"""Answer verification (beyond the paper): claims checked against the sentences read, recorded per question, the
supported_answer policy that sends an unsupported answer back once, and the analysis of supported vs correct."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.eval.analyze import analyze_run, breakdown_markdown
from arag.harness.policies.supported_answer import UNSUPPORTED_ANSWER
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.verification import claims_of, key_terms, verify_answer
from conftest import FUZZ_SCALE, fake_run, guarded_call
from support.scripted_server import ScriptedServer, completion, tool_call


def test_a_claim_the_text_states_is_supported_and_one_it_does_not_is_not(hippo_index: Index) -> None:
    read = ["Lothair II#0", "Ermengarde of Tours#0"]
    supported = verify_answer(hippo_index, "Ermengarde of Tours died on 20 March 851 [Ermengarde of Tours#0].", read)
    assert supported.supported and supported.checked_chunks == 2
    (claim,) = supported.claims
    assert claim.chunk_id == "Ermengarde of Tours#0" and "20 March 851" in (claim.sentence or "")
    assert set(claim.found) == {"ermengarde", "tours", "20", "march", "851"}  # the text says "d.", not "died"
    assert claim.terms == ["ermengarde", "tours", "died", "20", "march", "851"]

    mixed = verify_answer(hippo_index, "Lothair II was king of Lotharingia. His mother was Queen Victoria.", read)
    assert not mixed.supported
    assert [c.supported for c in mixed.claims] == [True, False]
    assert mixed.unsupported[0].claim == "His mother was Queen Victoria."
    assert "victoria" not in mixed.unsupported[0].found

    nothing_read = verify_answer(hippo_index, "Ermengarde of Tours.", [])
    assert not nothing_read.supported and nothing_read.claims[0].chunk_id is None


def test_claims_and_terms() -> None:
    assert claims_of("Paris [chunk a#0]. It was 1920 [b#1]; then Rome.") == ["Paris.", "It was 1920; then Rome."]
    assert key_terms("He was the son of Emperor Lothair I in 835") == ["son", "emperor", "lothair", "835"]
    assert key_terms("It is") == ["it", "is"]  # no content word: every word


@settings(max_examples=80 * FUZZ_SCALE, deadline=None)
@given(answer=st.text(max_size=300), ids=st.lists(st.text(max_size=30), max_size=4))
def test_fuzzed_answers_and_ids_never_raise(hippo_index: Index, answer: str, ids: list[str]) -> None:
    result = verify_answer(hippo_index, answer, ids)
    assert result.supported == (bool(result.claims) and all(c.supported for c in result.claims))
    json.dumps(result.to_dict())


def _model(server: ScriptedServer) -> ChatModel:
    return ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted", max_retries=0))


def test_the_agent_records_the_verification_when_asked(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})]),
        completion("Ermengarde of Tours died on 20 March 851 [Ermengarde of Tours#0]."),
    ]
    result = Agent(hippo_index, _model(server), AgentSettings(max_steps=3, verify_answers=True)).run("When?")
    assert result.verification is not None and result.verification["supported"] is True
    server.replies = [completion("Paris.")]
    plain = Agent(hippo_index, _model(server), AgentSettings(max_steps=3)).run("When?")
    assert plain.verification is None  # off by default: the paper's protocol


def test_supported_answer_sends_an_unsupported_answer_back_once(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]})]),
        completion("Lothair II's mother was Queen Victoria."),
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion("Still Queen Victoria."),  # the second time the answer stands
    ]
    settings = AgentSettings(max_steps=4, profile="paper", policies=["+supported_answer"], verify_answers=True)
    result = Agent(hippo_index, _model(server), settings).run("Who was Lothair II's mother?")
    assert result.stop_reason == "answered" and result.answer.startswith("Still Queen Victoria")
    assert result.policies_acted.get("supported_answer") == 1
    told = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"]
    assert any(UNSUPPORTED_ANSWER.split("{claim}")[0] in t and "Queen Victoria" in t for t in told)
    assert result.verification is not None and result.verification["supported"] is False


def test_supported_answer_lets_a_supported_answer_stand(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "supported_answer", question="Who was Lothair II's mother?")
    guarded_call(run, policies, "chunk_read", {"chunk_ids": ["Lothair II#0"]})
    assert policies[0].on_answer(run, "Ermengarde of Tours [Lothair II#0]") is None
    hold = policies[0].on_answer(run, "Queen Victoria")
    assert hold is not None and "Queen Victoria" in hold.message
    assert policies[0].on_answer(run, "Queen Victoria") is None  # once


def test_analyze_reports_supported_against_correct(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"method": "arag-full", "dataset": "fixture"}))
    rows = [(True, 1), (True, 1), (True, 0), (False, 0), (False, 0), (False, 1)]
    records = [
        {"id": str(i), "question": "q", "gold": ["g"], "prediction": "p", "contain_acc": correct,
         "stop_reason": "answered", "steps": 1, "retrieved_tokens": 1, "latency_s": 1.0, "trajectory": [],
         "verification": {"supported": supported, "claims": []}}
        for i, (supported, correct) in enumerate(rows)
    ]  # fmt: skip
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    analysis = analyze_run(run)
    verification = analysis["verification"]
    assert (verification["supported_correct"], verification["supported_wrong"]) == (2, 1)
    assert (verification["unsupported_correct"], verification["unsupported_wrong"]) == (1, 2)
    assert verification["precision"] == 2 / 3 and verification["recall"] == 2 / 3
    assert "## Answer verification" in breakdown_markdown([analysis])
