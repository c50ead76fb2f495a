"""found_notes: every action states what the text read so far says."""

from __future__ import annotations

from arag.agent.actions import ActionSpec
from arag.agent.policies.base import Policy, register
from arag.agent.state import RunState


@register
class FoundNotes(Policy):
    """The free "thought" becomes "found": one sentence, required, of what the text read so far says that helps
    answer. A small model left "thought" empty and read hit after hit past the answer; a field it must fill
    makes it state the facts before it acts. ``agent.policy.found_notes.on_calls=false`` keeps the note on the
    answer only, ``on_answer=false`` on tool calls only."""

    name = "found_notes"
    summary = 'every action states what was "found" so far (a required one-sentence note)'

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        spec.note = "found"
        spec.note_on_calls = self.settings.policy.found_notes.on_calls
        spec.note_on_answer = self.settings.policy.found_notes.on_answer
        self.acted(run)
