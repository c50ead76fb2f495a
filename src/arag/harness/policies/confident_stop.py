"""confident_stop: the model states how sure it is with each action; sure enough, its next action is the answer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arag.harness import contract
from arag.harness.contract import Allow, Base, Constraint, Offer, Policy, RunView, Start
from arag.harness.registry import register
from arag.tools.toolkit import ToolCall, ToolResult

STATE_CONFIDENCE = (
    "With each action, state how sure you are that what you have read so far answers the question: "
    '"confidence", a number from 0 to 1.'
)
# a JSON action's confidence, in tenths: a closed set the grammar enforces and a small model writes in 1-3 tokens
CONFIDENCE_SCHEMA: dict[str, Any] = {"type": "number", "enum": [round(0.1 * tenth, 1) for tenth in range(11)]}
_CONFIDENCE_TEXT = re.compile(r"confidence\s*[:=]?\s*(\d+(?:\.\d+)?)\s*(%?)", re.I)


class ConfidentStopSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(
        0.8, ge=0.0, le=1.0, description="A tool call stated with at least this confidence is the last one."
    )


@register
class ConfidentStop(Policy):
    """The paper's agent cannot tell by itself when it has enough evidence: only the step limit stops a model that
    keeps searching (paper §5). Asked at the start, the model states with each action how sure it is that what it
    has read answers the question: a JSON action has a ``confidence`` field (tenths from 0 to 1, enforced by the
    grammar: a small model told to write it into its note did not, and the policy never acted), a native tool call
    writes ``confidence: 0.8`` in its text; when a tool call comes with a confidence at or above
    ``agent.policy.confident_stop.threshold``, that call is its last and the next action must be the answer. The
    threshold trades steps and tokens for accuracy: ``arag eval sweep --confidence 0.5,0.7,0.9`` measures the
    curve. Its record states the confidence of each of the model's steps. In no profile by default
    (``--policy +confident_stop``)."""

    name = "confident_stop"
    summary = "the model states its confidence with each action; at the threshold, its next action is the answer"
    Settings = ConfidentStopSettings
    config: ConfidentStopSettings

    def fields(self) -> Sequence[contract.Field]:
        return [contract.Field("confidence", CONFIDENCE_SCHEMA, place="last")]

    def start(self, run: RunView) -> Start:
        self.stop_next = False
        return Start(says=STATE_CONFIDENCE)

    def after_tool(self, run: RunView, call: ToolCall, result: ToolResult) -> None:
        confidence = stated(run.actions[-1].fields, run.actions[-1].note) if run.actions else None
        self.stop_next = confidence is not None and confidence >= self.config.threshold

    def allow(self, run: RunView, base: Base) -> Allow | None:
        if not self.stop_next or base.forced:
            return None
        self.acted()
        return Allow(final=True)

    def constrain(self, run: RunView, offer: Offer) -> Constraint | None:
        # a JSON action gets a field the grammar enforces
        return Constraint(fields=("confidence",)) if offer.constrained and not offer.forced else None

    def record(self, run: RunView) -> dict[str, Any]:
        """How sure the model said it was with each of its steps (None where it said nothing): where each
        threshold would have stopped it."""
        return {"stated": [stated(s.fields, s.thought) for s in run.trajectory if s.origin == "model"]}


def stated(fields: Any, note: str) -> float | None:
    """How sure an action said it is: its JSON field where it has one, else what its text states."""
    value = fields.get("confidence") if hasattr(fields, "get") else None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return confidence_in_text(note)


def confidence_in_text(text: str) -> float | None:
    """The last ``confidence: 0.8`` (or ``80%``) in ``text``, as a fraction; None if it states none."""
    found = _CONFIDENCE_TEXT.findall(text or "")
    if not found:
        return None
    value, percent = found[-1]
    number = float(value) / (100 if percent or float(value) > 1 else 1)
    return number if 0 <= number <= 1 else None
