"""Serving an index: ``arag serve`` (HTTP, the web page, MCP over HTTP), ``arag mcp`` (stdio), ``arag token``,
``arag db``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from arag.errors import InputError
from arag.serve.cli.common import (
    ConfigOpt,
    IndexOpt,
    JsonOpt,
    LocalModelOpt,
    app,
    db_app,
    open_index,
    print_json,
    say,
    settings_with,
)


@app.command()
def mcp(index_dir: IndexOpt) -> None:
    """Serve the three tools over MCP (stdio)."""
    from arag.serve.mcp import serve

    index = open_index(index_dir)  # threads and IVF probes from settings, like the other commands
    index.follow_updates()  # a sync or an added file is served without a restart
    serve(index)


def _served_indexes(specs: list[str], configured: dict[str, str]) -> dict[str, str]:
    """``NAME=LOCATION`` (or a bare location, served as "default") for each --index; else server.indexes."""
    from arag.serve.access import NAME

    if not specs:
        if not configured:
            raise InputError("name an index to serve: --index PATH, or --index NAME=PATH for each of several")
        return dict(configured)
    served: dict[str, str] = {}
    for spec in specs:
        name, _, location = spec.partition("=")
        if not (location and NAME.match(name)):
            name, location = ("default" if not served else Path(spec).name or spec), spec
        if name in served:
            raise InputError(f"two indexes named {name!r}: name them (--index NAME=PATH)")
        served[name] = location
    return served


@app.command()
def serve(
    index_specs: Annotated[
        list[str] | None,
        typer.Option(
            "--index",
            "-i",
            help="An index to serve: PATH or postgresql://… (served as 'default'), or NAME=PATH; repeat for several "
            "(the first is the default, at /api/…; each at /api/indexes/NAME/…). [default: server.indexes]",
        ),
    ] = None,
    runs: Annotated[
        Path | None, typer.Option("--runs", help="Folder of 'arag eval run' outputs to browse. [default: none]")
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="Address to bind; not loopback requires tokens. [default: 127.0.0.1]")
    ] = None,
    port: Annotated[int | None, typer.Option(min=0, max=65535, help="TCP port. [default: 8000]")] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="One bearer token with every right (see arag token for scoped ones). [default: none; env "
            "ARAG_SERVER__TOKEN]"
        ),
    ] = None,
    tokens_file: Annotated[
        Path | None, typer.Option(help="Scoped tokens (arag token add). [default: ~/.config/arag/tokens.json]")
    ] = None,
    audit_log: Annotated[
        Path | None, typer.Option(help="Append one JSON line per request (no token, no question text). [default: none]")
    ] = None,
    max_concurrent_asks: Annotated[
        int | None, typer.Option(min=1, max=256, help="Questions answered at once; more get 429. [default: 2]")
    ] = None,
    local_model: LocalModelOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API, the web page (open http://HOST:PORT/) and MCP over HTTP (/mcp), for one index or several."""
    try:
        from arag.serve.http import serve as run_server
    except ImportError:
        from arag.errors import MissingExtraError

        raise MissingExtraError(
            "arag serve needs FastAPI and uvicorn, which a-rag depends on: reinstall it (bash scripts/setup.sh)"
        ) from None
    if local_model:
        os.environ["ARAG_LOCAL_MODEL"] = local_model
    server = {"host": host, "port": port, "token": token, "max_concurrent_asks": max_concurrent_asks,
              "tokens_file": tokens_file, "audit_log": audit_log}  # fmt: skip
    settings = settings_with(config, {"server": server})
    if runs is not None and not runs.is_dir():
        raise InputError(f"--runs {runs} is not a folder")
    indexes = {}
    try:
        for name, location in _served_indexes(index_specs or [], settings.server.indexes).items():
            indexes[name] = open_index(location, settings.index.threads)
            indexes[name].follow_updates()  # a sync or an added file is served without a restart
        names = ", ".join(indexes)
        say(
            "serving",
            f"http://{settings.server.host}:{settings.server.port}/ ({names}; MCP: /mcp, API docs: /api/docs)",
        )
        run_server(indexes, settings, runs)
    finally:
        for opened in indexes.values():
            opened.close()


