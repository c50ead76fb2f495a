"""absent_words: a question most of whose own words no document within scope uses is answered "Not in the
documents", naming them; a question the documents speak of in its own words, or in framing words they need not
use, is not."""

from __future__ import annotations

import json
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.filters import parse_filter
from arag.harness.policies.absent_words import PROBE_CHUNKS, absent_words, question_words, used
from arag.index import Index
from arag.text import NOT_IN_DOCUMENTS, says_not_found
from conftest import fake_run, fake_settings, folder_index
from support.agents import local_json_agent
from support.scripted_server import ScriptedServer, completion

FILES = {
    "about.md": "# Harbour Vets\n\nHarbour Vets was founded in 1998 by Dr Alan Pike. Our vets see cats, dogs and "
    "rabbits at the Kingsbridge surgery. Dr Priya Shah is our dentist for small animals.\n",
    "prices.md": "# Prices\n\nA consultation costs 48 pounds. A microchip costs 25 pounds. The current rates apply "
    "from January.\n",
    "staff.csv": "name,role,joined\nGemma Holt,Head nurse,2015\nPriya Shah,Vet,2020\n",
}


@pytest.fixture(scope="module")
def practice(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return folder_index(tmp_path_factory, "vets", FILES)


def run_over(index: Index, where: str | None = None) -> types.SimpleNamespace:
    scope = parse_filter(where) if where else None
    return types.SimpleNamespace(toolkit=types.SimpleNamespace(index=index, scope=scope))


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("What is the company's dental insurance provider?", ["dental", "insurance", "provider"]),
        # the kind of thing asked (which vet) and framing words (percentage, change, between, year) are not counted
        ("Which vet at the practice specialises in dentistry?", ["practice", "specialises", "dentistry"]),
        ("What was the percentage change in revenue between 2018 and 2019?", ["revenue"]),
        ("What is the job title of the person who wrote the postmortem?", ["wrote", "postmortem"]),
        ("How many paid sick days do employees get?", ["paid", "sick", "employees"]),
        ("Who is Kestrel's chief executive officer?", ["kestrel", "chief", "executive", "officer"]),
    ],
)
def test_the_words_a_question_is_about(question: str, words: list[str]) -> None:
    assert question_words(question) == words


def test_a_word_is_used_where_a_word_starts_like_it(practice: Index) -> None:
    run = run_over(practice)
    assert used(run, "dentistry")  # "dentist"
    assert used(run, "microchips") and used(run, "founding")  # "microchip", "founded"
    assert not used(run, "rent")  # only inside "current"
    assert not used(run, "parking")
    assert not used(run_over(practice, "path=*prices.md"), "cats")


@pytest.mark.parametrize(
    ("question", "where", "absent"),
    [
        ("How many parking spaces does the Kingsbridge surgery have?", None, ["parking", "spaces"]),
        ("What is the practice's VAT registration number?", None, ["practice", "vat", "registration"]),
        # asked of one file, about what another holds
        ("Who founded Harbour Vets?", "path=*prices.md", ["founded", "harbour", "vets"]),
        # the documents speak of it: one word of three missing, or said by its stem, or only framing words missing
        ("How much does a microchip cost for a puppy?", None, []),
        ("Which vet specialises in dentistry?", None, []),
        ("How much does a microchip cost?", None, []),
        ("What was the percentage change in the price of a consultation between 2025 and 2026?", None, []),
        ("Who founded Harbour Vets?", None, []),
        ("Why?", None, []),
    ],
)
def test_a_question_most_of_whose_words_no_document_uses(
    practice: Index, question: str, where: str | None, absent: list[str]
) -> None:
    assert absent_words(run_over(practice, where), question) == absent  # type: ignore[arg-type]


