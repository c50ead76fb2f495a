"""described_hop: the one a question describes ("the person who keeps the register") named from the text shown, and
its unread text read, for the first answer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.harness import Hold, ReadInstead, Refuse
from arag.harness.policies.described_hop import bridge_in, described_phrase, names_in
from arag.index import Index
from arag.tools.toolkit import ToolCall
from conftest import fake_run, folder_index, guarded_call
from support.agents import local_json_agent
from support.scripted_server import ScriptedServer, completion

FILES = {
    "policies.md": "# Controlled drugs\n\nThe controlled drugs register is kept by Gemma Holt, who counts the "
    "cabinet stock every Friday. Only a vet may sign a drug out.\n",
    "staff.csv": "name,role,branch,joined\nGemma Holt,Head nurse,Kingsbridge,2015\nPriya Shah,Vet,Salcombe,2020\n",
    "meeting.txt": "The new X-ray unit was installed on 12 August. It replaces the film processor. Priya Shah will "
    "train every vet on it. From October the Salcombe branch will be closed on Wednesdays.\n",
    "emergencies.md": "# Out of hours\n\nOutside opening hours, calls to either branch are forwarded to Vets Now "
    "Plymouth, which sees emergencies overnight.\n",
    "numbers.md": "# Useful numbers\n\n- Kingsbridge reception: 01548 852 310\n- Vets Now Plymouth: 01752 600 411\n",
    "board.md": "Grace Liu keeps the orchard's bees. She trained as a food scientist in Leeds.\n",
}
REGISTER = "In which year did the person who keeps the controlled drugs register join the practice?"


@pytest.fixture(scope="module")
def practice(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return folder_index(tmp_path_factory, "practice", FILES)


def every_chunk(index: Index) -> list[str]:
    return [record.chunk_id for record in index.store.iter_chunks()]


@pytest.mark.parametrize(
    ("question", "head", "inverted"),
    [
        (REGISTER, "person", True),
        ("What is the phone number of the service that takes the calls outside opening hours?", "service", False),
        ("On which weekday will the branch where Priya Shah works be closed?", "branch", True),
        ("Who supervises the student who will present the results in Lyon?", "student", False),
        ("When was the company that published The Miscellany News founded?", "company", False),
    ],
)
def test_a_question_describing_the_one_it_asks_about(question: str, head: str, inverted: bool) -> None:
    described = described_phrase(question)
    assert described is not None and (described.head, described.inverted) == (head, inverted)


@pytest.mark.parametrize(
    "question",
    [
        "What is the award that the director of film Bangalore Naatkal earned?",  # the phrase is what is asked
        "Which film has the director who was born first, Kiss Me Again or The Last Outpost?",  # either-or
        "Which film has the director who is older than the other, Suzanne'S Career or Vente A Alemania, Pepe?",
        "Do both films have the directors that share the same nationality?",  # yes/no
        "Who leads the security team?",  # no relative clause
        "Where did the director of film That Nazty Nuisance die?",
        "If a tumor is located at the junction, which classification system is used?",  # "which" asks
        "How much is the revenue in the first quarter as a percentage of the total revenue that year?",  # no clause
        "Which are the components in the table which are used to tabulate the ratio?",
    ],
)
def test_a_question_describing_nothing_it_asks_about(question: str) -> None:
    assert described_phrase(question) is None


@pytest.mark.parametrize(
    ("question", "name", "chunk"),
    [
        (REGISTER, "Gemma Holt", "practice/policies.md#0"),
        (
            "What is the phone number of the service that takes the calls outside opening hours?",
            "Vets Now Plymouth",
            "practice/emergencies.md#0",
        ),
        # the sentence two before says which X-ray unit; a month or a weekday is no name
        (
            "At which branch does the vet who trains staff on the X-ray unit work?",
            "Priya Shah",
            "practice/meeting.txt#0",
        ),
        # a table row: the value under the described head
        ("On which weekday will the branch where Priya Shah works be closed?", "Salcombe", None),
    ],
)
def test_the_text_shown_names_the_one_described(practice: Index, question: str, name: str, chunk: str | None) -> None:
    described = described_phrase(question)
    assert described is not None
    bridge = bridge_in(practice, question, described, every_chunk(practice))
    assert bridge is not None and bridge.name == name
    assert chunk is None or bridge.chunk_id == chunk
    assert bridge_in(practice, question, described, []) is None  # nothing shown: nothing named


def test_a_sentence_that_says_only_the_questions_own_verb_names_no_one(practice: Index) -> None:
    # "train as a food scientist" is the question's own verb after the clause; the bees sentence says the clause
    question = "Where did the person who supervises the cider press train as a food scientist?"
    described = described_phrase(question)
    assert described is not None and described.inverted
    assert bridge_in(practice, question, described, every_chunk(practice)) is None


def test_the_phrase_is_quoted_up_to_what_the_text_said() -> None:
    described = described_phrase(REGISTER)
    assert described is not None
    said = described.said(("keep", "controlled", "drugs", "register"))
    assert said == '"the person who keeps the controlled drugs register …"'
    assert described.said() == '"the person who keeps the controlled drugs register join the practice"'


def test_names_in_a_sentence_leave_out_the_question_dates_and_an_opening_word() -> None:
    question = "On which weekday will the branch where Priya Shah works be closed?"
    sentence = "From October the Salcombe branch will be closed on Wednesdays, said Priya Shah."
    assert names_in(sentence, question, "branch", row=False) == ["Salcombe"]
    assert names_in("Outside opening hours, calls go to Vets Now Plymouth.", question, "service", False) == [
        "Vets Now Plymouth"
    ]
    row = "name: Priya Shah; role: Vet; branch: Salcombe; joined: 2020"
    assert names_in(row, question, "branch", row=True) == ["Salcombe"]
    # no header is the head: the row's capitalised values the question does not name
    assert names_in(row, "Who is the vet who joined in 2020?", "person", row=True) == ["Priya Shah", "Salcombe"]


@given(st.text(max_size=200))
def test_any_question_is_described_or_not_without_failing(question: str) -> None:
    described = described_phrase(question)
    assert described is None or (described.head and described.head in question)


@given(st.text(max_size=200), st.text(max_size=80))
def test_names_found_in_any_sentence_are_its_own_words(sentence: str, question: str) -> None:
    for name in names_in(sentence, question, "person", row=False):
        assert name and all(word in sentence for word in name.split())


def test_the_first_answer_is_held_once_with_the_described_ones_text_read(practice: Index) -> None:
    run, (policy,) = fake_run(practice, "described_hop", question=REGISTER)
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["practice/policies.md#0"]})
    hold = policy.on_answer(run, "2011 [chunk practice/policies.md#0]")
    assert isinstance(hold, Hold) and hold.read == ["practice/staff.csv#0"]
    assert hold.message.startswith(
        'Before your answer stands: "the person who keeps the controlled drugs register …" is Gemma Holt, as [chunk '
        'practice/policies.md#0] says: "The controlled drugs register is kept by Gemma Holt,'
    )
    # the row read is quoted as its fields: the year next to the name, where a small model misread the table
    read_note = 'Above is [chunk practice/staff.csv#0], read for you; it says: "name: Gemma Holt; role: Head nurse; '
    assert read_note + 'branch: Kingsbridge; joined: 2015".' in hold.message and REGISTER in hold.message
    assert policy.on_answer(run, "2011") is None  # once
    assert policy.record(run) == {
        "name": "Gemma Holt",
        "from": "practice/policies.md#0",
        "read": ["practice/staff.csv#0"],
        "at": "answer",
    }
    # a question that describes no one, or a run that has shown no text naming the one described: no hold
    run, (policy,) = fake_run(practice, "described_hop", question="When did the practice open?")
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["practice/policies.md#0"]})
    assert policy.on_answer(run, "2011") is None and policy.record(run) is None
    run, (policy,) = fake_run(practice, "described_hop", question=REGISTER)
    assert policy.on_answer(run, "2011") is None


def test_a_text_that_only_names_the_one_described_is_not_read(practice: Index) -> None:
    # her row says nothing the question asks about (a car's colour): the hold names her, and reads nothing
    question = "What colour is the car of the person who keeps the controlled drugs register?"
    run, (policy,) = fake_run(practice, "described_hop", question=question)
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["practice/policies.md#0"]})
    hold = policy.on_answer(run, "red")
    assert isinstance(hold, Hold) and hold.read == [] and "is Gemma Holt" in hold.message
    assert "Above is" not in hold.message and hold.message.endswith(question)


def test_a_repeated_call_is_answered_with_the_described_ones_text_once(practice: Index) -> None:
    run, (policy,) = fake_run(practice, "described_hop", question=REGISTER)
    call = ToolCall("keyword_search", {"keywords": ["register"]})
    assert policy.on_repeat(run, call) is None  # no text shown names the keeper yet
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["practice/policies.md#0"]})
    outcome = policy.on_repeat(run, call)
    assert isinstance(outcome, ReadInstead) and outcome.chunk_ids == ("practice/staff.csv#0",)
    assert outcome.says.startswith('Instead: "the person who keeps the controlled drugs register …" is Gemma Holt')
    assert 'Here is [chunk practice/staff.csv#0], read for you, which says: "name: Gemma Holt;' in outcome.says
    assert outcome.says.endswith(REGISTER)
    assert policy.on_repeat(run, call) is None and policy.on_answer(run, "2015") is None  # once in all
    assert policy.record(run) == {
        "name": "Gemma Holt",
        "from": "practice/policies.md#0",
        "read": ["practice/staff.csv#0"],
        "at": "repeat",
    }
    # every text naming the one described read already: the repeat is refused with what it names
    run, (policy,) = fake_run(practice, "described_hop", question=REGISTER)
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["practice/policies.md#0", "practice/staff.csv#0"]})
    refused = policy.on_repeat(run, call)
    assert isinstance(refused, Refuse) and "is Gemma Holt" in refused.says and "Here is" not in refused.says


def read(chunk_id: str) -> dict[str, object]:
    return completion(json.dumps({"found": "x", "chunk_read": [chunk_id]}))


def answer(text: str) -> dict[str, object]:
    return completion(json.dumps({"found": "x", "answer": text}))


def test_a_model_that_stops_at_the_described_one_is_given_their_text(practice: Index, server: ScriptedServer) -> None:
    """The model reads the register's keeper and answers a year of another text; held, it is shown her row, and the
    next action must be the answer."""
    server.replies = [read("practice/policies.md#0"), answer("2011"), answer("2015 [chunk practice/staff.csv#0]")]
    result = local_json_agent(practice, server, max_steps=4, policies=["+described_hop"]).run(REGISTER)
    assert result.stop_reason == "answered" and result.answer == "2015 [chunk practice/staff.csv#0]"
    assert result.policies_acted["described_hop"] == 1 and "practice/staff.csv#0" in result.read_chunks
    told = "\n".join(str(m.get("content")) for m in server.requests[2]["messages"][-3:])
    assert "is Gemma Holt" in told and "Gemma Holt" in told and "2015" in told
    assert "semantic_search" in json.dumps(server.requests[1]["response_format"])
    assert "semantic_search" not in json.dumps(server.requests[2]["response_format"])  # the answer, at once
    # without it the first answer is final (here refused: no text read gives 2011)
    server.replies = [read("practice/policies.md#0"), answer("2011")]
    server.requests[:] = []
    without = local_json_agent(practice, server, max_steps=4, policies=["-described_hop"]).run(REGISTER)
    assert len(server.requests) == 2 and "described_hop" not in without.policies_acted
    assert not any("Before your answer stands" in json.dumps(r["messages"]) for r in server.requests)
