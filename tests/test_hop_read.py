"""hop_read: the text of the one a question's subject names in the asked relation, read at a repeat or an answer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.harness import Hold, ReadInstead
from arag.harness.policies.hop_read import cues_for, names_after, next_hops, title_forms
from arag.index import Index
from arag.tools.toolkit import ToolCall
from conftest import fake_run, guarded_call
from support.agents import local_json_agent
from support.scripted_server import ScriptedServer, completion


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("William the Silent and Anna of Saxony, who", ["William the Silent", "Anna of Saxony"]),
        (
            "Victor Cavendish, 9th Duke of Devonshire, and Evelyn Cavendish.",
            ["Victor Cavendish, 9th Duke of Devonshire", "Evelyn Cavendish"],
        ),
        ("Christian August, Prince of Anhalt-Zerbst, and regent of", ["Christian August, Prince of Anhalt-Zerbst"]),
        ("M. B. Sreenivasan.", ["M. B. Sreenivasan"]),
        ("Caliph Harun al-Rashid, he rose", ["Caliph Harun al-Rashid"]),
        (
            "Alexander Grant, Mike Del Rio, Candice Pillay, Jayson DeZuzio",
            ["Alexander Grant", "Mike Del Rio", "Candice Pillay"],
        ),
        ("Helmut Käutner and starring Marianne Hoppe", ["Helmut Käutner"]),
        ("the king of France", []),
        ("", []),
    ],
)
def test_names_after_a_cue_are_its_capitalised_names(text: str, names: list[str]) -> None:
    assert names_after(text, 0) == names


@given(st.text(max_size=300), st.integers(min_value=0, max_value=320))
def test_names_after_any_text_are_short_names_taken_from_it(text: str, start: int) -> None:
    names = names_after(text, start)
    assert len(names) <= 3
    assert all(len(n) >= 3 and n.split()[0] in text for n in names)


def test_a_holders_title_may_leave_out_an_honorific_a_place_or_a_title() -> None:
    assert "oswiu" in title_forms("King Oswiu of Northumbria")
    assert "harun al rashid" in title_forms("Caliph Harun al-Rashid")
    assert "victor cavendish" in title_forms("Victor Cavendish, 9th Duke of Devonshire")


def test_only_a_question_about_a_relation_has_cues() -> None:
    assert cues_for("Where was the place of death of Maurice, Prince of Orange's father?")
    assert cues_for("Where did the director of film Goodbye, Franziska die?")
    assert not cues_for("When was Lothair II born?")


def test_the_subjects_text_names_the_holder_whose_text_is_unread(hippo_index: Index) -> None:
    question = "When did the husband of Teutberga die?"
    assert next_hops(hippo_index, question, []) == []  # the subject's text not read: no hop known
    (hop,) = next_hops(hippo_index, question, ["Teutberga#0"])
    assert (hop.subject_chunk, hop.name, hop.chunk_id) == ("Teutberga#0", "Lothair II", "Lothair II#0")
    assert hop.sentence.startswith("Teutberga( died 11 November 875) was a queen of Lotharingia by marriage to Lothair")
    assert next_hops(hippo_index, question, ["Teutberga#0", "Lothair II#0"]) == []  # read: the hop is made
    # a sibling, by another cue ("sister of Hucbert"); a relation the question does not ask about is no hop
    (sibling,) = next_hops(hippo_index, "When did the brother of Teutberga die?", ["Teutberga#0"])
    assert sibling.chunk_id == "Hucbert#0"
    assert next_hops(hippo_index, "When did Teutberga die?", ["Teutberga#0"]) == []
    # a text read that the question does not name is no subject
    assert next_hops(hippo_index, "When did the husband of Waldrada die?", ["Teutberga#0"]) == []


def test_a_repeat_reads_the_next_hop_and_an_answer_is_held_once_with_it(hippo_index: Index) -> None:
    question = "When did the husband of Teutberga die?"
    run, (policy,) = fake_run(hippo_index, "hop_read", question=question)
    call = ToolCall("keyword_search", {"keywords": ["Teutberga"]})
    assert policy.on_repeat(run, call) is None  # nothing read yet
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    outcome = policy.on_repeat(run, call)
    assert isinstance(outcome, ReadInstead) and outcome.chunk_ids == ("Lothair II#0",)
    assert outcome.says.startswith('Instead, the next hop: [chunk Teutberga#0] names Lothair II: "Teutberga(')
    assert question in outcome.says
    # the loop made the read: the hop is made, no hold at the answer
    run.harness_read(list(outcome.chunk_ids))
    assert policy.on_answer(run, "869") is None and policy.on_repeat(run, call) is None
    # a run whose model answers before reading the holder: the answer is held once, the holder's text read for it
    run, (policy,) = fake_run(hippo_index, "hop_read", question=question)
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    hold = policy.on_answer(run, "Lothair II [chunk Teutberga#0]")
    assert isinstance(hold, Hold) and hold.read == ["Lothair II#0"] and hold.why == "for the next hop"
    assert hold.message.startswith("Before your answer stands, the next hop: [chunk Teutberga#0] names Lothair II")
    assert policy.on_answer(run, "Lothair II [chunk Teutberga#0]") is None  # once
    assert policy.record(run) == {
        "hops": [{"name": "Lothair II", "from": "Teutberga#0", "read": "Lothair II#0", "at": "answer"}]
    }


def test_a_model_going_round_its_first_hop_is_given_the_second(hippo_index: Index, server: ScriptedServer) -> None:
    question = "When did the husband of Teutberga die?"
    search = completion(json.dumps({"found": "x", "keyword_search": ["Teutberga"]}))
    read = completion(json.dumps({"found": "x", "chunk_read": ["Teutberga#0"]}))
    died = completion(json.dumps({"found": "x", "answer": "8 August 869 [chunk Lothair II#0]"}))
    server.replies = [search, read, search, died]
    agent = local_json_agent(hippo_index, server, max_steps=6, policies=["+hop_read"])
    result = agent.run(question)
    assert result.stop_reason == "answered" and result.answer == "8 August 869 [chunk Lothair II#0]"
    assert result.policies_acted["hop_read"] == 1 and "Lothair II#0" in result.read_chunks
    told = "\n".join(str(m.get("content")) for m in server.requests[3]["messages"][-3:])
    assert "You already made this exact call" in told and "names Lothair II" in told
    assert "Lothair II( 835 – 8 August 869) was the king of Lotharingia" in told
    assert result.citations and result.policy_records["hop_read"]["hops"][0]["at"] == "repeat"
    # without it, the same repeat is answered by the other policies (here repeat_reads: the search's unread hits)
    server.replies, server.requests[:] = [search, read, search, died], []
    without = local_json_agent(hippo_index, server, max_steps=6, policies=["-hop_read"]).run(question)
    said = "\n".join(str(m.get("content")) for m in server.requests[3]["messages"][-3:])
    assert "hop_read" not in without.policies_acted and "the next hop" not in said and "You already made" in said


def test_answer_at_once_makes_the_action_after_the_hops_read_the_answer(
    hippo_index: Index, server: ScriptedServer
) -> None:
    question = "When did the husband of Teutberga die?"
    search = completion(json.dumps({"found": "x", "keyword_search": ["Teutberga"]}))
    read = completion(json.dumps({"found": "x", "chunk_read": ["Teutberga#0"]}))
    died = completion(json.dumps({"found": "x", "answer": "8 August 869 [chunk Lothair II#0]"}))
    server.replies = [search, read, search, died]
    policy = {"hop_read": {"answer_at_once": True}}
    agent = local_json_agent(hippo_index, server, max_steps=6, policies=["+hop_read"], policy=policy)
    result = agent.run(question)
    assert result.stop_reason == "answered" and result.answer == "8 August 869 [chunk Lothair II#0]"
    said = "\n".join(str(m.get("content")) for m in server.requests[3]["messages"][-3:])
    assert "Answer the question now from what you have read" in said and "Lothair II( 835" in said
    # the answer was the only action offered after the read; before it, searches were
    assert "keyword_search" in json.dumps(server.requests[2]["response_format"])
    assert "keyword_search" not in json.dumps(server.requests[3]["response_format"])
