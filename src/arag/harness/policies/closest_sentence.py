"""closest_sentence: a read ends with the sentence closest to the question, and asks for the answer if it is one."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from arag.harness.contract import Policy, RunView
from arag.harness.reads import SENTENCE_CHARS, closest_sentences
from arag.harness.registry import register
from arag.tools.toolkit import ToolResult

CLOSEST_SENTENCE = (
    'Closest to the question: "{sentence}" [chunk {chunk_id}]. If this answers the question, give the final answer '
    "now; if it names something you must look up first, search for that."
)


class ClosestSentenceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_score: float = Field(
        0.0, ge=-1.0, le=1.0, description="Named only when its cosine with the question is at least this."
    )
    pronouns: bool = Field(
        False,
        description="A sentence that opens with a personal pronoun is scored with the name it stands for too, and "
        'named after the sentence before it ("It was founded in 2014 by …" for "Who founded Kestrel?"). Off: on '
        "both dev sets it changed no right answer and cost one absent 2Wiki question its refusal "
        "(docs/policies.md).",
    )


@register
class ClosestSentence(Policy):
    """A small model read the sentence that answers the question and read on, chunk after chunk, until the step
    limit, the answer read (docs/results.md, agent policies). After every read, whoever
    made it, the loop names the sentence of the chunks just read that is closest to the question (the embedder's
    cosine) and asks for the answer if it is one, or for the search that the sentence points to."""

    name = "closest_sentence"
    summary = "a read ends with the sentence closest to the question, and asks for the answer if it is one"
    Settings = ClosestSentenceSettings
    config: ClosestSentenceSettings

    def after_result(self, run: RunView, result: ToolResult) -> str | None:
        if not result.ok or run.toolkit.canonical(result.name) != "chunk_read" or not result.chunk_ids:
            return None
        closest = closest_sentences(run, result.chunk_ids, pronouns=self.config.pronouns)
        if not closest or closest[0].score < self.config.min_score:
            return None
        best = closest[0]
        self.acted()
        return CLOSEST_SENTENCE.format(sentence=best.shown(SENTENCE_CHARS), chunk_id=best.chunk_id)
