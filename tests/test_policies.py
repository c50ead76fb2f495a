"""Each policy on its own, on a RunState with no model behind it: the effect each hook returns (the loop's end-to-end
tests are test_agent.py; the contract's own guarantees are test_harness.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.agent.actions import Action
from arag.corpus.build import build_index
from arag.errors import ConfigError
from arag.harness import (
    POLICIES,
    Base,
    Harness,
    Hold,
    NextAction,
    Policy,
    ReadInstead,
    Refuse,
    Reread,
    Revised,
    Stands,
    load_profile,
    register,
    resolve,
)
from arag.harness.policies.answer_check import CHECK_PROMPT, check_text
from arag.harness.policies.grounded_answer import mend_citations
from arag.harness.policies.next_hop import HOP, PERSON_QUESTION, asks_for, bare_name
from arag.harness.policies.phrase_answer import PHRASE_ANSWER
from arag.harness.reads import SENTENCE_CHARS, Evidence, closest_sentences, question_scores, reads_left, unread_hits
from arag.harness.text import says_nothing
from arag.harness.view import CompactView, resolved
from arag.index import Index
from arag.settings import AgentSettings, IndexSettings
from arag.text import says_not_found
from arag.tools.toolkit import PAPER_TOOLS as TOOL_NAMES
from arag.tools.toolkit import ToolCall
from arag.tools.view import shorten
from conftest import fake_run, guarded_call


def spec_after(run, policies, final: bool = False, constrained: bool = True) -> NextAction:  # type: ignore[no-untyped-def]
    """The next action as the loop would compose it from these policies."""
    return Harness(policies).next_action(run, Base(() if final else TOOL_NAMES, constrained, final))


def fields_of(spec: NextAction) -> dict[str, object]:
    return {f.name: f for f in spec.fields}


def acted(policies: list[Policy]) -> dict[str, int]:
    return Harness(policies).acted()


def test_every_policy_is_documented_and_in_a_profile_or_measured_out() -> None:
    bundled = set(load_profile("compact").policies) | set(load_profile("paper").policies)
    for name, cls in POLICIES.items():
        assert cls.name == name and cls.summary and cls.__doc__ and len(cls.__doc__) > 80, name
    assert bundled <= set(POLICIES)


def test_a_policy_is_switched_on_and_off_by_name() -> None:
    def bundle(*switches: str) -> list[str]:
        return [cls.name for cls in resolve(AgentSettings(policies=list(switches)), local=True).policies]

    compact = load_profile("compact").policies
    assert bundle("+option_check") == [*compact, "option_check"]
    assert sorted(bundle("-plan", "+plan")) == sorted(compact)  # off and on again
    assert "plan" not in bundle("-plan")
    paper = [cls.name for cls in resolve(AgentSettings(policies=["+plan"]), local=False).policies]
    assert paper == ["search_first", "plan"]
    with pytest.raises(ConfigError, match="not \\+NAME or -NAME of a known policy"):
        bundle("+no_such_policy")


def test_a_policy_its_user_registered_joins_at_the_end() -> None:
    class Tally(Policy):
        """Counts nothing and holds nothing: a policy a user registered, unknown to the hook order; it runs
        after every packaged one."""

        name = "tally_for_test"
        summary = "a user's policy"

    register(Tally)
    try:
        names = [cls.name for cls in resolve(AgentSettings(policies=["+tally_for_test"]), local=True).policies]
        assert names[-1] == "tally_for_test" and names[:-1] == load_profile("compact").policies
        # each hook asks it after every policy the order of compose.py names
        harness = resolve(AgentSettings(policies=["+tally_for_test"]), local=True).harness()
        from arag.harness.compose import in_order

        assert in_order(harness.policies, "hold")[-1].name == "tally_for_test"
    finally:
        del POLICIES["tally_for_test"]


def test_search_first_offers_only_searches_on_the_first_constrained_action(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "search_first")
    first = spec_after(run, policies)
    assert first.tools == ("keyword_search", "semantic_search") and not first.answer
    assert spec_after(run, policies, constrained=False).tools == TOOL_NAMES  # native calls: every tool
    run.steps = 1
    assert spec_after(run, policies).tools == TOOL_NAMES and spec_after(run, policies).answer


def test_plan_is_asked_first_and_holds_an_answer_before_its_searches_once(people_index: Index) -> None:
    run, policies = fake_run(people_index, "plan")
    (plan,) = policies
    assert "plan" in fields_of(spec_after(run, policies))
    run.record_action(Action([], "", "", {"plan": ["films of Fortunella", "its director's town"]}))
    guarded_call(run, policies, "keyword_search", {"keywords": ["Fortunella"]})
    run.steps = 1
    assert "plan" not in fields_of(spec_after(run, policies))
    hold = plan.on_answer(run, "Eduardo De Filippo")
    assert isinstance(hold, Hold) and 'continue with step 2 ("its director\'s town")' in hold.message
    assert plan.on_repeat(run, ToolCall("keyword_search", {"keywords": ["Fortunella"]})) == Stands("Eduardo De Filippo")
    assert plan.on_answer(run, "Naples") is None  # once per question
    guarded_call(run, policies, "keyword_search", {"keywords": ["Town 7"]})  # a new call: the held answer is void
    assert plan.on_repeat(run, ToolCall("keyword_search", {"keywords": ["Town 7"]})) is None


def test_plan_counts_a_search_that_found_both_items_as_two(people_index: Index) -> None:
    run, policies = fake_run(people_index, "plan")
    run.record_action(Action([], "", "", {"plan": ["year of Fortunella", "founding of Town 7"]}))
    run.toolkit.view = CompactView(hints=True)
    result = guarded_call(run, policies, "keyword_search", {"keywords": ["Fortunella", "Town 7"]})
    assert result.pair and policies[0].on_answer(run, "Fortunella") is None


def test_found_notes_make_the_note_required_on_calls_on_the_answer_or_both(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "found_notes")
    (note,) = spec_after(run, policies).fields
    assert note.name == "found" and note.place == "note" and note.on_calls and note.on_answer
    run, policies = fake_run(hippo_index, "found_notes", policy={"found_notes": {"on_calls": False}})
    (note,) = spec_after(run, policies).fields
    assert not note.on_calls and note.on_answer
    run, policies = fake_run(hippo_index, "found_notes", policy={"found_notes": {"on_answer": False}})
    (note,) = spec_after(run, policies).fields
    assert note.on_calls and not note.on_answer
    with pytest.raises(ConfigError, match="switch the policy off instead"):
        fake_run(hippo_index, "found_notes", policy={"found_notes": {"on_calls": False, "on_answer": False}})
    with pytest.raises(ConfigError, match=r"agent\.policy: no_such_policy is no policy"):
        fake_run(hippo_index, policy={"no_such_policy": {}})
    with pytest.raises(ConfigError, match=r"agent\.policy\.short_answer\.max_chars"):
        fake_run(hippo_index, policy={"short_answer": {"max_chars": 1}})


def test_short_answer_caps_the_answer_and_keeps_whole_sentences(hippo_index: Index) -> None:
    run, (policy,) = fake_run(hippo_index, "short_answer", policy={"short_answer": {"max_chars": 40}})
    assert spec_after(run, [policy]).answer_chars == 40
    harness = Harness([policy])
    assert harness.revise(run, "Thionville [chunk A#0]. She married Lothair in").answer == "Thionville [chunk A#0]."
    assert harness.revise(run, "Thionville").answer == "Thionville" and policy.revise(run, "Thionville") is None


@pytest.mark.parametrize(
    ("question", "options", "yes_no"),
    [
        ("Who died first, Hucbert or Lothair II?", ["Hucbert", "Lothair II"], False),
        ("Did Hucbert outlive Lothair II?", [], True),
        ("Who was Hucbert?", [], False),
    ],
)
def test_choice_answers_constrain_the_answer_to_the_question(
    hippo_index: Index, question: str, options: list[str], yes_no: bool
) -> None:
    run, policies = fake_run(hippo_index, "choice_answers", question=question)
    spec = spec_after(run, policies, final=True)
    assert list(spec.options) == options and spec.yes_no is yes_no


def test_new_text_reads_name_unread_hits_then_other_chunks_shown(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "new_text_reads")
    assert spec_after(run, policies).readable == ()  # nothing shown yet: nothing to read
    search = guarded_call(run, policies, "keyword_search", {"keywords": ["Lothair"], "top_k": 3})
    assert spec_after(run, policies).readable == ("hit 1", "hit 2", "hit 3")
    read = guarded_call(run, policies, "chunk_read", {"chunk_ids": ["hit 1"]})
    readable = spec_after(run, policies).readable or []
    assert readable[:2] == ("hit 2", "hit 3") and search.hits[0] not in readable
    assert set(readable[2:]) == set(read.neighbours) - set(search.hits) - run.read_ids


def test_read_allowance_closes_a_search_after_two_of_its_hits_were_read(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "new_text_reads", "read_allowance")
    first = guarded_call(run, policies, "keyword_search", {"keywords": ["Lothair"], "top_k": 3})
    guarded_call(run, policies, "chunk_read", {"chunk_ids": ["hit 1"]})
    assert reads_left(run) == 1 and "hit 2" in (spec_after(run, policies).readable or [])
    guarded_call(run, policies, "chunk_read", {"chunk_ids": ["hit 2"]})
    readable = spec_after(run, policies).readable or []
    assert reads_left(run) == 0 and unread_hits(run) == []
    assert not [r for r in readable if r.startswith("hit ") or r in first.hits]
    # a new search topped by chunks read before it still offers its unread hits
    guarded_call(run, policies, "keyword_search", {"keywords": ["Lothair"], "top_k": 4})
    assert reads_left(run) == 2 and (spec_after(run, policies).readable or [])[0].startswith("hit ")
    # without new_text_reads the closed search's hits are left out of the ids any read may name
    alone, (allowance,) = fake_run(hippo_index, "read_allowance")
    closed = guarded_call(alone, [allowance], "keyword_search", {"keywords": ["Lothair"], "top_k": 3})
    guarded_call(alone, [allowance], "chunk_read", {"chunk_ids": ["hit 1", "hit 2"]})
    assert set(spec_after(alone, [allowance]).readable or ()) == set(alone.offered) - set(closed.hits)


def test_read_before_answer_reads_the_top_hits_once_per_search(hippo_index: Index) -> None:
    run, (policy,) = fake_run(hippo_index, "read_before_answer")
    assert policy.on_answer(run, "x") is None  # nothing searched
    search = guarded_call(run, [policy], "keyword_search", {"keywords": ["Lothair"], "top_k": 3})
    hold = policy.on_answer(run, "x")
    assert isinstance(hold, Hold) and hold.read == list(search.hits[:2]) and hold.why
    assert policy.on_answer(run, "x") is None
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["hit 1"]})
    guarded_call(run, [policy], "keyword_search", {"keywords": ["Waldrada"]})
    assert isinstance(policy.on_answer(run, "x"), Hold)  # a new search: once more


def test_option_check_holds_an_answer_with_one_option_unread(hippo_index: Index) -> None:
    run, (policy,) = fake_run(hippo_index, "option_check", question="Who died first, Hucbert or Anne of Kiev?")
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Hucbert#0"]})
    hold = policy.on_answer(run, "Hucbert")
    assert isinstance(hold, Hold) and 'keyword_search for "Anne of Kiev"' in hold.message
    assert policy.on_answer(run, "Hucbert") is None  # once


def test_repeat_reads_read_what_the_search_allows_instead_of_refusing(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "read_allowance", "repeat_reads")
    call = ToolCall("keyword_search", {"keywords": ["Lothair"], "top_k": 3})
    search = guarded_call(run, policies, "keyword_search", call.arguments)
    outcome = policies[1].on_repeat(run, call)
    assert outcome == ReadInstead(tuple(search.hits[:2]), "Instead, here are the best 2 hits you have not read yet:")
    assert not run.read_ids  # the policy reads nothing itself: the loop makes the read
    run.harness_read(list(outcome.chunk_ids))
    assert policies[1].on_repeat(run, call) is None  # the allowance is used up: nothing to read instead


def test_switch_search_blocks_the_repeated_tool_for_one_action_every_time(hippo_index: Index) -> None:
    run, (policy,) = fake_run(hippo_index, "switch_search")
    call = ToolCall("keyword_search", {"keywords": ["Hucbert"]})
    outcome = policy.on_repeat(run, call)
    how = "semantic_search with a few words describing the fact you still need."
    assert outcome == Refuse(f"Search another way now: {how}")
    assert spec_after(run, [policy]).tools == ("semantic_search", "chunk_read")
    assert spec_after(run, [policy]).tools == TOOL_NAMES  # one action only
    assert policy.on_repeat(run, ToolCall("chunk_read", {"chunk_ids": ["a"]})) is None
    # every fruitless repeat leads on; once something was read, its sentence closest to the question is named
    run.harness_read(["Hucbert#0"])
    again = policy.on_repeat(run, call)
    assert isinstance(again, Refuse) and again.says.startswith('Closest to the question in what you read: "')
    assert "[chunk Hucbert#0]. If this answers the question, give the final answer now" in again.says
    assert spec_after(run, [policy]).tools == ("semantic_search", "chunk_read")
    assert acted([policy]) == {"switch_search": 2}


def test_stall_answer_ends_the_search_at_the_first_fruitless_repeat(hippo_index: Index) -> None:
    run, _ = fake_run(hippo_index, stall_limit=3)
    assert run.limits.stall_limit == 3
    run, _ = fake_run(hippo_index, "stall_answer", stall_limit=3)
    assert run.limits.stall_limit == 1


@pytest.mark.parametrize(
    ("answer", "nothing"),
    [
        ("nothing yet", True),
        ("Nothing yet.", True),
        ("unknown [chunk A#0]", True),
        ("yes/no", True),
        ("I do not have enough information to answer.", True),
        ("", True),
        ("[chunk A#0]", True),
        ("Basal cell carcinoma [chunk Medical#0]", False),
        ("No, Hucbert died first", False),
        ("None of them", False),
    ],
)
def test_says_nothing(answer: str, nothing: bool) -> None:
    assert says_nothing(answer) is nothing


def test_citations_are_mended_to_the_chunk_they_garble_or_left_out() -> None:
    shown = {"Medical#125", "Medical#12", "Lothair II#0"}
    assert mend_citations("BCC [chunk Medical#125#0]", shown) == "BCC [chunk Medical#125]"
    assert mend_citations("BCC [chunk Medical#125]", shown) == "BCC [chunk Medical#125]"
    assert mend_citations("BCC [chunk Medical#1255]", shown) == "BCC"  # not a garble of #125 or #12
    assert mend_citations("X [chunk Lothair II#0, Made up#3]", shown) == "X [chunk Lothair II#0]"
    assert mend_citations("no citation", shown) == "no citation"


@given(st.text(max_size=80), st.sets(st.sampled_from(["A#0", "A#1", "B (film)#0", "12"]), max_size=3))
def test_mended_citations_only_name_chunks_shown(answer: str, shown: set[str]) -> None:
    from arag.citations import CITATION

    mended = mend_citations(answer, shown)
    cited = [part.strip() for group in CITATION.findall(mended) for part in group.split(",")]
    assert all(c.removeprefix("chunk ").strip() in shown for c in cited if c.lower().startswith("chunk"))


def test_grounded_answer_holds_a_placeholder_once_then_answers_with_the_closest_sentence(hippo_index: Index) -> None:
    run, (policy,) = fake_run(hippo_index, "grounded_answer", question="When did Ermengarde of Tours die?")
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})
    assert policy.revise(run, "nothing yet").answer == "nothing yet"  # the model gets another chance first
    hold = policy.on_answer(run, "nothing yet")
    assert isinstance(hold, Hold) and hold.message.startswith('"nothing yet" is not an answer')
    instead = policy.revise(run, "nothing yet")
    best = closest_sentences(run, ["Ermengarde of Tours#0"])[0]
    assert instead.answer == f"{best.sentence} [chunk Ermengarde of Tours#0]"
    assert instead.source == "the closest sentence read" and run.answer_from == "model"  # the loop records it
    assert policy.on_answer(run, instead.answer) is None
    # at the step limit there is no second chance
    run, (policy,) = fake_run(hippo_index, "grounded_answer", question="When did Ermengarde of Tours die?")
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})
    run.stop_reason = "max_steps"
    assert policy.revise(run, "nothing yet").answer.endswith("[chunk Ermengarde of Tours#0]")
    # a refusal is an answer: held once like a placeholder (on_answer), it stands at the end, never the closest sentence
    assert policy.revise(run, "unknown") == Revised("unknown")
    assert policy.revise(run, "The documents do not say.") == Revised("The documents do not say.")


def test_grounded_answer_takes_a_bare_chunk_id_for_no_answer(hippo_index: Index) -> None:
    from arag.harness.text import says_nothing

    assert says_nothing("Medical#125") and says_nothing("chunk Lothair II#0, Hucbert#0")
    assert says_nothing("The answer is in Ermengarde of Tours#0.")
    assert not says_nothing("20 March 851 [chunk Ermengarde of Tours#0]") and not says_nothing("C# 4")
    run, (policy,) = fake_run(hippo_index, "grounded_answer", question="When did Ermengarde of Tours die?")
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})
    hold = policy.on_answer(run, "Ermengarde of Tours#0")
    assert isinstance(hold, Hold)  # once: the model may still answer
    run.stop_reason = "max_steps"
    instead = policy.revise(run, "Ermengarde of Tours#0")
    assert instead.source == "the closest sentence read" and instead.answer.endswith("[chunk Ermengarde of Tours#0]")


def test_closest_sentence_names_the_read_sentence_nearest_the_question(hippo_index: Index) -> None:
    question = "Where did Ermengarde of Tours marry Lothair I?"
    run, policies = fake_run(hippo_index, "closest_sentence", question=question)
    result = run.call_tool(ToolCall("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0", "Hucbert#0"]}))
    note = policies[0].after_result(run, result)
    # brute force: every sentence of both chunks against the question
    embedder = hippo_index.embedder
    records = hippo_index.read(["Ermengarde of Tours#0", "Hucbert#0"])[0]
    sentences = [s for record in records for s in hippo_index.sentences(record)]
    cosines = embedder.embed_documents(sentences) @ embedder.embed_query(question)
    best = " ".join(sentences[int(np.argmax(cosines))].split())
    assert note is not None and "\n" not in note
    assert note.startswith(f'Closest to the question: "{best}') and "If this answers the question" in note
    search = run.call_tool(ToolCall("keyword_search", {"keywords": ["Lothair"]}))
    assert policies[0].after_result(run, search) is None  # searches show snippets; only reads are named


def test_opening_search_searches_a_question_that_names_no_document(hippo_index: Index) -> None:
    question = "When did the abbot's sister marry the king?"
    assert hippo_index.titles_named_in(question) == []  # the premise
    run, (policy,) = fake_run(hippo_index, "opening_search", question=question)
    call = policy.opening(run)
    assert call == ToolCall("semantic_search", {"query": question})
    result = run.harness_call(call)
    assert run.searches and run.searches[0].tool == "semantic_search" and not run.searches[0].by_model
    assert result.hits and run.is_repeat(ToolCall("semantic_search", {"query": question}))  # the model's: a repeat
    keyword_only, (policy,) = fake_run(hippo_index, "opening_search", question=question)
    keyword_only.toolkit.enabled = ["keyword_search", "chunk_read"]
    assert policy.opening(keyword_only) is None  # no semantic search to make


@pytest.mark.parametrize(
    "question", ["When did Ermengarde of Tours die?", "Who was HUCBERT's sister?", "What did waldrada do?"]
)
def test_opening_search_leaves_a_question_that_names_a_document_to_the_model(hippo_index: Index, question: str) -> None:
    run, (policy,) = fake_run(hippo_index, "opening_search", question=question)
    assert hippo_index.titles_named_in(question) and policy.opening(run) is None


@pytest.mark.parametrize("on_answer", [False, True])
def test_plan_counts_the_loops_own_searches_when_asked_on_the_answer_too(hippo_index: Index, on_answer: bool) -> None:
    question = "Who was the abbot's sister?"
    settings = {"policy": {"plan": {"on_answer": on_answer}}}
    run, (opening, plan) = fake_run(hippo_index, "opening_search", "plan", question=question, **settings)
    call = opening.opening(run)
    assert call is not None
    run.harness_call(call)
    assert fields_of(spec_after(run, [plan]))["plan"].on_answer is on_answer  # type: ignore[attr-defined]
    run.record_action(Action([], "Teutberga", "", {"plan": ["the abbot's sister"]}))
    held = plan.on_answer(run, "Teutberga")
    assert (held is None) is on_answer  # the loop's search counts as the plan's one search only with on_answer


def test_a_bare_yes_or_no_says_nothing_only_to_a_question_that_is_not_yes_no() -> None:
    assert says_nothing("yes", yes_no=False) and says_nothing("No.", yes_no=False)
    assert not says_nothing("Yes", yes_no=True) and not says_nothing("No, she died first", yes_no=False)


def test_search_first_leaves_the_first_action_free_after_the_loops_own_search(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "search_first")
    run.harness_call(ToolCall("semantic_search", {"query": "Hucbert"}))
    spec = spec_after(run, policies)
    assert spec.tools == TOOL_NAMES and spec.answer and "search_first" not in acted(policies)


def test_titles_named_in_a_question_are_whole_words_of_document_titles(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from arag.corpus.build import build_index
    from conftest import fake_settings

    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("Blue Lake (film).md", "Ana Ruiz.txt", "ok.md", "release notes 2.0.md"):
        (folder / name).write_text(f"{name} is a note. It has two sentences.", encoding="utf-8")
    build_index([folder], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    assert index.titles_named_in("Who directed BLUE LAKE?") == ["blue lake"]  # "(film)" and ".md" aside
    assert index.titles_named_in("Where was Ana Ruiz's father born?") == ["ana ruiz"]  # a possessive
    assert index.titles_named_in("What is in the release notes 2.0?") == ["release notes 2 0"]
    assert index.titles_named_in("Is Blue Lakes a film?") == []  # whole words only
    assert index.titles_named_in("Is it ok?") == []  # a title under 3 characters names nothing


@pytest.mark.parametrize(
    ("sentence", "asks"),
    [
        ("About bone cancer 5 What is bone cancer?", True),  # a guide's page header run into its heading
        ("What tests are needed for starting treatment?", True),
        ("Is it cancer?", True),
        ('I Like Control "I Like Control" is a song by DJ Clue?', False),  # a statement whose name ends in "?"
        ("Bone cancer can spread to the lungs.", False),
        ("Who knows.", False),
    ],
)
def test_a_sentence_that_asks_is_told_from_one_that_states(sentence: str, asks: bool) -> None:
    from arag.harness.text import asks_a_question

    assert asks_a_question(sentence) is asks


@given(st.text(max_size=400))
def test_only_a_sentence_ending_in_a_question_mark_asks(sentence: str) -> None:
    from arag.harness.text import asks_a_question

    assert asks_a_question(sentence) is False or sentence.rstrip().endswith("?")


@pytest.mark.parametrize(
    ("answer", "question", "restates"),
    [
        (
            "Metastatic breast cancer (MBC) [chunk Medical#129]",
            "What is the definition of metastatic breast cancer (MBC)?",
            True,
        ),
        (
            "CNS lymphoma in the eye",
            "Which diagnostic method is used to assess eye involvement in primary CNS lymphoma?",
            True,
        ),
        ("Gottorp", "Where was the husband of Joanna Elisabeth Of Holstein-Gottorp born?", True),  # a part of a name
        ("CA-125", "Which tumor markers are used in ovarian cancer diagnosis?", False),
        ("Polypectomy", "What procedure is used to remove polyps during colonoscopy?", False),  # a new word, not a stem
        (
            "Tumor markers are used in ovarian cancer diagnosis.",
            "Which tumor markers are used in ovarian cancer diagnosis?",
            True,
        ),
        ("In 1851.", "Did she die in 1851?", True),  # a number asked about is the question's too
        ("1851", "When did she die?", False),
        ("", "When did she die?", False),  # an empty answer is says_nothing's to judge
        ("[chunk A#0]", "When did she die?", False),
    ],
)
def test_an_answer_that_restates_the_question_names_nothing_it_did_not(
    answer: str, question: str, restates: bool
) -> None:
    from arag.harness.text import restates_question

    assert restates_question(answer, question) is restates


@given(question=st.text(max_size=200), picks=st.lists(st.integers(min_value=0), min_size=1, max_size=6))
def test_words_of_the_question_restate_it_and_one_word_more_does_not(question: str, picks: list[int]) -> None:
    from arag.harness.text import restates_question
    from arag.verification import key_terms

    asked = key_terms(question)
    if asked:
        some = " ".join(asked[i % len(asked)] for i in picks)
        assert restates_question(some, question)
        assert restates_question(f"{some} [chunk X#0]", question)  # citations aside
    novel = next(w for w in ("zyxq", "qxzy", "xqzy") if w not in asked)
    assert not restates_question(" ".join([*asked[:3], novel]), question)


def test_the_closest_sentence_is_a_statement_not_a_heading_that_repeats_the_question(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("guide")
    text = "About bone cancer. What is bone cancer? Bone cancer can spread to the lungs. It starts in bone cells."
    (folder / "corpus.json").write_text(json.dumps([{"title": "Bone", "text": text}]), encoding="utf-8")
    build_index([folder / "corpus.json"], folder / "idx", IndexSettings(embedder="fake", threads=1))
    index = Index.open(folder / "idx", threads=1)
    run, _ = fake_run(index, question="What is bone cancer?")
    chunk_id = "Bone#0"
    sentences, scores = question_scores(run, index.read([chunk_id])[0][0])
    assert sentences[int(np.argmax(scores))] == "What is bone cancer?"  # the heading is nearest, by far
    closest = closest_sentences(run, [chunk_id], k=3)
    assert closest and all(not e.sentence.endswith("?") for e in closest)
    assert [e.sentence for e in closest] == sorted(
        (s for s in sentences if not s.endswith("?")), key=lambda s: -float(scores[sentences.index(s)])
    )[:3]
    # a chunk of nothing but questions still gives its closest one: evidence of some kind beats none
    (folder / "q.json").write_text(json.dumps([{"title": "Q", "text": "What is it? Why?"}]), encoding="utf-8")
    build_index([folder / "q.json"], folder / "qidx", IndexSettings(embedder="fake", threads=1))
    only_questions = Index.open(folder / "qidx", threads=1)
    run, _ = fake_run(only_questions, question="What is it?")
    assert closest_sentences(run, ["Q#0"])[0].sentence.endswith("?")


def test_a_sentence_opening_with_a_pronoun_is_scored_and_named_with_what_it_stands_for(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("company")
    text = (
        "Payments are hard. Kestrel builds payment infrastructure for small online shops. It was founded in 2014 by "
        "Ana Duarte and Sam Whitfield in Denver. Kestrel is a private company."
    )
    (folder / "corpus.json").write_text(json.dumps([{"title": "About", "text": text}]), encoding="utf-8")
    build_index([folder / "corpus.json"], folder / "idx", IndexSettings(embedder="fake", threads=1))
    index = Index.open(folder / "idx", threads=1)
    sentences = index.sentences(index.read(["About#0"])[0][0])
    assert sentences[1:] == [
        "Kestrel builds payment infrastructure for small online shops.",
        "It was founded in 2014 by Ana Duarte and Sam Whitfield in Denver.",
        "Kestrel is a private company.",
    ]
    question = "Who founded Kestrel?"
    run, policies = fake_run(
        index, "closest_sentence", question=question, policy={"closest_sentence": {"pronouns": True}}
    )
    # brute force of the rule: a pronoun-opening sentence scores the better of itself and "<name before>: itself"
    embedder = index.embedder
    own = embedder.embed_documents(sentences) @ embedder.embed_query(question)
    resolved = embedder.embed_documents([f"Kestrel: {sentences[2]}"]) @ embedder.embed_query(question)
    expected = [float(own[0]), float(own[1]), max(float(own[2]), float(resolved[0])), float(own[3])]
    plain = closest_sentences(run, ["About#0"], k=4)  # the default: each sentence alone
    assert sorted(e.score for e in plain) == pytest.approx(sorted(float(c) for c in own))
    assert not any(e.antecedent for e in plain)
    closest = closest_sentences(run, ["About#0"], k=4, pronouns=True)
    assert sorted(e.score for e in closest) == pytest.approx(sorted(expected))
    assert [e.antecedent for e in closest if e.sentence == sentences[2]] == [sentences[1]]
    assert all(not e.antecedent for e in closest if e.sentence != sentences[2])  # only a pronoun has one
    best = closest[0]
    assert best.sentence == sentences[int(np.argmax(expected))]
    result = run.call_tool(ToolCall("chunk_read", {"chunk_ids": ["About#0"]}))
    note = policies[0].after_result(run, result)
    assert note is not None and f'"{best.shown(SENTENCE_CHARS)}"' in note
    assert best.sentence == sentences[2]
    assert best.shown(SENTENCE_CHARS) == f"{sentences[1]} {sentences[2]}"  # named after what "It" stands for


@pytest.mark.parametrize(
    ("before", "embedded"),
    [
        ("Kestrel builds payment infrastructure.", "Kestrel: It was X."),
        ("John Smith (1900–1950) was an English actor.", "John Smith: It was X."),
        ("The Bank of England was founded in 1694.", "The Bank of England: It was X."),
        ("In 2010 the firm moved.", "In 2010 the firm moved. It was X."),  # no name opens it: the sentence
        ("the river rises here.", "the river rises here. It was X."),
    ],
)
def test_a_pronoun_stands_for_the_name_that_opens_the_sentence_before(before: str, embedded: str) -> None:
    assert resolved(before, "It was X.") == embedded


@given(st.text(max_size=400), st.text(max_size=400), st.integers(min_value=20, max_value=400))
def test_a_named_sentence_keeps_within_its_room_and_its_antecedent_gives_way_first(
    sentence: str, antecedent: str, limit: int
) -> None:
    evidence = Evidence(0.5, sentence, "c#0", antecedent)
    shown = evidence.shown(limit)
    alone = shorten(sentence, limit)
    assert shown.endswith(alone)
    assert len(shown) <= max(limit, len(alone)) + 2  # shorten's " …"
    if len(shown) > len(alone):
        assert shown[: len(shown) - len(alone)].strip()  # an antecedent is shown whole or cut, never blank


def test_phrase_answer_reads_the_phrase_off_the_text_read_this_question(hippo_index: Index) -> None:
    question = "When did Ermengarde of Tours die?"
    run, (policy,) = fake_run(hippo_index, "phrase_answer", question=question)
    sentence = "Ermengarde of Tours was a queen of the Franks."
    assert policy.reread(run, sentence) is None  # nothing read: the model's answer stands
    guarded_call(run, [policy], "keyword_search", {"keywords": ["Ermengarde"]})
    assert policy.reread(run, sentence) is None  # snippets are not a read
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})
    # a short answer is the phrase the prompt asks for: it stands (citations are not words)
    assert policy.reread(run, "20 March 851 [chunk Ermengarde of Tours#0] [chunk Hucbert#0]") is None
    reread = policy.reread(run, sentence)
    assert isinstance(reread, Reread)
    for asks_options in ("Did Ermengarde of Tours die in 851?", "Who died first, Ermengarde of Tours or Hucbert?"):
        other, (same,) = fake_run(hippo_index, "phrase_answer", question=asks_options)
        guarded_call(other, [same], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})
        assert same.reread(other, sentence) is None  # its answer is yes or no, or an option: a phrase already
    system, user = reread.messages
    assert system == {"role": "system", "content": PHRASE_ANSWER} and "short phrase" in system["content"]
    record = hippo_index.read(["Ermengarde of Tours#0"])[0][0]
    assert user["role"] == "user" and user["content"] == (
        f"Text read:\n[chunk Ermengarde of Tours#0]\n{record.text.strip()}\n\nQuestion: {question}"
    )
    # the phrase, cleaned of a label, quotes and its own citations; cited by the read chunk that contains it
    reply = 'Answer: "20 March 851" [chunk X#1]\nbecause …'
    assert reread.answer(reply) == "20 March 851 [chunk Ermengarde of Tours#0]"
    assert acted([policy]) == {"phrase_answer": 1}
    assert reread.answer(sentence) == sentence and acted([policy]) == {"phrase_answer": 1}  # the same sentence
    assert reread.answer("851 BC") == "851 BC"  # in no chunk read: no citation made up
    for nothing in ("", "  ", "Unknown.", "not mentioned", "I cannot answer that"):
        assert reread.answer(nothing) == sentence  # the model's answer stands
    # the model's own verified citations are kept; one it was never shown is not
    cited = policy.reread(run, "She died in 851 in Tours, I read. [chunk Ermengarde of Tours#0] [chunk Made up#1]")
    assert cited is not None and cited.answer("851") == "851 [chunk Ermengarde of Tours#0]"
    # a phrase of the question's own words answers nothing: the model's answer stands
    before = acted([policy])
    assert reread.answer("Ermengarde of Tours") == sentence and acted([policy]) == before
    # and a short answer of the question's own words is reread, as a sentence is
    restated = policy.reread(run, "Tours [chunk Ermengarde of Tours#0]")
    assert restated is not None and restated.answer("20 March 851") == "20 March 851 [chunk Ermengarde of Tours#0]"
    assert restated.answer("Ermengarde") == "Tours [chunk Ermengarde of Tours#0]"
    assert policy.reread(run, "Franks [chunk Ermengarde of Tours#0]") is None  # a short answer that names something
    # a phrase the answer's cited chunk does not hold cites the read chunk that holds it, not the sentence's chunk
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Hucbert#0"]})
    elsewhere = policy.reread(run, "Hucbert was a Frankish nobleman, I read. [chunk Hucbert#0]")
    assert "20 march 851" not in " ".join(hippo_index.read(["Hucbert#0"])[0][0].text.lower().split())
    assert elsewhere is not None and elsewhere.answer("20 March 851") == "20 March 851 [chunk Ermengarde of Tours#0]"
    assert elsewhere.answer("Hucbert") == "Hucbert [chunk Hucbert#0]"  # the answer's own chunk holds it: kept


def test_phrase_answer_keeps_to_this_questions_reads_and_its_token_budget(hippo_index: Index) -> None:
    from arag.agent.state import RunState

    question = "When did Ermengarde of Tours die?"
    first, (policy,) = fake_run(hippo_index, "phrase_answer", question="Who was Hucbert?")
    guarded_call(first, [policy], "chunk_read", {"chunk_ids": ["Hucbert#0"]})
    # the next question of a conversation shares the tracker: what it read before is not this question's text
    run = RunState(question, "system", first.toolkit, first.settings, lambda call, text: {"role": "user"})
    sentence = "Ermengarde of Tours died in the year 851."
    assert policy.reread(run, sentence) is None
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0", "Lothair II#0"]})
    assert run.read_this_question() == ["Ermengarde of Tours#0", "Lothair II#0"]
    reread = policy.reread(run, sentence)
    assert reread is not None and "Hucbert#0" not in reread.messages[1]["content"]
    assert "[chunk Ermengarde of Tours#0]" in reread.messages[1]["content"]


def test_phrase_answer_reads_off_at_most_its_token_budget(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("long")
    docs = [{"title": t, "text": " ".join(f"{t} fact number {i} is stated here." for i in range(16))} for t in "AB"]
    (folder / "corpus.json").write_text(json.dumps(docs), encoding="utf-8")
    build_index([folder / "corpus.json"], folder / "idx", IndexSettings(embedder="fake", threads=1))
    index = Index.open(folder / "idx", threads=1)
    sizes = [r.n_tokens for r in index.read(["A#0", "B#0"])[0]]
    assert all(100 < n < 200 for n in sizes)  # the premise: one chunk fits in 200 tokens, both do not
    for budget, shown in ((1000, ["A#0", "B#0"]), (200, ["A#0"]), (100, [])):
        # min_words 0: every answer, the shortest too
        settings = {"phrase_answer": {"text_tokens": budget, "min_words": 0}}
        run, (policy,) = fake_run(index, "phrase_answer", question="What is fact 3?", policy=settings)
        guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["A#0", "B#0"]})
        reread = policy.reread(run, "fact 3")
        text = reread.messages[1]["content"] if reread else ""
        assert [c for c in ("A#0", "B#0") if f"[chunk {c}]" in text] == shown
        assert (reread is None) == (not shown)  # nothing within the budget: the model's answer stands


@given(reply=st.text(max_size=300))
def test_a_reread_reply_of_any_shape_gives_one_line_that_says_something_or_the_models_answer(
    hippo_index: Index, reply: str
) -> None:
    run, (policy,) = fake_run(hippo_index, "phrase_answer", question="When did Ermengarde of Tours die?")
    run.toolkit.tracker.read_ids.add("Ermengarde of Tours#0")
    run.toolkit.tracker.seen_ids.add("Ermengarde of Tours#0")
    run.offered["Ermengarde of Tours#0"] = None
    given = "She died in the year 851, in Tours. [chunk Ermengarde of Tours#0]"
    reread = policy.reread(run, given)
    assert reread is not None
    answer = reread.answer(reply)
    assert answer == given or (
        "\n" not in answer.strip() and not says_nothing(answer) and answer.endswith("[chunk Ermengarde of Tours#0]")
    )


def test_a_rambling_reread_reply_is_cut_to_the_answer_cap(hippo_index: Index) -> None:
    question = "When did Ermengarde of Tours die?"
    run, (policy, short) = fake_run(hippo_index, "phrase_answer", "short_answer", question=question)
    guarded_call(run, [policy, short], "chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})
    run.answer_chars = spec_after(run, [policy, short]).answer_chars  # as the loop records the latest action's
    reread = policy.reread(run, "She died in the year 851, in Tours.")
    assert reread is not None
    answer = reread.answer("She died in 851. " * 40)
    assert len(answer) <= 200 and answer.endswith("851.") and answer.count("She died") < 15


def test_answer_check_shows_the_answers_sentence_and_the_questions_first_hop(hippo_index: Index) -> None:
    read = ["Teutberga#0", "Hucbert#0"]
    sentences = [" ".join(s.split()) for r in hippo_index.read(read)[0] for s in hippo_index.sentences(r)]
    question = "When did Teutberga's brother die?"
    # the answer's sentence names Hucbert, not Teutberga: the sentence that names her is the question's first hop
    assert check_text(hippo_index, read, question, "864 [chunk Hucbert#0]", window=0) == " ".join(
        [sentences[0], sentences[2]]
    )
    assert check_text(hippo_index, read, question, "864", window=1) == " ".join(sentences[:4])
    assert check_text(hippo_index, [], question, "864") is None


def test_answer_check_turns_an_answer_its_sentences_do_not_state_into_not_in_the_documents(
    hippo_index: Index,
) -> None:
    question = "When did Teutberga's brother die?"
    run, (policy,) = fake_run(hippo_index, "answer_check", question=question)
    assert policy.reread(run, "864") is None  # nothing read: nothing to check against
    guarded_call(run, [policy], "keyword_search", {"keywords": ["Teutberga"]})
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0", "Hucbert#0"]})
    answer = "864 [chunk Hucbert#0]"
    reread = policy.reread(run, answer)
    assert isinstance(reread, Reread)
    system, user = reread.messages
    assert system == {"role": "system", "content": CHECK_PROMPT} and "not stated" in system["content"]
    assert user["content"].startswith("Text:\nTeutberga") and user["content"].endswith(f"Question: {question}")
    # any phrase is an answer: the model's answer stands, as it was (the check's phrase is not the answer)
    for reply in ("864", "died 864", "", "Hucbert"):
        assert reread.answer(reply) == answer
    assert acted([policy]) == {}
    refused = reread.answer("Not stated.")
    assert refused == 'Not in the documents: what was read does not state it (searched for: "Teutberga").'
    assert says_not_found(refused) and acted([policy]) == {"answer_check": 1}
    # a refusal, an either-or and a yes/no question are left alone
    assert policy.reread(run, "Not in the documents (searched for: Teutberga).") is None
    for other in ("Did Hucbert die in 864?", "Who died first, Hucbert or Teutberga?"):
        asked, (same,) = fake_run(hippo_index, "answer_check", question=other)
        guarded_call(asked, [same], "chunk_read", {"chunk_ids": ["Hucbert#0"]})
        assert same.reread(asked, "Hucbert [chunk Hucbert#0]") is None


def test_answer_check_search_again_holds_the_first_unstated_answer_once(hippo_index: Index) -> None:
    question = "When did Teutberga's brother die?"
    run, (policy,) = fake_run(
        hippo_index, "answer_check", question=question, policy={"answer_check": {"search_again": True}}
    )
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    reread = policy.reread(run, "Hucbert [chunk Teutberga#0]")
    assert reread is not None and reread.answer("Hucbert") == "Hucbert [chunk Teutberga#0]"  # stated: it stands
    held = reread.answer("not stated")
    assert isinstance(held, Hold) and held.message.startswith('The text you read does not state that "Hucbert"')
    assert not held.read and acted([policy]) == {"answer_check": 1}
    # once: the next unstated answer is "Not in the documents"
    again = policy.reread(run, "Lothair II [chunk Teutberga#0]")
    assert again is not None and str(again.answer("not stated")).startswith("Not in the documents")
    # the forced answer cannot be sent back: its first "not stated" is the refusal
    forced, (fresh,) = fake_run(
        hippo_index, "answer_check", question=question, policy={"answer_check": {"search_again": True}}
    )
    guarded_call(forced, [fresh], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    forced.stop_reason = "max_steps"
    last = fresh.reread(forced, "Hucbert [chunk Teutberga#0]")
    assert last is not None and str(last.answer("not stated")).startswith("Not in the documents")


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When did Teutberga's brother die?", "a date"),
        ("What year did the office open?", "a date"),
        ("Where was the place of death of Maurice's father?", "a place"),
        ("What is the place of birth of the director of film Fortunella?", "a place"),
        ("In which city was the husband of Teutberga born?", "a place"),
        ("What nationality is Hypsicratea's husband?", "a nationality"),
        ("Which country the performer of song I Like Control is from?", "a nationality"),
        ("What is the job title of the postmortem's owner?", "a title or a role"),
        ("How many engineers are on the team?", "a number"),
        ("Which team does the owner of the June postmortem manage?", "a team or an organisation"),
        ("Who is the mother of Mehmed II?", None),  # a person is the answer
        ("What is trimodal therapy in bladder cancer?", None),
        ("Which film came out first, Blue Lake or Red Sky?", None),  # either-or: its options are the answer
        ("Was Hucbert born in Valais?", None),  # yes/no
    ],
)
def test_next_hop_reads_what_kind_of_answer_a_question_asks_for(question: str, kind: str | None) -> None:
    assert asks_for(question) == kind


def test_next_hop_checks_only_a_short_name() -> None:
    assert bare_name("Hucbert [chunk Teutberga#0]") == "Hucbert"
    assert bare_name("  Eduardo De Filippo. ") == "Eduardo De Filippo"
    # a name's own digits (an ordinal of its title, a year after it) leave it a name
    assert bare_name("William Axt (1922) [chunk William Axt#0]") == "William Axt"
    assert bare_name("Victor Cavendish, 9th Duke of Devonshire") == "Victor Cavendish, 9th Duke of Devonshire"
    for answer in ("864", "8 August 869", "Not in the documents (searched for: Hucbert).", "", "[chunk Hucbert#0]"):
        assert bare_name(answer) is None
    assert bare_name("the lay abbot of the abbey of St. Maurice in Valais") is None  # a sentence, not a name


def test_next_hop_sends_a_first_hop_back_with_the_person_s_own_text(hippo_index: Index) -> None:
    question = "When did Teutberga's brother die?"
    run, (policy,) = fake_run(hippo_index, "next_hop", question=question)
    guarded_call(run, [policy], "keyword_search", {"keywords": ["Teutberga"]})
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0"]})
    answer = "Hucbert [chunk Teutberga#0]"
    reread = policy.reread(run, answer)
    assert isinstance(reread, Reread)
    assert reread.messages[-1] == {"role": "user", "content": PERSON_QUESTION.format(name="Hucbert")}
    # not a person (or no verdict): the answer stands, nothing acted
    for reply in ("No.", "no, it is a place", "", "I cannot tell"):
        assert reread.answer(reply) == answer
    assert acted([policy]) == {}
    held = reread.answer("Yes, it is.")
    assert isinstance(held, Hold) and held.read == ["Hucbert#0"] and held.why
    assert held.message == HOP.format(name="Hucbert", kind="a date", question=question)
    assert acted([policy]) == {"next_hop": 1}
    assert policy.record(run) == {"hops": [{"answer": "Hucbert", "kind": "a date", "shown": ["read", "Hucbert#0"]}]}
    # once per question: the next answer is not checked
    assert policy.reread(run, "Lothair II [chunk Hucbert#0]") is None
    # the forced answer, a date, a refusal, a "who" question, an either-or: no check, no call
    forced, (fresh,) = fake_run(hippo_index, "next_hop", question=question)
    forced.stop_reason = "max_steps"
    assert fresh.reread(forced, answer) is None
    asked, (other,) = fake_run(hippo_index, "next_hop", question=question)
    assert other.reread(asked, "864 [chunk Hucbert#0]") is None
    assert other.reread(asked, "Not in the documents (searched for: Teutberga).") is None
    for not_asked in ("Who was Teutberga's brother?", "Who died first, Hucbert or Teutberga?"):
        who, (same,) = fake_run(hippo_index, "next_hop", question=not_asked)
        assert same.reread(who, answer) is None


def test_next_hop_quotes_the_person_s_own_text_when_it_was_read_and_else_asks_for_a_search(hippo_index: Index) -> None:
    question = "When did Teutberga's brother die?"
    run, (policy,) = fake_run(hippo_index, "next_hop", question=question)
    guarded_call(run, [policy], "chunk_read", {"chunk_ids": ["Teutberga#0", "Hucbert#0"]})
    reread = policy.reread(run, "Hucbert [chunk Teutberga#0]")
    assert reread is not None
    held = reread.answer("yes")
    # Hucbert's own text was read and the model answered the name: its opening is quoted, nothing read again
    assert isinstance(held, Hold) and not held.read
    assert 'You read about Hucbert in [chunk Hucbert#0]: "Hucbert( died 864) was a Frankish nobleman.' in held.message
    assert held.message.endswith(question)
    # no document is titled by the name and every hit for it was read: the model is asked to search
    asked = "Where was Teutberga's father born?"
    other, (fresh,) = fake_run(hippo_index, "next_hop", question=asked)
    every = [hit.chunk_id for hit in hippo_index.keyword_search(["Boso the Elder"], 5)]
    guarded_call(other, [fresh], "chunk_read", {"chunk_ids": every})
    again = fresh.reread(other, "Boso the Elder [chunk Teutberga#0]")
    assert again is not None
    search = again.answer("Yes")
    assert isinstance(search, Hold) and not search.read and "Search for" in search.message
    assert fresh.record(other) == {"hops": [{"answer": "Boso the Elder", "kind": "a place", "shown": None}]}


def test_next_hop_sends_an_address_given_for_who_back_without_a_call(hippo_index: Index) -> None:
    question = "Who leads the Lisbon office?"
    run, (policy,) = fake_run(hippo_index, "next_hop", question=question)
    held = policy.on_answer(run, "lisbon-lead@example.com [chunk Teutberga#0]")
    assert isinstance(held, Hold) and '"lisbon-lead@example.com" is an address' in held.message
    assert policy.on_answer(run, "ops@example.com") is None  # once
    other, (same,) = fake_run(hippo_index, "next_hop", question=question)
    assert same.on_answer(other, "Maria Castellanos [chunk Teutberga#0]") is None
    where, (kept,) = fake_run(hippo_index, "next_hop", question="Where is the office?")
    assert kept.on_answer(where, "https://example.com/lisbon") is None  # not a "who" question


@given(question=st.text(max_size=80), answer=st.text(max_size=80))
def test_next_hop_takes_any_question_and_answer(hippo_index: Index, question: str, answer: str) -> None:
    run, (policy,) = fake_run(hippo_index, "next_hop", question=question)
    kind, name = asks_for(question), bare_name(answer)
    reread = policy.reread(run, answer)
    assert (reread is None) == (kind is None or name is None)
    if reread is not None:
        held = reread.answer("yes")
        assert isinstance(held, Hold) and len(held.read) <= 1


@given(question=st.text(max_size=60), answer=st.text(max_size=60))
def test_answer_check_text_takes_any_question_and_answer(hippo_index: Index, question: str, answer: str) -> None:
    read = ["Teutberga#0", "Hucbert#0", "no such chunk"]
    text = check_text(hippo_index, read, question, answer)
    records = hippo_index.read(read)[0]
    assert text is not None and set(text.split()) <= {w for r in records for w in r.text.split()} | {"Teutberga"}
    assert "Teutberga" in text or "Hucbert" in text  # two sentences and their neighbours: never empty


@pytest.mark.parametrize(
    ("sentence", "heading"),
    [
        ("The Halden Soil Lab", True),
        ("# The Halden Soil Lab\n", True),
        ("## Root  Signals", True),
        ("Fever and chills", False),  # a short line of a list: no heading the structure records
        ("The Halden Soil Lab studies soil.", False),
    ],
)
def test_a_heading_is_one_its_chunk_records(sentence: str, heading: bool) -> None:
    from arag.harness.text import a_heading, chunk_headings

    headings = chunk_headings({"headings": [[0, ["The Halden Soil Lab"]], [40, ["Projects", "Root Signals"]]]})
    assert headings == {"The Halden Soil Lab", "Root Signals"}
    assert a_heading(sentence, headings) is heading
    assert not a_heading(sentence, chunk_headings(None)) and not a_heading(sentence, chunk_headings({}))


def test_the_closest_sentence_passes_over_a_heading_unless_nothing_else_is_left(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("lab")
    (folder / "lab.md").write_text(
        "# The Halden Soil Lab\n\nThe lab studies soil. It was founded in 2011 by Mirela Santos.\n\n- Fever\n",
        encoding="utf-8",
    )
    (folder / "menu.md").write_text("# The Halden Soil Lab\n", encoding="utf-8")
    build_index([folder], folder / "idx", IndexSettings(embedder="fake", threads=1))
    index = Index.open(folder / "idx", threads=1)
    run, _ = fake_run(index, question="The Halden Soil Lab")  # the fake embedder: the heading is nearest
    (chunk_id,) = [h.chunk_id for h in index.keyword_search(["studies soil"], 1)]
    sentences, scores = question_scores(run, index.read([chunk_id])[0][0])
    assert sentences[int(np.argmax(scores))].strip() == "# The Halden Soil Lab"
    closest = closest_sentences(run, [chunk_id], k=5)
    assert [e.sentence.strip() for e in closest] and all("#" not in e.sentence for e in closest)
    assert "- Fever" in [e.sentence.strip() for e in closest]  # a list's short line is no heading
    (menu,) = [h.chunk_id for h in index.keyword_search(["Halden"], 5) if "menu" in h.chunk_id]
    assert closest_sentences(run, [menu])[0].sentence.strip() == "# The Halden Soil Lab"  # nothing else: it comes


def test_a_read_for_a_held_answer_names_the_closest_sentence_that_holds_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("held")
    (folder / "people.md").write_text(
        "Aiko Tanaka is responsible for the lab and came from Kyoto University in 2024.\n", encoding="utf-8"
    )
    (folder / "rooms.md").write_text(
        "Confocal microscope: room C308. Gas chromatograph: room C305.\n", encoding="utf-8"
    )
    build_index([folder], folder / "idx", IndexSettings(embedder="fake", threads=1))
    index = Index.open(folder / "idx", threads=1)
    question = "In which room is the instrument that Aiko Tanaka is responsible for?"
    chunk_ids = sorted(h.chunk_id for h in index.keyword_search(["room", "Aiko"], 5))
    assert len(chunk_ids) == 2

    def note_after(answer: str, calls: bool = False, held: bool | None = True) -> tuple[str | None, dict[str, object]]:
        settings = {} if held is None else {"closest_sentence": {"held_answer": held}}
        run, (policy,) = fake_run(index, "closest_sentence", question=question, policy=settings)
        run.record_action(Action([ToolCall("chunk_read", {"chunk_ids": chunk_ids})] if calls else [], answer))
        result = run.harness_read(chunk_ids)
        return policy.after_result(run, result), policy.record(run) or {}

    closest = closest_sentences(fake_run(index, question=question)[0], chunk_ids)[0]
    assert "Kyoto" in closest.sentence  # the premise: nearest the question, it does not hold the room
    (rooms,) = [c for c in chunk_ids if "rooms" in c]
    note, record = note_after(f"C308 [chunk {rooms}]")
    assert note is not None and '"Confocal microscope: room C308." ' in note and f"[chunk {rooms}]" in note
    assert record == {"held_answers_named": ["c308"]}
    sentence = "The microscope is in room C308 of the east wing."  # a copied sentence: the closest one corrects it
    for answer, calls in [
        ("C308", True),
        ("Room 12", False),
        ("Aiko Tanaka", False),
        ("Not in the documents", False),
        (sentence, False),
    ]:
        note, record = note_after(answer, calls)  # no held answer, none that a sentence holds, or one naming nothing
        assert note is not None and "Kyoto" in note and record == {}
    note, _ = note_after("Kyoto University")  # the held answer's sentence is the closest: named as before
    assert note is not None and "Kyoto" in note
    note, record = note_after("C30")  # a part of a word is not the answer's sentence
    assert note is not None and "Kyoto" in note and record == {}
    for held in (False, None):  # switched off, and off by default
        note, record = note_after("C308", held=held)
        assert note is not None and "Kyoto" in note and record == {}
