"""The policy protocol: what a policy may do to the paper's loop, at four points.

* ``constrain(run, spec)`` — before each model call: narrow what the next action may be (the tools offered,
  whether it may answer, the shape of the answer). JSON actions enforce the spec by constrained decoding.
* ``on_answer(run, answer)`` — when the model answers: return a :class:`Hold` to send the answer back once, with
  a message or a read made for the model (a held answer costs no tool step).
* ``on_repeat(run, call)`` — when the model repeats a call it made: return what to show instead of the refusal
  (a :class:`~arag.tools.ToolResult`), or :class:`Stands` to end the run with an answer given earlier.
* ``before_tool(run, call)`` / ``after_tool(run, call, result)`` — around each new call: change the call (saying
  so in the result), or take note of the result.
* ``after_result(run, result)`` — every result the model is about to see, its own calls' and the reads the loop
  makes for it: add to what it says.
* ``reread(run, answer)`` — once no policy holds the answer back (the forced one too): return a :class:`Reread` for
  one more model call, without tools, whose reply the policy turns into the answer the run ends with.

And ``start(run)`` once per question, ``opening(run)`` for a call the loop makes for the model before its first
action, ``revise(run, answer)`` on every answer the model gives (the forced one
too). A policy keeps its own state: the loop makes a new instance for every question.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from arag.agent.actions import ActionSpec, ToolCall
from arag.settings import AgentSettings
from arag.tools.toolkit import ToolResult

if TYPE_CHECKING:
    from arag.agent.state import RunState


@dataclass
class Hold:
    """An answer sent back: the loop says ``message`` (after the text of ``read``, chunks it reads for the model)
    and asks again."""

    message: str
    read: list[str] = field(default_factory=list)
    why: str = ""  # for a read: when it is made ("before its answer from snippets")


@dataclass
class Reread:
    """One more model call before the run ends: ``messages`` (no tools, no grammar); ``answer`` turns its reply
    into the final answer (an empty or unusable reply: the answer the model gave)."""

    messages: list[dict[str, str]]
    answer: Callable[[str], str]


@dataclass
class Stands:
    """The run ends with this answer (given earlier and held back)."""

    answer: str


class Policy:
    """A named behaviour on top of the paper's loop; every hook does nothing unless overridden."""

    name: ClassVar[str]
    summary: ClassVar[str]  # what it does, in one line (the README's table, ``arag policies``)

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings

    def acted(self, run: RunState) -> None:
        """Count that this policy changed something in this run (a run records how often each one acted)."""
        run.acted[self.name] = run.acted.get(self.name, 0) + 1

    def start(self, run: RunState) -> None:
        """Once, before the first model call."""

    def opening(self, run: RunState) -> ToolCall | None:
        """A call the loop makes for the model before its first action (None: none)."""
        return None

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        """Narrow what the next action may be."""

    def revise(self, run: RunState, answer: str) -> str:
        """The answer as the model gave it, revised (every answer, the forced one included)."""
        return answer

    def on_answer(self, run: RunState, answer: str) -> Hold | None:
        """Hold an answer back once, or let it stand (None)."""
        return None

    def reread(self, run: RunState, answer: str) -> Reread | None:
        """One more model call that turns the final answer into another (None: the answer stands)."""
        return None

    def on_repeat(self, run: RunState, call: ToolCall) -> ToolResult | Stands | None:
        """What a repeated call gets instead of the refusal (None: the refusal, and a stall)."""
        return None

    def before_tool(self, run: RunState, call: ToolCall) -> ToolCall:
        """A new call, as it will run."""
        return call

    def after_tool(self, run: RunState, call: ToolCall, result: ToolResult) -> None:
        """Take note of a new call's result."""

    def after_result(self, run: RunState, result: ToolResult) -> None:
        """Add to a result the model is about to see (whoever made the call)."""


POLICIES: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    """Make a policy known by its name (for profiles and ``--policy``)."""
    POLICIES[cls.name] = cls
    return cls
