"""closest_sentence: a read ends with the sentence closest to the question, and asks for the answer if it is one."""

from __future__ import annotations

from arag.agent.policies.base import Policy, register
from arag.agent.prompts import CLOSEST_SENTENCE
from arag.agent.state import RunState
from arag.tools.toolkit import ToolResult
from arag.tools.view import shorten

SENTENCE_CHARS = 300


@register
class ClosestSentence(Policy):
    """A small model read the sentence that answers the question and read on, chunk after chunk, until the step
    limit, the answer read (docs/results.md, agent policies). After every read, whoever
    made it, the loop names the sentence of the chunks just read that is closest to the question (the embedder's
    cosine) and asks for the answer if it is one, or for the search that the sentence points to."""

    name = "closest_sentence"
    summary = "a read ends with the sentence closest to the question, and asks for the answer if it is one"

    def after_result(self, run: RunState, result: ToolResult) -> None:
        if not result.ok or run.toolkit.canonical(result.name) != "chunk_read" or not result.chunk_ids:
            return
        closest = run.closest_sentences(result.chunk_ids)
        if not closest or closest[0].score < self.settings.policy.closest_sentence.min_score:
            return
        best = closest[0]
        self.acted(run)
        sentence = shorten(best.sentence, SENTENCE_CHARS)
        result.observation += "\n" + CLOSEST_SENTENCE.format(sentence=sentence, chunk_id=best.chunk_id)
