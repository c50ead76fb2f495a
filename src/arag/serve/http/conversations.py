"""Conversations over HTTP: open one, ask its next question (plain or as events), read its thread, delete it."""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter, OrderedDict
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
    """The open conversations: ids a client cannot guess (``secrets.token_urlsafe``), each owned by the principal
    (token) that opened it — another sees it as not existing —, forgotten after ``idle_expiry_s`` without a
    question; a principal keeps at most ``per_principal`` (its own least recently used goes), and past ``max_open``
    in all the least recently used of the principal holding the most goes, so one token cannot evict the others'."""

    def __init__(self, idle_expiry_s: float, max_open: int, per_principal: int | None = None) -> None:
        self.idle_expiry_s, self.max_open = idle_expiry_s, max_open
        self.per_principal = per_principal or max_open
        self._open: OrderedDict[str, tuple[Conversation, float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, conversation: Conversation, owner: str = "") -> str:
        conversation_id = secrets.token_urlsafe(24)
        with self._lock:
            self._expire()
            self._open[conversation_id] = (conversation, time.monotonic(), owner)
            while self._count(owner) > self.per_principal:
                self._drop_oldest_of(owner)
            while len(self._open) > self.max_open:
                counts = Counter(held for _c, _u, held in self._open.values())
                self._drop_oldest_of(max(counts, key=lambda who: (counts[who], who != owner)))
        return conversation_id

    def get(self, conversation_id: str, owner: str = "") -> Conversation:
        with self._lock:
            self._expire()
            found = self._open.get(conversation_id)
            if found is None or found[2] != owner:  # another's is answered as one that does not exist
                raise HTTPException(404, "no such conversation (it may have expired)")
            del self._open[conversation_id]
            self._open[conversation_id] = (found[0], time.monotonic(), owner)
            return found[0]

    def remove(self, conversation_id: str, owner: str = "") -> bool:
        with self._lock:
            found = self._open.get(conversation_id)
            if found is None or found[2] != owner:
                return False
            del self._open[conversation_id]
            return True

    def _count(self, owner: str) -> int:
        return sum(1 for _c, _u, held in self._open.values() if held == owner)

    def _drop_oldest_of(self, owner: str) -> None:
        oldest = next(key for key, (_c, _u, held) in self._open.items() if held == owner)
        del self._open[oldest]

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (_c, used, _o) in self._open.items() if now - used > self.idle_expiry_s]:
            del self._open[key]


def _owner(request: Request) -> str:
    """Who a request comes from (arag.serve.access): the token's name and the groups it reads ("" without tokens:
    everyone is one), so that a token re-made under the same name with other groups does not inherit the
    conversations, and the documents, of the one before."""
    caller = request.scope.get("arag.caller")
    reader = getattr(caller, "reader", None)
    groups = "*" if reader is None else ",".join(sorted(reader.groups))
    return f"{getattr(caller, 'name', '') or ''}|{groups}" if caller is not None else ""


def router(served: ServedIndex) -> APIRouter:
    """The conversation routes of one index; its conversations are kept here."""
    router = APIRouter()
    limits = served.settings.conversation
    conversations = Conversations(limits.idle_expiry_s, limits.max_open, limits.max_open_per_principal)

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
    async def new_conversation(request: Request, body: NewConversation | None = None) -> dict[str, Any]:
        """Open a conversation: its questions follow one another, with one context tracker (docs/usage.md,
        Conversations). Returns its id, to send with each question; it expires when idle."""
        body = body or NewConversation()
        scope = where(body.where)
        agent = await served.bounded(served.new_agent, served.view(request), body.max_steps)
        conversation = Conversation(agent, served.settings.conversation.max_tokens, scope)
        return conversation_view(conversations.add(conversation, _owner(request)), conversation)

    @router.get("/conversations/{conversation_id}")
    async def get_conversation(conversation_id: str, request: Request) -> dict[str, Any]:
        """The conversation's turns so far (question, answer, resolved citations) and every source it used."""
        conversation = conversations.get(conversation_id[:64], _owner(request))
        view = conversation_view(conversation_id, conversation)
        return {**view, "sources": await served.bounded(conversation.sources)}

    @router.delete("/conversations/{conversation_id}", status_code=204)
    async def delete_conversation(conversation_id: str, request: Request) -> Response:
        if not conversations.remove(conversation_id[:64], _owner(request)):
            raise HTTPException(404, "no such conversation (it may have expired)")
        return Response(status_code=204)

    def follow_up(conversation_id: str, body: FollowUp, request: Request) -> tuple[Conversation, str, Filter | None]:
        conversation = conversations.get(conversation_id[:64], _owner(request))
        if conversation.lock.locked():
            raise HTTPException(409, "this conversation is answering a question; wait for its answer")
        return conversation, question_of(body.question), where(body.where)

    @router.post("/conversations/{conversation_id}/ask")
    async def converse(conversation_id: str, body: FollowUp, request: Request) -> Any:
        """The next question of the conversation; its answer as /api/ask gives it, with ``turn`` (from 1)."""
        conversation, question, scope = follow_up(conversation_id, body, request)
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
        conversation, question, _scope = follow_up(conversation_id, body, request)
        return ask_events(served, question, body.where, request, conversation=conversation)

    return router
