from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.corpus.chunking import count_tokens
from arag.harness.view import CompactView
from arag.index import Index
from arag.tools.arguments import tool_schema
from arag.tools.toolkit import MAX_TOP_K, Toolkit
from conftest import FIXTURES, fake_run, fake_settings, guarded_call


def test_schema_is_derived_from_signature_and_docstring(hippo_index: Index) -> None:
    toolkit = Toolkit(hippo_index)
    schemas = {s["function"]["name"]: s["function"] for s in toolkit.schemas()}
    assert list(schemas) == ["keyword_search", "semantic_search", "chunk_read"]
    kw = schemas["keyword_search"]
    assert kw["description"].startswith("Exact keyword search")
    assert kw["parameters"]["properties"]["keywords"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": 'Short exact terms to find, e.g. ["Lothair II", "Ermengarde"]. Not a full question.',
    }
    assert kw["parameters"]["properties"]["top_k"]["default"] == 5
    assert kw["parameters"]["required"] == ["keywords"]
    assert schemas["chunk_read"]["parameters"]["required"] == ["chunk_ids"]
    # the description is the docstring the model reads, not a second hand-written text
    assert kw["description"] in " ".join(inspect.getdoc(Toolkit.keyword_search).split())  # type: ignore[arg-type]

    def sample(query: str, limit: int = 3) -> str:
        """Do a thing.

        Args:
            query: What to look for.
            limit: How many.
        """
        return query

    assert tool_schema(sample)["function"]["parameters"]["properties"]["limit"] == {
        "default": 3,
        "description": "How many.",
        "type": "integer",
    }


@pytest.mark.parametrize(
    "name,arguments,expected",
    [
        ("keyword_search", {"keywords": []}, "keywords is empty"),
        ("keyword_search", {"keywords": ["Lothair"], "top_k": 0}, "top_k must be at least 1"),
        ("keyword_search", {"keywords": ["x"], "top_k": "many"}, "top_k"),
        ("keyword_search", {}, "keywords: Field required"),
        ("keyword_search", {"keywords": [1, 2]}, "invalid arguments"),
        ("keyword_search", {"keywords": ["x"], "bogus": 1}, "bogus"),
        ("semantic_search", {"query": "   "}, "query is empty"),
        ("semantic_search", {"query": {"a": 1}}, "valid string"),
        ("semantic_search", "{not json", "not valid JSON"),
        ("semantic_search", "[1, 2]", "JSON object"),
        ("chunk_read", {"chunk_ids": []}, "chunk_ids is empty"),
        ("delete_everything", {}, "unknown tool"),
    ],
)
def test_bad_arguments_become_observations(hippo_index: Index, name: str, arguments: object, expected: str) -> None:
    result = Toolkit(hippo_index).call(name, arguments)  # type: ignore[arg-type]
    assert not result.ok
    assert result.observation.startswith("Error: ") and expected in result.observation


def test_top_k_is_clamped_with_a_note(hippo_index: Index) -> None:
    result = Toolkit(hippo_index).call("keyword_search", {"keywords": ["e"], "top_k": 10**12})
    assert result.ok and f"clamped to {MAX_TOP_K}" in result.observation
    assert len(result.chunk_ids) == min(MAX_TOP_K, hippo_index.store.n_chunks) == 16


def test_single_string_is_accepted_for_a_list(hippo_index: Index) -> None:
    result = Toolkit(hippo_index).call("keyword_search", {"keywords": "Waldrada"})
    assert result.ok and result.chunk_ids[0] == "Waldrada#0"


def test_read_tracks_context_and_reports_unknown_ids(hippo_index: Index) -> None:
    toolkit = Toolkit(hippo_index)
    first = toolkit.call("chunk_read", {"chunk_ids": ["Lothair II#0", "nope#9"]})
    assert "[chunk Lothair II#0] (prev: -, next: -)" in first.observation
    assert "Ermengarde of Tours" in first.observation
    assert "[chunk nope#9] not found" in first.observation
    again = toolkit.call("chunk_read", {"chunk_ids": ["Lothair II#0"]})
    assert "already read" in again.observation and "Ermengarde" not in again.observation
    assert again.retrieved_tokens < first.retrieved_tokens
    assert toolkit.tracker.retrieved_tokens == first.retrieved_tokens + again.retrieved_tokens
    hits = toolkit.call("keyword_search", {"keywords": ["Lothair II"]})
    assert "chunk Lothair II#0 (score 20) [already read]" in hits.observation
    # a fresh tracker (another session) reads it again
    assert "Ermengarde" in Toolkit(hippo_index).call("chunk_read", {"chunk_ids": ["Lothair II#0"]}).observation


