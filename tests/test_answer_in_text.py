"""answer_in_text: a short answer none of whose words is in any text the run was shown becomes "Not in the
documents"."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.harness.policies.answer_in_text import made_up_terms, said_in
from arag.index import Index
from conftest import fake_run, guarded_call
from support.agents import local_json_agent
from support.scripted_server import ScriptedServer, completion

QUESTION = "When did the husband of Teutberga die?"


@pytest.mark.parametrize(
    ("answer", "terms"),
    [
        ("KSTL [chunk company.md#0]", ["kstl"]),
        ("Immunohistochemistry", ["immunohistochemistry"]),
        ("Not in the documents (searched for: x).", None),  # a refusal
        ("Yes [chunk a#0]", None),
        ("27", None),  # numbers only: a sum of the figures read is no word of them
        ("12.5 %", None),
        ("Teutberga", None),  # the question names it: an option, not a made-up word
        ("He died at Piacenza in the year 869 after a long journey.", None),  # a sentence read off a text
        ("", None),
    ],
)
def test_which_answers_are_checked_and_by_which_words(answer: str, terms: list[str] | None) -> None:
    assert made_up_terms(answer, QUESTION) == terms


def test_a_word_is_said_by_a_text_holding_it_or_a_word_it_starts() -> None:
    words = {"america", "germany", "lothair", "869"}
    assert said_in(["american"], words) and said_in(["german"], words) and said_in(["lothair"], words)
    assert not said_in(["kstl"], words) and not said_in(["ams"], words)
    assert said_in(["kstl", "lothair"], words)  # one word of the answer in a text is enough


@given(st.text(max_size=60), st.text(max_size=60))
def test_any_answer_is_either_left_alone_or_checked_by_its_words(answer: str, question: str) -> None:
    terms = made_up_terms(answer, question)
    assert terms is None or (terms and all(t and not t.isdigit() for t in terms))


def test_an_answer_no_text_shown_holds_is_refused_one_a_text_holds_stands(hippo_index: Index) -> None:
    run, (policy,) = fake_run(hippo_index, "answer_in_text", question=QUESTION)
    guarded_call(run, [policy], "keyword_search", {"keywords": ["Teutberga"]})
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    assert policy.settle(run, "Lothair II [chunk Teutberga#0]") is None
    assert policy.settle(run, "Lotharingian king") is None  # "Lotharingia" was read
    assert policy.record(run) is None
    revised = policy.settle(run, "Ansegisel [chunk Teutberga#0]")
    assert (
        revised is not None
        and revised.answer == 'Not in the documents: no text read says "Ansegisel" (searched for: "Teutberga").'
    )
    assert revised.source == "not in the documents" and policy.record(run) == {"made_up": "Ansegisel"}


def test_a_made_up_answer_on_the_scripted_server_ends_not_in_the_documents(
    hippo_index: Index, server: ScriptedServer
) -> None:
    search = completion(json.dumps({"found": "x", "keyword_search": ["Teutberga"]}))
    read = completion(json.dumps({"found": "x", "chunk_read": ["Teutberga#0"]}))
    made_up = completion(json.dumps({"found": "x", "answer": "Ansegisel [chunk Teutberga#0]"}))
    server.replies = [search, read, made_up]
    agent = local_json_agent(hippo_index, server, max_steps=6, policies=["-hop_read", "+answer_in_text"])
    result = agent.run(QUESTION)
    assert result.answer.startswith('Not in the documents: no text read says "Ansegisel" (searched for: "Teutberga"')
    assert result.answer_from == "not in the documents" and result.policies_acted["answer_in_text"] == 1
    assert not result.citations
    # a right answer, from the text read, stands
    right = completion(json.dumps({"found": "x", "answer": "Lothair II [chunk Teutberga#0]"}))
    server.replies, server.requests[:] = [search, read, right], []
    result = agent.run(QUESTION)
    assert result.answer == "Lothair II [chunk Teutberga#0]" and "answer_in_text" not in result.policies_acted


def test_a_recorded_runs_searches_are_read_as_a_live_runs() -> None:
    from arag.eval.runs import searched

    record = {
        "trajectory": [
            {"tool": "keyword_search", "arguments": {"keywords": ["Teutberga", "husband"]}},
            {"tool": "chunk_read", "arguments": {"chunk_ids": ["Teutberga#0"]}},
            {"tool": "semantic_search", "arguments": {"query": "when did Lothair II die"}},
        ]
    }
    assert searched(record) == ["Teutberga", "husband", "when did Lothair II die"]
    assert searched({}) == []
