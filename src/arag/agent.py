"""The A-RAG agent (paper §3.3): reason → call a tool → observe, until it answers or runs out of steps."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from arag.errors import ConfigError, InputError, LLMError, OutputRejected, TimeBudgetExceeded
from arag.index import Index
from arag.llm import ChatModel, ChatTurn, Usage
from arag.settings import AgentSettings
from arag.tools import Toolkit, ToolResult, parse_arguments

STOP_REASONS = ("answered", "max_steps", "token_budget", "time_budget", "stalled", "cancelled", "error")
MAX_QUESTION_CHARS = 20_000
_JSON_CANDIDATES = 4  # tagged or fenced blocks tried per reply: enough for real replies, linear for hostile ones
COMPACT_SNIPPETS, COMPACT_SNIPPET_CHARS = 2, 240
_CITATION = re.compile(r"\[(?:chunks?\s*:?\s*)?([^\[\]]+?)\]", re.I)


@dataclass
class Step:
    tool: str
    arguments: dict[str, Any]
    observation: str
    retrieved_tokens: int
    latency_s: float
    thought: str = ""


@dataclass
class AgentResult:
    question: str
    answer: str
    citations: list[dict[str, Any]]
    stop_reason: str
    steps: int
    trajectory: list[Step]
    usage: Usage
    cost: float | None
    retrieved_tokens: int
    latency_s: float
    error: str | None = None
    read_chunks: list[str] = field(default_factory=list)
    seen_chunks: list[str] = field(default_factory=list)
    model_calls: list[dict[str, Any]] = field(default_factory=list)  # usage and latency of each model call

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.to_dict()
        return data


def load_system_prompt(settings: AgentSettings, compact: bool = False) -> str:
    if settings.system_prompt_file is not None:
        try:
            return settings.system_prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the system prompt {settings.system_prompt_file}: {exc}") from None
    name = "prompts/compact.md" if compact else "prompts/system.md"
    return resources.files("arag").joinpath(name).read_text(encoding="utf-8")


FINAL_PAPER = "Stop searching now. Answer the question from what you have gathered, citing chunks as [chunk ID]."
FINAL_COMPACT = (
    "Stop searching now. Give the final answer in a few words (a name, a date, a number, or yes/no), then the "
    "ids of the chunks it comes from, like: Paris [chunk Paris#0]. Do not describe the chunks. If the text "
    'above does not contain the answer, give your best guess, never "nothing yet" or "unknown".'
)
READ_BEFORE_ANSWER = (
    "You answered without reading any chunk in full, and snippets often miss the answer. The best hits are "
    "shown in full below. Answer from them (short, with [chunk ID]), or search again if they do not hold it."
)
REPEATED = "You already made this exact call; its result is above."
# how the observation of a read the harness made in place of a repeated call begins (the trajectory shows the read)
READ_INSTEAD = f"{REPEATED} Instead, "
HARNESS_READS = 2  # hits the harness reads for the model at once (a repeat: when the search's reads are not capped)
SWITCH_SEARCH = {
    # no example query: a small model answered with the example's entity ("Ana Ruiz", from the prompt's example)
    "semantic_search": "{repeated} Search another way now: {tool} with a few words describing the fact you still need.",
    "keyword_search": "{repeated} Search another way now: {tool} for a name or title from what you read.",
}
PLAN_NOT_DONE = (
    'You answered "{answer}" after {done} search(es), but your plan was: {steps}. If that is only an intermediate '
    'fact, continue with step {next} ("{next_step}"): keyword_search for the name you found in the text you read. '
    "If it already answers the whole question, give the same final answer again."
)


OPTION_NOT_READ = (
    'You answered "{answer}", but nothing you have read is about "{option}". To compare, you need the same fact '
    'about both: keyword_search for "{option}" and read its hit, then answer.'
)

COMPARISON_PLAN = (
    '\nA comparison needs one search per item: for "Who was born first, Ann Lee or Bo Chan?" the plan is '
    '["birth date of Ann Lee", "birth date of Bo Chan"].'
)

# "Yes", "No, both are American [chunk …]": llama.cpp's grammar takes anchored patterns without \b
YES_NO_PATTERN = r"^(Yes|No)([,.;:]? [^\n]*)?$"
# the compact profile's answer is a few words and its citations: a 1.5B model that began to repeat itself filled
# the 320-token limit instead (~35 s on 2 cores, 1 of 100 questions at 1685390)
SHORT_ANSWER_CHARS = 200
SHORT_YES_NO_PATTERN = rf"^(Yes|No)([,.;:]? [^\n]{{0,{SHORT_ANSWER_CHARS}}})?$"

FOUND_SCHEMA = {"type": "string", "minLength": 3, "maxLength": 200}  # one fact; every token costs ~0.1 s on 2 cores

PLAN_SCHEMA = {
    "type": "array",
    "items": {"type": "string"},
    "minItems": 1,
    "maxItems": 3,
    "description": "The searches needed, in order: one per fact to find (a multi-hop question needs two or three).",
}


def action_schema(
    toolkit: Toolkit | None,
    allow_answer: bool = True,
    plan: bool = False,
    notes: bool = False,
    readable: list[str] | None = None,
    options: list[str] | None = None,
    yes_no: bool = False,
    blocked: str | None = None,
    flat: bool = False,
    action_notes: bool = True,
) -> dict[str, Any]:
    """JSON schema whose variants are the enabled tools plus final_answer (for response_format); with ``plan``,
    the action starts with the plan of searches (the compact profile's first action); with ``notes``, the
    free "thought" becomes "found": what the text read so far says (a small model left "thought" empty and
    read hit after hit past the answer; a field it must fill makes it state the facts before acting); with
    ``readable``, chunk_read may only name those references (none: no read); with ``options`` (an
    either-or question), the answer is one of them; with ``yes_no``, the answer starts with Yes or No; the
    ``blocked`` tool is left out. With ``flat``, a call is {"<tool>": <its one argument>} and the answer
    {"answer": …} (no "action"/"arguments" frame: ~9 generated tokens fewer per action, each ~0.1 s on 2 cores);
    without ``action_notes``, only the answer carries the note."""
    planned: dict[str, Any] = {"plan": PLAN_SCHEMA} if plan else {}
    note = {"found": FOUND_SCHEMA} if notes else {"thought": {"type": "string"}}
    call_note = note if action_notes else {}
    variants = []
    for schema in toolkit.schemas() if toolkit else []:
        name, parameters = schema["function"]["name"], schema["function"]["parameters"]
        if name == blocked:
            continue
        if toolkit is not None and name == toolkit.names["chunk_read"] and len(toolkit.enabled) > 1:
            if not allow_answer:
                continue  # the first action must be a search: there is nothing to read or answer from yet
            if readable is not None:
                if not readable:
                    continue  # everything shown was read: a search or the answer is the only progress
                # a read can only name chunks that would show new text, so a repeated read cannot happen
                items = {"type": "string", "enum": readable}
                parameters = {
                    "type": "object",
                    "properties": {"chunk_ids": {"type": "array", "items": items, "minItems": 1, "maxItems": 3}},
                    "required": ["chunk_ids"],
                    "additionalProperties": False,
                }
        if flat:
            only = list(parameters["properties"].values())
            call: dict[str, Any] = {name: only[0] if len(only) == 1 else parameters}
        else:
            call = {"action": {"type": "string", "enum": [name]}, "arguments": parameters}
        variants.append(
            {
                "type": "object",
                "properties": {**planned, **call_note, **call},
                "required": [*planned, *call_note, *call],
                "additionalProperties": False,
            }
        )
    if allow_answer:
        final: dict[str, Any] = {} if flat else {"action": {"type": "string", "enum": ["final_answer"]}}
        variants.append(
            {
                "type": "object",
                "properties": {**note, **final, "answer": _answer_schema(options, yes_no, short=notes)},
                "required": [*note, *final, "answer"],
                "additionalProperties": False,
            }
        )
    return {
        "type": "json_schema",
        "json_schema": {"name": "agent_action", "strict": True, "schema": {"anyOf": variants}},
    }


def _answer_schema(options: list[str] | None, yes_no: bool, short: bool = False) -> dict[str, Any]:
    if options:
        return {"type": "string", "enum": options}
    if yes_no:
        return {"type": "string", "pattern": SHORT_YES_NO_PATTERN if short else YES_NO_PATTERN}
    return {"type": "string", "maxLength": SHORT_ANSWER_CHARS} if short else {"type": "string"}


@dataclass
class _Guidance:
    """What the compact profile tracks within one question."""

    plan: list[str] = field(default_factory=list)  # the searches the model planned in its first action
    searches: int = 0  # searches made so far
    read_nudged: set[int] = field(default_factory=set)  # searches (by number) whose hits were read for the model
    plan_nudged: bool = False
    held_answer: str = ""  # the answer held back for the plan's next search
    options: list[str] = field(default_factory=list)  # an either-or question's two options
    yes_no: bool = False  # a yes/no question: the answer starts with Yes or No
    options_nudged: bool = False
    switched: bool = False  # a repeated search was turned into a search with the other tool (once per question)
    blocked: str | None = None  # the tool the next action may not use (the one just repeated)


@dataclass
class _Call:
    name: str
    arguments: Any
    call_id: str | None = None


class Agent:
    """Runs questions against one shared :class:`Index` with one chat model."""

    def __init__(
        self, index: Index, model: ChatModel, settings: AgentSettings | None = None, json_actions: bool | None = None
    ) -> None:
        self.index = index
        self.model = model
        self.settings = settings or AgentSettings()
        # 'auto': constrained JSON actions for the embedded model (small models print tool calls unreliably)
        mode, local = self.settings.action_mode, getattr(model, "local", False)
        self.json_actions = json_actions if json_actions is not None else mode == "json" or (mode == "auto" and local)
        profile = self.settings.profile
        self.compact = profile == "compact" or (profile == "auto" and local)
        self.flat = self.json_actions and self.compact and self.settings.flat_actions  # {"keyword_search": [...]}
        reserved = sorted(
            {str(v) for v in self.settings.tool_names.values()} & {"answer", "final_answer", *_NOT_ACTIONS}
        )
        if self.flat and reserved:
            raise ConfigError(f"agent.tool_names: {reserved} cannot name a tool (flat JSON actions use those keys)")
        self.system_prompt = load_system_prompt(self.settings, self.compact)
        self.on_step: Callable[[Step], None] | None = None  # live display hook (the CLI prints steps)
        self.on_model_call: Callable[[int], None] | None = None  # called before each model call, with its number
        self.cancelled: Callable[[], bool] | None = None  # checked before each step (a client went away)

    @property
    def action_notes(self) -> bool:
        """Whether every action carries the "found" note: only the compact profile may leave it to the answer."""
        return self.settings.action_notes or not self.compact

    def run(self, question: str) -> AgentResult:
        question = check_question(question)
        started = time.perf_counter()
        deadline = time.monotonic() + self.settings.time_budget_s
        names = {str(k): v for k, v in self.settings.tool_names.items()}
        compact = self.compact
        toolkit = Toolkit(
            self.index,
            enabled=self.settings.tools,
            names=names,
            hints=compact,
            inline_tokens=self.settings.inline_read_tokens if compact else 0,
            # a small model's prompt grows by every observation: shorter search results and focused reads
            # keep a question within a few thousand tokens (measured on 2 cores: ~40 prompt tokens/s)
            snippets_per_hit=COMPACT_SNIPPETS if compact else 5,
            snippet_chars=COMPACT_SNIPPET_CHARS if compact else 400,
            focus_tokens=self.settings.focused_read_tokens if compact else 0,
            reads_per_search=self.settings.reads_per_search if compact else 0,
            common_keyword_share=self.settings.common_keyword_share if compact else 0.0,
            expose_top_k=not compact,
            search_hits=self.settings.search_hits if compact else None,
            title_reads=self.settings.title_reads and compact,
        )
        toolkit.focus_query = question
        toolkit.flat_calls = self.flat
        usage, trajectory = Usage(), list[Step]()
        model_calls: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self._system(toolkit)},
            {"role": "user", "content": f"Question: {question}"},
        ]
        answer, stop, error, stalls, done = "", "max_steps", None, 0, set()
        options = choice_options(question) if self.settings.choice_answers else []
        guide = _Guidance(options=options, yes_no=self.settings.choice_answers and yes_no_question(question))
        step = -1
        try:
            while (step := step + 1) < self.settings.max_steps:
                if self.cancelled and self.cancelled():
                    stop = "cancelled"
                    break
                if usage.total_tokens >= self.settings.token_budget:
                    stop = "token_budget"
                    break
                turn = self._ask(messages, toolkit, usage, model_calls, deadline, guide, final=False, first=step == 0)
                calls, answer, thought, plan = self._parse(turn, toolkit)
                guide.plan = guide.plan or plan
                if not calls and answer and self._hold_answer(answer, guide, toolkit, messages, trajectory):
                    step -= 1  # a held answer costs no tool step (each kind of hold is bounded, see _hold_answer)
                    continue
                if not calls and answer:
                    stop = "answered"
                    break
                if not calls:
                    messages.append(
                        {"role": "user", "content": "Your reply was empty. Call a tool or give the final answer."}
                    )
                    stalls += 1
                for call in calls if self.settings.parallel_tool_calls else calls[:1]:
                    key = toolkit.call_key(call.name, _safe_args(call.arguments))
                    if key in done:
                        if guide.held_answer:
                            # told to search on or to repeat its answer, it repeated a call: the answer stands
                            # (on the README's question the hold had turned a right answer into a stall)
                            answer, stop = guide.held_answer, "answered"
                            break
                        result, progress = self._repeated(call, toolkit, guide)
                        # a small model repeats a call with nothing new until the guard stops it: the compact
                        # profile switches search tool once, then asks for the answer at once (saves the steps)
                        stalls = 0 if progress else self.settings.stall_limit if self.compact else stalls + 1
                    else:
                        stalls, guide.held_answer = 0, ""  # a new call: what it finds may change the answer
                        done.add(key)
                        result = toolkit.call(call.name, call.arguments)
                        if result.ok and call.name != toolkit.names["chunk_read"]:
                            # a search that found a chunk for each of two names made two of the plan's searches
                            guide.searches += 2 if toolkit.last_pair else 1
                    trajectory.append(
                        Step(
                            result.name,
                            result.arguments,
                            result.observation,
                            result.retrieved_tokens,
                            round(result.latency_s, 6),
                            thought,
                        )
                    )
                    if self.on_step:
                        self.on_step(trajectory[-1])
                    self._observe(messages, call, result.observation)
                if stop == "answered":  # a held answer stood (above): nothing was executed, nothing to observe
                    break
                for skipped in [] if self.settings.parallel_tool_calls else calls[1:]:
                    # the API requires an answer to every tool_call_id, executed or not
                    self._observe(messages, skipped, "Not executed: one tool call per step. Call it again if needed.")
                if stalls >= self.settings.stall_limit:
                    # "stalled" = the guard cut the run short; a repeat on the last step ends with the budget
                    stop = "stalled" if step + 1 < self.settings.max_steps else "max_steps"
                    break
                left = self.settings.max_steps - step - 1
                tokens_left = max(0, self.settings.token_budget - usage.total_tokens)
                # a small model cannot use a token count; every prompt token costs it time
                budget = f"[{left} steps left]" if compact else f"[{left} steps left, {tokens_left} tokens left]"
                messages.append({"role": "user", "content": budget})
            if stop not in ("answered", "cancelled"):
                messages.append({"role": "user", "content": FINAL_COMPACT if self.compact else FINAL_PAPER})
                turn = self._ask(messages, toolkit, usage, model_calls, deadline, guide, final=True)
                answer = self._parse(turn, toolkit)[1]
        except TimeBudgetExceeded as exc:
            stop, error = "time_budget", f"{exc} ({self.settings.time_budget_s:g} s, setting agent.time_budget_s)"
        except LLMError as exc:
            stop, error = "error", str(exc)
        return AgentResult(
            question,
            answer,
            self._citations(answer, toolkit),
            stop,
            len(trajectory),
            trajectory,
            usage,
            self.model.cost(usage),
            toolkit.tracker.retrieved_tokens,
            round(time.perf_counter() - started, 3),
            error,
            sorted(toolkit.tracker.read_ids),
            sorted(toolkit.tracker.seen_ids),
            model_calls,
        )

    # ------------------------------------------------------------------ helpers
    def _unread_hits(self, toolkit: Toolkit) -> list[str]:
        """The latest search's hits not yet read, when the compact profile may read them for the model."""
        if not self.compact or "chunk_read" not in toolkit.enabled or not toolkit.last_hits:
            return []
        if toolkit.search_exhausted():
            return []
        return [c for c in toolkit.last_hits if c not in toolkit.tracker.read_ids]

    def _hold_answer(
        self,
        answer: str,
        guide: _Guidance,
        toolkit: Toolkit,
        messages: list[dict[str, Any]],
        trajectory: list[Step],
    ) -> bool:
        """The compact profile's checks on an answer: answered from a search's snippets with its top hit unread
        (the top hits are read for the model; once per search), or before the plan's searches were made (a
        multi-hop question answered with its first hop; once per question), or an either-or question answered
        with nothing read about one of its options (once per question). True: the answer was held back and
        the loop goes on."""
        if not self.compact:
            return False
        unread = self._unread_hits(toolkit)
        from_snippets = bool(trajectory) and trajectory[-1].tool != toolkit.names["chunk_read"]
        top_unread = bool(unread) and unread[0] == toolkit.last_hits[0]
        if from_snippets and top_unread and guide.searches not in guide.read_nudged:
            guide.read_nudged.add(guide.searches)
            self._harness_read(toolkit, unread[:HARNESS_READS], READ_BEFORE_ANSWER, messages, trajectory)
            return True
        if not guide.plan_nudged and len(guide.plan) > guide.searches:
            guide.plan_nudged, guide.held_answer = True, answer
            steps = "; ".join(f"{i}. {item}" for i, item in enumerate(guide.plan, start=1))
            messages.append(
                {
                    "role": "user",
                    "content": PLAN_NOT_DONE.format(
                        answer=answer[:200],
                        steps=steps,
                        done=guide.searches,
                        next=guide.searches + 1,
                        next_step=guide.plan[guide.searches],
                    ),
                }
            )
            return True
        if guide.options and not guide.options_nudged and "chunk_read" in toolkit.enabled:
            records, _ = self.index.read(sorted(toolkit.tracker.read_ids))
            read_text = " ".join(" ".join(r.text.lower().split()) for r in records)
            missing = [option for option in guide.options if option.lower() not in read_text]
            if missing:
                guide.options_nudged = True
                messages.append(
                    {"role": "user", "content": OPTION_NOT_READ.format(answer=answer[:200], option=missing[0])}
                )
                return True
        return False

    def _repeated(self, call: _Call, toolkit: Toolkit, guide: _Guidance) -> tuple[ToolResult, bool]:
        """A repeated call, and whether it still made progress. The compact profile reads the best unread hits
        instead (as many as the search's read allowance has left); with none left, the first repeated search of a
        question makes the next action use the other search tool (the model, copying its last action, repeated the
        search whose hits it had read instead of searching for the next fact: 27 of 87 runs at 33c4e19). The
        paper's loop refuses."""
        unread = self._unread_hits(toolkit)
        if unread:
            # every hit the search may still have read, at once: one hit per repeat cost the model a repeat (a
            # model call) per hit (two repeats in a row in 30 of 100 runs of e7a4b22, 15 of 49 of 382e847)
            left = toolkit.reads_left()  # never 0 here: an exhausted search has no unread hits
            ids = unread[: HARNESS_READS if left is None else left]
            result = toolkit.call(toolkit.names["chunk_read"], {"chunk_ids": ids})
            best = "here is the best hit" if len(ids) == 1 else f"here are the best {len(ids)} hits"
            result.observation = f"{READ_INSTEAD}{best} you have not read yet:\n{result.observation}"
            return result, True
        canonical = toolkit.canonical(call.name)
        other = {"keyword_search": "semantic_search", "semantic_search": "keyword_search"}.get(canonical, "")
        if self.compact and other in toolkit.enabled and not guide.switched:
            guide.switched, guide.blocked = True, toolkit.names[canonical]
            text = SWITCH_SEARCH[other].format(repeated=REPEATED, tool=toolkit.names[other])
            return ToolResult(call.name, _safe_args(call.arguments), text, 0, 0.0, False), True
        text = f"{REPEATED} Use it, try something different, or give the final answer."
        return ToolResult(call.name, _safe_args(call.arguments), text, 0, 0.0, False), False

    def _harness_read(
        self, toolkit: Toolkit, ids: list[str], note: str, messages: list[dict[str, Any]], trajectory: list[Step]
    ) -> None:
        result = toolkit.call(toolkit.names["chunk_read"], {"chunk_ids": ids})
        step = Step(result.name, result.arguments, result.observation, result.retrieved_tokens, 0.0, "(harness)")
        trajectory.append(step)
        if self.on_step:
            self.on_step(step)
        messages.append({"role": "user", "content": f"{note}\n\n{result.observation}"})

    def _system(self, toolkit: Toolkit) -> str:
        text = (
            self.system_prompt + f"\nAvailable tools: {', '.join(toolkit.functions())}. You have at most "
            f"{self.settings.max_steps} tool calls."
        )
        if self.json_actions:
            # constrained decoding enforces the shape, but the model only knows the tools from this text
            for schema in toolkit.schemas():
                fn = schema["function"]
                params = ", ".join(
                    f"{name}: {prop.get('type', 'any')}" for name, prop in fn["parameters"]["properties"].items()
                )
                text += f"\n- {fn['name']}({params}): {fn['description']}"
            if self.compact:
                text += self._compact_format(toolkit)
            else:
                text += (
                    '\n\nReply with one JSON object per turn, either a tool call {"thought": "...", "action": '
                    '"<tool>", "arguments": {...}} or the answer {"thought": "...", "action": "final_answer", '
                    '"answer": "..."}.\nExample for the question "Where was the author of Hamlet born?": {"thought": '
                    '"First find who wrote Hamlet.", "action": "keyword_search", "arguments": {"keywords": '
                    '["Hamlet"], "top_k": 5}}'
                )
        return text

    def _compact_format(self, toolkit: Toolkit) -> str:
        """How the compact profile's JSON actions look, nested ({"action": …, "arguments": …}) or flat
        ({"<tool>": <argument>}), with or without the "found" note on tool calls; the first action has the plan."""
        search = (
            toolkit.names["keyword_search"]
            if "keyword_search" in toolkit.enabled
            else toolkit.names[toolkit.enabled[0]]
        )
        parameter, first, later = "keywords", '["Hamlet"]', '["William Shakespeare"]'
        if toolkit.canonical(search) == "semantic_search":
            parameter, first, later = "query", '"who wrote Hamlet"', '"William Shakespeare birthplace"'
        notes = self.action_notes
        note = '"found": "...", ' if notes else ""
        found = '"found": "nothing yet", ' if notes else ""
        later_note = '"found": "Hamlet was written by William Shakespeare.", ' if notes else ""
        if self.flat:
            first_call, later_call = f'"{search}": {first}', f'"{search}": {later}'
            shapes = (
                f'a tool call {{{note}"<tool>": <its argument>}}, e.g. {{{note}{first_call}}}, '
                'or the answer {"found": "...", "answer": "..."}.'
            )
            reply = "Reply with one JSON object per turn: "
        else:
            first_call, later_call = (
                f'"action": "{search}", "arguments": {{"{parameter}": {argument}}}' for argument in (first, later)
            )
            shapes = (
                f'either a tool call {{{note}"action": "<tool>", "arguments": {{...}}}} or the answer '
                '{"found": "...", "action": "final_answer", "answer": "..."}.'
            )
            reply = "Reply with one JSON object per turn, "
        return (
            f"\n\n{reply}{shapes}"
            '\n"found" is what the text you have read so far says that helps answer the question, in one sentence'
            + (' ("nothing yet" at first). When it holds the answer, give the final answer.' if notes else ".")
            + "\nYour first reply starts with your plan, one search per fact to find. Example for the question "
            f'"Where was the author of Hamlet born?": {{"plan": ["who wrote Hamlet", "where was that author born"], '
            f"{found}{first_call}}}. Later: {{{later_note}{later_call}}}" + COMPARISON_PLAN
        )

    def _ask(
        self,
        messages: list[dict[str, Any]],
        toolkit: Toolkit,
        usage: Usage,
        model_calls: list[dict[str, Any]],
        deadline: float,
        guide: _Guidance,
        final: bool,
        first: bool = False,
    ) -> ChatTurn:
        started = time.perf_counter()
        if self.on_model_call:
            self.on_model_call(len(model_calls))
        blocked, guide.blocked = guide.blocked, None  # for one action
        rejected = False  # the constrained reply was rejected by the server and the call made without grammar
        if self.json_actions:
            # A small model answers from memory unless its first action must be a retrieval.
            fmt = action_schema(
                None if final else toolkit,
                allow_answer=not first,
                plan=first and self.compact,
                notes=self.compact,
                readable=toolkit.readable() if self.compact else None,
                options=guide.options if self.compact else None,
                yes_no=guide.yes_no and self.compact,
                blocked=blocked,
                flat=self.flat,
                action_notes=self.action_notes,
            )
            try:
                turn = self.model.complete(messages, response_format=fmt, deadline=deadline)
            except OutputRejected:
                # llama.cpp's parser rejected the constrained output; at temperature 0 the same request fails
                # again, so the model is asked once without the grammar (its text reply is parsed as usual)
                turn = self.model.complete(messages, deadline=deadline)
                rejected = True
        else:
            turn = self.model.complete(
                messages,
                tools=None if final else [s for s in toolkit.schemas() if s["function"]["name"] != blocked],
                parallel_tool_calls=None if final else self.settings.parallel_tool_calls,
                deadline=deadline,
            )
        usage.add(turn.usage)
        model_calls.append(
            {
                "prompt_tokens": turn.usage.prompt_tokens,
                "completion_tokens": turn.usage.completion_tokens,
                "cached_tokens": turn.usage.cached_tokens,
                "latency_s": round(time.perf_counter() - started, 4),
                **turn.timings,
                **({"grammar_rejected": True} if rejected else {}),
            }
        )
        messages.append(turn.message)
        return turn

    def _parse(self, turn: ChatTurn, toolkit: Toolkit) -> tuple[list[_Call], str, str, list[str]]:
        """Tool calls, answer text, thought and plan from a turn (native calls, JSON actions nested or flat, or
        calls printed as text)."""
        if turn.tool_calls:
            return (
                [_Call(c["function"]["name"], c["function"]["arguments"], c["id"]) for c in turn.tool_calls],
                "",
                turn.content,
                [],
            )
        data = _json_object(turn.content)
        if isinstance(data, dict):
            name = data.get("action") or data.get("name") or data.get("tool")
            thought = _as_text(data.get("thought", data.get("found", "")))
            raw_plan = data.get("plan")
            plan = [_as_text(p) for p in raw_plan[:3] if _as_text(p).strip()] if isinstance(raw_plan, list) else []
            arguments = data.get("arguments", data.get("parameters", data.get("action_input", {})))
            if not name:
                name, arguments = _flat_action(data, toolkit)
            if name == "final_answer":
                answer = data.get("answer")
                if answer is None and isinstance(arguments, dict):
                    answer = arguments.get("answer")
                text = _as_text(answer)
                return [], _whole_sentences(text) if self.compact else text, thought, plan
            if isinstance(name, str) and name:
                return [_Call(name, arguments)], "", thought, plan
        truncated = _cut_off_answer(turn.content)
        if truncated is not None:
            return [], truncated, "", []
        return [], turn.content.strip(), "", []

    def _observe(self, messages: list[dict[str, Any]], call: _Call, observation: str) -> None:
        if call.call_id is not None:
            messages.append({"role": "tool", "tool_call_id": call.call_id, "content": observation})
        elif self.compact:
            messages.append({"role": "user", "content": observation})  # a result names its tool or its chunks
        else:
            messages.append({"role": "user", "content": f"Observation from {call.name}:\n{observation}"})

    def _citations(self, answer: str, toolkit: Toolkit) -> list[dict[str, Any]]:
        """Chunk ids cited in the answer, each verified against the chunks this run actually returned."""
        cited: list[str] = []
        for group in _CITATION.findall(answer):
            for part in re.split(r"[,;]\s*", group):
                chunk_id = re.sub(r"^chunks?\s*:?\s*", "", part.strip(), flags=re.I).strip()
                if chunk_id and chunk_id not in cited:
                    cited.append(chunk_id)
        return [{"chunk_id": c, "verified": c in toolkit.tracker.seen_ids} for c in cited]


_NOT_ACTIONS = ("plan", "found", "thought")


def _flat_action(data: dict[str, Any], toolkit: Toolkit) -> tuple[str, Any]:
    """(tool or "final_answer", arguments) of a flat action: {"keyword_search": ["X"]}, {"keyword_search":
    {"keywords": ["X"]}}, {"answer": "…"}; ("", {}) when no key names one."""
    for key, value in data.items():
        if key in ("answer", "final_answer"):
            return "final_answer", {"answer": value}
        if key in _NOT_ACTIONS or toolkit.canonical(key) not in toolkit.enabled:
            continue
        if isinstance(value, dict):
            return key, value
        tool = toolkit.canonical(key)
        schema = next((s for s in toolkit.schemas() if toolkit.canonical(s["function"]["name"]) == tool), None)
        required = schema["function"]["parameters"].get("required", []) if schema else []
        return key, {required[0]: value} if required else value
    return "", {}


def _safe_args(arguments: Any) -> dict[str, Any]:
    try:
        return parse_arguments(arguments)
    except Exception:
        return {"_raw": str(arguments)}


# "Which film came out first, Blue Lake or Red Sky?": the options follow the question's last comma
_CHOICE = re.compile(r",\s*([^,?]{1,150}?)\s+or\s+([^,?]{1,150}?)\s*\?\s*$", re.I)


def choice_options(question: str) -> list[str]:
    """The two options of an either-or question ("…, A or B?"), else none. A small model that reasoned its way
    to a sentence about one item often never names an option; with constrained decoding it must pick one."""
    match = _CHOICE.search(question.removeprefix("Question:").strip())
    if match is None:
        return []
    first, second = (" ".join(g.split()) for g in match.groups())
    if first.lower() == second.lower() or " or " in f" {first.lower()} {second.lower()} ":
        return []
    return [first, second]


# a question opened by an auxiliary verb expects yes or no ("Are both films American?", "Did she win?")
_YES_NO = re.compile(
    r"^(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|should|shall|may|might|must)\s", re.I
)


def yes_no_question(question: str) -> bool:
    """True for a yes/no question. One that offers alternatives ("Did A or B win?") is not: its answer is one of
    them. A small model answering "Are X and Y from the same country?" often described both and never said yes
    or no; with constrained decoding its answer starts with one of them."""
    text = question.removeprefix("Question:").strip()
    return bool(_YES_NO.match(text)) and " or " not in f" {text.lower()} "


def check_question(question: str) -> str:
    """The question, stripped; an empty or oversized one is rejected before any model is loaded."""
    if not isinstance(question, str) or not question.strip():
        raise InputError('the question is empty: ask something, e.g. arag ask "Who wrote Hamlet?" --index DIR')
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return question


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return ""


CAP_MARGIN = 8  # the grammar counts the JSON string, the answer is stripped: a cut one can be a few chars short
# not arag.chunking.split_sentences: its rule that a one-letter word before a period is an initial would not end
# "She was the wife of Lothair I." there, and regnal numbers are common in answers (2Wiki's royalty questions)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\]")


def _whole_sentences(answer: str) -> str:
    """A compact answer that reached SHORT_ANSWER_CHARS was cut by the grammar, mostly mid-sentence: its whole
    sentences (or citations), else its whole words and an ellipsis, so a cut word is never read as the answer."""
    if len(answer) < SHORT_ANSWER_CHARS - CAP_MARGIN:
        return answer
    ends = [match.end() for match in _SENTENCE_END.finditer(answer)]
    if ends and ends[-1] >= SHORT_ANSWER_CHARS // 3:
        return answer[: ends[-1]].strip()
    words = answer.rsplit(" ", 1)[0] if " " in answer.strip() else answer
    return words.rstrip(" ,;:") + " …"


_CUT_OFF_ANSWER = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)


