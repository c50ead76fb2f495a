"""closest_sentence: a read ends with the sentence closest to the question, and asks for the answer if it is one."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arag.citations import without_citations
from arag.harness.contract import Policy, RunView
from arag.harness.reads import SENTENCE_CHARS, Evidence, closest_sentences
from arag.harness.registry import register
from arag.harness.text import restates_question, says_nothing
from arag.text import normalize_answer
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
    held_answer: bool = Field(
        False,
        description="A read made for a short answer the model gave (a name, a date, a number: at most "
        "`held_answer_words` words, held back to read first) names the closest sentence that holds that answer, "
        'when one does ("C308", the room in a table row, had become "Kyoto University" from a sentence about the '
        "same person closer to the question). Off: on 2Wiki dev it named a wrong answer's sentence (a commune for "
        "a father's place of death) where the closest one had led to the right answer (docs/policies.md).",
    )
    held_answer_words: int = Field(
        4,
        ge=1,
        le=50,
        description="With `held_answer`, the most words a held answer may have for its sentence to be named: a "
        "sentence the model copied from the snippets is the near miss the closest sentence corrects (naming it "
        "instead lost a right Medical answer).",
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

    def start(self, run: RunView) -> None:
        self.held_answers_named: list[str] = []  # held answers whose sentence was named, not the closest one

    def after_result(self, run: RunView, result: ToolResult) -> str | None:
        if not result.ok or run.toolkit.canonical(result.name) != "chunk_read" or not result.chunk_ids:
            return None
        held = self._held_answer(run) if self.config.held_answer else ""
        closest = closest_sentences(run, result.chunk_ids, k=None if held else 1, pronouns=self.config.pronouns)
        if not closest or closest[0].score < self.config.min_score:
            return None
        best = closest[0]
        holding = _holding(closest, held) if held else None
        if holding is not None and holding is not best:
            best = holding
            self.held_answers_named.append(held)
        self.acted()
        return CLOSEST_SENTENCE.format(sentence=best.shown(SENTENCE_CHARS), chunk_id=best.chunk_id)

    def record(self, run: RunView) -> dict[str, Any] | None:
        return {"held_answers_named": self.held_answers_named} if self.held_answers_named else None

    def _held_answer(self, run: RunView) -> str:
        """The answer the model just gave, when this read is made for it (the harness held it back to read
        first), normalized; "" when there is none, it is longer than a short phrase, or it names nothing of its
        own (a refusal, the question's own words)."""
        last = run.actions[-1] if run.actions else None
        if last is None or last.calls or not last.answer:
            return ""
        given = without_citations(last.answer)
        answer = normalize_answer(given)
        if len(answer.split()) > self.config.held_answer_words:
            return ""
        if says_nothing(given) or restates_question(given, run.question):
            return ""
        return answer


def _holding(ranked: list[Evidence], answer: str) -> Evidence | None:
    """The best-ranked sentence whose words hold the whole answer (word-bounded), if one does."""
    for evidence in ranked:
        if f" {answer} " in f" {normalize_answer(evidence.sentence)} ":
            return evidence
    return None
