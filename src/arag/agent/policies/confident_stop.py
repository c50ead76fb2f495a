"""confident_stop: the model states how sure it is with each action; sure enough, its next action is the answer."""

from __future__ import annotations

from arag.agent.actions import ActionSpec, ToolCall
from arag.agent.policies.base import Policy, register
from arag.agent.prompts import STATE_CONFIDENCE
from arag.agent.state import RunState
from arag.tools.toolkit import ToolResult


@register
class ConfidentStop(Policy):
    """The paper's agent cannot tell by itself when it has enough evidence: only the step limit stops a model that
    keeps searching (paper §5). Asked at the start, the model states with each action how sure it is that what it
    has read answers the question: a JSON action has a ``confidence`` field (tenths from 0 to 1, enforced by the
    grammar: a small model told to write it into its note did not, and the policy never acted), a native tool call
    writes ``confidence: 0.8`` in its text; when a tool call comes with a confidence at or above
    ``agent.policy.confident_stop.threshold``, that call is its last and the next action must be the answer. The
    threshold trades steps and tokens for accuracy: ``arag eval sweep --confidence 0.5,0.7,0.9`` measures the
    curve. In no profile by default (``--policy +confident_stop``)."""

    name = "confident_stop"
    summary = "the model states its confidence with each action; at the threshold, its next action is the answer"

    def start(self, run: RunState) -> None:
        self.stop_next = False
        run.tell(STATE_CONFIDENCE)

    def after_tool(self, run: RunState, call: ToolCall, result: ToolResult) -> None:
        confidence = run.actions[-1].stated_confidence() if run.actions else None
        threshold = self.settings.policy.confident_stop.threshold
        self.stop_next = confidence is not None and confidence >= threshold

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        spec.confidence = spec.constrained and not spec.final  # a JSON action gets a field the grammar enforces
        if self.stop_next and not spec.final:
            self.acted(run)
            spec.tools, spec.final = [], True
