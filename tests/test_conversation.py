"""Conversations: follow-up questions in context, one context tracker, a token budget; through the Python API on
the scripted server (the real client path)."""

from __future__ import annotations

import json

from arag.agent import Agent, Conversation
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from support.scripted_server import ScriptedServer, completion, tool_call


def agent_for(index: Index, server: ScriptedServer) -> Agent:
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt-4o-mini", max_retries=0))
    return Agent(index, model, AgentSettings(profile="paper"))


def three_turns() -> list[dict[str, object]]:
    return [
        # 1. Who was Lothair II's mother?
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair II"], "top_k": 3})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]}, "c2")]),
        completion("Ermengarde of Tours [chunk Lothair II#0]."),
        # 2. And when did she die? — the search names the earlier answer's entity; the chunk read in turn 1 is not
        # read again
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde of Tours"], "top_k": 3}, "c3")]),
        completion(
            tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0", "Ermengarde of Tours#0"]}, "c4")]
        ),
        completion("On 20 March 851 [chunk Ermengarde of Tours#0]."),
        # 3. Who was her father?
        completion("Hugh of Tours [chunk Ermengarde of Tours#0]."),
    ]


def test_three_turns_follow_one_another_with_one_tracker(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = three_turns()
    chat = Conversation(agent_for(hippo_index, server))
    first = chat.ask("Who was Lothair II's mother?")
    assert first.answer.startswith("Ermengarde of Tours") and first.read_chunks == ["Lothair II#0"]
    second = chat.ask("And when did she die?")
    assert second.answer.startswith("On 20 March 851")
    # the follow-up's first request carries turn 1 whole: its question, tool steps and answer
    request = server.requests[3]["messages"]
    texts = [json.dumps(m) for m in request]
    assert any("Who was Lothair II's mother?" in t for t in texts) and any(
        "Ermengarde of Tours [chunk" in t for t in texts
    )
    assert request[-1] == {"role": "user", "content": "Question: And when did she die?"}
    # its search uses the earlier answer's entity; the chunk read in turn 1 gets the tracker's notice
    assert second.trajectory[0].arguments["keywords"] == ["Ermengarde of Tours"]
    reread = second.trajectory[1].observation
    assert "[chunk Lothair II#0] already read earlier in this session; not repeated" in reread
    assert "Ermengarde of Tours( d. 20 March 851)" in reread
    assert second.read_chunks == ["Ermengarde of Tours#0"]  # this question's reads only
    third = chat.ask("Who was her father?")
    assert third.answer.startswith("Hugh of Tours") and len(chat.turns) == 3
    assert [t.question for t in chat.turns] == [
        "Who was Lothair II's mother?",
        "And when did she die?",
        "Who was her father?",
    ]
    sources = {s["chunk_id"]: s for s in chat.sources()}
    assert sources["Ermengarde of Tours#0"]["cited"] and sources["Lothair II#0"]["turn"] == 1


def test_past_the_budget_the_oldest_turn_keeps_only_its_question_and_answer(
    hippo_index: Index, server: ScriptedServer
) -> None:
    server.replies = [
        *three_turns()[:3],
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]}, "c5")]),
        completion("She was his mother [chunk Lothair II#0]."),
    ]
    chat = Conversation(agent_for(hippo_index, server), max_tokens=60)
    chat.ask("Who was Lothair II's mother?")
    assert chat.turns[0].tokens() > 60
    second = chat.ask("Say it again.")
    turn_one = chat.turns[0]
    assert turn_one.compacted and turn_one.messages == [
        {"role": "user", "content": "Question: Who was Lothair II's mother?"},
        {"role": "assistant", "content": "Answer: Ermengarde of Tours [chunk Lothair II#0]."},
    ]
    # its tool steps left the context, so its chunk could be read again (in full, not the notice)
    assert "already read" not in second.trajectory[0].observation
    assert "Lothair II( 835" in second.trajectory[0].observation
    sent = server.requests[3]["messages"]
    assert not any(m["role"] == "tool" for m in sent[1:3]) and sent[1]["content"].startswith("Question: Who was")


def test_a_turn_that_fails_leaves_nothing(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]})]),
        (500, {"error": {"message": "down"}}),
    ]
    chat = Conversation(agent_for(hippo_index, server))
    failed = chat.ask("Who was Lothair II's mother?")
    assert failed.stop_reason == "error" and chat.turns == [] and "Lothair II#0" not in chat.tracker.read_ids


def test_a_conversation_scoped_by_a_filter_stays_in_it(hippo_index: Index, server: ScriptedServer) -> None:
    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair"], "top_k": 5})]),
        completion("Nothing in scope."),
    ]
    chat = Conversation(agent_for(hippo_index, server), where="title=Waldrada")
    result = chat.ask("Who was Lothair II's mother?")
    assert "Waldrada#0" in result.trajectory[0].observation and "Lothair II#0" not in result.trajectory[0].observation


def test_a_reread_answer_is_what_the_next_turn_sees(hippo_index: Index, server: ScriptedServer) -> None:
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="m", max_retries=0))
    agent = Agent(hippo_index, model, AgentSettings(profile="paper", policies=["+phrase_answer"]))
    server.replies = [
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]})]),
        completion("Ermengarde of Tours was a queen, and she died in March."),  # a sentence: reread
        completion("20 March 851"),  # the phrase
        completion("Hugh of Tours [chunk Ermengarde of Tours#0]."),  # turn 2
    ]
    chat = Conversation(agent)
    first = chat.ask("When did Ermengarde of Tours die?")
    assert first.answer == "20 March 851 [chunk Ermengarde of Tours#0]"
    chat.ask("Who was her father?")
    history = server.requests[-1]["messages"]
    assert history[-2] == {"role": "assistant", "content": f"Answer: {first.answer}"}
    assert history[-1] == {"role": "user", "content": "Question: Who was her father?"}
