"""A real uvicorn on a free loopback port serving a-rag's app, its model the scripted server."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

from arag.agent import Agent
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.serve.http import create_app
from arag.serve.http.app import uvicorn_config
from arag.settings import AgentSettings, LLMSettings, ServerSettings, Settings
from support.scripted_server import ScriptedServer


class LiveServer:
    """uvicorn serving an app on a free loopback port, in a thread."""

    def __init__(self, app: Any, read_timeout_s: float = 10.0) -> None:
        self.server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", 0, read_timeout_s))  # as arag serve runs it
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def serve(index: Index, llm: ScriptedServer, runs: Path | None = None, **server: Any) -> LiveServer:
    settings = Settings(server=ServerSettings(**server))

    def agent(max_steps: int | None, served: Index) -> Agent:
        model = ChatModel(LLMSettings(base_url=llm.base_url, model="gpt-4o-mini", max_retries=0, timeout_s=30))
        return Agent(served, model, AgentSettings(max_steps=max_steps or 5))

    return LiveServer(create_app(index, settings, runs, agent_factory=agent))
