"""choice_answers: an either-or question is answered by one of its options, a yes/no question by yes or no."""

from __future__ import annotations

from arag.agent.actions import ActionSpec
from arag.agent.policies.base import Policy, register
from arag.agent.questions import choice_options, yes_no_question
from arag.agent.state import RunState


@register
class ChoiceAnswers(Policy):
    """A small model that reasoned its way to a sentence about one item often never named an option, and one
    asked "Are X and Y from the same country?" described both and never said yes or no. With constrained
    decoding the answer to "…, A or B?" is A or B, and the answer to a yes/no question starts with Yes or No."""

    name = "choice_answers"
    summary = 'the answer to "…, A or B?" is A or B; to a yes/no question it starts with Yes or No'

    def start(self, run: RunState) -> None:
        self.options = choice_options(run.question)
        self.yes_no = yes_no_question(run.question)

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        spec.options, spec.yes_no = list(self.options), self.yes_no
        if self.options or self.yes_no:
            self.acted(run)
