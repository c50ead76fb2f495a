"""The contract between the paper's loop (arag.agent) and the harness: what a policy sees of a run, the hooks the
loop asks it, and the effects it returns.

A policy never changes the run, the next action, a tool call or a result: each hook returns an effect (or None),
and :mod:`arag.harness.compose` combines the effects of a bundle's policies for the loop, which applies them. A
policy keeps state of its own (``self``): the loop makes a new instance for every question.

The hooks, in the order a question meets them:

* ``start(run)`` → :class:`Start`: run limits (combined by minimum) and a message told before the first action.
* ``opening(run)`` → :class:`~arag.tools.ToolCall`: a call the loop makes for the model before its first action.
* ``allow(run, base)`` → :class:`Allow`: before each model call, which tools are offered, whether the model may
  answer, whether it must (combined: unions of what is removed, "may not answer" and "must answer" if any says so).
* ``constrain(run, offer)`` → :class:`Constraint`: then, given what is offered, the shape of the action: the ids a
  read may name (intersection), the answer's length (minimum), options (intersection), yes/no, the fields a policy
  declared (``fields()``) that this action asks for (union).
* ``revise(run, answer)`` → :class:`Revised`: every answer the model gives (the forced one too), edited.
* ``on_answer(run, answer)`` → :class:`Hold`: send the answer back once, with a message or a read made for it.
* ``on_repeat(run, call)`` → :class:`Stands`, :class:`ReadInstead` or :class:`Refuse`: what a repeated call gets
  instead of the loop's refusal (None: the refusal, and a stall).
* ``before_tool(run, call, header)`` → :class:`CallEdit`: a new call, changed before it runs (saying so).
* ``after_tool(run, call, result)``: take note of a new call's result (the policy's own state only).
* ``after_result(run, result)`` → ``str``: a note added to a result the model is about to see (whoever made the
  call).
* ``reread(run, answer)`` → :class:`Reread`: one more model call, without tools, that turns the final answer into
  another, or (while the model acts, not for the forced answer) sends it back like a hold.
* ``settle(run, answer)`` → :class:`Revised`: the final answer as it will be shown (after the rereads), edited.
* ``record(run)`` → ``dict``: what the policy adds to the result, under its name (``AgentResult.policy_records``).

Where the order of a bundle's policies matters (the first hold wins, the first repeat outcome wins, call edits and
answer revisions apply in turn, notes are appended in turn), compose.py declares it, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from arag.settings import AgentSettings
from arag.tools.toolkit import ToolCall, Toolkit, ToolResult


# ---------------------------------------------------------------- what a policy sees of a run
@dataclass(frozen=True)
class Search:
    """A search that ran: its hits in rank order, and what had been read before it."""

    tool: str
    hits: tuple[str, ...]
    read_before: frozenset[str]
    pair: bool  # hits 1 and 2 matched different keywords
    by_model: bool = True  # False: the loop made it (a policy's opening search)


@dataclass(frozen=True)
class Limits:
    """Run limits a policy sets at the start; the loop keeps the smallest of each (None: no limit)."""

    stall_limit: int | None = None  # repeated calls in a row with nothing new before the answer is forced
    reads_per_search: int | None = None  # hits of one search the model may read
    repeat_limit: int | None = None  # repeated calls in a run, in a row or not, before the answer is forced

    def combine(self, other: Limits) -> Limits:
        def smallest(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else min(a, b)

        return Limits(
            smallest(self.stall_limit, other.stall_limit),
            smallest(self.reads_per_search, other.reads_per_search),
            smallest(self.repeat_limit, other.repeat_limit),
        )


class ActionView(Protocol):
    """One parsed model reply, as a policy reads it."""

    @property
    def calls(self) -> Sequence[ToolCall]: ...
    @property
    def answer(self) -> str: ...
    @property
    def note(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, Any]: ...  # the declared fields the reply filled in, as the model wrote them


class StepView(Protocol):
    """One step of the trajectory, as a policy reads it."""

    @property
    def tool(self) -> str: ...
    @property
    def origin(self) -> str: ...  # "model", or "harness" for a call the loop made for it
    @property
    def thought(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, Any]: ...
    @property
    def arguments(self) -> Mapping[str, Any]: ...  # the call's arguments, as it ran


class RunView(Protocol):
    """What a policy reads of one question's run (arag.agent.state.RunState); it never writes to it."""

    @property
    def question(self) -> str: ...
    @property
    def toolkit(self) -> Toolkit: ...
    @property
    def steps(self) -> int: ...  # tool steps taken (a held answer takes none)
    @property
    def stalls(self) -> int: ...  # repeated calls in a row that showed nothing new
    @property
    def repeats(self) -> int: ...  # repeated calls in the run so far (the one being answered included)
    @property
    def stop_reason(self) -> str | None: ...  # set before the forced answer; None while the model acts
    @property
    def limits(self) -> Limits: ...
    @property
    def answer_chars(self) -> int | None: ...  # the longest answer the latest action allowed
    @property
    def actions(self) -> Sequence[ActionView]: ...
    @property
    def trajectory(self) -> Sequence[StepView]: ...
    @property
    def searches(self) -> Sequence[Search]: ...
    @property
    def offered(self) -> Mapping[str, None]: ...  # every chunk id shown as a hit or a neighbour, in order
    @property
    def read_ids(self) -> Collection[str]: ...
    @property
    def last_search(self) -> Search | None: ...
    @property
    def earlier(self) -> Sequence[tuple[str, str]]: ...  # a conversation's earlier questions and answers, oldest first

    def read_this_question(self) -> list[str]: ...
    def citations(self, answer: str) -> list[dict[str, Any]]: ...


