"""choice_answers: an either-or question is answered by one of its options, a yes/no question by yes or no."""

from __future__ import annotations

from arag.harness.contract import Constraint, Offer, Policy, RunView
from arag.harness.registry import register
from arag.harness.text import choice_options, yes_no_question


@register
class ChoiceAnswers(Policy):
    """A small model that reasoned its way to a sentence about one item often never named an option, and one
    asked "Are X and Y from the same country?" described both and never said yes or no. With constrained
    decoding the answer to "…, A or B?" is A or B, and the answer to a yes/no question starts with Yes or No."""

    name = "choice_answers"
    summary = 'the answer to "…, A or B?" is A or B; to a yes/no question it starts with Yes or No'

    def start(self, run: RunView) -> None:
        self.options = tuple(choice_options(run.question))
        self.yes_no = yes_no_question(run.question)

    def constrain(self, run: RunView, offer: Offer) -> Constraint | None:
        if not (self.options or self.yes_no):
            return None
        self.acted()
        return Constraint(options=self.options, yes_no=self.yes_no)
