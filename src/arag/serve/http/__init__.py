"""``arag serve``: the HTTP API, the web page and MCP over HTTP, on FastAPI + uvicorn.

A thin layer: every endpoint calls :class:`~arag.index.Index`, :mod:`arag.api` (the agent) or reads the
run folders that ``arag eval run`` writes. JSON shapes are the CLI's ``--json`` shapes.

Safety: loopback by default; any other address requires a token, checked on every request (API, event
stream, MCP, page); bodies and arguments are bounded; CORS is off unless origins are configured; the page
renders every corpus and model text as text; no endpoint reads a file outside the index and the runs folder.
"""

from arag.serve.http.app import LOOPBACK, create_app, serve

__all__ = ["LOOPBACK", "create_app", "serve"]