def test_neighbour_ids_are_shown(chunks_index: Index) -> None:
    observation = Toolkit(chunks_index).call("chunk_read", {"chunk_ids": ["2"]}).observation
    assert observation.startswith("[chunk 2] (prev: 1, next: 3)")


def test_without_chunk_read_searches_return_full_text(hippo_index: Index) -> None:
    toolkit = Toolkit(hippo_index, enabled=["keyword_search", "semantic_search"])
    assert [s["function"]["name"] for s in toolkit.schemas()] == ["keyword_search", "semantic_search"]
    observation = toolkit.call("keyword_search", {"keywords": ["Waldrada"], "top_k": 1}).observation
    assert "Pope Nicholas I." in observation
    assert "unknown tool" in toolkit.call("chunk_read", {"chunk_ids": ["Waldrada#0"]}).observation


def test_no_results_message(hippo_index: Index) -> None:
    result = Toolkit(hippo_index).call("keyword_search", {"keywords": ["qqqqzzzz"]})
    assert result.ok and "no matching chunks" in result.observation


def test_tools_search_approximately_on_an_index_built_for_it(tmp_path: Path) -> None:
    build_index([FIXTURES / "hipporag_corpus.json"], tmp_path / "ann", fake_settings(ann=True))
    assert Toolkit(Index.open(tmp_path / "ann")).exact is False
    assert Toolkit(Index.open(tmp_path / "ann"), exact=True).exact is True
    observation = Toolkit(Index.open(tmp_path / "ann")).call("semantic_search", {"query": "Lothair II"}).observation
    assert "Lothair II" in observation


def test_a_short_top_hit_is_shown_in_full_and_counts_as_read(hippo_index: Index) -> None:
    inline = Toolkit(hippo_index, view=CompactView(hints=True, inline_tokens=400))
    result = inline.call("keyword_search", {"keywords": ["Ermengarde"], "top_k": 3})
    first = result.chunk_ids[0]
    text = hippo_index.read([first])[0][0].text.strip()
    assert f"[1] chunk {first}, full text:" in result.observation and text in result.observation
    assert first in inline.tracker.read_ids and len(inline.tracker.read_ids) == 1
    assert "already read" in inline.call("chunk_read", {"chunk_ids": ["hit 1"]}).observation
    assert "Hit 1 is shown in full" in result.observation and '["hit 2"]' not in result.observation
    again = inline.call("keyword_search", {"keywords": ["Ermengarde"], "top_k": 3}).observation
    assert text not in again and "[already read]" in again  # shown in full once
    plain = Toolkit(hippo_index, view=CompactView(hints=True)).call(
        "keyword_search", {"keywords": ["Ermengarde"], "top_k": 3}
    )
    assert text not in plain.observation and "full text" not in plain.observation
    too_long = Toolkit(hippo_index, view=CompactView(inline_tokens=1)).call(
        "keyword_search", {"keywords": ["Ermengarde"], "top_k": 3}
    )
    assert "full text" not in too_long.observation


@pytest.mark.parametrize(
    ("keyword", "head"),
    [
        ("Lothair II's mother", "Lothair II"),
        ("Waldrada’s relationship with the Pope", "Waldrada"),
        ("The Crane Wife tracklist", "The Crane Wife"),
    ],
)
def test_compact_search_that_matches_nothing_shows_what_the_keywords_head_finds(
    hippo_index: Index, keyword: str, head: str
) -> None:
    assert hippo_index.keyword_search([keyword], 5) == []  # the premise: the whole keyword matches nothing
    run, policies = fake_run(hippo_index, "shorter_keywords", view=CompactView(hints=True))
    compact = guarded_call(run, policies, "keyword_search", {"keywords": [keyword], "top_k": 3})
    assert (
        f'no chunk contains these keywords. Results for shorter keywords that match, ["{head}"]' in compact.observation
    )
    expected = [h.chunk_id for h in hippo_index.keyword_search([head], 3)]
    assert expected and compact.chunk_ids == expected
    paper = Toolkit(hippo_index).call("keyword_search", {"keywords": [keyword], "top_k": 3})
    assert "no matching chunks" in paper.observation and paper.chunk_ids == []  # the paper's tool is exact


