"""Agents as each profile gets them, on the scripted model server."""

from __future__ import annotations

from arag.agent import Agent
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from support.scripted_server import ScriptedServer


def local_json_agent(index: Index, server: ScriptedServer, max_steps: int, **settings: object) -> Agent:
    """The agent as the embedded model gets it: compact profile, constrained JSON actions."""
    model = ChatModel(LLMSettings(base_url=server.base_url, model="small", max_retries=0), local=True)
    # the levers these tests are about; title reads (a hit titled as a keyword shown read) have their own tests
    view = {"search_hits": 3, "title_reads": False, **settings.pop("view", {})}  # type: ignore[dict-item]
    # the loop's opening search and the evidence ledger's holds and citations have their own tests: these script the
    # model's searches from the first action, and its answers as they stand
    policies = ["-opening_search", "-evidence_ledger", *settings.pop("policies", [])]  # type: ignore[misc]
    settings = {"action_mode": "flat-json", "policies": policies, **settings}
    return Agent(index, model, AgentSettings(max_steps=max_steps, view=view, **settings), json_actions=True)  # type: ignore[arg-type]
