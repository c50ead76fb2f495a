"""phrase_answer: an answer written as a sentence is read off the text read again, as a short phrase."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from arag.citations import without_citations
from arag.corpus.chunking import count_tokens, split_sentences
from arag.errors import ARagError
from arag.harness.contract import Policy, Reread, RunView
from arag.harness.registry import register
from arag.harness.text import (
    SHORT_PHRASE,
    choice_options,
    question_parts,
    restates_question,
    says_nothing,
    whole_sentences,
    yes_no_question,
)
from arag.text import normalize_answer, says_not_found

PHRASE_ANSWER = SHORT_PHRASE + " Use the text read."
PHRASE_PARTS = (
    "The question asks two things. Answer both, each with a short phrase (a name, date, number or yes/no), separated "
    "by a semicolon, no explanation. Use the text read."
)
PHRASE_ANSWER_TEXT = "Text read:\n{text}\n\nQuestion: {question}"
_LIST = re.compile(r"[,;&/]|\band\b|\bsince\b", re.I)
_LEADING_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*", re.I)


class PhraseAnswerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_words: int = Field(
        7,
        ge=0,
        le=1000,
        description="An answer of at least this many words, its citations aside, is reread: a sentence where the "
        "prompt asks for a name, a date or a number (0: every answer); a shorter one only if it is made of the "
        "question's own words. On 2Wiki rereading short answers too lost multi-hop answers the model had composed "
        "(docs/results.md).",
    )
    two_parts: bool = Field(
        True,
        description='A question that asks two things ("Who chairs the board, and since when has she lived in '
        'Aldwick?") is reread for both, and an answer to it that names one thing ("Helen Marsh chairs the board.") '
        "is reread too (docs/policies.md).",
    )
    text_tokens: int = Field(
        3000,
        ge=100,
        le=100_000,
        description="Most tokens of read text the phrase is read off (the chunks read first, as they were shown).",
    )


@register
class PhraseAnswer(Policy):
    """A 1.5B model that read the sentence holding the answer often answered with another sentence of the same
    text, one that restates the question ("Tumor markers are used in ovarian cancer diagnosis." for "Which tumor
    markers are used in ovarian cancer diagnosis?", the text read naming CA-125): writing a sentence, it took the
    easiest one. Asked for a short phrase over the same text, as Naive RAG asks, it names the thing asked for.
    So when the model answers (or must) with a sentence (``agent.policy.phrase_answer.min_words``) where the prompt
    asks for a name, a date or a number, one more call without tools gives it the text it read this question, as
    it was shown, and the question; the phrase it replies is the answer, with the chunks the model cited (else
    the read chunks that contain the phrase), as long as the model's own answer may be. A short answer stands: on
    2Wiki, rereading those too lost answers the model had composed over two hops; so does the answer to an
    either-or or a yes/no question (its options are the phrase; a film's twelve-word title, reread, became the
    other film). A short answer made of the question's own words ("Pancreatic cancer" for a syndrome that raises
    its risk) answers nothing and is reread; a phrase made of them ("Metastatic breast cancer (MBC)" for its
    definition) is no usable reply. Nothing read, or no usable reply: the model's answer stands."""

    name = "phrase_answer"
    summary = (
        "an answer written as a sentence, or in the question's own words, is read off the text read again, as a "
        "short phrase, in one more call"
    )
    Settings = PhraseAnswerSettings
    config: PhraseAnswerSettings

    def reread(self, run: RunView, answer: str) -> Reread | None:
        if choice_options(run.question) or yes_no_question(run.question):
            return None  # its answer is one of the question's options, or yes or no: a phrase already
        if says_not_found(answer):
            return None  # a refusal is not a sentence to read a phrase off
        read = run.read_this_question()
        sentence = len(without_citations(answer).split()) >= self.config.min_words
        two_parts = self.config.two_parts and len(question_parts(run.question)) > 1
        if not read or not (sentence or restates_question(answer, run.question) or (two_parts and one_thing(answer))):
            return None
        budget = self.config.text_tokens
        records, _ = run.toolkit.index.read(read)
        pieces: list[tuple[str, str]] = []
        for record in records:
            try:
                text = run.toolkit.presenter.read_view(record)[1]
            except ARagError:  # the read shows what it can; the answer stands without it
                return None
            cost = count_tokens(text, run.toolkit.encoding)
            if cost > budget:
                break
            budget -= cost
            pieces.append((record.chunk_id, text))
        if not pieces:
            return None
        text = "\n\n".join(f"[chunk {chunk_id}]\n{shown}" for chunk_id, shown in pieces)
        messages = [
            {"role": "system", "content": PHRASE_PARTS if two_parts else PHRASE_ANSWER},
            {"role": "user", "content": PHRASE_ANSWER_TEXT.format(text=text, question=run.question)},
        ]
        cap = run.answer_chars  # as long as the model's own answer may be

        def phrase(reply: str) -> str:
            first = next((line for line in reply.splitlines() if line.strip()), "")
            cleaned = without_citations(_LEADING_LABEL.sub("", first)).strip("\"'").strip()  # cited below
            if cap is not None:
                cleaned = whole_sentences(cleaned[:cap], cap)
            if (
                says_nothing(cleaned, yes_no_question(run.question))
                or cleaned == without_citations(answer)
                or restates_question(cleaned, run.question)
            ):
                return answer  # a placeholder, a refusal, the answer again or the question's own words: it stands
            self.acted()
            cited = phrase_citations(cleaned, [c["chunk_id"] for c in run.citations(answer) if c["verified"]], pieces)
            return " ".join([cleaned, *(f"[chunk {c}]" for c in cited)])

        return Reread(messages, phrase)


def one_thing(answer: str) -> bool:
    """Whether an answer names one thing: one sentence, no list ("Helen Marsh chairs the board."; not "Maren River
    Trust, 4 October")."""
    text = without_citations(answer).strip()
    return bool(text) and not _LIST.search(text) and len(split_sentences(text)) == 1


def phrase_citations(phrase: str, cited: list[str], pieces: list[tuple[str, str]]) -> list[str]:
    """What the phrase read off the text (``pieces``: chunk id, text as read) cites: the chunks the model's answer
    ``cited`` that hold the phrase, else the read chunks that hold it, else the cited ones. The answer was a sentence,
    often of another chunk than the one the phrase comes from ("Requests for leave go through the HR portal …",
    cited for "47 minutes")."""
    wanted = normalize_answer(phrase)
    holding = [chunk_id for chunk_id, shown in pieces if wanted and wanted in normalize_answer(shown)]
    return [c for c in cited if c in holding] or holding or cited
