"""option_check: an either-or answer with nothing read about one option is held once."""

from __future__ import annotations

from arag.agent.policies.base import Hold, Policy, register
from arag.agent.prompts import OPTION_NOT_READ
from arag.agent.questions import choice_options
from arag.agent.state import RunState


@register
class OptionCheck(Policy):
    """To compare two things the model needs the same fact about both; a small model answered "…, A or B?" after
    reading about A only. Its answer is held once with the advice to search for the option it has read nothing
    about."""

    name = "option_check"
    summary = 'an answer to "…, A or B?" with nothing read about one option is held once: search for it'

    def start(self, run: RunState) -> None:
        self.options = choice_options(run.question)
        self.held = False

    def on_answer(self, run: RunState, answer: str) -> Hold | None:
        if not self.options or self.held or "chunk_read" not in run.toolkit.enabled:
            return None
        read_text = run.read_text()
        missing = [option for option in self.options if option.lower() not in read_text]
        if not missing:
            return None
        self.held = True
        self.acted(run)
        return Hold(OPTION_NOT_READ.format(answer=answer[:200], option=missing[0]))