def test_a_stem_in_many_chunks_is_taken_as_used_without_reading_them(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("many") / "many"
    folder.mkdir()
    for i in range(PROBE_CHUNKS + 2):
        (folder / f"note{i}.md").write_text(f"Note {i}: the current plan stands.\n", encoding="utf-8")
    build_index([folder], folder.parent / "idx", fake_settings())
    index = Index.open(folder.parent / "idx", threads=1)
    assert used(run_over(index), "rent")  # "current" in every chunk: not read one by one
    assert not used(run_over(index), "parking")


@given(st.text(max_size=200))
def test_any_question_gives_its_words_without_failing(question: str) -> None:
    words = question_words(question)
    assert len(words) == len(set(words))
    assert all(len(w) >= 3 and w == w.lower() and not any(c.isdigit() for c in w) for w in words)


@given(question=st.text(max_size=120))
def test_any_question_is_checked_against_the_documents_without_failing(practice: Index, question: str) -> None:
    absent = absent_words(run_over(practice), question)  # type: ignore[arg-type]
    assert set(absent) <= set(question_words(question))


def test_the_policy_asks_for_the_answer_at_once_and_says_what_no_document_uses(practice: Index) -> None:
    question = "How many parking spaces does the Kingsbridge surgery have?"
    run, (policy,) = fake_run(practice, "absent_words", question=question)
    assert policy.allow(run, None).final  # type: ignore[arg-type]
    revised = policy.revise(run, "12 [chunk vets/about.md#0]")
    assert revised.answer == NOT_IN_DOCUMENTS + ': no document uses "parking" or "spaces", the question\'s words.'
    assert revised.source == "not in the documents" and says_not_found(revised.answer)
    assert policy.record(run) == {"absent": ["parking", "spaces"]} and policy.times_acted == 1
    # a refusal naming what no document holds stands; one that names nothing is made to
    assert policy.revise(run, NOT_IN_DOCUMENTS + ': no document names "Tokyo".') is None
    refusal = policy.revise(run, NOT_IN_DOCUMENTS + " (searched for: nothing yet).")
    assert refusal is not None and refusal.answer == revised.answer
    # a question the documents speak of: nothing
    run, (policy,) = fake_run(practice, "absent_words", question="How much does a microchip cost?")
    assert policy.allow(run, None) is None and policy.revise(run, "25 pounds") is None  # type: ignore[arg-type]
    assert policy.record(run) == {}


def read(chunk_id: str) -> dict[str, object]:
    return completion(json.dumps({"found": "x", "chunk_read": [chunk_id]}))


def answer(text: str) -> dict[str, object]:
    return completion(json.dumps({"found": "x", "answer": text}))


def test_a_question_about_what_no_document_mentions_is_answered_so(practice: Index, server: ScriptedServer) -> None:
    """End to end on the scripted server: asked for its answer at once (no tool offered), the model's nearest name
    becomes "Not in the documents" naming the words; without the policy the nearest name stands."""
    question = "Which vet at Harbour Vets is the parking warden?"
    server.replies = [answer("Dr Priya Shah [chunk vets/about.md#0]")]
    result = local_json_agent(practice, server, max_steps=4).run(question)
    assert result.stop_reason == "answered" and result.not_found and result.answer_from == "not in the documents"
    assert result.answer == NOT_IN_DOCUMENTS + ': no document uses "parking" or "warden", the question\'s words.'
    assert len(server.requests) == 1 and "semantic_search" not in json.dumps(server.requests[0]["response_format"])
    assert result.policies_acted["absent_words"] == 1
    assert result.policy_records["absent_words"] == {"absent": ["parking", "warden"]}
    server.replies = [read("vets/about.md#0"), answer("Dr Priya Shah [chunk vets/about.md#0]")]
    server.requests[:] = []
    without = local_json_agent(practice, server, max_steps=4, policies=["-absent_words"]).run(question)
    assert without.answer == "Dr Priya Shah [chunk vets/about.md#0]" and not without.not_found
    assert "semantic_search" in json.dumps(server.requests[0]["response_format"])
