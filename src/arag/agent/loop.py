"""The A-RAG agent (paper §3.3): reason → call a tool → observe, until it answers or runs out of steps; then it
answers from what it gathered. ``Agent.run`` is that loop. A profile's harness (arag.harness) shapes what the model
may do at each step through one composed object, and nothing else does; the loop owns its own end: every model call
counts against ``agent.max_model_calls``, whatever the harness holds back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from arag.agent import prompts
from arag.agent.actions import NOTE, Action, action_format
from arag.agent.questions import check_question
from arag.agent.state import AgentResult, RunState, Step
from arag.errors import ConfigError, LLMError, OutputRejected, TimeBudgetExceeded
from arag.filters import Filter, parse_filter
from arag.harness import Base, Harness, Hold, ReadInstead, Refuse, Stands, resolve
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings
from arag.tools.toolkit import ToolCall, Toolkit, ToolResult
from arag.tools.tracker import ContextTracker
from arag.tracing import QuestionTrace

if TYPE_CHECKING:
    from arag.agent.conversation import Conversation


class Agent:
    """Runs questions against one shared :class:`Index` with one chat model."""

    def __init__(
        self, index: Index, model: ChatModel, settings: AgentSettings | None = None, json_actions: bool | None = None
    ) -> None:
        self.index, self.model = index, model
        self.settings = settings or AgentSettings()
        local = getattr(model, "local", False)
        self.bundle = resolve(self.settings, local)
        mode = self.settings.action_mode
        if json_actions is not None:  # the caller decides whether the model acts in JSON
            mode = ("flat-json" if mode == "flat-json" else "json") if json_actions else "native"
        elif mode == "auto":  # small models print tool calls unreliably: constrained JSON for the embedded one
            mode = "json" if local else "native"
        fields = self.bundle.fields.values()
        notes = [NOTE, *(f.name for f in fields if f.place == "note")]
        self.actions = action_format(mode, notes, [f.name for f in fields if f.place != "note"])
        keys = {"answer", "final_answer", *notes, *self.bundle.fields}
        reserved = sorted({str(v) for v in self.settings.tool_names.values()} & keys)
        if mode == "flat-json" and reserved:
            raise ConfigError(f"agent.tool_names: {reserved} cannot name a tool (flat JSON actions use those keys)")
        # the profile's prompt (a run records it by hash), and the system message built from it
        self.system_prompt = prompts.system_prompt(self.bundle.prompt(), self.settings.system_prompt_file)
        self.system_message = self._system_message(self._toolkit())
        self.final_prompt = self.bundle.final_prompt() or prompts.FINAL
        self.on_step: Callable[[Step], None] | None = None  # live display hook (the CLI prints steps)
        self.on_model_call: Callable[[int], None] | None = None  # called before each model call, with its number
        self.cancelled: Callable[[], bool] | None = None  # checked before each step (a client went away)
        self.trace_parent: Any = None  # the caller's trace context (arag.tracing.parent_from), for the next questions

    @property
    def max_model_calls(self) -> int:
        """The model calls a question may make before its answer is forced: agent.max_model_calls, else every step
        and as many answers held back, and the packaged policies' one-time holds (2 × max_steps + 6)."""
        return self.settings.max_model_calls or 2 * self.settings.max_steps + 6

    def run(
        self, question: str, where: str | Filter | None = None, conversation: Conversation | None = None
    ) -> AgentResult:
        """Answer ``question``; with ``where`` (a filter on document metadata, arag.filters), from those documents
        only; in a ``conversation``, after its earlier turns and with its context tracker."""
        with self.index.snapshot():  # a question reads one generation of the index from start to end
            run, harness = self._start(check_question(question), where, conversation)
            try:
                self._opening_calls(run, harness)
                while self._next_step(run):
                    action = self._act(run, harness)
                    if action.calls:
                        self._call_tools(run, harness, action.calls)
                    elif action.answer and not self._held(run, harness, action.answer):
                        self._answer(run, harness, action.answer, "answered")
                    elif not action.answer:
                        run.tell(prompts.EMPTY_REPLY)
                        self._end_step(run, stalled=True)
                if run.stop_reason not in ("answered", "cancelled"):  # a limit, a budget or a stall
                    run.trace.step(run.steps + 1, final=True)
                    run.tell(self.final_prompt)
                    self._answer(run, harness, self._act(run, harness, final=True).answer, run.stop_reason)
            except TimeBudgetExceeded as exc:
                run.fail("time_budget", f"{exc} ({self.settings.time_budget_s:g} s, setting agent.time_budget_s)")
            except LLMError as exc:
                run.fail("error", str(exc))
            except BaseException as exc:  # a bug or Ctrl-C: the trace records it, the exception goes on
                run.trace.abort(exc)
                raise
            result = self._finish(run, harness, conversation)
            run.trace.end(result)
            return result

    # ------------------------------------------------------------------ the loop's parts
    def _start(
        self, question: str, where: str | Filter | None, conversation: Conversation | None
    ) -> tuple[RunState, Harness]:
        toolkit = self._toolkit(conversation.tracker if conversation else None)
        toolkit.scope = parse_filter(where) if isinstance(where, str) else where
        toolkit.focus_query = question
        history = conversation.history() if conversation else []
        attributes = {
            "arag.profile": self.bundle.name,
            "arag.max_steps": self.settings.max_steps,
            "gen_ai.request.model": getattr(self.model, "model", None),
            "arag.index.generation": self.index.manifest.generation,
        }
        trace = QuestionTrace(question, attributes, self.trace_parent)
        earlier = [(turn.question, turn.result.answer) for turn in conversation.turns] if conversation else []
        run = RunState(
            question,
            self.system_message,
            toolkit,
            self.settings,
            self._observation,
            self.on_step,
            history,
            trace,
            earlier,
        )
        harness = self.bundle.harness()  # a policy's state is one question's
        start = harness.start(run)
        run.limits = run.limits.combine(start.limits)
        if start.says:
            run.tell(start.says)
        return run, harness

    def _finish(self, run: RunState, harness: Harness, conversation: Conversation | None) -> AgentResult:
        result = run.result(self.model.cost, harness.acted(), harness.records(run))
        if self.settings.verify_answers and result.answer:
            from arag.verification import verify_answer

            checked = result.read_chunks or result.seen_chunks  # an answer from snippets: the chunks shown
            result.verification = verify_answer(self.index, result.answer, checked).to_dict()
        if conversation is not None:
            conversation.record(run, result)
        return result

    def _opening_calls(self, run: RunState, harness: Harness) -> None:
        for call in harness.openings(run):
            run.trace.step(0)  # the opening calls the harness makes before the model acts
            self._show(run, harness, call, run.harness_call(call), why="before its first action")

    def _next_step(self, run: RunState) -> bool:
        if run.stop_reason is None and run.steps >= self.settings.max_steps:
            run.stop_reason = "max_steps"
        elif run.stop_reason is None and self.cancelled and self.cancelled():
            run.stop_reason = "cancelled"
        elif run.stop_reason is None and run.usage.total_tokens >= self.settings.token_budget:
            run.stop_reason = "token_budget"
        elif run.stop_reason is None and len(run.model_calls) >= self.max_model_calls:
            run.stop_reason = "model_calls"
        if run.stop_reason is None:
            run.trace.step(run.steps + 1)
        return run.stop_reason is None

    def _act(self, run: RunState, harness: Harness, final: bool = False) -> Action:
        """The model's next action, within what the harness allows."""
        base = Base(() if final else tuple(run.toolkit.enabled), self.actions.json, final)
        allowed = harness.next_action(run, base)
        run.answer_chars = allowed.answer_chars
        if self.on_model_call:
            self.on_model_call(len(run.model_calls))
        started, rejected = time.perf_counter(), False
        request = self.actions.request(allowed, run.toolkit, self.settings.parallel_tool_calls)
        try:
            turn = self.model.complete(run.messages, deadline=run.deadline, **request)
        except OutputRejected:
            if not self.actions.json:
                raise
            # llama.cpp's parser rejected the constrained output; at temperature 0 the same request fails again,
            # so the model is asked once without the grammar (its text reply is parsed as usual)
            turn, rejected = self.model.complete(run.messages, deadline=run.deadline), True
        run.record_turn(turn, time.perf_counter() - started, rejected, getattr(self.model, "model", ""))
        action = self.actions.parse(turn, run.toolkit)
        if action.answer and not action.calls:
            revised = harness.revise(run, action.answer)
            action.answer = revised.answer
            if revised.source:
                run.answer_instead(revised.source)
        run.record_action(action)
        return action

    def _answer(self, run: RunState, harness: Harness, answer: str, reason: str | None) -> None:
        """End the run with ``answer``, as the harness's rereads turn it (each one more model call, no tools)."""
        for name, reread_for in harness.rereads():
            if not answer or (reread := reread_for(run, answer)) is None:
                continue
            if self.on_model_call:
                self.on_model_call(len(run.model_calls))
            started = time.perf_counter()
            try:
                turn = self.model.complete(reread.messages, deadline=run.deadline)
            except (TimeBudgetExceeded, LLMError):  # the reread is an extra: its failure costs it, not the answer
                continue
            run.record_turn(turn, time.perf_counter() - started, False, getattr(self.model, "model", ""))
            turned = reread.answer(turn.content or "")
            if isinstance(turned, Hold):
                if run.stop_reason is None:  # the model still acts: the answer goes back, the run goes on
                    self._send_back(run, harness, turned)
                    return
                continue  # the forced answer cannot be sent back: it stands
            answer = run.reread_answer(name, answer, turned)
        if answer:
            settled = harness.settle(run, answer)
            answer = settled.answer
            if settled.source:
                run.answer_instead(settled.source)
        run.finish(answer, reason)

    def _held(self, run: RunState, harness: Harness, answer: str) -> bool:
        """Whether the harness sends the answer back (a held answer costs no tool step; agent.max_model_calls
        bounds how often)."""
        hold = harness.hold(run, answer)
        if hold is None:
            return False
        self._send_back(run, harness, hold)
        return True

    def _send_back(self, run: RunState, harness: Harness, hold: Hold) -> None:
        if hold.read:
            read = ToolCall(run.toolkit.names["chunk_read"], {"chunk_ids": hold.read})
            self._show(run, harness, read, run.harness_read(hold.read, hold.focus), note=hold.message, why=hold.why)
        else:
            run.tell(hold.message)

    def _call_tools(self, run: RunState, harness: Harness, calls: list[ToolCall]) -> None:
        """One tool step: the first call (every call with parallel_tool_calls); a repeated one is refused, unless
        the harness has something to show instead."""
        executed = calls if self.settings.parallel_tool_calls else calls[:1]
        stalled = False
        for call in executed:
            if run.is_repeat(call):
                run.repeats += 1
                outcome = harness.on_repeat(run, call)
                if isinstance(outcome, Stands):
                    self._answer(run, harness, outcome.answer, "answered")
                    return
                if isinstance(outcome, ReadInstead):
                    read = run.harness_read(list(outcome.chunk_ids), outcome.focus)
                    result = replace(read, observation=f"{prompts.REPEATED} {outcome.says}\n{read.observation}")
                elif isinstance(outcome, Refuse):
                    result = run.refusal(call, f"{prompts.REPEATED} {outcome.says}")
                else:
                    result = run.refusal(call, prompts.REFUSED)
                stalled = outcome is None
                self._show(run, harness, call, result, why="in place of its repeated call" if result.ok else "")
                continue
            call, result = new_call(run, harness, call)
            self._show(run, harness, call, result)
        for skipped in calls[len(executed) :]:  # the API requires an answer to every tool_call_id
            run.messages.append(self._observation(skipped, prompts.NOT_EXECUTED))
        self._end_step(run, stalled)

    def _show(
        self, run: RunState, harness: Harness, call: ToolCall, result: ToolResult, note: str = "", why: str = ""
    ) -> None:
        """A result into the trajectory and the conversation, with the harness's notes after it (``why``: when the
        loop made the call for the model, if it did)."""
        notes = harness.notes(run, result)
        if notes:
            result = replace(result, observation=result.observation + "".join(f"\n{n}" for n in notes))
        run.observe(call, result, note=note, harness=why)

    def _end_step(self, run: RunState, stalled: bool) -> None:
        run.steps += 1
        run.stalls = run.stalls + 1 if stalled else 0
        repeats_spent = run.limits.repeat_limit is not None and run.repeats >= run.limits.repeat_limit
        if run.stalls >= (run.limits.stall_limit or self.settings.stall_limit) or repeats_spent:
            # "stalled": the guard cut the run short; on the last step, the budget did
            run.stop_reason = "stalled" if run.steps < self.settings.max_steps else "max_steps"
            return
        tokens_left = max(0, self.settings.token_budget - run.usage.total_tokens)
        left = self.settings.max_steps - run.steps
        run.tell(prompts.budget_note(left, tokens_left if self.bundle.profile.budget_tokens else None))

    # ------------------------------------------------------------------ helpers
    def _toolkit(self, tracker: ContextTracker | None = None) -> Toolkit:
        names = {str(k): v for k, v in self.settings.tool_names.items()}
        view = self.bundle.view_for(flat=self.actions.flat)
        return Toolkit(self.index, tracker=tracker, enabled=self.bundle.tools(), names=names, view=view)

    def _observation(self, call: ToolCall, text: str) -> dict[str, Any]:
        if call.call_id is not None:
            return {"role": "tool", "tool_call_id": call.call_id, "content": text}
        return prompts.observation_message(call.name, text, labelled=self.bundle.profile.observation_label)

    def _system_message(self, toolkit: Toolkit) -> str:
        text = self.system_prompt + prompts.tools_line(list(toolkit.functions()), self.settings.max_steps)
        if not self.actions.json:
            return text
        text += prompts.tool_list(toolkit.schemas())
        if self.bundle.profile.format_help == "paper":
            return text + prompts.PAPER_JSON_FORMAT
        search = toolkit.names["keyword_search" if "keyword_search" in toolkit.enabled else toolkit.enabled[0]]
        semantic = toolkit.canonical(search) == "semantic_search"
        return text + (self.bundle.format_help(search, semantic, self.actions.flat) or "")

    @property
    def actions_label(self) -> str:
        """How the model acts, for a run's record: "native", "json" or "flat json" (", note on the answer only" or
        ", note on tool calls only" where a policy's note is on one kind of action only)."""
        note = self.bundle.note
        if not self.actions.json or note is None or (note.on_calls and note.on_answer):
            return self.actions.label
        return self.actions.label + (", note on tool calls only" if note.on_calls else ", note on the answer only")


def new_call(run: RunState, harness: Harness, call: ToolCall) -> tuple[ToolCall, ToolResult]:
    """A call the model makes for the first time: remembered as made, changed by the harness, run, noted by it."""
    run.remember(call)
    call, header = harness.edit(run, call)
    result = run.call_tool(call, header)
    harness.after_tool(run, call, result)
    return call, result
