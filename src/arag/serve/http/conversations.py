"""Conversations over HTTP: open one, ask its next question (plain or as events), read its thread, delete it."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from arag.agent import Conversation
from arag.errors import ARagError
from arag.filters import Filter
from arag.serve.http.bodies import FollowUp, NewConversation
from arag.serve.http.questions import ask_events, until_the_client_leaves
from arag.serve.http.served import ServedIndex, busy, question_of, where
from arag.tracing import parent_from


class Conversations:
    """The open conversations: ids a client cannot guess (``secrets.token_urlsafe``), forgotten after
    ``idle_expiry_s`` without a question, and the least recently used beyond ``max_open``."""

    def __init__(self, idle_expiry_s: float, max_open: int) -> None:
        self.idle_expiry_s, self.max_open = idle_expiry_s, max_open
        self._open: OrderedDict[str, tuple[Conversation, float]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, conversation: Conversation) -> str:
        conversation_id = secrets.token_urlsafe(24)
        with self._lock:
            self._expire()
            self._open[conversation_id] = (conversation, time.monotonic())
            while len(self._open) > self.max_open:
                self._open.popitem(last=False)
        return conversation_id

    def get(self, conversation_id: str) -> Conversation:
        with self._lock:
            self._expire()
            found = self._open.pop(conversation_id, None)
            if found is None:
                raise HTTPException(404, "no such conversation (it may have expired)")
            self._open[conversation_id] = (found[0], time.monotonic())
            return found[0]

    def remove(self, conversation_id: str) -> bool:
        with self._lock:
            return self._open.pop(conversation_id, None) is not None

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (_c, used) in self._open.items() if now - used > self.idle_expiry_s]:
            del self._open[key]


def router(served: ServedIndex) -> APIRouter:
    """The conversation routes of one index; its conversations are kept here."""
    router = APIRouter()
    conversations = Conversations(served.settings.conversation.idle_expiry_s, served.settings.conversation.max_open)

    def conversation_view(conversation_id: str, conversation: Conversation) -> dict[str, Any]:
        turns = [
            {
                "question": t.question,
                "answer": t.result.answer,
                "sources": t.result.sources,
                "compacted": t.compacted,
            }
            for t in conversation.turns
        ]
        return {"id": conversation_id, "turns": turns, "expires_after_idle_s": conversations.idle_expiry_s}

    @router.post("/conversations", status_code=201)
    async def new_conversation(body: NewConversation | None = None) -> dict[str, Any]:
        """Open a conversation: its questions follow one another, with one context tracker (docs/usage.md,
        Conversations). Returns its id, to send with each question; it expires when idle."""
        body = body or NewConversation()
        scope = where(body.where)
        agent = await served.bounded(served.new_agent, body.max_steps)
        conversation = Conversation(agent, served.settings.conversation.max_tokens, scope)
        return conversation_view(conversations.add(conversation), conversation)

    @router.get("/conversations/{conversation_id}")
    async def get_conversation(conversation_id: str) -> dict[str, Any]:
        """The conversation's turns so far (question, answer, resolved citations) and every source it used."""
        conversation = conversations.get(conversation_id[:64])
        view = conversation_view(conversation_id, conversation)
        return {**view, "sources": await served.bounded(conversation.sources)}

    @router.delete("/conversations/{conversation_id}", status_code=204)
    async def delete_conversation(conversation_id: str) -> Response:
        if not conversations.remove(conversation_id[:64]):
            raise HTTPException(404, "no such conversation (it may have expired)")
        return Response(status_code=204)

    def follow_up(conversation_id: str, body: FollowUp) -> tuple[Conversation, str, Filter | None]:
        conversation = conversations.get(conversation_id[:64])
        if conversation.lock.locked():
            raise HTTPException(409, "this conversation is answering a question; wait for its answer")
        return conversation, question_of(body.question), where(body.where)

    @router.post("/conversations/{conversation_id}/ask")
    async def converse(conversation_id: str, body: FollowUp, request: Request) -> Any:
        """The next question of the conversation; its answer as /api/ask gives it, with ``turn`` (from 1)."""
        conversation, question, scope = follow_up(conversation_id, body)
        if not served.agents.asks.acquire(blocking=False):
            return busy()
        try:
            conversation.agent.trace_parent = parent_from(request.headers)
            agent = conversation.agent
            result = await until_the_client_leaves(request, agent, lambda: conversation.ask(question, scope))
        except ARagError as exc:
            raise HTTPException(400, str(exc)) from None
        finally:
            served.agents.asks.release()
        return {**result.to_dict(), "turn": len(conversation.turns)}

    @router.post("/conversations/{conversation_id}/ask/stream")
    async def converse_stream(conversation_id: str, body: FollowUp, request: Request) -> Any:
        """The next question, its steps as Server-Sent Events as /api/ask/stream sends them."""
        conversation, question, _scope = follow_up(conversation_id, body)
        return ask_events(served, question, body.where, request, conversation=conversation)

    return router
