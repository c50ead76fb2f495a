"""A scripted OpenAI-compatible HTTP server on 127.0.0.1: queued responses, recorded requests."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 10,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 40},
        },
    }


def embeddings(texts: list[str] | str, dims: int = 8) -> dict[str, Any]:
    """Deterministic /embeddings reply: letter counts folded into ``dims`` dimensions, in reverse order."""
    items = [texts] if isinstance(texts, str) else texts
    data = []
    for index, text in enumerate(items):
        vector = [0.0] * dims
        for char in text.lower():
            if char.isalpha():
                vector[ord(char) % dims] += 1.0
        data.append({"object": "embedding", "index": index, "embedding": vector})
    return {
        "object": "list",
        "data": data[::-1],
        "model": "scripted-embed",
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


@dataclass
class Raw:
    """A reply sent byte for byte: any status, any body (not necessarily JSON)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Hang:
    """Accept the request and never answer (until the server closes)."""


@dataclass
class Drip:
    """Send headers, then one byte of a never-ending body every ``interval_s``."""

    interval_s: float = 0.2


class ScriptedServer:
    """Each POST to /v1/chat/completions pops the next queued reply: a completion dict, (status, body[, headers]),
    or a fault: :class:`Raw`, :class:`Hang`, :class:`Drip`."""

    def __init__(self) -> None:
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.default: Any = None  # used when the queue is empty (e.g. a model that never stops)
        self.embedding_requests: list[dict[str, Any]] = []
        self.delay_s = 0.0  # per request, to make a run slow enough to be killed mid-way
        self.received = 0  # chat requests that arrived, counted before the delay: "the model is thinking now"
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/embeddings"):
                    server.received += 1
                if server.delay_s:
                    time.sleep(server.delay_s)
                if self.path.endswith("/embeddings"):
                    server.embedding_requests.append(body)
                    reply: Any = embeddings(body["input"])
                else:
                    server.requests.append(body)
                    reply = server.replies.pop(0) if server.replies else server.default
                if isinstance(reply, (Raw, Hang, Drip)):
                    self._fault(reply)
                    return
                status, payload, headers = 200, reply, {}
                if isinstance(reply, tuple):
                    status, payload = reply[0], reply[1]
                    headers = reply[2] if len(reply) > 2 else {}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _fault(self, reply: Raw | Hang | Drip) -> None:
                if isinstance(reply, Hang):
                    server.stopping.wait()
                    return
                if isinstance(reply, Raw):
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                try:
                    while not server.stopping.wait(reply.interval_s):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:
                    pass  # the client gave up

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
