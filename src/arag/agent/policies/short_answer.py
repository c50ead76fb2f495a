"""short_answer: the answer is a few words; one cut at the cap keeps its whole sentences."""

from __future__ import annotations

import re

from arag.agent.actions import ActionSpec
from arag.agent.policies.base import Policy, register
from arag.agent.state import RunState

CAP_MARGIN = 8  # the grammar counts the JSON string, the answer is stripped: a cut one can be a few chars short
# not arag.corpus.chunking.split_sentences: its rule that a one-letter word before a period is an initial would not end
# "She was the wife of Lothair I." there, and regnal numbers are common in answers (2Wiki's royalty questions)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\]")


@register
class ShortAnswer(Policy):
    """The answer is at most ``agent.policy.short_answer.max_chars`` characters (constrained decoding): a 1.5B
    model that began to repeat itself otherwise filled the token limit (~35 s on 2 cores). An answer the cap cut
    mid-sentence keeps its whole sentences (or whole words and an ellipsis), so a cut word is never read as the
    answer."""

    name = "short_answer"
    summary = "the answer is at most 200 characters; one cut there keeps its whole sentences"

    def constrain(self, run: RunState, spec: ActionSpec) -> None:
        spec.answer_chars = self.settings.policy.short_answer.max_chars

    def revise(self, run: RunState, answer: str) -> str:
        cap = self.settings.policy.short_answer.max_chars
        if len(answer) >= cap - CAP_MARGIN:  # the cap was reached: without it the answer would have gone on
            self.acted(run)
        return whole_sentences(answer, cap)


def whole_sentences(answer: str, cap: int) -> str:
    """An answer that reached ``cap`` (within CAP_MARGIN): its whole sentences (or citations), else its whole
    words and an ellipsis."""
    if len(answer) < cap - CAP_MARGIN:
        return answer
    ends = [match.end() for match in _SENTENCE_END.finditer(answer)]
    if ends and ends[-1] >= cap // 3:
        return answer[: ends[-1]].strip()
    words = answer.rsplit(" ", 1)[0] if " " in answer.strip() else answer
    return words.rstrip(" ,;:") + " …"
