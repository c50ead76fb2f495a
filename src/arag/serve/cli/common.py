"""What every ``arag`` command shares: the application and its groups, the consoles, the options that recur, and
how a command reads settings and opens an index."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from arag.errors import InputError
from arag.settings import AgentSettings, IndexSettings, describe

# rich_markup_mode=None: usage errors are one plain "Error: ..." line, not a panel hard-wrapped at 80 columns
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="A-RAG: agentic retrieval over hierarchical retrieval interfaces.",
)
search_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Run a retrieval tool directly.")
app.add_typer(search_app, name="search")
tables_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="The tables found in the documents, as data: list, query."
)
app.add_typer(tables_app, name="tables")
documents_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="The documents: list them, show an outline, read a section."
)
app.add_typer(documents_app, name="documents")
db_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="A local PostgreSQL + pgvector server.")
app.add_typer(db_app, name="db")
eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Reproduce the paper's experiments.")
app.add_typer(eval_app, name="eval")
err = Console(stderr=True, soft_wrap=True)  # never hard-wrap: people grep logs and paste paths
out = Console(soft_wrap=True)


def say(label: str, text: str, console: Console = err) -> None:
    """``label: text`` with only the label styled: the text (paths, ids, "a-rag[eval]") is printed as it is."""
    console.print(f"{label}: {escape(text)}" if label else escape(text), highlight=False)


IndexOpt = Annotated[
    str,
    typer.Option(
        "--index", "-i", help="Index directory (made by arag index), or postgresql://[user@]host[:port]/db?index=NAME."
    ),
]
PARTIAL_INDEX = 3  # exit status: index written without some sources (2 is click's usage error)
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="Settings file (JSON or TOML); flags and ARAG_* variables win.")
]
TopKOpt = Annotated[int, typer.Option("--top-k", "-k", min=1, max=1000, help="Number of chunks to return (1-1000).")]
WhereOpt = Annotated[
    str | None,
    typer.Option(
        "--where",
        "-w",
        help="Only documents whose metadata match, e.g. 'path=guides/*' or 'type=pdf, year>=2020' (fields: path, "
        "type, title, mtime and what the files say about themselves: arag info lists them; syntax: docs/usage.md, "
        "Scoped search). [default: all]",
    ),
]
MaxStepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, max=200, help=describe(AgentSettings, "max_steps", "ARAG_AGENT__MAX_STEPS")),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(help="Model name at the endpoint. [default: none: the embedded local model; env ARAG_MODEL]"),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible endpoint base URL. [default: none: the embedded local model; env ARAG_BASE_URL]"
    ),
]
LocalModelOpt = Annotated[
    str | None,
    typer.Option(
        help="Embedded model when no endpoint is set: qwen2.5-coder-1.5b, qwen2.5-coder-0.5b or a GGUF file path. "
        "[default: qwen2.5-coder-1.5b; env ARAG_LOCAL_MODEL]"
    ),
]
ActionModeOpt = Annotated[
    str | None, typer.Option(help=describe(AgentSettings, "action_mode", "ARAG_AGENT__ACTION_MODE"))
]
CorpusOpt = Annotated[str, typer.Option(help="auto, chunks (A-RAG chunks.json) or corpus (passages).")]
ProfileOpt = Annotated[str | None, typer.Option(help=describe(AgentSettings, "profile", "ARAG_AGENT__PROFILE"))]
PolicyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--policy",
        help="Switch one of the profile's policies for this run: --policy -NAME leaves it out, --policy +NAME adds "
        "it (repeatable; arag/harness/policies). [default: the profile's; env ARAG_AGENT__POLICIES]",
    ),
]
ThreadsOpt = Annotated[
    int | None, typer.Option(min=1, max=256, help=describe(IndexSettings, "threads", "ARAG_INDEX__THREADS"))
]


def _version(value: bool) -> None:
    if value:
        from arag.version import __version__

        sys.stdout.write(f"a-rag {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    acting_as: Annotated[
        str | None,
        typer.Option(
            "--as",
            envvar="ARAG_AS",
            help="Read the index as a member of these groups (comma-separated): only the documents they may read "
            "(their access field or .arag-access.toml). Without it, as the local user: every document.",
        ),
    ] = None,
) -> None:
    """A-RAG: agentic retrieval over hierarchical retrieval interfaces."""
    from arag.principals import Principal
    from arag.settings import unknown_environment

    ACTING_AS[0] = None if acting_as is None else Principal.of("cli", acting_as.split(","))

    for name in unknown_environment():
        say("[yellow]warning[/yellow]", f"{name} is not an a-rag setting; ignored")


ACTING_AS: list[Any] = [None]  # the principal of --as (None: the local user), set once per command


def nonempty(values: list[str], what: str) -> list[str]:
    kept = [v for v in values if v.strip()]
    if not kept:
        raise InputError(f"the {what} is empty")
    return kept


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def settings_with(config: Path | None, overrides: dict[str, Any] | None = None):
    from arag.settings import load_settings

    return load_settings(config, overrides)


def open_index(index: str, threads: int | None = None, probes: int | None = None):
    from arag.index import Index

    # ARAG_INDEX__THREADS, __ANN_PROBES, __HNSW_EF_SEARCH, __PG_STATEMENT_TIMEOUT_S
    settings = settings_with(None).index
    overrides = {"threads": threads, "ann_probes": probes}
    opened = Index.open_with(index, settings.model_copy(update={k: v for k, v in overrides.items() if v}))
    return opened if ACTING_AS[0] is None else opened.as_principal(ACTING_AS[0])


def open_scoped(index: str, where: str | None, probes: int | None = None) -> tuple[Any, Any]:
    """The index and the parsed ``--where`` filter, with what the filter cannot match said on stderr."""
    from arag.filters import parse_filter

    scope = parse_filter(where)
    idx = open_index(index, probes=probes)
    scope_notes(idx, scope)
    return idx, scope


def scope_notes(idx: Any, where: Any) -> None:
    """What a filter could not match: documents without metadata, or nothing at all (said on stderr)."""
    if where is None:
        return
    missing = idx.without_metadata()
    if missing:
        say(
            "[yellow]note[/yellow]",
            f"{missing} documents were indexed before a-rag recorded metadata and match no filter; "
            "re-index them with --rebuild",
        )
    scope = idx.scope(where)
    if scope is not None and not scope.doc_ids:
        fields = ", ".join(idx.metadata_fields()) or "none"
        say("[yellow]note[/yellow]", f"no document matches the filter {where}; fields in this index: {fields}")


def print_hits(hits: list[Any], as_json: bool) -> None:
    if as_json:
        print_json([h.to_dict() for h in hits])
        return
    if not hits:
        out.print("no matching chunks")
    for hit in hits:
        out.print(f"[bold]{escape(hit.chunk_id)}[/bold]  score {hit.score:.4g}", highlight=False)
        for snippet in hit.snippets:
            out.print(f"   {' '.join(snippet.split())[:300]}", highlight=False, markup=False)
