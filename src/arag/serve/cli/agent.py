"""Questions to the agent: ``arag ask``, ``arag chat``, and the policies it can run (``arag policies``)."""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from arag.errors import ARagError
from arag.serve.cli.bundles import with_bundles
from arag.serve.cli.common import (
    ActionModeOpt,
    BaseUrlOpt,
    ConfigOpt,
    IndexOpt,
    JsonOpt,
    LocalModelOpt,
    MaxStepsOpt,
    ModelOpt,
    PolicyOpt,
    ProfileOpt,
    WhereOpt,
    app,
    err,
    open_index,
    out,
    print_json,
    say,
    scope_notes,
    settings_with,
)
from arag.settings import AgentSettings, LLMSettings, describe

if TYPE_CHECKING:
    from arag.agent import AgentResult, Conversation
    from arag.settings import Settings

VerifyOpt = Annotated[
    bool | None,
    typer.Option(
        "--verify/--no-verify",
        help=describe(AgentSettings, "verify_answers", "ARAG_AGENT__VERIFY_ANSWERS"),
    ),
]


@dataclass
class Asking:
    """The options a question shares in ``arag ask`` and ``arag chat``: the model, the agent, the scope, the
    verification, the settings file."""

    max_steps: MaxStepsOpt = None
    model: ModelOpt = None
    base_url: BaseUrlOpt = None
    local_model: LocalModelOpt = None
    profile: ProfileOpt = None
    policy: PolicyOpt = None
    where: WhereOpt = None
    verify: VerifyOpt = None
    config: ConfigOpt = None

    def settings(self, llm: dict[str, Any] | None = None, agent: dict[str, Any] | None = None) -> Settings:
        """These options (and a command's own, ``llm`` and ``agent``) over ``--config``, ``ARAG_*``, the defaults."""
        shared = {"max_steps": self.max_steps, "profile": self.profile, "policies": self.policy}
        return settings_with(
            self.config,
            {
                "llm": {"model": self.model, "base_url": self.base_url, **(llm or {})},
                "agent": {**shared, "verify_answers": self.verify, **(agent or {})},
            },
        )

    def agent(self, index_dir: str, settings: Settings, scope: Any, status: bool) -> Any:
        """The agent over the index, the model loaded (a status line meanwhile, when ``status``)."""
        from arag.api import make_agent

        idx = open_index(index_dir, settings.index.threads)
        scope_notes(idx, scope)
        with _Status("loading the model…", enabled=status):
            return make_agent(idx, settings, local_model=self.local_model)


def _print_verification(verification: dict[str, Any] | None) -> None:
    """Each claim of the answer: supported by which sentence read, or not supported by any."""
    if not verification:
        return
    for claim in verification.get("claims", []):
        if claim.get("supported"):
            where = f" [chunk {claim.get('chunk_id')}]: {claim.get('sentence') or ''}"
            out.print(f"  supported: {claim['claim']}{where}", markup=False, highlight=False)
        else:
            out.print(f"  NOT supported by anything read: {claim['claim']}", markup=False, highlight=False)