# ---------------------------------------------------------------- the effects
@dataclass(frozen=True)
class Start:
    limits: Limits = Limits()
    says: str = ""  # told to the model before its first action


@dataclass(frozen=True)
class Base:
    """What the loop offers before any policy: the enabled tools (none for the forced answer), whether the model
    acts in JSON under a grammar (which enforces the whole action), and whether this is the forced answer."""

    tools: tuple[str, ...]
    constrained: bool
    forced: bool


@dataclass(frozen=True)
class Allow:
    without: frozenset[str] = frozenset()  # tools the next action may not call
    answer: bool = True  # False: it may not answer yet
    final: bool = False  # it must answer now, without tools


@dataclass(frozen=True)
class Offer:
    """What the next action may be once every policy's :class:`Allow` is applied."""

    tools: tuple[str, ...]
    answer: bool
    final: bool
    constrained: bool
    forced: bool


@dataclass(frozen=True)
class Field:
    """A field a policy adds to the JSON actions: where it goes (before the note, as the note itself, or after
    it), on which actions, its schema, and how the compact prompt shows it (``intro``: said before the worked
    example; ``example``/``later``: its value in the example's first and later actions; ``explain``: said after the
    reply format; ``trailer``: said after the example)."""

    name: str
    schema: dict[str, Any]
    place: Literal["first", "note", "last"] = "last"
    on_calls: bool = True
    on_answer: bool = False
    intro: str = ""
    example: Any = None
    later: Any = None
    explain: str = ""
    trailer: str = ""


@dataclass(frozen=True)
class Constraint:
    readable: tuple[str, ...] | None = None  # a read may only name these (None: any id)
    answer_chars: int | None = None  # the longest answer
    options: tuple[str, ...] = ()  # the answer is one of these
    yes_no: bool = False  # the answer starts with Yes or No
    fields: tuple[str, ...] = ()  # declared fields this action asks for


@dataclass(frozen=True)
class NextAction:
    """What the model's next action may be, every policy's :class:`Allow` and :class:`Constraint` combined (by
    compose.py). JSON actions enforce all of it by constrained decoding; native tool calls only leave tools out."""

    tools: tuple[str, ...]  # the tools it may call (canonical names)
    answer: bool  # it may give the final answer
    final: bool  # it must give the final answer, without tools
    constrained: bool  # it acts in JSON under a grammar
    readable: tuple[str, ...] | None = None  # a read may only name these (None: any id; empty: no read)
    answer_chars: int | None = None
    options: tuple[str, ...] = ()
    yes_no: bool = False
    fields: tuple[Field, ...] = ()  # the policies' fields this action carries (the note among them)


