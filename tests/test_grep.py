"""list_documents: the corpus level, checked against the store. grep: a regular expression over every chunk's
text (RE2: linear time), counted exactly — checked against a brute-force scan with Python's re on patterns both
engines read alike; bounded on a catastrophic pattern; through the toolkit, the scripted server's native tool calls
and the JSON-action grammar."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.filters import parse_filter
from arag.index import GrepError, Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from conftest import fake_settings
from support.scripted_server import ScriptedServer, completion, tool_call


def matches(pattern: str, text: str) -> int:
    """The definition: leftmost matches, left to right, non-overlapping; an empty one is not counted and the scan
    moves one character on after it. (Python's finditer differs after an empty match: it tries the same place.)"""
    compiled = re.compile(pattern, re.IGNORECASE | re.ASCII)  # RE2's \w \d \s are ASCII, as re.ASCII makes them
    count, position = 0, 0
    while position <= len(text) and (match := compiled.search(text, position)):
        if match.end() > match.start():
            count, position = count + 1, match.end()
        else:
            position = match.start() + 1
    return count


def brute_force(index: Index, pattern: str, doc_ids: set[str] | None = None) -> list[tuple[str, int]]:
    """(chunk id, matches) of every chunk with one, most first, then document order."""
    found = []
    for record in index.store.iter_chunks():
        if doc_ids is not None and record.doc_id not in doc_ids:
            continue
        count = matches(pattern, record.text)
        if count:
            found.append((record.chunk_id, count))
    return sorted(found, key=lambda item: -item[1])  # stable: ties keep document order


# atoms and operators that Python's re and RE2 read alike (ASCII letters: the same case folding)
_ATOMS = st.one_of(
    st.sampled_from(list("aeilnorst ")),
    st.sampled_from(["[a-e]", "[^aeiou ]", "\\d", "\\s", "\\w", ".", "th", "the", "of", "[0-9]"]),
)
_PIECES = st.builds(lambda atom, op: atom + op, _ATOMS, st.sampled_from(["", "", "?", "+", "*", "{2}", "{1,3}"]))
_PATTERNS = st.one_of(
    st.lists(_PIECES, min_size=1, max_size=4).map("".join),
    st.builds("({}|{})".format, st.lists(_PIECES, min_size=1, max_size=2).map("".join), _PIECES),
)


@settings(max_examples=150, deadline=None)
@given(pattern=_PATTERNS, top_k=st.integers(1, 20))
def test_grep_counts_every_match_exactly_and_ranks_as_the_brute_force_scan(
    hippo_index: Index, pattern: str, top_k: int
) -> None:
    expected = brute_force(hippo_index, pattern)
    result = hippo_index.grep(pattern, top_k)
    assert result.complete and result.scanned == hippo_index.store.n_chunks
    assert result.matches == sum(count for _, count in expected)
    assert result.chunks == len(expected)
    assert [(h.chunk_id, int(h.score)) for h in result.hits] == expected[:top_k]
    assert all(hit.snippets for hit in result.hits)  # the sentences where its matches begin


def test_grep_keeps_to_the_filter_and_case_when_asked(hippo_index: Index) -> None:
    scope = parse_filter("title~Lothair")
    allowed = {d.doc_id for d in hippo_index.documents() if scope is not None and scope.matches(d.metadata)}
    result = hippo_index.grep("lothair", 20, scope)
    assert [(h.chunk_id, int(h.score)) for h in result.hits] == brute_force(hippo_index, "lothair", allowed)
    assert hippo_index.grep("LOTHAIR", 20, case_sensitive=True).matches == 0
    assert hippo_index.grep("Lothair", 20, case_sensitive=True).matches == hippo_index.grep("lothair", 20).matches


def test_a_catastrophic_pattern_is_linear_and_a_bad_one_is_one_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.txt").write_text("a" * 200_000 + "b\n", encoding="utf-8")
    build_index([folder], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    # a backtracking engine takes exponential time on "(a+)+$" over a run of a's that ends in "b"; the long word is
    # cut into chunks, each but the last a run of a's to its end: a match each
    assert (
        index.grep("(a+)+$", 5).matches
        == index.store.n_chunks - 1
        == sum(matches("(a+)+$", r.text) for r in index.store.iter_chunks())
    )
    assert index.grep("(a|aa)+b", 5).matches >= 1
    for pattern, reason in [
        ("(?<=a)b", "no backreferences or lookaround"),
        ("(a)\\1", "no backreferences or lookaround"),
        ("", "empty"),
        ("a" * 501, "longer than 500"),
        ("a\x00", "no document holds"),
        ("((((((((((a{1000}){1000}){1000})))))))))", "cannot be used"),
    ]:
        with pytest.raises(GrepError, match=re.escape(reason)):
            index.grep(pattern, 5)
    toolkit = Toolkit(index, enabled=TOOL_NAMES)
    refused = toolkit.call("grep", {"pattern": "(?<=a)b"})
    assert not refused.ok and refused.observation.startswith("Error: the pattern cannot be used")


@settings(max_examples=100, deadline=None)
@given(pattern=st.text(max_size=40), top_k=st.integers(-3, 10**6), where=st.text(max_size=20))
def test_any_grep_arguments_are_answered_or_refused(hippo_index: Index, pattern: str, top_k: int, where: str) -> None:
    result = Toolkit(hippo_index, enabled=TOOL_NAMES).call("grep", {"pattern": pattern, "top_k": top_k, "where": where})
    assert result.observation.startswith(("Error: ", "grep ", "(")), result.observation


def test_the_agent_greps_by_a_native_tool_call_and_the_json_grammar_offers_grep(
    hippo_index: Index, server: ScriptedServer
) -> None:
    from arag.harness.contract import NextAction
    from arag.harness.grammar import action_schema

    pattern = "(married|daughter) (to|of) [A-Z][a-z]+"
    server.replies = [
        completion(tool_calls=[tool_call("grep", {"pattern": pattern, "top_k": 3})]),
        completion("Teutberga [chunk Lothair II#0]."),
    ]
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt-4o-mini", max_retries=0))
    agent = Agent(hippo_index, model, AgentSettings(tools=["keyword_search", "grep", "chunk_read"]))
    result = agent.run("Who was Lothair II married to?")
    assert [s.tool for s in result.trajectory] == ["grep"]
    observation = result.trajectory[0].observation
    expected = brute_force(hippo_index, pattern)
    total = sum(count for _, count in expected)
    assert observation.startswith(f'grep "{pattern}" ({total} matches in {len(expected)} chunks)') and total >= 2
    assert re.findall(r"^\[\d+\] chunk (.+?) \(score", observation, re.M) == [chunk for chunk, _ in expected[:3]]
    assert "grep" in {t["function"]["name"] for t in server.requests[0]["tools"]}
    toolkit = Toolkit(hippo_index, enabled=["keyword_search", "grep"])
    schema = action_schema(toolkit, NextAction(("keyword_search", "grep"), answer=True, final=False, constrained=True))
    variants = schema["json_schema"]["schema"]["anyOf"]
    grep_variant = next(v for v in variants if v["properties"].get("action", {}).get("enum") == ["grep"])
    assert grep_variant["properties"]["arguments"]["properties"]["pattern"] == {
        "description": grep_variant["properties"]["arguments"]["properties"]["pattern"]["description"],
        "type": "string",
    }


def test_list_documents_shows_each_document_in_order_with_its_size_and_first_sentence(hippo_index: Index) -> None:
    documents = hippo_index.store.documents()
    rows = hippo_index.store.doc_chunk_rows()
    total, entries = hippo_index.list_documents(top_k=100)
    assert total == len(documents) and [e.doc_id for e in entries] == [d.doc_id for d in documents]
    for entry in entries:
        begin, end = rows[entry.doc_id]
        records = hippo_index.store.chunks(range(begin, end))
        assert (entry.chunks, entry.tokens) == (end - begin, sum(r.n_tokens for r in records.values()))
        assert entry.first_sentence == hippo_index.sentences(records[begin])[0].strip()
    scope = parse_filter("title~Lothair")
    scoped_total, scoped = hippo_index.list_documents(scope, 1)
    assert scoped_total == sum(1 for d in documents if scope is not None and scope.matches(d.metadata)) >= 1
    assert len(scoped) == 1 and "Lothair" in scoped[0].title
    toolkit = Toolkit(hippo_index, enabled=TOOL_NAMES)
    shown = toolkit.call("list_documents", {"top_k": 2}).observation.splitlines()
    assert shown[0] == f"list_documents: {total} documents, the first 2 shown" and shown[1].startswith("[1] ")
    assert not toolkit.call("list_documents", {"top_k": 0}).ok


@settings(max_examples=60, deadline=None)
@given(where=st.text(max_size=30), top_k=st.integers(-5, 10**9))
def test_any_list_documents_arguments_are_answered_or_refused(hippo_index: Index, where: str, top_k: int) -> None:
    result = Toolkit(hippo_index, enabled=TOOL_NAMES).call("list_documents", {"where": where, "top_k": top_k})
    assert result.observation.startswith(("Error: ", "list_documents: ", "(")), result.observation