@app.command()
@with_bundles(asking=Asking)
def ask(
    asking: Asking,
    question: Annotated[str, typer.Argument(help="The question.")],
    index_dir: IndexOpt,
    action_mode: ActionModeOpt = None,
    parallel_tool_calls: Annotated[
        bool | None,
        typer.Option(
            "--parallel-tool-calls/--one-call",
            help=describe(AgentSettings, "parallel_tool_calls", "ARAG_AGENT__PARALLEL_TOOL_CALLS"),
        ),
    ] = None,
    time_budget: Annotated[
        float | None,
        typer.Option(
            "--time-budget", min=1, help=describe(AgentSettings, "time_budget_s", "ARAG_AGENT__TIME_BUDGET_S")
        ),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.1, help=describe(LLMSettings, "timeout_s", "ARAG_LLM__TIMEOUT_S"))
    ] = None,
    trajectory_file: Annotated[
        Path | None, typer.Option(help="Append the result as a JSON line to this file. [default: none]")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question with the A-RAG agent, showing each step; --verify checks each claim of the answer against
    the sentences read."""
    from arag.agent import check_question
    from arag.filters import parse_filter

    question = check_question(question)
    scope = parse_filter(asking.where)
    settings = asking.settings(
        llm={"timeout_s": timeout},
        agent={
            "action_mode": action_mode,
            "parallel_tool_calls": parallel_tool_calls,
            "time_budget_s": time_budget,
            "trajectory_file": str(trajectory_file) if trajectory_file else None,
        },
    )
    agent = asking.agent(index_dir, settings, scope, status=not as_json)
    if as_json:
        result = agent.run(question, scope)
    else:
        with _Status("thinking…", enabled=True) as status:
            agent.on_step = _show_step
            agent.on_model_call = lambda step: status.update(
                f"thinking (model call {step + 1}; max {settings.agent.max_steps} tool steps)…"
            )
            result = agent.run(question, scope)
    if settings.agent.trajectory_file:
        with settings.agent.trajectory_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    if as_json:
        print_json(result.to_dict())
    else:
        _print_answer(result)
    if result.stop_reason == "error":
        raise typer.Exit(1)


def _print_answer(result: AgentResult) -> None:
    """The answer under a line of how it ended, its citations and their sources, the claims checked (--verify),
    what was read, and an error if one ended it."""
    out.print(
        f"\n[bold]Answer[/bold] ({result.stop_reason}, {result.steps} steps, "
        f"{result.retrieved_tokens} retrieved tokens):",
        highlight=False,
    )
    out.print(result.answer or "(no answer)", markup=False, highlight=False)
    _print_citations(result.sources)
    _print_verification(result.verification)
    if result.read_chunks:  # what the answer could rest on, whether or not the model cited it
        out.print(f"Chunks read: {', '.join(result.read_chunks)}", markup=False, highlight=False)
    if result.error:
        say("[red]error[/red]", result.error)


def _print_citations(citations: list[dict[str, Any]]) -> None:
    """Each cited chunk: whether the run was shown it, where it comes from, and the sentence that supports the
    answer where one was found."""
    for citation in citations:
        if not citation["verified"]:
            out.print(
                f"  [{citation['chunk_id']}] NOT among the chunks retrieved in this run", markup=False, highlight=False
            )
            continue
        where = citation.get("label") or citation["chunk_id"]
        out.print(f"  [{citation['chunk_id']}] {where}", markup=False, highlight=False)
        if citation.get("sentence"):
            out.print(f"      “{citation['sentence']}”", markup=False, highlight=False)


class _Status:
    """A live status line on a terminal; plain progress lines otherwise (logs, pipes), so a slow model is never
    silent."""

    def __init__(self, text: str, enabled: bool) -> None:
        self.enabled = enabled
        self.live = err.status(text) if enabled and err.is_terminal else None
        if enabled and self.live is None:
            say("", f"… {text}")

    def update(self, text: str) -> None:
        if self.live is not None:
            self.live.update(text)
        elif self.enabled:
            say("", f"… {text}")

    def __enter__(self) -> _Status:
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)


def _show_step(step) -> None:
    first = " ".join(step.observation.split())[:160]
    # a call the loop made for the model: without a label a read in place of a repeated call looked like a repeat
    made = f" (made for the model {step.why})" if step.origin == "harness" else ""
    err.print(
        f"[cyan]→ {escape(step.tool)}[/cyan] {escape(json.dumps(step.arguments, ensure_ascii=False))}{made}",
        highlight=False,
    )
    err.print(f"  {first}", markup=False, highlight=False)


@app.command()
def policies(as_json: JsonOpt = False) -> None:
    """The agent's policies: what each does, which profiles run it (switch one with --policy -NAME/+NAME), and its
    settings (agent.policy.NAME.KNOB: in a settings file, or ARAG_AGENT__POLICY__NAME__KNOB)."""
    from dataclasses import asdict

    from arag.harness import describe_policies

    rows = describe_policies()
    if as_json:
        print_json([asdict(row) for row in rows])
        return
    for row in rows:
        profiles = ", ".join(row.profiles) or "none (add with --policy +NAME)"
        out.print(f"[bold]{row.name}[/bold] ({profiles}): {escape(row.summary)}", highlight=False)
        for knob, about in row.settings.items():
            setting = f"agent.policy.{row.name}.{knob} = {json.dumps(about['default'])}"
            out.print(f"  {escape(setting)}: {escape(about['description'])}", highlight=False)


CHAT_HELP = (
    "Ask a question; follow-ups are read in the context of the earlier ones. /sources: what the conversation "
    "read and cited; /new: start over; /quit or Ctrl-D: leave. Ctrl-C stops the current answer."
)


@app.command()
@with_bundles(asking=Asking)
def chat(asking: Asking, index_dir: IndexOpt) -> None:
    """Talk to the agent: follow-up questions in context, one context tracker, the steps as they happen.
    /new, /sources, /quit; Ctrl-C stops the current answer and keeps the conversation."""
    from arag.agent import Conversation
    from arag.filters import parse_filter

    scope = parse_filter(asking.where)
    settings = asking.settings()
    agent = asking.agent(index_dir, settings, scope, status=True)
    agent.on_step = _show_step
    conversation = Conversation(agent, settings.conversation.max_tokens, scope)
    history = _ChatHistory()
    err.print(CHAT_HELP, highlight=False)
    while True:
        try:
            line = input("you › ").strip()
        except EOFError:
            err.print()
            break
        except KeyboardInterrupt:  # at the prompt: a fresh line, as a shell does
            err.print()
            continue
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line == "/new":
            conversation.reset()
            say("", "a new conversation: nothing asked, nothing read")
            continue
        if line == "/sources":
            _print_sources(conversation.sources())
            continue
        if line.startswith("/"):
            say("", f"unknown command {line.split()[0]}. {CHAT_HELP}")
            continue
        result = _answer_until_interrupted(conversation, line)
        if isinstance(result, ARagError):
            say("[red]error[/red]", str(result))
        elif result is None or result.stop_reason == "cancelled":
            say("", "stopped; the conversation goes on from the previous answer")
        else:
            out.print(f"[bold]a-rag ›[/bold] {escape(result.answer or '(no answer)')}", highlight=False)
            _print_citations(result.sources)
            _print_verification(result.verification)
            if result.error:
                say("[red]error[/red]", result.error)
    history.save()


def _answer_until_interrupted(conversation: Conversation, question: str) -> AgentResult | ARagError | None:
    """Ask in a thread so that Ctrl-C stops the question at its next step (the conversation keeps what it had):
    the result, the error that ended it, or None when it was stopped before it ended."""
    stop = threading.Event()
    conversation.agent.cancelled = stop.is_set
    outcome: list[AgentResult | ARagError] = []

    def answer() -> None:
        try:
            outcome.append(conversation.ask(question))
        except ARagError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=answer, name="arag-chat", daemon=True)
    worker.start()
    while worker.is_alive():
        try:
            worker.join(0.1)
        except KeyboardInterrupt:
            stop.set()
            say("", "stopping after the current step…")
    return outcome[0] if outcome else None


class _ChatHistory:
    """readline's line editing and a history file (``$ARAG_CACHE_DIR/chat_history``), where readline exists."""

    def __init__(self) -> None:
        from arag.files import cache_dir

        self.path = cache_dir() / "chat_history"
        try:
            import readline
        except ImportError:  # not on every platform: input() still works, without editing or history
            self.readline = None
            return
        self.readline = readline
        readline.set_history_length(1000)
        if self.path.is_file():
            with contextlib.suppress(OSError):  # an unreadable history is no reason not to chat
                readline.read_history_file(str(self.path))

    def save(self) -> None:
        if self.readline is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.readline.write_history_file(str(self.path))
        except OSError as exc:
            say("[yellow]note[/yellow]", f"the chat history was not saved: {exc}")


def _print_sources(sources: list[dict[str, Any]]) -> None:
    if not sources:
        say("", "nothing read yet")
    for source in sources:
        how = "cited" if source.get("cited") else "read"
        where = source.get("label") or source["chunk_id"]
        out.print(
            f"  {source['chunk_id']} — {where} ({how} for question {source['turn']})", markup=False, highlight=False
        )