def _cut_off_answer(text: str) -> str | None:
    """The answer of an answer action (flat {"answer": …} or nested final_answer) cut off by the token limit (no
    closing quote or brace): its text so far, instead of the raw JSON becoming the answer."""
    match = _CUT_OFF_ANSWER.search(text)
    if match is None:
        return None
    raw = match.group(1)
    raw = raw[:-1] if raw.endswith("\\") and not raw.endswith("\\\\") else raw  # a cut escape
    try:
        return str(json.loads(f'"{raw}"')).strip() + " …"
    except ValueError:
        return raw.strip() + " …"


def _json_object(text: str) -> Any:
    """A JSON object in model text: whole, in <tool_call> tags or ``` fences (models that print calls as
    text), or from the first "{" to the last "}". Linear in the text: at most a few candidates are parsed."""
    text = text.strip()
    for candidate in _json_candidates(text):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return None


def _json_candidates(text: str) -> Iterator[str]:
    yield text
    for opening, closing in (("<tool_call>", "</tool_call>"), ("```", "```")):
        start = 0
        for _ in range(_JSON_CANDIDATES):
            begin = text.find(opening, start)
            if begin < 0:
                break
            end = text.find(closing, begin + len(opening))
            if end < 0:
                break
            body = text[begin + len(opening) : end].strip()
            yield body[4:] if body.startswith("json") else body
            start = end + len(closing)
    brace = text.find("{")
    if brace >= 0:
        yield text[brace : text.rfind("}") + 1]
