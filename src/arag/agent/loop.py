"""The A-RAG agent (paper §3.3): reason → call a tool → observe, until it answers or runs out of steps; then it
answers from what it gathered. ``Agent.run`` is that loop; a profile's policies (arag/agent/policies) shape what
the model may do at each step, and nothing else does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from arag.agent import prompts
from arag.agent.actions import NOT_ACTIONS, Action, ActionSpec, ToolCall, action_format
from arag.agent.policies import Policy, Stands
from arag.agent.profiles import resolve
from arag.agent.questions import check_question
from arag.agent.state import AgentResult, RunState, Step
from arag.errors import ConfigError, LLMError, OutputRejected, TimeBudgetExceeded
from arag.filters import Filter, parse_filter
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings
from arag.tools.toolkit import Toolkit, ToolResult
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
        self.actions = action_format(mode)
        reserved = sorted(
            {str(v) for v in self.settings.tool_names.values()} & {"answer", "final_answer", *NOT_ACTIONS}
        )
        if mode == "flat-json" and reserved:
            raise ConfigError(f"agent.tool_names: {reserved} cannot name a tool (flat JSON actions use those keys)")
        # the profile's prompt (a run records it by hash), and the system message built from it
        self.system_prompt = prompts.system_prompt(self.bundle.profile.prompt, self.settings.system_prompt_file)
        self.system_message = self._system_message(self._toolkit())
        self.on_step: Callable[[Step], None] | None = None  # live display hook (the CLI prints steps)
        self.on_model_call: Callable[[int], None] | None = None  # called before each model call, with its number
        self.cancelled: Callable[[], bool] | None = None  # checked before each step (a client went away)
        self.trace_parent: Any = None  # the caller's trace context (arag.tracing.parent_from), for the next questions

    def run(
        self, question: str, where: str | Filter | None = None, conversation: Conversation | None = None
    ) -> AgentResult:
        """Answer ``question``; with ``where`` (a filter on document metadata, arag.filters), from those documents
        only; in a ``conversation``, after its earlier turns and with its context tracker."""
        with self.index.snapshot():  # a question reads one generation of the index from start to end
            run, policies = self._start(check_question(question), where, conversation)
            try:
                self._opening_calls(run, policies)
                while self._next_step(run):
                    action = self._act(run, policies)
                    if action.calls:
                        self._call_tools(run, policies, action.calls)
                    elif action.answer and not self._held(run, policies, action.answer):
                        self._answer(run, policies, action.answer, "answered")
                    elif not action.answer:
                        run.tell(prompts.EMPTY_REPLY)
                        self._end_step(run, stalled=True)
                if run.stop_reason not in ("answered", "cancelled"):  # the step limit, a budget or a stall
                    run.trace.step(run.steps + 1, final=True)
                    run.tell(prompts.FINAL[self.bundle.profile.final_prompt])
                    self._answer(run, policies, self._act(run, policies, final=True).answer, run.stop_reason)
            except TimeBudgetExceeded as exc:
                run.fail("time_budget", f"{exc} ({self.settings.time_budget_s:g} s, setting agent.time_budget_s)")
            except LLMError as exc:
                run.fail("error", str(exc))
            except BaseException as exc:  # a bug or Ctrl-C: the trace records it, the exception goes on
                run.trace.abort(exc)
                raise
            result = self._finish(run, conversation)
            run.trace.end(result)
            return result

    # ------------------------------------------------------------------ the loop's parts
    def _start(
        self, question: str, where: str | Filter | None, conversation: Conversation | None
    ) -> tuple[RunState, list[Policy]]:
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
        run = RunState(
            question, self.system_message, toolkit, self.settings, self._observation, self.on_step, history, trace
        )
        policies = [cls(self.settings) for cls in self.bundle.policies]  # a policy's state is one question's
        for policy in policies:
            policy.start(run)
        return run, policies

    def _finish(self, run: RunState, conversation: Conversation | None) -> AgentResult:
        result = run.result(self.model.cost)
        if self.settings.verify_answers and result.answer:
            from arag.verification import verify_answer

            checked = result.read_chunks or result.seen_chunks  # an answer from snippets: the chunks shown
            result.verification = verify_answer(self.index, result.answer, checked).to_dict()
        if conversation is not None:
            conversation.record(run, result)
        return result

    def _opening_calls(self, run: RunState, policies: list[Policy]) -> None:
        for policy in policies:
            if (call := policy.opening(run)) is not None:
                run.trace.step(0)  # the opening calls a policy makes before the model acts
                self._show(run, policies, call, run.harness_call(call), harness="before its first action")

    def _next_step(self, run: RunState) -> bool:
        if run.stop_reason is None and run.steps >= self.settings.max_steps:
            run.stop_reason = "max_steps"
        elif run.stop_reason is None and self.cancelled and self.cancelled():
            run.stop_reason = "cancelled"
        elif run.stop_reason is None and run.usage.total_tokens >= self.settings.token_budget:
            run.stop_reason = "token_budget"
        if run.stop_reason is None:
            run.trace.step(run.steps + 1)
        return run.stop_reason is None

    def _act(self, run: RunState, policies: list[Policy], final: bool = False) -> Action:
        """The model's next action, within what the policies allow."""
        spec = ActionSpec([] if final else list(run.toolkit.enabled), self.actions.json, final=final)
        for policy in policies:
            policy.constrain(run, spec)
        if self.on_model_call:
            self.on_model_call(len(run.model_calls))
        started, rejected = time.perf_counter(), False
        request = self.actions.request(spec, run.toolkit, self.settings.parallel_tool_calls)
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
            for policy in policies:
                action.answer = policy.revise(run, action.answer)
        run.record_action(action)
        return action

    def _answer(self, run: RunState, policies: list[Policy], answer: str, reason: str | None) -> None:
        """End the run with ``answer``, as the policies' rereads turn it (each one more model call, no tools)."""
        for policy in policies:
            if not answer or (reread := policy.reread(run, answer)) is None:
                continue
            if self.on_model_call:
                self.on_model_call(len(run.model_calls))
            started = time.perf_counter()
            try:
                turn = self.model.complete(reread.messages, deadline=run.deadline)
            except (TimeBudgetExceeded, LLMError):  # the reread is an extra: its failure costs it, not the answer
                continue
            run.record_turn(turn, time.perf_counter() - started, False, getattr(self.model, "model", ""))
            answer = run.reread_answer(policy.name, answer, reread.answer(turn.content or ""))
        run.finish(answer, reason)

    def _held(self, run: RunState, policies: list[Policy], answer: str) -> bool:
        """Whether a policy sends the answer back (once per kind; a held answer costs no tool step)."""
        for policy in policies:
            hold = policy.on_answer(run, answer)
            if hold is None:
                continue
            if hold.read:
                read = ToolCall(run.toolkit.names["chunk_read"], {"chunk_ids": hold.read})
                self._show(run, policies, read, run.harness_read(hold.read), note=hold.message, harness=hold.why)
            else:
                run.tell(hold.message)
            return True
        return False

    def _call_tools(self, run: RunState, policies: list[Policy], calls: list[ToolCall]) -> None:
        """One tool step: the first call (every call with parallel_tool_calls), a repeat handled by the policies."""
        executed = calls if self.settings.parallel_tool_calls else calls[:1]
        stalled = False
        for call in executed:
            if run.is_repeat(call):
                outcome = next((o for p in policies if (o := p.on_repeat(run, call)) is not None), None)
                if isinstance(outcome, Stands):
                    self._answer(run, policies, outcome.answer, "answered")
                    return
                result = outcome or run.refusal(call, prompts.REFUSED)
                stalled = outcome is None
                self._show(run, policies, call, result, harness="in place of its repeated call" if result.ok else "")
                continue
            call, result = new_call(run, policies, call)
            self._show(run, policies, call, result)
        for skipped in calls[len(executed) :]:  # the API requires an answer to every tool_call_id
            run.messages.append(self._observation(skipped, prompts.NOT_EXECUTED))
        self._end_step(run, stalled)

    def _show(
        self,
        run: RunState,
        policies: list[Policy],
        call: ToolCall,
        result: ToolResult,
        note: str = "",
        harness: str = "",
    ) -> None:
        """A result into the trajectory and the conversation, after the policies have added to it."""
        for policy in policies:
            policy.after_result(run, result)
        run.observe(call, result, note=note, harness=harness)

    def _end_step(self, run: RunState, stalled: bool) -> None:
        run.steps += 1
        run.stalls = run.stalls + 1 if stalled else 0
        if run.stalls >= run.stall_limit:  # "stalled": the guard cut the run short; on the last step, the budget did
            run.stop_reason = "stalled" if run.steps < self.settings.max_steps else "max_steps"
            return
        tokens_left = max(0, self.settings.token_budget - run.usage.total_tokens)
        left = self.settings.max_steps - run.steps
        run.tell(prompts.budget_note(left, tokens_left if self.bundle.profile.budget_tokens else None))

    # ------------------------------------------------------------------ helpers
    def _toolkit(self, tracker: ContextTracker | None = None) -> Toolkit:
        names = {str(k): v for k, v in self.settings.tool_names.items()}
        view = self.bundle.view
        if getattr(self.actions, "flat", False):
            view = replace(view, flat_calls=True)
        return Toolkit(self.index, tracker=tracker, enabled=self.settings.tools, names=names, view=view)

    def _observation(self, call: ToolCall, text: str) -> dict[str, Any]:
        if call.call_id is not None:
            return {"role": "tool", "tool_call_id": call.call_id, "content": text}
        return prompts.observation_message(call.name, text, labelled=self.bundle.profile.observation_label)

    def _system_message(self, toolkit: Toolkit) -> str:
        profile, names = self.bundle.profile, self.bundle.policy_names
        text = self.system_prompt + prompts.tools_line(list(toolkit.functions()), self.settings.max_steps)
        if not self.actions.json:
            return text
        text += prompts.tool_list(toolkit.schemas())
        if profile.format_help == "paper":
            return text + prompts.PAPER_JSON_FORMAT
        search = toolkit.names["keyword_search" if "keyword_search" in toolkit.enabled else toolkit.enabled[0]]
        return text + prompts.compact_format(
            search,
            semantic=toolkit.canonical(search) == "semantic_search",
            flat=getattr(self.actions, "flat", False),
            note="found" if "found_notes" in names else "thought",
            plan="plan" in names,
            note_on_calls=self.notes_on_calls,
            note_on_answer=self.notes_on_answer,
        )

    @property
    def notes_on_calls(self) -> bool:
        return "found_notes" not in self.bundle.policy_names or self.settings.policy.found_notes.on_calls

    @property
    def notes_on_answer(self) -> bool:
        return "found_notes" not in self.bundle.policy_names or self.settings.policy.found_notes.on_answer

    @property
    def actions_label(self) -> str:
        """How the model acts, for a run's record: "native", "json" or "flat json" (", note on the answer only" or
        ", note on tool calls only")."""
        if not self.actions.json or (self.notes_on_calls and self.notes_on_answer):
            return self.actions.label
        return self.actions.label + (
            ", note on tool calls only" if self.notes_on_calls else ", note on the answer only"
        )


def new_call(run: RunState, policies: list[Policy], call: ToolCall) -> tuple[ToolCall, ToolResult]:
    """A call the model makes for the first time: remembered as made, changed by the policies, run, noted by them."""
    run.remember(call)
    for policy in policies:
        call = policy.before_tool(run, call)
    result = run.call_tool(call)
    for policy in policies:
        policy.after_tool(run, call, result)
    return call, result