def test_compact_search_with_no_matching_head_says_so(hippo_index: Index) -> None:
    run, policies = fake_run(hippo_index, "shorter_keywords", view=CompactView(hints=True))
    result = guarded_call(run, policies, "keyword_search", {"keywords": ["Zyxwv Qqqq's tower"]})
    assert "no matching chunks" in result.observation and result.chunk_ids == []


def test_compact_search_leaves_out_a_keyword_found_in_most_chunks(people_index: Index) -> None:
    arguments = {"keywords": ["Fortunella", "director"], "top_k": 3}
    assert people_index.keyword_search(["Fortunella", "director"], 1)[0].chunk_id.startswith("Person")  # premise
    run, policies = fake_run(people_index, "common_keywords", view=CompactView(hints=True))
    compact = guarded_call(run, policies, "keyword_search", arguments)
    assert compact.observation.startswith('keyword_search ["Fortunella"] ("director" left out: in over 5% of the')
    assert compact.chunk_ids == [h.chunk_id for h in people_index.keyword_search(["Fortunella"], 3)]
    assert compact.chunk_ids[0].startswith("Fortunella")
    # the paper's tool (and the agent without the policy) score every keyword
    for run, policies in (fake_run(people_index), fake_run(people_index, view=CompactView(hints=True))):
        paper = guarded_call(run, policies, "keyword_search", arguments)
        assert paper.chunk_ids == [h.chunk_id for h in people_index.keyword_search(["Fortunella", "director"], 3)]
        assert "left out" not in paper.observation


@pytest.mark.parametrize(
    ("keywords", "kept"),
    [
        (["director", "father"], ["director", "father"]),  # all common: nothing better to search for
        (["director"], ["director"]),
        (["Town 7", "director", "father"], ["Town 7"]),
        (["Town 7", "Person 1"], ["Town 7", "Person 1"]),  # "Person 1" is in 31 chunks: under the 50-chunk floor
        (["No Such Name", "director"], ["No Such Name"]),  # a rarer keyword that matches nothing still wins
    ],
)
def test_common_keywords_are_left_out_only_beside_a_rarer_one(
    people_index: Index, keywords: list[str], kept: list[str]
) -> None:
    run, policies = fake_run(people_index, "common_keywords", view=CompactView(hints=True))
    result = guarded_call(run, policies, "keyword_search", {"keywords": keywords, "top_k": 5})
    assert result.observation.startswith(f"keyword_search {json.dumps(kept)}"), result.observation[:200]
    assert ("left out" in result.observation) == (kept != keywords)


def test_a_small_collection_has_no_common_keywords(hippo_index: Index) -> None:
    """With fewer chunks than the floor, no word is common however often it occurs."""
    assert hippo_index.keyword_chunk_count("the", 1000) > 8
    run, policies = fake_run(hippo_index, "common_keywords", policy={"common_keywords": {"share": 0.01}})
    result = guarded_call(run, policies, "keyword_search", {"keywords": ["Lothair II", "the"]})
    assert result.observation.startswith('keyword_search ["Lothair II", "the"]: ')


