"""same_name (beyond the paper, off by default): hits that are different entities of one name are listed with
what tells them apart; hits of one entity, or of names the question does not use, are left as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from conftest import fake_run, fake_settings, guarded_call
from support.scripted_server import ScriptedServer, completion, tool_call


@pytest.fixture(scope="module")
def namesakes(tmp_path_factory: pytest.TempPathFactory) -> Index:
    folder: Path = tmp_path_factory.mktemp("namesakes")
    docs = [
        {"title": "John Smith (footballer)",
         "text": "John Smith (born 1950) is an English former footballer. He played for Leeds."},
        {"title": "John Smith (politician)",
         "text": "John Smith (1938 – 1994) was a Scottish politician. He led the Labour Party."},
        {"title": "Fortunella (film)", "text": "Fortunella is a 1958 Italian film by Eduardo De Filippo."},
        {"title": "Fortunella (2024 film)", "text": "Fortunella is a 2024 remake of the 1958 film."},
        {"title": "Jane Doe", "text": "Jane Doe met John Smith once. She was a painter."},
    ]  # fmt: skip
    (folder / "corpus.json").write_text(json.dumps(docs), encoding="utf-8")
    build_index([folder / "corpus.json"], folder / "idx", fake_settings())
    return Index.open(folder / "idx", threads=1)


def test_namesakes_are_listed_with_what_tells_them_apart(namesakes: Index) -> None:
    run, policies = fake_run(namesakes, "same_name", question="Which party did John Smith lead?")
    result = guarded_call(run, policies, "keyword_search", {"keywords": ["John Smith"]})
    assert 'These hits are 2 different entities called "John Smith"' in result.observation
    assert "- John Smith (footballer) [chunk John Smith (footballer)#0]: John Smith (born 1950)" in result.observation
    assert "- John Smith (politician) [chunk John Smith (politician)#0]: John Smith (1938 – 1994)" in result.observation
    assert "Jane Doe" not in result.observation.split("different entities")[1]  # not a namesake
    assert policies[0].times_acted == 1


def test_a_film_and_its_remake(namesakes: Index) -> None:
    run, policies = fake_run(namesakes, "same_name", question="Who directed the film Fortunella?")
    result = guarded_call(run, policies, "semantic_search", {"query": "Fortunella film director"})
    assert 'different entities called "Fortunella"' in result.observation
    assert "Fortunella (2024 film)" in result.observation and "Fortunella (film)" in result.observation


@pytest.mark.parametrize(
    "question,arguments",
    [
        ("Who was Jane Doe?", {"keywords": ["Jane Doe", "painter"]}),  # one entity
        ("Who played for Leeds?", {"keywords": ["Leeds", "Labour"]}),  # two John Smiths, a name nobody asked for
    ],
)
def test_no_note_without_namesakes_the_question_names(namesakes: Index, question: str, arguments: dict) -> None:
    run, policies = fake_run(namesakes, "same_name", question=question)
    result = guarded_call(run, policies, "keyword_search", arguments)
    assert "different entities" not in result.observation and not policies[0].times_acted


def test_the_agent_with_same_name_on_the_scripted_server(namesakes: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["John Smith"]})]),
        completion("The Labour Party [John Smith (politician)#0]."),
    ]
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="scripted", max_retries=0))
    settings = AgentSettings(max_steps=3, profile="paper", policies=["+same_name"])
    result = Agent(namesakes, model, settings).run("Which party did John Smith lead?")
    assert result.stop_reason == "answered" and "different entities" in result.trajectory[0].observation
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "John Smith (politician)" in tool_message["content"]
