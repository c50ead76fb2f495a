"""answer_check: the answer's own sentences are asked the question again; if they do not answer it, the answer is
"Not in the documents"."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from arag.citations import without_citations
from arag.harness.contract import Hold, Policy, Reread, RunView
from arag.harness.reads import quoted_searches, searched_for
from arag.harness.registry import register
from arag.harness.text import choice_options, yes_no_question
from arag.index import Index
from arag.text import NOT_IN_DOCUMENTS, says_not_found
from arag.verification import key_terms

NOT_STATED = "not stated"
CHECK_PROMPT = (
    "Answer the question from the text alone, with a short phrase copied from the text. If the text does not answer "
    f"the question, reply: {NOT_STATED}."
)
CHECK_TEXT = "Text:\n{text}\n\nQuestion: {question}"
UNANSWERED = NOT_IN_DOCUMENTS + ": what was read does not state it (searched for: {searched})."
SEARCH_AGAIN = (
    'The text you read does not state that "{answer}" answers the question. If "{answer}" is only a step on the '
    "way (a name the question leads through), search for what the question asks about it. Else search with other "
    'words. If the documents do not hold the answer, answer "' + NOT_IN_DOCUMENTS + '".'
)
_WORD = re.compile(r"\w+", re.UNICODE)


# Sentences either side of the answer's sentence, and of the question's best-matching one, that the check reads.
# With 0, a multi-hop answer's sentence lacked the question's first hop and one right 2Wiki answer was refused
# (docs/notebook/2026-12-06-answer-check.md). A constant, not a setting: a run records every policy setting, and a
# new one would keep runs recorded before it from resuming.
WINDOW = 1


def check_text(index: Index, chunk_ids: list[str], question: str, answer: str, window: int = WINDOW) -> str | None:
    """What the check reads: the sentence read that holds most of the answer's words (ties: the one whose
    neighbourhood holds most of the question's), the sentence whose neighbourhood holds most of the question's
    words (its first hop, where the answer's sentence does not name it), each with ``window`` sentences either
    side, in reading order. None when nothing was read."""
    records, _ = index.read(list(dict.fromkeys(chunk_ids)))
    sentences = [" ".join(s.split()) for record in records for s in index.sentences(record)]
    if not sentences:
        return None
    answer_terms = key_terms(without_citations(answer))
    question_terms = [t for t in key_terms(question) if t not in answer_terms]
    words = [{w.lower() for w in _WORD.findall(s)} for s in sentences]

    def near(i: int) -> set[str]:
        return set().union(*words[max(0, i - window) : i + window + 1])

    def count(terms: list[str], found: set[str]) -> int:
        return sum(t in found for t in terms)

    best = max(range(len(sentences)), key=lambda i: (count(answer_terms, words[i]), count(question_terms, near(i))))
    hop = max(range(len(sentences)), key=lambda i: (count(question_terms, near(i)), -abs(i - best)))
    shown = {i for centre in (best, hop) for i in range(centre - window, centre + window + 1)}
    return " ".join(sentences[i] for i in sorted(shown) if 0 <= i < len(sentences))


def check_messages(text: str, question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": CHECK_PROMPT},
        {"role": "user", "content": CHECK_TEXT.format(text=text, question=question)},
    ]


def answers_question(reply: str) -> bool:
    """Whether the check's reply answers (anything but "not stated"; an empty reply is no verdict: it answers)."""
    return NOT_STATED not in reply.lower()


def checked(question: str, answer: str) -> bool:
    """Whether an answer is checked: not a refusal, nor the answer to an either-or or a yes/no question."""
    return not (says_not_found(answer) or choice_options(question) or yes_no_question(question))


def unanswered(searched: list[str]) -> str:
    return UNANSWERED.format(searched=quoted_searches(searched, none="nothing"))


class AnswerCheckSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    search_again: bool = Field(
        False,
        description='The first "not stated" sends the answer back once, to search on (a multi-hop answer that is '
        'its first hop; a near miss); the next, or one for the answer at the step limit, is "Not in the documents".',
    )


@register
class AnswerCheck(Policy):
    """A 1.5B model asked about something the documents do not hold answers with what it read nearby: "Actinic
    keratoses" for the lesion a removed passage described, "FLHC" for where secondary liver cancer starts. Asked
    "does this text state the answer?" it says yes to everything (on 89 recorded Medical answers: yes to all,
    right, wrong and absent alike). Asked instead to answer the question from a few sentences — the answer's own
    sentence and the one that best matches the question, with their neighbours — and to reply "not stated" when
    they do not answer it, it replies "not stated" for a share of the absent questions' answers and for none of
    the right ones measured. So one more call without tools, after the final answer (and after phrase_answer),
    asks that; "not stated" turns the answer into "Not in the documents" naming what was searched. A refusal, an
    either-or and a yes/no answer are left alone (their sentence seldom states the comparison), and so is a run
    that read nothing. Off by default: measured in docs/results.md (``--policy +answer_check``).

    With ``search_again``, the first "not stated" sends the answer back instead, once, while steps remain: the
    answers it turned into refusals on answerable questions were mostly a multi-hop question's first hop (a
    person's name for where they died), which a next search could complete. Measured on the embedded model it
    changed no outcome on either dev set (docs/notebook/2026-12-06-a-second-chance-after-the-check.md): off."""

    name = "answer_check"
    summary = (
        'the sentences an answer came from are asked the question again, in one more call; "not stated" makes the '
        'answer "Not in the documents"'
    )
    Settings = AnswerCheckSettings
    config: AnswerCheckSettings

    def start(self, run: RunView) -> None:
        self.sent_back = False

    def reread(self, run: RunView, answer: str) -> Reread | None:
        if not checked(run.question, answer):
            return None
        text = check_text(run.toolkit.index, run.read_this_question(), run.question, answer)
        if text is None:
            return None

        def verdict(reply: str) -> str | Hold:
            if answers_question(reply):
                return answer
            self.acted()
            if self.config.search_again and not self.sent_back and run.stop_reason is None:
                self.sent_back = True
                return Hold(SEARCH_AGAIN.format(answer=without_citations(answer).strip()[:200]))
            return unanswered(searched_for(run))

        return Reread(check_messages(text, run.question), verdict)