def test_a_long_top_hit_is_shown_as_its_focused_read_within_the_inline_budget(hippo_index: Index) -> None:
    def toolkit(inline_tokens: int) -> Toolkit:
        tools = Toolkit(hippo_index, view=CompactView(hints=True, inline_tokens=inline_tokens, focus_tokens=20))
        tools.focus_query = "Where did Ermengarde of Tours marry Lothair I?"
        return tools

    reader = toolkit(0)
    read = reader.call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]}).observation
    focused = read.split("\n", 1)[1]  # the text a read shows after its header line
    assert "sentences: the first and those closest to the question" in read and "[…]" in focused
    inline = toolkit(200)
    result = inline.call("keyword_search", {"keywords": ["Ermengarde of Tours"]})
    assert result.chunk_ids[0] == "Ermengarde of Tours#0"
    lines = result.observation.splitlines()
    assert lines[1].startswith("[1] chunk Ermengarde of Tours#0, read (") and lines[1].endswith("question):")
    assert lines[2] == focused and "Hit 1 is read above." in result.observation
    assert "Ermengarde of Tours#0" in inline.tracker.read_ids
    assert "already read" in inline.call("chunk_read", {"chunk_ids": ["hit 1"]}).observation
    # a focused view longer than the inline budget stays a snippet: the model reads it when it wants it
    tight = toolkit(count_tokens(focused, "cl100k_base") - 1)
    snippets = tight.call("keyword_search", {"keywords": ["Ermengarde of Tours"]}).observation
    assert focused not in snippets and "Read the most promising hit in full" in snippets
    assert not tight.tracker.read_ids


def test_compact_results_leave_out_scores_and_compact_schemas_leave_out_top_k(hippo_index: Index) -> None:
    paper, compact = Toolkit(hippo_index), Toolkit(hippo_index, view=CompactView(hints=True, expose_top_k=False))
    assert "chunk Lothair II#0 (score 20)" in paper.call("keyword_search", {"keywords": ["Lothair II"]}).observation
    observation = compact.call("keyword_search", {"keywords": ["Lothair II"], "top_k": 1}).observation
    assert "[1] chunk Lothair II#0\n" in observation and "score" not in observation
    assert observation.startswith('keyword_search ["Lothair II"]: 1 chunks')  # top_k still accepted when given
    for schema in compact.schemas():
        parameters = schema["function"]["parameters"]
        assert "top_k" not in parameters["properties"] and "top_k" not in parameters.get("required", [])
    assert all("top_k" in s["function"]["parameters"]["properties"] for s in paper.schemas()[:2])


def test_a_search_that_finds_one_chunk_per_keyword_says_to_read_both(people_index: Index) -> None:
    tools = Toolkit(people_index, view=CompactView(hints=True, expose_top_k=False))
    both = tools.call("keyword_search", {"keywords": ["Fortunella", "Town 7"]})
    assert both.chunk_ids[:2] == ["Fortunella#0", "Town 7#0"] and both.pair
    assert 'Hits 1 and 2 match different keywords: read both at once, chunk_read {"chunk_ids": ["hit 1", "hit 2"]}' in (
        both.observation
    )
    # hit 1 matching every keyword, or one keyword, is not a pair: the hint names the best hit only
    for keywords in (["Fortunella", "Eduardo"], ["Town 7"]):
        result = tools.call("keyword_search", {"keywords": keywords})
        assert not result.pair and 'chunk_read {"chunk_ids": ["hit 1"]}' in result.observation
    # without hints (the paper profile) there is no hint and no pair
    paper = Toolkit(people_index).call("keyword_search", {"keywords": ["Fortunella", "Town 7"]})
    assert "read both" not in paper.observation and not paper.pair


def title_toolkit(index: Index, **settings: object) -> Toolkit:
    """The compact profile's toolkit with title reads, as the agent builds it."""
    options: dict[str, object] = {"hints": True, "title_read_limit": 2, "title_reads": True, **settings}
    return Toolkit(index, view=CompactView(**options))  # type: ignore[arg-type]


