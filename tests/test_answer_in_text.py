"""answer_in_text: a short answer none of whose words is in any text the run was shown becomes "Not in the
documents"."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.harness.policies.answer_in_text import (
    Shown,
    figure_elsewhere,
    figures_in,
    figures_of,
    made_up_part,
    made_up_terms,
    no_figure,
    said_in,
    unseen_figure,
)
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


ORCHARD = [
    Shown(
        "about",
        [
            "# Riverside Community Orchard",
            "It was planted in 2009 on land leased from Aldwick Town Council, and it now has 140 fruit trees.",
            "## Membership",
            "It costs 25 pounds a year, or 10 pounds for students.",
        ],
    ),
    Shown(
        "insurance-renewal",
        ["# Insurance renewal", "The liability insurance renews on 1 April.", "The premium went up to 640 pounds."],
    ),
    Shown("harvest-2025", ["Variety: Discovery; Row: C; Trees: 8; Harvest (kg): 190; Use: eating"]),
]


def test_the_figures_of_an_answer_are_its_numbers_the_question_does_not_name() -> None:
    assert figures_in("£1,500 on 9:30, or 3.50 %; 2009.") == {"1500", "9:30", "3.5", "2009"}
    assert figures_in("one gate, twelve trees") == set() and figures_in("one gate, twelve", words=True) == {"1", "12"}
    assert figures_of("The cider press cost £640. [chunk about.md#0]", "How much did the press cost?") == ["640"]
    assert figures_of("140 trees in 2009", "How many trees were there in 2009?") == ["140"]
    assert figures_of("Not in the documents (searched for: 640).", "q?") == []  # a refusal
    assert figures_of("It was bought in 2018 with a grant from the Heritage Fruit Trust.", "q?") == []  # a sentence
    assert figures_of("Brookfield Mutual", "q?") == []


@pytest.mark.parametrize(
    ("question", "answer", "refused"),
    [
        # the figure only in a sentence about something else (nor the one before it names the press or a cost)
        ("How much did the cider press cost?", "640", ("640", "The premium went up to 640 pounds.")),
        ("How many members does the orchard have?", "140", None),  # "orchard": its heading, the sentence before
        ("How many fruit trees does the orchard have?", "140", None),  # the sentence names the trees
        ("How much does membership cost for students?", "10 pounds", None),  # the heading before it: "Membership"
        ("How many kilograms of Discovery apples were harvested?", "190", None),  # a table row as its fields
        ("In which row are the trees harvested for eating, and how many kg?", "C, 190", None),
        ("How much rent does the orchard pay?", "2019", None),  # in no sentence: answer_in_text's other check
        ("How many?", "640", None),  # the question names nothing to look for
    ],
)
def test_a_figure_read_only_about_something_else_is_refused(
    question: str, answer: str, refused: tuple[str, str] | None
) -> None:
    assert figure_elsewhere(figures_of(answer, question), question, ORCHARD) == refused


@pytest.mark.parametrize(
    ("question", "answer", "unseen"),
    [
        ("How much does membership cost for students?", "$15", "15"),  # no text shown gives 15
        ("How much does membership cost for students?", "10 pounds", None),
        ("How many fruit trees does the orchard have?", "140", None),
        ("How many gates has the orchard?", "1", None),  # "one gate": a number written as a word
        ("How many dozen eggs?", "12", None),
        ("What is the fee?", "3.50", None),  # "3.5" in the text
        ("How much did the harvest change from 2024 to 2025?", "35", None),  # worked out: no text need hold it
        ("What is the total harvest of rows A and B?", "675", None),
        ("How old was she when she moved?", "48", None),
        ("When did she move to Aldwick?", "Never", None),  # no figure
    ],
)
def test_a_figure_no_text_shown_gives_is_made_up_unless_the_question_asks_to_work_it_out(
    question: str, answer: str, unseen: str | None
) -> None:
    chunks = [Shown("a", ["It now has 140 fruit trees.", "It costs 10 pounds, or 3.5 a day."])]
    chunks.append(Shown("b", ["One gate.", "A dozen eggs."]))
    assert unseen_figure(figures_of(answer, question), question, chunks) == unseen


def test_a_figure_read_in_a_sentence_about_the_question_anywhere_stands() -> None:
    chunks = [Shown("e-mail", ["The premium went up to 640 pounds."])]
    chunks.append(Shown("minutes", ["The cider press arrived.", "It was bought for 640 pounds."]))
    assert figure_elsewhere(["640"], "How much did the cider press cost?", chunks) is None  # the sentence before
    assert figure_elsewhere(["640"], "How much did the cider press cost?", chunks[:1]) is not None


def test_a_figure_the_text_gives_as_a_word_about_the_question_stands() -> None:
    question = "What temperature is the cold room kept at?"
    index_page = Shown("lab", ["Field samples are stored in the cold room, room C310, at four degrees Celsius."])
    minutes = Shown("minutes", ["4. The budget for consumables this year is 40,000 euros."])
    assert figure_elsewhere(["4"], question, [index_page, minutes]) is None
    assert figure_elsewhere(["4"], question, [minutes]) == ("4", minutes.sentences[0])


def test_a_figure_in_the_text_of_a_second_hop_reached_by_name_stands() -> None:
    question = "When did Lothair II's mother die?"
    mother = Shown("Ermengarde of Tours", ["Ermengarde of Tours (20 March 851) was a queen of the Franks."])
    son = Shown("Lothair II", ["Lothair II was a king.", "His mother was Ermengarde of Tours."])
    assert figure_elsewhere(["851"], question, [mother, son]) is None  # the son's text names her and the question
    assert figure_elsewhere(["851"], question, [mother]) == ("851", mother.sentences[0])
    assert figure_elsewhere(["851"], question, [mother, Shown("Tours", ["Ermengarde of Tours is a name."])]) is not None
    # a question's short word with an ending: "die" in "died"
    assert figure_elsewhere(["851"], question, [Shown("x", ["She died in 851."])]) is None


@given(
    st.text(max_size=60),
    st.text(max_size=60),
    st.lists(st.builds(Shown, st.text(max_size=20), st.lists(st.text(max_size=40), max_size=4)), max_size=3),
)
def test_any_answer_question_and_text_give_a_figure_the_text_holds_or_nothing(
    answer: str, question: str, chunks: list[Shown]
) -> None:
    figures = figures_of(answer, question)
    assert all(any(c.isdigit() for c in f) for f in figures)
    found = figure_elsewhere(figures, question, chunks)
    assert found is None or (found[0] in figures and found[0] in figures_in(found[1]))


def test_a_figure_from_a_sentence_about_something_else_ends_not_in_the_documents(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from arag.corpus.build import build_index
    from conftest import fake_settings

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "about.md").write_text(
        "# The orchard\n\nThe orchard owns one cider press, bought in 2018 with a grant.\n", encoding="utf-8"
    )
    (folder / "insurance.eml").write_text(
        "From: Treasurer <t@example.org>\nSubject: Insurance renewal\n\nThe premium went up to 640 pounds.\n",
        encoding="utf-8",
    )
    build_index([folder], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    question = "How much did the cider press cost?"
    run, (policy,) = fake_run(index, "answer_in_text", question=question)
    guarded_call(run, [policy], "keyword_search", {"keywords": ["cider press", "premium"]})
    assert policy.settle(run, "2018 [chunk docs/about.md#0]") is None  # the press's own sentence holds it
    revised = policy.settle(run, "The cider press cost £640. [chunk docs/about.md#0]")
    assert revised is not None and revised.source == "not in the documents"
    assert revised.answer.startswith(
        'Not in the documents: the text read gives 640 only as "The premium went up to 640 pounds." (searched for: '
    )
    assert policy.record(run) == {
        "figure_elsewhere": {
            "answer": "The cider press cost £640.",
            "figure": "640",
            "sentence": "The premium went up to 640 pounds.",
        }
    }
    # a figure no text shown gives
    unseen = policy.settle(run, "£900 [chunk docs/about.md#0]")
    assert unseen is not None and unseen.answer.startswith("Not in the documents: no text read gives 900 (searched")
    assert policy.record(run) == {"figure_unseen": {"answer": "£900", "figure": "900"}}
    # the setting off: the answer stands
    run, (policy,) = fake_run(index, "answer_in_text", question=question, policy={"answer_in_text": {"figures": False}})
    guarded_call(run, [policy], "keyword_search", {"keywords": ["cider press", "premium"]})
    assert policy.settle(run, "The cider press cost £640. [chunk docs/about.md#0]") is None


def test_each_part_of_a_two_part_answer_is_checked_for_a_word_of_the_text() -> None:
    words = {"work", "day", "coordinator", "priya", "shah"}
    question = "To whom must an injury be reported, and what is that person's name?"
    assert made_up_part("Work day coordinator; John; [chunk rules.pdf#0]", question, words) == "John"
    assert made_up_part("Work day coordinator; Priya Shah", question, words) is None
    assert made_up_part("Work day coordinator, John", question, words) is None  # one part: a word of it is read
    assert made_up_part("Ansegisel", question, words) == "Ansegisel"


@pytest.mark.parametrize(
    ("question", "answer", "none"),
    [
        ("What is the orchard's bank account number?", "Riverside Community Orchard [chunk about.md#0]", True),
        ("How many members does the orchard have?", "The board", True),
        ("How many members does the orchard have?", "140", False),
        ("How many gates are there?", "one", False),  # a number in words
        ("How much does membership cost for students?", "Free", False),
        ("How many board members are there?", "Helen Marsh, David Okafor and Grace Liu", False),  # a list to count
        ("How much did the press cost?", "Not in the documents (searched for: press).", False),
        ("How much did the press cost?", "It was bought with a grant from the trust.", False),  # a sentence
        ("Who chairs the board?", "Helen Marsh", False),  # no figure asked for
        ("Did the press cost much?", "No", False),  # yes or no
    ],
)
def test_a_question_asking_for_a_figure_answered_with_none(question: str, answer: str, none: bool) -> None:
    assert no_figure(answer, question) is none


def test_a_name_given_for_a_number_ends_not_in_the_documents(hippo_index: Index) -> None:
    question = "What is Teutberga's phone number?"
    run, (policy,) = fake_run(hippo_index, "answer_in_text", question=question)
    guarded_call(run, [policy], "keyword_search", {"keywords": ["Teutberga"]})
    revised = policy.settle(run, "Lothair II [chunk Teutberga#0]")
    assert revised is not None and revised.answer == (
        'Not in the documents: the question asks for a figure, and "Lothair II" is none (searched for: "Teutberga").'
    )
    assert policy.record(run) == {"no_figure": "Lothair II"}
