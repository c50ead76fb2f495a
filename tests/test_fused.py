"""The fused search (the optional fifth tool of issue 50): keyword and semantic search fused by reciprocal rank —
checked against the definition computed here from the two searches' own rankings, which their tests check against
brute force of the paper's formulas."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.filters import parse_filter
from arag.index import FUSED_DEPTH, RRF_K, Index, query_keywords
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from support.scripted_server import ScriptedServer, completion, tool_call

_WORDS = st.sampled_from(
    [
        "Lothair",
        "II",
        "Ermengarde",
        "married",
        "daughter",
        "king",
        "Italy",
        "who",
        "was",
        "the",
        "of",
        "film",
        "director",
        "born",
        "where",
        "when",
        "1855",
        "“Teutberga”",
        '"Lothair',
        'II"',
        "Prince",
    ]
)


def fused_by_definition(index: Index, query: str, top_k: int, where=None) -> list[tuple[str, float]]:
    keywords = query_keywords(query)
    rankings = [index.semantic_search(query, max(FUSED_DEPTH, top_k), where=where)]
    if keywords:
        rankings.append(index.keyword_search(keywords, max(FUSED_DEPTH, top_k), where))
    scores: dict[str, float] = {}
    for ranking in rankings:  # the semantic ranking first: it orders ties
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: -item[1])[:top_k]


@settings(max_examples=60, deadline=None)
@given(words=st.lists(_WORDS, min_size=1, max_size=6), top_k=st.integers(1, 25), scoped=st.booleans())
def test_the_fused_ranking_is_reciprocal_rank_fusion_of_the_two_searches(
    hippo_index: Index, words: list[str], top_k: int, scoped: bool
) -> None:
    query = " ".join(words)
    where = parse_filter("title~Lothair") if scoped else None
    keywords, hits = hippo_index.fused_search(query, top_k, where=where)
    assert keywords == query_keywords(query)
    assert [(h.chunk_id, h.score) for h in hits] == fused_by_definition(hippo_index, query, top_k, where)
    for hit in hits:
        assert hit.snippets  # a keyword sentence or a best sentence by meaning


def test_the_query_keywords_are_its_phrases_and_distinctive_words() -> None:
    assert query_keywords('Who was the director of "Fortunella" and where was he born?') == [
        "Fortunella",
        "director",
        "born",
    ]
    assert query_keywords("When did “Lothair II” marry in 855?") == ["Lothair II", "marry", "855"]
    assert query_keywords("Who was it?") == []
    assert len(query_keywords(" ".join(f"word{i}" for i in range(30)))) == 10


def test_the_search_tool_says_what_it_matched_exactly_and_answers_bad_arguments(hippo_index: Index) -> None:
    toolkit = Toolkit(hippo_index, enabled=TOOL_NAMES)
    result = toolkit.call("search", {"query": "Who married Lothair II?", "top_k": 3})
    assert result.ok
    assert result.observation.startswith(
        'search "Who married Lothair II?" (by meaning; exact words ["married", "Lothair"])'
    )
    assert result.hits == [c for c, _ in fused_by_definition(hippo_index, "Who married Lothair II?", 3)]
    assert toolkit.call("search", {"query": "who was it"}).observation.startswith('search "who was it" (by meaning; no')
    assert not toolkit.call("search", {"query": "  "}).ok


@settings(max_examples=60, deadline=None)
@given(query=st.text(max_size=60), top_k=st.integers(-3, 10**6), where=st.text(max_size=20))
def test_any_search_arguments_are_answered_or_refused(hippo_index: Index, query: str, top_k: int, where: str) -> None:
    result = Toolkit(hippo_index, enabled=TOOL_NAMES).call("search", {"query": query, "top_k": top_k, "where": where})
    assert result.observation.startswith(("Error: ", "search ", "(")), result.observation


def test_the_agent_searches_by_a_native_tool_call(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("search", {"query": "Lothair II wife"})]),
        completion("Teutberga [chunk Lothair II#0]."),
    ]
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt-4o-mini", max_retries=0))
    agent = Agent(hippo_index, model, AgentSettings(tools=["search", "chunk_read"]))
    result = agent.run("Who was Lothair II married to?")
    assert [s.tool for s in result.trajectory] == ["search"]
    assert result.trajectory[0].observation.startswith('search "Lothair II wife" (by meaning; exact words')
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} == {"search", "chunk_read"}