def test_hits_titled_as_a_keyword_are_shown_read_and_the_others_stay_snippets(hippo_index: Index) -> None:
    from arag.harness import Base, Harness
    from arag.harness.reads import reads_left

    run, policies = fake_run(hippo_index, "new_text_reads", "read_allowance")
    tools = run.toolkit = title_toolkit(hippo_index)
    result = guarded_call(run, policies, "keyword_search", {"keywords": ["lothair ii", "WALDRADA"]})
    ranks = {chunk_id: rank for rank, chunk_id in enumerate(result.chunk_ids, start=1)}
    assert {"Lothair II#0", "Waldrada#0"} <= set(ranks) and len(ranks) > 2  # the premise: other chunks match too
    lines = result.observation.splitlines()
    for chunk_id in ("Lothair II#0", "Waldrada#0"):
        header = f"[{ranks[chunk_id]}] chunk {chunk_id}, full text:"
        assert header in lines
        assert lines[lines.index(header) + 1 :][:2] == hippo_index.read([chunk_id])[0][0].text.strip().splitlines()[:2]
    assert tools.tracker.read_ids == {"Lothair II#0", "Waldrada#0"}
    others = [c for c in result.chunk_ids if c not in tools.tracker.read_ids]
    assert all(f"[{ranks[c]}] chunk {c}" in lines for c in others)
    assert "  - " in result.observation  # their snippets
    read = sorted([ranks["Lothair II#0"], ranks["Waldrada#0"]])
    assert f"Hits {read[0]} and {read[1]} are read above. If they give the facts you need" in result.observation
    assert "Read the most promising hit" not in result.observation
    # they count as the search's reads: its other hits are not offered for reading, a read of them is not repeated
    spec = Harness(policies).next_action(run, Base(tuple(tools.enabled), True, False))
    assert reads_left(run) == 0 and not [r for r in spec.readable or [] if r.startswith("hit ")]
    assert "already read" in tools.call("chunk_read", {"chunk_ids": [f"hit {read[0]}"]}).observation
    again = tools.call("keyword_search", {"keywords": ["Lothair II", "Waldrada"]}).observation
    assert "full text" not in again and again.count("[already read]") == 2


def test_title_reads_compare_whole_titles_without_their_disambiguation(tmp_path: Path) -> None:
    corpus = [
        {
            "title": "Philip Ford (film director)",
            "text": "Philip Ford was an American film director. He was born in 1900.",
        },
        {"title": "John Ford", "text": "John Ford was an American film director. Philip Ford was his nephew."},
        {"title": "Fordham", "text": "Fordham is a village. A Ford dealer opened there in 1950."},
    ]
    (tmp_path / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    build_index([tmp_path / "corpus.json"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)

    def shown_read(keywords: list[str], **options: object) -> set[str]:
        tools = title_toolkit(index, **options)
        tools.call("keyword_search", {"keywords": keywords})
        return tools.tracker.read_ids

    assert shown_read(["Philip Ford"]) == {"Philip Ford (film director)#0"}
    assert shown_read(["philip ford (film director)"]) == {"Philip Ford (film director)#0"}
    assert shown_read(["Ford"]) == set()  # a word of a title is not the title
    assert shown_read(["Philip"]) == set()
    assert shown_read(["John Ford", "Philip Ford", "Fordham"]) == {"John Ford#0", "Philip Ford (film director)#0"}
    assert shown_read(["John Ford", "Fordham"], title_read_limit=1) == {"John Ford#0"}
    assert shown_read(["John Ford"], title_reads=False) == set()
    assert shown_read(["John Ford"], hints=False) == set()  # the paper's tool shows snippets only
    semantic = title_toolkit(index)
    semantic.call("semantic_search", {"query": "John Ford"})
    assert semantic.tracker.read_ids == set()


def test_a_title_read_skips_a_chunk_read_before(hippo_index: Index) -> None:
    tools = title_toolkit(hippo_index)
    tools.call("chunk_read", {"chunk_ids": ["Waldrada#0"]})
    result = tools.call("keyword_search", {"keywords": ["Waldrada", "Lothair II"]})
    assert "[already read]" in result.observation and result.observation.count("full text:") == 1
    assert "Lothair II#0" in tools.tracker.read_ids and "Hit " in result.observation


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["Lothair II", "waldrada", "Teutberga (queen)", "Mehmed II", "Tours", "II", " ", ""]),
            st.text(max_size=30),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_title_reads_show_only_hits_titled_as_a_keyword(hippo_index: Index, keywords: list[str]) -> None:
    tools = title_toolkit(hippo_index)
    result = tools.call("keyword_search", {"keywords": keywords})
    # the rule, stated apart from the tool's code: the whole title, case and spacing aside, a trailing "(…)" and
    # quotes left out
    wanted = {" ".join(re.sub(r"\s*\([^()]*\)\s*$", "", k).split()).strip(" \"'").lower() for k in keywords}
    read = tools.tracker.read_ids
    assert len(read) <= 2 and read <= set(result.chunk_ids)
    for record in hippo_index.read(sorted(read))[0]:
        assert record.doc_id.lower() in wanted
        assert f"chunk {record.chunk_id}, full text:" in result.observation
