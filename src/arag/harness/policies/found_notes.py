"""found_notes: every action states what the text read so far says."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arag.harness import contract
from arag.harness.contract import Constraint, Offer, Policy, RunView
from arag.harness.registry import register

FOUND_SCHEMA = {"type": "string", "minLength": 3, "maxLength": 200}  # one fact; every token costs ~0.1 s on 2 cores
FOUND_FIRST = "nothing yet"  # the example's note before anything was read


class FoundNotesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    on_calls: bool = Field(
        True,
        description="Every action carries the note (False: only the answer). Each note costs a small model ~15 "
        "generated tokens, but without them it rarely stopped before the step limit (docs/results.md).",
    )
    on_answer: bool = Field(
        True,
        description="The answer carries the note too (False: only tool calls). Measured off: one Medical answer "
        "more right, but on 2Wiki the model, used to opening each action with the note, never answered "
        "(docs/results.md).",
    )

    @model_validator(mode="after")
    def _some_action_carries_the_note(self) -> FoundNotesSettings:
        if not (self.on_calls or self.on_answer):
            raise ValueError("on_calls and on_answer are both false: switch the policy off instead (-found_notes)")
        return self


@register
class FoundNotes(Policy):
    """The free "thought" becomes "found": one sentence, required, of what the text read so far says that helps
    answer. A small model left "thought" empty and read hit after hit past the answer; a field it must fill
    makes it state the facts before it acts. ``agent.policy.found_notes.on_calls=false`` keeps the note on the
    answer only, ``on_answer=false`` on tool calls only."""

    name = "found_notes"
    summary = 'every action states what was "found" so far (a required one-sentence note)'
    Settings = FoundNotesSettings
    config: FoundNotesSettings

    def fields(self) -> Sequence[contract.Field]:
        explain = '\n"found" is what the text you have read so far says that helps answer the question, in one sentence'
        if self.config.on_calls:
            explain += f' ("{FOUND_FIRST}" at first). When it holds the answer, give the final answer.'
        else:
            explain += "."
        return [
            contract.Field(
                "found",
                FOUND_SCHEMA,
                place="note",
                on_calls=self.config.on_calls,
                on_answer=self.config.on_answer,
                example=FOUND_FIRST,
                later="Hamlet was written by William Shakespeare.",
                explain=explain,
            )
        ]

    def constrain(self, run: RunView, offer: Offer) -> Constraint:
        self.acted()
        return Constraint(fields=("found",))
