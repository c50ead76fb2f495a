"""The documented Python API (what the CLI, MCP and HTTP layers call)."""

from __future__ import annotations

from pathlib import Path

import pytest

import arag
from arag.models.endpoint import ChatModel
from arag.settings import LLMSettings, Settings
from conftest import FIXTURES, fake_settings
from support.scripted_server import ScriptedServer, completion, tool_call


def test_the_documented_api(tmp_path: Path, server: ScriptedServer) -> None:
    from arag.corpus.build import build_index

    build_index([FIXTURES / "hipporag_corpus.json"], tmp_path / "idx", fake_settings())
    settings = Settings(llm=LLMSettings(base_url=server.base_url, model="gpt-4o-mini", api_key="k"))
    index = arag.open_index(tmp_path / "idx", settings)
    assert index.keyword_search(["Waldrada"], top_k=1)[0].chunk_id == "Waldrada#0"
    records, missing = index.read(["Waldrada#0", "nope"])
    assert [r.chunk_id for r in records] == ["Waldrada#0"] and missing == ["nope"]
    session = arag.Toolkit(index)
    assert "Waldrada" in session.call("chunk_read", {"chunk_ids": ["Waldrada#0"]}).observation
    assert "already read" in session.call("chunk_read", {"chunk_ids": ["Waldrada#0"]}).observation

    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion("20 March 851"),
    ]
    result = arag.ask(index, "When did Ermengarde of Tours die?", settings)
    assert isinstance(result, arag.AgentResult) and result.answer == "20 March 851" and result.steps == 1

    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]}, "c2")]),
        completion("20 March 851 [chunk Ermengarde of Tours#0]"),
    ]
    events = list(arag.stream(index, "When did Ermengarde of Tours die?", settings))
    assert [e["type"] for e in events] == ["step", "step", "result"]
    assert [e["tool"] for e in events[:2]] == ["keyword_search", "chunk_read"] and events[1]["number"] == 2
    assert events[-1]["citations"] == [{"chunk_id": "Ermengarde of Tours#0", "verified": True}]

    server.default = (500, {"error": {"message": "down"}})
    model = ChatModel(LLMSettings(base_url=server.base_url, model="m", max_retries=0))
    [failed] = list(arag.stream(index, "q?", settings, model=model))
    assert failed["type"] == "result" and failed["stop_reason"] == "error" and "HTTP 500" in failed["error"]
    with pytest.raises(arag.ARagError, match="question is empty"):
        next(arag.stream(index, " ", settings))