token_app = typer.Typer(help="Scoped tokens for arag serve: add, list, revoke (stored hashed).", no_args_is_help=True)
app.add_typer(token_app, name="token")
TokensFileOpt = Annotated[
    Path | None, typer.Option("--file", help="The token file. [default: ~/.config/arag/tokens.json]")
]


def _token_file(path: Path | None):
    from arag.serve.access import TokenFile, default_tokens_file

    return TokenFile(path or settings_with(None).server.tokens_file or default_tokens_file())


@token_app.command("add")
def token_add(
    name: Annotated[str, typer.Argument(help="Who or what the token is for (shown in the audit log).")],
    indexes: Annotated[
        list[str] | None, typer.Option("--index", help="An index name it may use (repeat); admin without: all.")
    ] = None,
    scope: Annotated[
        str, typer.Option(help="read (search, read, MCP), ask (and questions), admin (and runs).")
    ] = "read",
    groups: Annotated[
        list[str] | None,
        typer.Option("--group", help="A group whose documents it reads besides the open ones (repeat)."),
    ] = None,
    all_documents: Annotated[
        bool, typer.Option("--all-documents", help="It reads every document, whatever its access (admin: the default).")
    ] = False,
    file: TokensFileOpt = None,
) -> None:
    """Create a token; it is printed once and stored only as its SHA-256. It reads the documents open to everyone
    and those of its groups (documents' ``access``: docs/usage.md)."""
    tokens = _token_file(file)
    token = tokens.add(name, scope, indexes or [], groups or [], all_documents)
    entry = next(e for e in tokens.entries() if e.name == name)
    reads = "every document" if entry.caller().reader is None else _reads(entry.groups)
    say("token", f"{name} ({scope}; {', '.join(indexes or []) or 'every index'}; {reads}) added to {tokens.path}")
    print(token)


def _reads(groups: list[str]) -> str:
    return f"the open documents and those of {', '.join(groups)}" if groups else "the open documents only"


@token_app.command("list")
def token_list(file: TokensFileOpt = None, as_json: JsonOpt = False) -> None:
    """The tokens: name, scope, indexes, the groups whose documents it reads (* every document, - open ones only),
    when created (never the token)."""
    entries = [
        {"name": e.name, "scope": e.scope, "indexes": e.indexes, "created": e.created,
         "groups": None if e.caller().reader is None else e.groups}  # None: reads every document
        for e in _token_file(file).entries()
    ]  # fmt: skip
    if as_json:
        print_json(entries)
        return
    if not entries:
        say("", "no tokens")
    for entry in entries:
        groups = "*" if entry["groups"] is None else ",".join(entry["groups"]) or "-"
        print(f"{entry['name']}\t{entry['scope']}\t{','.join(entry['indexes']) or '*'}\t{groups}\t{entry['created']}")


@token_app.command("revoke")
def token_revoke(name: str, file: TokensFileOpt = None) -> None:
    """Remove a token: a running server refuses it after its restart or within a few seconds (it rereads the file)."""
    if not _token_file(file).revoke(name):
        raise InputError(f"no token named {name!r}")
    say("revoked", name)


DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Data directory of the server. [default: $ARAG_CACHE_DIR/postgres]"),
]


@db_app.command("start")
def db_start(data: DataOpt = None) -> None:
    """Start a local PostgreSQL 18 + pgvector (extra 'pg'); prints its URL. It keeps running until 'db stop'."""
    from arag.store.postgres.server import start

    sys.stdout.write(start(data) + "\n")


@db_app.command("url")
def db_url(data: DataOpt = None) -> None:
    """Print the URL of the running local server."""
    from arag.store.postgres.server import url

    sys.stdout.write(url(data) + "\n")


@db_app.command("stop")
def db_stop(data: DataOpt = None) -> None:
    """Stop the local server."""
    from arag.store.postgres.server import data_dir, stop

    say("stopped" if stop(data) else "not running", str(data_dir(data)))
