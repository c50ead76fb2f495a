"""evidence_ledger: what the question names is found and read before an answer; a name no document holds, or a
refusal after the searches, is "Not in the documents"; an answer cites the chunk it was read in."""

from __future__ import annotations

from typing import Any

from arag.citations import cited_ids
from arag.harness.contract import Allow, Base, Hold, Policy, Revised, RunView
from arag.harness.reads import naming, quoted_searches, read_text_names, searched_for
from arag.harness.registry import register
from arag.harness.text import question_names, question_parts
from arag.text import NOT_IN_DOCUMENTS, normalize_answer, says_not_found
from arag.verification import key_terms

NAME_NOT_READ = (
    'Nothing you read names "{name}" yet, and the question asks about it. A text that names it is shown below. '
    "Answer from what you read (short, with [chunk ID]), or search again."
)
SECOND_PART = (
    'The question asks two things: "{first}" and "{second}". You have not searched for the second yet: search for '
    "it, then answer both."
)
NOTHING_NAMES = NOT_IN_DOCUMENTS + ": no document names {names}."
SEARCHED = NOT_IN_DOCUMENTS + " (searched for: {searched})."


@register
class EvidenceLedger(Policy):
    """A 1.5B model answered what the documents do not hold with whatever it read (a film of the two it was
    asked to compare, chosen without reading either; another person's birthplace), and never said the documents do
    not hold it. The ledger keeps, for the question, what it names (the two options of an either-or question, else
    its capitalised names and titles) and what it asks (two parts: "…, and when did it open?"):

    * a name no document within the run's scope names (exact keyword search, case and punctuation aside) cannot
      be answered about: the model is asked for its answer at once and the answer is "Not in the documents: no
      document names …" (the harness's, recorded as such);
    * an answer given before any chunk read names one of the question's names is held once per name, with the
      chunk that best names it read for the model: a comparison is answered after reading both sides;
    * an answer to a two-part question before any search for its second part is held once, asking for it;
    * a refusal ("not in the documents", "unknown") stands, as "Not in the documents (searched for: …)", once
      every name was read — before that the name is read for the model first (the hold above);
    * an answer that cites no chunk it was shown cites the chunk read that holds most of its words.

    Policies that rewrite an answer leave a refusal alone (``arag.text.says_not_found``)."""

    name = "evidence_ledger"
    summary = (
        "what the question names is read before an answer; a name no document holds, or a refusal after the "
        'searches, is "Not in the documents"; an answer cites the chunk it was read in'
    )

    def start(self, run: RunView) -> None:
        self.names = question_names(run.question)
        self.parts = question_parts(run.question)
        self.absent = [name for name in self.names if not naming(run, name, 1)]
        self.held: set[str] = set()  # names (and "parts") an answer was held for

    def allow(self, run: RunView, base: Base) -> Allow | None:
        return Allow(final=True) if self.absent else None  # nothing to search for: answer (then revise) at once

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        if self.absent or run.stop_reason is not None:
            return None
        for name in self.names:
            if name in self.held or read_text_names(run, name):
                continue
            self.held.add(name)
            unread = [c for c in naming(run, name) if c not in run.read_ids]
            if not unread:  # every chunk that names it was read (it names it only as a part of a word): nothing to show
                continue
            self.acted()
            return Hold(NAME_NOT_READ.format(name=name), read=unread[:1], why="a name of the question not read yet")
        if len(self.parts) > 1 and "parts" not in self.held and not says_not_found(answer):
            second = self.parts[-1]
            if not _searched(second, self.parts[:-1], searched_for(run)):
                self.held.add("parts")
                self.acted()
                return Hold(SECOND_PART.format(first=self.parts[0], second=second))
        return None

    def revise(self, run: RunView, answer: str) -> Revised:
        if self.absent:
            self.acted()
            names = " or ".join(f'"{name}"' for name in self.absent)
            return Revised(NOTHING_NAMES.format(names=names), "not in the documents")
        if says_not_found(answer):
            searched = quoted_searches(searched_for(run))
            if normalize_answer(answer).startswith(normalize_answer(NOT_IN_DOCUMENTS)) and "searched" in answer:
                return Revised(answer)
            self.acted()
            return Revised(SEARCHED.format(searched=searched))
        shown = set(run.toolkit.tracker.seen_ids)
        if any(c in shown for c in cited_ids(answer, shown)):
            return Revised(answer)
        source = self._source(run, answer)
        if source is None:
            return Revised(answer)
        self.acted()
        return Revised(f"{answer.rstrip()} [chunk {source}]")

    def _source(self, run: RunView, answer: str) -> str | None:
        """The chunk read that holds most of the answer's words (for a yes/no or either-or answer: the question's
        names), if any holds one."""
        terms = [normalize_answer(t) for t in key_terms(answer)]
        if not terms or normalize_answer(answer) in ("yes", "no"):
            terms = [normalize_answer(n) for n in self.names]
        records, _ = run.toolkit.index.read(run.read_this_question())
        best, best_count = None, 0
        for record in records:
            text = f" {normalize_answer(record.text)} "
            count = sum(1 for t in terms if t and f" {t} " in text)
            if count > best_count:
                best, best_count = record.chunk_id, count
        return best

    def record(self, run: RunView) -> dict[str, Any]:
        return {"names": self.names, "absent": self.absent} if self.names else {}


def _searched(part: str, others: list[str], searched: list[str]) -> bool:
    """Whether a search looked for a word of ``part`` that the other parts do not have."""
    own = {normalize_answer(t) for t in key_terms(part)} - {normalize_answer(t) for o in others for t in key_terms(o)}
    said = {w for s in searched for w in normalize_answer(s).split()}
    return not own or bool(own & said)
