"""option_check: an either-or answer with nothing read about one option is held once."""

from __future__ import annotations

from arag.harness.contract import Hold, Policy, RunView
from arag.harness.reads import read_text
from arag.harness.registry import register
from arag.harness.text import choice_options

OPTION_NOT_READ = (
    'You answered "{answer}", but nothing you have read is about "{option}". To compare, you need the same fact '
    'about both: keyword_search for "{option}" and read its hit, then answer.'
)


@register
class OptionCheck(Policy):
    """To compare two things the model needs the same fact about both; a small model answered "…, A or B?" after
    reading about A only. Its answer is held once with the advice to search for the option it has read nothing
    about."""

    name = "option_check"
    summary = 'an answer to "…, A or B?" with nothing read about one option is held once: search for it'

    def start(self, run: RunView) -> None:
        self.options = choice_options(run.question)
        self.held = False

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        if not self.options or self.held or "chunk_read" not in run.toolkit.enabled:
            return None
        text = read_text(run)
        missing = [option for option in self.options if option.lower() not in text]
        if not missing:
            return None
        self.held = True
        self.acted()
        return Hold(OPTION_NOT_READ.format(answer=answer[:200], option=missing[0]))
