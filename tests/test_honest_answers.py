"""Honest answers on the scripted server: a question the documents do not hold is answered "Not in the documents"
with what was searched, every part and name of a question is looked up before the answer, a follow-up's pronoun is
resolved before searching, and an answer cites the chunk it was read in (the evidence_ledger policy, the prompts,
arag.text.says_not_found)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.agent import Agent
from arag.agent.conversation import Conversation
from arag.corpus.build import build_index
from arag.harness.policies.evidence_ledger import NAME_NOT_READ, SECOND_PART
from arag.harness.text import choice_options, question_names, question_parts, standalone
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.text import NOT_IN_DOCUMENTS
from conftest import fake_settings
from support.scripted_server import ScriptedServer, completion, tool_call


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def agent(index: Index, server: ScriptedServer, *policies: str, **settings: object) -> Agent:
    """The compact default over the scripted server (native tool calls); its opening search only where asked."""
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="small", max_retries=0))
    view = {"title_reads": False}
    chosen = list(policies) or ["-opening_search"]
    return Agent(index, model, AgentSettings(profile="compact", view=view, policies=chosen, **settings))  # type: ignore[arg-type]


def search(keywords: list[str], call_id: str = "c1") -> dict[str, object]:
    return completion(tool_calls=[tool_call("keyword_search", {"keywords": keywords, "top_k": 1}, call_id)])


def read(chunk_id: str, call_id: str = "c2") -> dict[str, object]:
    return completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": [chunk_id]}, call_id)])


def test_a_question_about_a_name_no_document_holds_is_answered_not_in_the_documents_at_once(
    hippo_index: Index, server: ScriptedServer
) -> None:
    server.replies = [completion("1950 [chunk Dr. John Smith#0]")]  # a made-up answer, as a small model gives
    result = agent(hippo_index, server).run("When was Zorblax Quintavius born?")
    assert result.answer == f'{NOT_IN_DOCUMENTS}: no document names "Zorblax Quintavius".'
    assert result.not_found and result.answer_from == "not in the documents" and result.citations == []
    assert len(server.requests) == 1 and "tools" not in server.requests[0]  # asked to answer at once, no search
    assert result.policy_records["evidence_ledger"] == {
        "names": ["Zorblax Quintavius"],
        "absent": ["Zorblax Quintavius"],
    }


def test_a_name_outside_the_question_s_scope_is_not_in_the_documents(
    hippo_index: Index, server: ScriptedServer
) -> None:
    server.replies = [completion("864")]
    scoped = agent(hippo_index, server).run("When did Hucbert die?", where='title~"Anne of Kiev"')
    assert scoped.answer == f'{NOT_IN_DOCUMENTS}: no document names "Hucbert".' and scoped.not_found
    server.replies = [search(["Hucbert"]), read("hit 1"), completion("864")]
    whole = agent(hippo_index, server).run("When did Hucbert die?")
    assert whole.answer == "864 [chunk Hucbert#0]" and not whole.not_found


def test_a_refusal_after_searching_says_what_was_searched(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        search(["Hucbert"]),
        read("hit 1"),
        completion("The documents do not say."),
        completion("Unknown."),  # held once by grounded_answer ("search again"): the same refusal stands
    ]
    result = agent(hippo_index, server).run("What was Hucbert's favourite colour?")
    assert result.answer == f'{NOT_IN_DOCUMENTS} (searched for: "Hucbert").'
    assert result.not_found and result.answer_from == "model" and result.stop_reason == "answered"


def test_an_answer_before_a_name_of_the_question_was_read_is_held_with_the_text_that_names_it(
    hippo_index: Index, server: ScriptedServer
) -> None:
    server.replies = [
        search(["Hucbert"]),
        read("hit 1"),
        completion("Hucbert [chunk Hucbert#0]"),  # a comparison answered after reading one side
        completion("Hucbert [chunk Hucbert#0] [chunk Anne of Kiev#0]"),
    ]
    result = agent(hippo_index, server).run("Who died first, Hucbert or Anne of Kiev?")
    held = result.trajectory[-1]
    assert held.tool == "chunk_read" and held.origin == "harness" and held.arguments["chunk_ids"] == ["Anne of Kiev#0"]
    assert held.why == "a name of the question not read yet"
    told = server.requests[3]["messages"][-1]["content"]
    assert told.startswith(NAME_NOT_READ.format(name="Anne of Kiev")) and "Anne of Kiev (c. 1030" in told
    assert result.answer == "Hucbert [chunk Hucbert#0] [chunk Anne of Kiev#0]"
    assert sorted(result.read_chunks) == ["Anne of Kiev#0", "Hucbert#0"]


def test_a_two_part_question_s_second_part_drives_a_second_search(hippo_index: Index, server: ScriptedServer) -> None:
    question = "When did Hucbert die, and which abbey was he abbot of?"
    server.replies = [
        search(["Hucbert"]),
        read("hit 1"),
        completion("864 [chunk Hucbert#0]"),  # the first part only
        search(["abbey", "abbot"], "c3"),
        read("hit 1", "c4"),
        completion("864; St. Maurice's Abbey [chunk Hucbert#0]"),
    ]
    result = agent(hippo_index, server).run(question)
    told = server.requests[3]["messages"][-1]["content"]
    assert told == SECOND_PART.format(first="When did Hucbert die", second="which abbey was he abbot of")
    searches = [step.arguments for step in result.trajectory if step.tool == "keyword_search"]
    assert searches == [{"keywords": ["Hucbert"], "top_k": 1}, {"keywords": ["abbey", "abbot"], "top_k": 1}]
    assert result.answer == "864; St. Maurice's Abbey [chunk Hucbert#0]" and result.stop_reason == "answered"


def test_a_follow_up_s_pronoun_is_resolved_before_the_first_search(hippo_index: Index, server: ScriptedServer) -> None:
    chat = Conversation(agent(hippo_index, server, "+opening_search", "-hop_read"))
    server.replies = [search(["Lothair II"]), read("hit 1"), completion("Ermengarde of Tours [chunk Lothair II#0]")]
    first = chat.ask("Who was the mother of Lothair II?")  # names a document: the model's own search
    assert first.trajectory[0].origin == "model" and first.answer.startswith("Ermengarde of Tours")
    server.replies = [read("hit 1"), completion("20 March 851")]
    second = chat.ask("When did she die?")
    opening = second.trajectory[0]
    assert opening.tool == "semantic_search" and opening.origin == "harness"
    assert opening.arguments["query"] == "When did she die? (Lothair II; Ermengarde of Tours)"
    assert second.trajectory[1].arguments["chunk_ids"] == ["hit 1"]


def test_an_answer_that_cites_nothing_cites_the_chunk_it_was_read_in(
    hippo_index: Index, server: ScriptedServer
) -> None:
    server.replies = [search(["Ermengarde"]), read("hit 1"), completion("20 March 851")]
    result = agent(hippo_index, server).run("When did Ermengarde of Tours die?")
    assert result.answer == "20 March 851 [chunk Ermengarde of Tours#0]"
    assert result.citations == [{"chunk_id": "Ermengarde of Tours#0", "verified": True}]
    assert result.policies_acted["evidence_ledger"] == 1


def test_the_paper_profile_s_refusal_is_recorded_the_same_way(hippo_index: Index, server: ScriptedServer) -> None:
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt", max_retries=0))
    paper = Agent(hippo_index, model, AgentSettings(profile="paper"))
    server.replies = [search(["Hucbert"]), completion("Not in the documents: I searched for Hucbert's colour.")]
    result = paper.run("What was Hucbert's favourite colour?")
    assert result.not_found and result.answer == "Not in the documents: I searched for Hucbert's colour."
    assert "Not in the documents" in server.requests[0]["messages"][0]["content"]  # the paper's prompt allows it


@pytest.mark.parametrize(
    "question,names",
    [
        ("When did Lothair Ii's mother die?", ["Lothair Ii"]),
        ("Where was the place of death of Maurice, Prince Of Orange's father?", ["Maurice", "Prince Of Orange"]),
        ("Which film came out first, Ek Hi Bhool (1940 Film) or Mord Em'Ly?", ["Ek Hi Bhool", "Mord Em'Ly"]),
        ("Are both Dr. John Smith and Murad II from Europe?", ["Dr. John Smith", "Murad II", "Europe"]),
        ("Which tumor markers are used in ovarian cancer diagnosis?", []),
        ("Name the director of Blue Lake.", ["Blue Lake"]),
        ("What is the primary treatment goal for CML?", ["CML"]),
        # a word capitalised only because it opens the question is no name; a title that opens it keeps its words
        ("From which cells does CML arise?", ["CML"]),
        ("As of December 31, 2019, what was the cost related to non-vested RSUs?", ["RSUs"]),
        ("According to the minutes, who runs the induction?", []),
        (
            "Are By The Grace Of God (Film) and A Texas Steer from the same country?",
            ["By The Grace Of God", "Film", "Texas Steer"],
        ),
        ("Which ALL subtype can cause an enlarged thymus?", ["ALL"]),
        # a date is no name the documents must spell the same way; a month alone and an acronym are
        ("What was the net profit in FY19?", []),
        ("How many PSUs were granted in December 2019 and in Q4 2018?", ["PSUs"]),
        ("What was the total for the Fiscal Year Ended April 28, 2018?", []),
        ("Which team does the owner of the June data delay postmortem manage?", ["June"]),
        ("What are the consequences of abdominoperineal resection (APR)?", ["APR"]),
        # an acronym's lower-case modifier is not part of it; a run of acronyms names each
        ("Which therapy is used for BRCA-mutated, HER2-negative breast cancer?", ["BRCA", "HER2"]),
        ("What tumor size corresponds to T2 in the AJCC TNM staging?", ["AJCC", "TNM"]),
        ("What is the average GAAP-based Professional Service margin?", ["GAAP-based Professional Service"]),
        ("Who directed Jean-luc And The Sea?", ["Jean-luc And The Sea"]),
        # an "or" inside a second question offers no options
        ("What is the therapy for metastatic CSCC, and when might surgery or radiation be considered?", ["CSCC"]),
    ],
)
def test_question_names(question: str, names: list[str]) -> None:
    assert question_names(question) == names


def test_an_or_in_a_second_question_is_no_choice() -> None:
    assert choice_options("What is the therapy for CSCC, and when might surgery or radiation be considered?") == []
    assert choice_options("Which film came out first, What Women Want or Where Eagles Dare?") == [
        "What Women Want",
        "Where Eagles Dare",
    ]


def one_file_index(folder: Path, text: str) -> Index:
    (folder / "doc.md").write_text(text, encoding="utf-8")
    build_index([folder / "doc.md"], folder / "idx", fake_settings())
    return Index.open(folder / "idx", threads=1)


def test_a_name_typed_without_its_accents_is_found(tmp_path: Path, server: ScriptedServer) -> None:
    """The keyword search is exact, so "Falcon" finds no "Falcón": the ledger searches the name's other words and
    compares without accents; a name no document holds in any spelling is still refused at once."""
    text = "# Juan Carlos Falcón\n\nJuan Carlos Falcón was born in Zaragoza in 1950. He played for the Zaragoza club.\n"
    index = one_file_index(tmp_path, text)
    server.replies = [search(["Juan Carlos"]), read("hit 1"), completion("1950")]
    result = agent(index, server).run("When was Juan Carlos Falcon born?")
    assert not result.not_found and result.answer.startswith("1950")
    assert result.policy_records["evidence_ledger"] == {"names": ["Juan Carlos Falcon"], "absent": []}
    server.replies = [completion("1950")]
    refused = agent(index, server).run("When was Juan Carlos Falconetti born?")
    assert refused.not_found and refused.answer == f'{NOT_IN_DOCUMENTS}: no document names "Juan Carlos Falconetti".'


def test_a_name_written_apart_in_the_documents_is_not_refused(tmp_path: Path, server: ScriptedServer) -> None:
    """The documents write "AJCC" and "TNM" apart and "HER2-" with other words after it: no refusal at once."""
    index = one_file_index(
        tmp_path,
        "# Staging\n\nThe American Joint Committee on Cancer (AJCC) created a staging system. TNM scores describe "
        "the tumor, the nodes and metastasis. A T2 tumor is larger than 2 cm.\n\n# Therapy\n\nFor HER2 negative "
        "cancer with a BRCA mutation, PARP inhibitors are used.\n",
    )
    server.replies = [search(["T2"]), read("hit 1"), completion("Larger than 2 cm")]
    result = agent(index, server).run("What tumor size corresponds to T2 in the AJCC TNM staging?")
    assert not result.not_found and result.answer.startswith("Larger than 2 cm")
    assert result.policy_records["evidence_ledger"] == {"names": ["AJCC", "TNM"], "absent": []}
    server.replies = [search(["PARP"]), read("hit 1"), completion("PARP inhibitors")]
    result = agent(index, server).run("Which therapy is used for BRCA-mutated, HER2-negative breast cancer?")
    assert not result.not_found and result.policy_records["evidence_ledger"]["absent"] == []


def test_question_parts_and_standalone_follow_ups() -> None:
    assert question_parts("How long is the flight, and who leads the team?") == [
        "How long is the flight",
        "who leads the team",
    ]
    assert question_parts("Who founded Kestrel and Ardent?") == ["Who founded Kestrel and Ardent?"]
    earlier = [("Which office did Kestrel open in 2019?", "The Denver office [chunk offices.md#0]")]
    assert standalone("Who leads it?", earlier) == "Who leads it? (Kestrel; The Denver office)"
    assert standalone("Who leads the Denver office?", earlier) == "Who leads the Denver office?"  # says what it is
    assert standalone("Who leads Kestrel?", earlier) == "Who leads Kestrel?"  # points back to nothing
    assert standalone("Who leads it?", []) == "Who leads it?"
    refused = [("Who founded Kestrel?", 'Not in the documents (searched for: "Kestrel").')]
    assert standalone("When did it open?", refused) == "When did it open? (Kestrel)"


@given(st.text(max_size=200), st.lists(st.tuples(st.text(max_size=80), st.text(max_size=80)), max_size=3))
def test_question_rules_read_any_text(question: str, earlier: list[tuple[str, str]]) -> None:
    names = question_names(question)
    assert all(len(name) >= 3 for name in names) and len(names) == len(set(names))
    assert question_parts(question) and standalone(question, earlier).startswith(question)