@dataclass(frozen=True)
class Revised:
    answer: str
    source: str | None = None  # the answer is the harness's, not the model's: what it comes from


@dataclass
class Hold:
    """An answer sent back: the loop says ``message`` (after the text of ``read``, chunks it reads for the model)
    and asks again."""

    message: str
    read: list[str] = field(default_factory=list)
    why: str = ""  # for a read: when it is made ("before its answer from snippets")
    focus: str = ""  # for a read: what a long chunk's sentences shown are chosen for, if not the question


@dataclass(frozen=True)
class Stands:
    """The run ends with this answer (given earlier and held back)."""

    answer: str


@dataclass(frozen=True)
class ReadInstead:
    """A repeated call is answered with a read the loop makes for the model; ``says`` follows the loop's notice that
    the call was made already, before the text read."""

    chunk_ids: tuple[str, ...]
    says: str
    focus: str = ""  # what a long chunk's sentences shown are chosen for, if not the question


@dataclass(frozen=True)
class Refuse:
    """A repeated call is refused with ``says`` after the loop's notice, and counts as no stall (it leads on)."""

    says: str


RepeatOutcome = Stands | ReadInstead | Refuse


@dataclass(frozen=True)
class CallEdit:
    """A new call, changed before it runs: its arguments now, and the first words of its result, which say so."""

    arguments: dict[str, Any]
    header: str


@dataclass
class Reread:
    """One more model call before the run ends: ``messages`` (no tools, no grammar); ``answer`` turns its reply
    into the final answer (an empty or unusable reply: the answer the model gave), or into a :class:`Hold`: the
    answer is sent back and the run goes on. A hold is taken only while the model acts; for the forced answer
    (``run.stop_reason`` set) the loop keeps the answer, so a policy gives its last word there itself."""

    messages: list[dict[str, str]]
    answer: Callable[[str], str | Hold]


# ---------------------------------------------------------------- the policy
class NoSettings(BaseModel):
    """A policy without knobs."""

    model_config = ConfigDict(extra="forbid")


class Policy:
    """A named behaviour on top of the paper's loop; every hook does nothing unless overridden. ``Settings`` is its
    own settings class (``agent.policy.NAME``); the loop makes a new instance for every question."""

    name: ClassVar[str]
    summary: ClassVar[str]  # what it does, in one line (docs/policies.md's table, ``arag policies``)
    Settings: ClassVar[type[BaseModel]] = NoSettings

    def __init__(self, config: BaseModel, settings: AgentSettings) -> None:
        self.config = config
        self.settings = settings
        self.times_acted = 0

    def acted(self) -> None:
        """Count that this policy changed something in this run (a run records how often each one acted)."""
        self.times_acted += 1

    def fields(self) -> Sequence[Field]:
        """The fields this policy adds to JSON actions (asked for action by action through ``constrain``)."""
        return ()

    def start(self, run: RunView) -> Start | None:
        return None

    def opening(self, run: RunView) -> ToolCall | None:
        return None

    def allow(self, run: RunView, base: Base) -> Allow | None:
        return None

    def constrain(self, run: RunView, offer: Offer) -> Constraint | None:
        return None

    def revise(self, run: RunView, answer: str) -> Revised | None:
        return None

    def settle(self, run: RunView, answer: str) -> Revised | None:
        return None

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        return None

    def on_repeat(self, run: RunView, call: ToolCall) -> RepeatOutcome | None:
        return None

    def before_tool(self, run: RunView, call: ToolCall, header: str | None) -> CallEdit | None:
        return None

    def after_tool(self, run: RunView, call: ToolCall, result: ToolResult) -> None:
        return None

    def after_result(self, run: RunView, result: ToolResult) -> str | None:
        return None

    def reread(self, run: RunView, answer: str) -> Reread | None:
        return None

    def record(self, run: RunView) -> dict[str, Any] | None:
        return None
