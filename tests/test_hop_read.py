"""hop_read: the text of the one a question's subject names in the asked relation, read at a repeat or an answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.harness import Hold, ReadInstead
from arag.harness.policies.hop_read import (
    Hop,
    names_after,
    next_hops,
    relation_cues,
    resolution,
    resolved_question,
    spellings,
    title_forms,
)
from arag.harness.view import CompactView
from arag.index import Index
from arag.tools.toolkit import ToolCall
from conftest import fake_run, fake_settings, guarded_call
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


def test_a_holders_spellings_go_from_the_fullest_to_the_bare_name() -> None:
    assert spellings("King Oswiu of Northumbria") == ["King Oswiu of Northumbria", "Oswiu of Northumbria", "Oswiu"]
    assert spellings("Victor Cavendish, 9th Duke of Devonshire")[1:] == [
        "Victor Cavendish, 9th Duke",
        "Victor Cavendish",
    ]
    assert spellings("Lothair II") == ["Lothair II"]


def test_a_holder_named_with_an_honorific_is_found_by_the_name_its_own_text_uses(tmp_path: Path) -> None:
    # the subject's text says "King Oswiu of Northumbria", a phrase Oswiu's own text never uses: searched as
    # written, the keyword search finds only the subject's text
    docs = [
        {"title": "Osthryth", "text": "Osthryth (died 697) was the daughter of King Oswiu of Northumbria and Eanflæd."},
        {"title": "Oswiu", "text": "Oswiu (c. 612 – 670) was King of Bernicia. He was buried at Whitby Abbey."},
        {"title": "Oswiu of Kent", "text": "Oswiu of Kent is a made-up namesake who never reigned."},
    ]
    (tmp_path / "corpus.json").write_text(json.dumps(docs), encoding="utf-8")
    build_index([tmp_path / "corpus.json"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    question = "Where was the place of burial of Osthryth's father?"
    (hop,) = next_hops(index, question, ["Osthryth#0"])
    assert (hop.name, hop.chunk_id) == ("King Oswiu of Northumbria", "Oswiu#0")
    assert next_hops(index, question, ["Osthryth#0", "Oswiu#0"]) == []


@pytest.mark.parametrize(
    ("question", "subject", "holder", "relation", "cue", "first", "resolved"),
    [
        (
            "Where was the place of burial of Osthryth's father?",
            "Osthryth",
            "Oswiu",
            "father",
            "daughter of",
            True,
            "Where was the place of burial of Oswiu?",
        ),
        (
            "When did Cristina Rodríguez (Noble)'s father die?",
            "Cristina Rodríguez",
            "El Cid",
            "father",
            "daughter of",
            True,
            "When did El Cid die?",
        ),
        (
            "Where did the director of film Goodbye, Franziska (1941 Film) die?",
            "Goodbye, Franziska",
            "Helmut Käutner",
            "director",
            "directed by",
            True,
            "Where did Helmut Käutner die?",
        ),
        (
            "Where was the husband of Joanna Elisabeth Of Holstein-Gottorp born?",
            "Joanna Elisabeth of Holstein-Gottorp",
            "Christian August, Prince of Anhalt-Zerbst",
            "husband",
            "marriage to",
            True,
            "Where was Christian August, Prince of Anhalt-Zerbst born?",
        ),
        # the holder is the answer: nothing to resolve
        ("Who is the mother of Infante Antonio?", "Infante Antonio", "Maria Amalia", "mother", "son of", False, None),
        ("Who was Teutberga's husband?", "Teutberga", "Lothair II", "husband", "marriage to", True, None),
        # a relative beside the one asked for: the first after "son of" is the father, "his mother" names a mother
        ("Where was the mother of Philip I born?", "Philip I", "Henry I", "mother", "son of", True, None),
        (
            "Where was the mother of Philip I born?",
            "Philip I",
            "Anne",
            "mother",
            "son of",
            False,
            "Where was Anne born?",
        ),
        ("Where was the father of Murad II born?", "Murad II", "Emine", "father", "his mother", True, None),
        (
            "Where was the mother of Murad II born?",
            "Murad II",
            "Emine",
            "mother",
            "his mother",
            True,
            "Where was Emine born?",
        ),
        # two directors named: either may be meant
        ("Where did the director of film Heat die?", "Heat", "Michael Mann", "director", "directed by", True, None),
        # two subjects, or a subject the question does not name as written: the question stays as asked
        (
            "Which film has the director who died later, Heat or Ran?",
            "Heat",
            "Michael Mann",
            "director",
            "directed by",
            True,
            None,
        ),
        ("Where did Teutberga's husband die?", "Waldrada", "Lothair II", "husband", "marriage to", True, None),
    ],
)
def test_the_question_is_resolved_to_the_holder_where_it_asks_about_them(
    question: str, subject: str, holder: str, relation: str, cue: str, first: bool, resolved: str | None
) -> None:
    alone = "Heat" not in question  # the test's one co-directed film
    hop = Hop("s#0", holder, "", "h#0", relation, cue, first, subject, alone)
    assert resolved_question(question, hop) == resolved


def test_a_question_is_resolved_only_to_the_one_holder_of_its_relation() -> None:
    question = "Where did the director of film Seven Women die?"

    def directed(name: str, subject: str) -> Hop:
        return Hop(f"{subject}#0", name, "", f"{name}#0", "director", "directed by", True, "Seven Women", True)

    # two films titled alike, each directed by another: either may be meant
    assert resolution(question, [directed("Juan Bustillo Oro", "A"), directed("Benito Perojo", "B")]) is None
    hop = directed("Benito Perojo", "B")
    assert resolution(question, [hop]) == (hop, "Where did Benito Perojo die?")
    # the father and the mother named after "son of": the question about the father resolves to him
    father = Hop("S#0", "Simon", "", "Simon#0", "father", "son of", True, "Amaury", False)
    mother = Hop("S#0", "Alix", "", "Alix#0", "father", "son of", False, "Amaury", False)
    assert resolution("Where did Amaury's father die?", [father, mother]) == (father, "Where did Simon die?")


def test_only_a_question_about_a_relation_has_cues() -> None:
    assert relation_cues("Where was the place of death of Maurice, Prince of Orange's father?")
    assert relation_cues("Where did the director of film Goodbye, Franziska die?")
    assert not relation_cues("When was Lothair II born?")


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


HUSBAND = "When did the husband of Teutberga die?"
ANSWER = "8 August 869 [chunk Lothair II#0]"


def going_round(server: ScriptedServer) -> None:
    """A model that searches Teutberga, reads her text, searches her again (a repeat), then answers."""
    search = completion(json.dumps({"found": "x", "keyword_search": ["Teutberga"]}))
    read = completion(json.dumps({"found": "x", "chunk_read": ["Teutberga#0"]}))
    server.replies = [search, read, search, completion(json.dumps({"found": "x", "answer": ANSWER}))]
    server.requests[:] = []


def said_before(server: ScriptedServer, call: int) -> str:
    """The last messages the model was sent before its ``call``-th reply (0-based)."""
    return "\n".join(str(m.get("content")) for m in server.requests[call]["messages"][-3:])


def test_a_model_going_round_its_first_hop_is_given_the_second(hippo_index: Index, server: ScriptedServer) -> None:
    question = HUSBAND
    going_round(server)
    agent = local_json_agent(hippo_index, server, max_steps=6, policies=["+hop_read"])
    result = agent.run(question)
    assert result.stop_reason == "answered" and result.answer == ANSWER
    assert result.policies_acted["hop_read"] == 1 and "Lothair II#0" in result.read_chunks
    told = said_before(server, 3)
    assert "You already made this exact call" in told and "names Lothair II" in told
    assert "Lothair II( 835 – 8 August 869) was the king of Lotharingia" in told
    assert result.citations and result.policy_records["hop_read"]["hops"][0]["at"] == "repeat"
    # without it, the same repeat is answered by the other policies (here repeat_reads: the search's unread hits)
    going_round(server)
    without = local_json_agent(hippo_index, server, max_steps=6, policies=["-hop_read"]).run(question)
    said = said_before(server, 3)
    assert "hop_read" not in without.policies_acted and "the next hop" not in said and "You already made" in said


def test_answer_at_once_makes_the_action_after_the_hops_read_the_answer(
    hippo_index: Index, server: ScriptedServer
) -> None:
    question = HUSBAND
    going_round(server)
    policy = {"hop_read": {"answer_at_once": True}}
    agent = local_json_agent(hippo_index, server, max_steps=6, policies=["+hop_read"], policy=policy)
    result = agent.run(question)
    assert result.stop_reason == "answered" and result.answer == ANSWER
    said = said_before(server, 3)
    assert "Answer the question now from what you have read" in said and "Lothair II( 835" in said
    # the answer was the only action offered after the read; before it, searches were
    assert "keyword_search" in json.dumps(server.requests[2]["response_format"])
    assert "keyword_search" not in json.dumps(server.requests[3]["response_format"])


def test_a_resolved_question_asks_about_the_holder_after_the_read(hippo_index: Index, server: ScriptedServer) -> None:
    question = HUSBAND
    going_round(server)
    policy = {"hop_read": {"answer_at_once": True, "resolved_question": True}}
    agent = local_json_agent(hippo_index, server, max_steps=6, policies=["+hop_read"], policy=policy)
    result = agent.run(question)
    assert result.stop_reason == "answered" and result.answer == ANSWER
    said = said_before(server, 3)
    assert 'So the question is now: "When did Lothair II die?" Answer it from [chunk Lothair II#0]' in said
    assert "keyword_search" not in json.dumps(server.requests[3]["response_format"])
    assert result.policy_records["hop_read"]["hops"][0]["resolved"] == "When did Lothair II die?"


def test_a_read_for_a_resolved_question_shows_the_sentences_closest_to_it(
    hippo_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "When did the husband of Teutberga die?"
    policy = {"hop_read": {"resolved_question": True}}
    run, (hop_read,) = fake_run(
        hippo_index, "hop_read", question=question, view=CompactView(focus_tokens=20), policy=policy
    )
    guarded_call(run, [hop_read], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    outcome = hop_read.on_repeat(run, ToolCall("keyword_search", {"keywords": ["Teutberga"]}))
    assert isinstance(outcome, ReadInstead) and outcome.focus == "When did Lothair II die?"
    focused_on: list[str] = []
    read_view = run.toolkit.presenter.read_view

    def spy(record: object) -> tuple[str, str]:
        focused_on.append(run.toolkit.focus_query)
        return read_view(record)

    monkeypatch.setattr(run.toolkit.presenter, "read_view", spy)
    run.harness_read(list(outcome.chunk_ids), outcome.focus)
    assert focused_on == ["When did Lothair II die?"] and run.toolkit.focus_query == question
    run.harness_read(["Hucbert#0"])  # a read without a focus: the question's
    assert focused_on[-1] == question
