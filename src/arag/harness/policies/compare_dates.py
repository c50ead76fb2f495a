"""compare_dates: an either-or question decided by two dates ("Which came out first, A or B?") is decided by the
harness from the dates the model copies out of what it read; an answer that disagrees goes back once."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arag.harness.contract import Constraint, Hold, Offer, Policy, Reread, RunView
from arag.harness.registry import register
from arag.harness.text import choice_options
from arag.index import Index, title_of
from arag.text import normalize_answer

# What the two options are compared by, from the question's words; the first that matches names it. "lived
# longer" compares two spans of life; "born", "older", "younger", "age" a birth date (of a person, or of what the
# question compares: a film's director); "died" a death date; the rest the date of what the question says
# happened ("released", "came out", "founded", "published").
_LIFE = re.compile(r"\blived (?:longer|shorter|the longest|the shortest)\b|\blonger life\b", re.I)
_BIRTH = re.compile(r"\bborn\b|\bbirth", re.I)
_AGE = re.compile(r"\b(?:older|younger|oldest|youngest|age)\b", re.I)
_WHO = re.compile(r"\s*(?:who|whom)\b", re.I)
_DEATH = re.compile(r"\bdied\b|\bdie\b|\bdeath\b|\bpassed away\b", re.I)
_EVENT = re.compile(
    r"\b(?:released|release|came out|come out|published|founded|established|formed|opened|premiered|aired|"
    r"built|launched|created|started|began|made|written|recorded|produced|happened|took place|signed|joined|left|"
    r"moved|retired|graduated|married|elected|appointed|hired|won|debuted|became|arrived|came|introduced)\b",
    re.I,
)
# Which end of the order the question asks for. Older means born (or made) earlier.
_EARLIER = re.compile(r"\b(?:first|earlier|earliest|older|oldest|sooner|before)\b", re.I)
_LATER = re.compile(r"\b(?:later|latest|younger|youngest|more recent(?:ly)?|most recent(?:ly)?|last|after)\b", re.I)
_LONGER = re.compile(r"\b(?:longer|longest)\b", re.I)
# "Which film has the director who was born later, A or B?", "Which film whose director is younger, …": the date is
# the director's, not the film's
_ROLE = re.compile(r"\bha(?:s|d|ve) the (\w+) (?:who|whose|that|born|died|is|was)\b|\bwhose (\w+)\b", re.I)

_MONTH_NAMES = (
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
)
_MONTHS = {month: number for number, month in enumerate(_MONTH_NAMES, start=1)}  # English, whatever the locale
_MONTH = f"({'|'.join(_MONTHS)})"
_DATE = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)? {_MONTH},? (\d{{3,4}})\b"  # 10 July 1099
    rf"|\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{3,4}})\b"  # February 21, 2011
    rf"|\b{_MONTH},? (\d{{3,4}})\b"  # March 1938
    r"|\b(\d{3,4})\b",  # 1997
    re.I,
)
# A sentence with a year: four digits, or three where a date is plainly meant ("died 864", "(835 – 869)")
_YEAR = re.compile(
    rf"\b[1-9]\d{{3}}\b|(?:\b(?:died|born|d\.|b\.|c\.|AD)|\(|{_MONTH})\s*[1-9]\d{{2}}\b|\b[1-9]\d{{2}}\s*[–-]\s*\d",
    re.I,
)
HITS_LOOKED_AT = 5  # of the keyword search for a holder's name
SENTENCES_SHOWN = 24  # the dated sentences of what was read, in reading order: enough for four chunks' openings
SENTENCE_CHARS = 300

# "Which film has the director who …": the film's own text names its director ("directed by Edwin L. Marin"); a role
# the question may compare by, and the words its text names the holder with
ROLE_VERBS = {
    "director": "directed",
    "composer": "composed",
    "producer": "produced",
    "writer": "written",
    "author": "written",
    "screenwriter": "written",
    "creator": "created",
    "founder": "founded",
    "performer": "performed",
    "editor": "edited",
}
_NAME_PARTICLES = {"de", "da", "di", "del", "della", "der", "van", "von", "la", "le", "du", "dos", "bin", "ibn"}
_NAMED_BY = re.compile(rf"\b({'|'.join(sorted(set(ROLE_VERBS.values())))}) by ([^,;()\[\]\"]{{1,80}})")
HOLDERS_READ = (
    "To compare the two by their {role}s you need each {role}'s own text: {named}. What it says is above. Answer "
    "the question: {question}"
)
DATES_PROMPT = "You copy dates from the sentences given. Reply with exactly the two lines asked for, nothing else."
DATES_ASK = (
    "Sentences you read:\n{sentences}\n\nQuestion: {question}\nFor each of the two options, copy from the sentences "
    '{what}, or "unknown" where the sentences do not give it. Reply with two lines:\n{first}: <date>\n{second}: <date>'
)
DECIDED = (
    'You answered "{answer}". By the dates you read, {first} — {first_dates} [chunk {first_chunk}]; {second} — '
    "{second_dates} [chunk {second_chunk}]. So the answer is {decided}: {why}. Answer the question, citing those "
    "chunks: {question}"
)


@dataclass(frozen=True)
class Comparison:
    """What an either-or question compares its options by: ``by`` is "birth", "death", "life" or "date";
    ``later`` whether the answer is the later date (the longer life); ``role`` whose date it is ("director")."""

    options: tuple[str, str]
    by: str
    later: bool
    role: str | None = None

    def what(self) -> str:
        whose = f"its {self.role}'s " if self.role else ""
        return {
            "life": f"{whose}birth date and date of death",
            "birth": f"{whose}date of birth",
            "death": f"{whose}date of death",
        }.get(self.by, f"{whose or 'the '}date the question compares")

    def why(self, decided: str) -> str:
        whose = f"its {self.role}" if self.role else decided
        if self.by == "life":
            return f"{whose} lived {'longer' if self.later else 'less long'}"
        verb = {"birth": "was born", "death": "died"}.get(self.by, "comes")
        return f"{whose} {verb} {'later' if self.later else 'earlier'}"


@dataclass(frozen=True)
class Day:
    """A date as far as the text gives it: a month or day not given is 0."""

    year: int
    month: int = 0
    day: int = 0


def compared(question: str) -> Comparison | None:
    """The comparison an either-or question asks for, when two dates decide it; else None."""
    options = choice_options(question)
    if len(options) != 2:
        return None
    asked = question[: question.lower().rfind(options[0].lower())] or question
    role_match = _ROLE.search(asked)
    role = next(g for g in role_match.groups() if g).lower() if role_match else None
    if _LIFE.search(asked):
        return Comparison((options[0], options[1]), "life", later=bool(_LONGER.search(asked)), role=role)
    earlier, later = bool(_EARLIER.search(asked)), bool(_LATER.search(asked))
    if earlier == later:
        return None
    aged = bool(_AGE.search(asked))  # older, younger: a person's birth; a film's (or a band's) making
    if _BIRTH.search(asked) or (aged and (role or _WHO.match(asked))):
        by: str | None = "birth"
    elif _DEATH.search(asked):
        by = "death"
    else:
        by = "date" if aged or _EVENT.search(asked) else None
    if by is None:
        return None
    return Comparison((options[0], options[1]), by or "date", later=later, role=role)


def dates_in(text: str) -> list[Day]:
    """Every date in ``text``, in order: a day and month when given, the year always."""
    days: list[Day] = []
    for m in _DATE.finditer(text):
        g = m.groups()
        if g[0]:
            days.append(Day(int(g[2]), _MONTHS[g[1].lower()], int(g[0])))
        elif g[3]:
            days.append(Day(int(g[5]), _MONTHS[g[3].lower()], int(g[4])))
        elif g[6]:
            days.append(Day(int(g[7]), _MONTHS[g[6].lower()]))
        else:
            days.append(Day(int(g[8])))
    return days


@dataclass(frozen=True)
class Reading:
    """What the dates are copied from: the sentences with a year among the chunks read, as (chunk id, sentence) in
    reading order, and each chunk's title and whole text (normalised) to tell what a date belongs to."""

    sentences: list[tuple[str, str]]
    titles: dict[str, str]
    texts: dict[str, str]

    def names(self, chunk: str, name: str) -> bool:
        """Whether the chunk is titled ``name`` or its text names it."""
        wanted = f" {normalize_answer(name)} "
        return wanted.strip() != "" and (
            f" {normalize_answer(self.titles[chunk])} " == wanted or wanted in self.texts[chunk]
        )

    def about(self, chunk: str, option: str, role: str | None) -> bool:
        """Whether a date in ``chunk`` can be the option's: the chunk names the option; or, when the question
        compares by someone's date (``role``: a film's director), it is that someone's text — not the option's own,
        but titled by a name a chunk naming the option names (the director named in the film's text)."""
        if role is None:
            return self.names(chunk, option)
        own = f" {normalize_answer(self.titles[chunk])} " == f" {normalize_answer(option)} "
        return not own and any(
            other != chunk and self.names(other, option) and self.names(other, self.titles[chunk])
            for other in self.texts
        )


def reading(index: Index, chunk_ids: Iterable[str], comparison: Comparison) -> Reading:
    """The chunks read, as :class:`Reading`, with only the sentences a date can be copied from: those with a year
    in a chunk about an option (:meth:`Reading.about`); when the question compares by someone's date, also the
    sentences of an option's own text that name that someone (the film's "directed by …"), so the model can tell
    whose date is whose. Fewer sentences: a shorter call, and no other film's date to copy."""
    records, _missing = index.read(list(dict.fromkeys(chunk_ids)))
    titles = {r.chunk_id: title_of(r.doc_id) for r in records}
    texts = {r.chunk_id: f" {normalize_answer(r.text)} " for r in records}
    read = Reading([], titles, texts)
    role, options = comparison.role, comparison.options
    dated = [r.chunk_id for r in records if any(read.about(r.chunk_id, option, role) for option in options)]
    people = [f" {normalize_answer(titles[chunk])} " for chunk in dated] if role else []
    sentences: list[tuple[str, str]] = []
    for record in records:
        naming = role is not None and any(read.names(record.chunk_id, option) for option in options)
        for sentence in index.sentences(record):
            sentence = " ".join(sentence.split())
            if sentence.removeprefix(record.doc_id).strip().startswith(record.doc_id):
                sentence = sentence.removeprefix(record.doc_id).strip()  # a passage opening with its title: said once
            said = f" {normalize_answer(sentence)} "
            shown = (record.chunk_id in dated and _YEAR.search(sentence)) or (
                naming and any(person in said for person in people)
            )
            if shown and len(sentences) < SENTENCES_SHOWN:
                sentences.append((record.chunk_id, sentence[:SENTENCE_CHARS]))
    return Reading(sentences, titles, texts)


def dates_messages(question: str, comparison: Comparison, read: Reading) -> list[dict[str, str]]:
    shown = "\n".join(f"[chunk {chunk}] {sentence}" for chunk, sentence in read.sentences)
    first, second = comparison.options
    ask = DATES_ASK.format(sentences=shown, question=question, what=comparison.what(), first=first, second=second)
    return [{"role": "system", "content": DATES_PROMPT}, {"role": "user", "content": ask}]


def copied_dates(reply: str, options: Sequence[str]) -> dict[str, str]:
    """Each option's line of the reply ("A: 3 October 1901"), by option; an option without a line is missing."""
    said = [line.strip(" -*") for line in reply.splitlines() if line.strip(" -*")]
    heads = [(normalize_answer(line.partition(":")[0]), line.partition(":")[2].strip()) for line in said]
    lines = {
        option: next(rest for head, rest in heads if head == normalize_answer(option))
        for option in options
        if any(head == normalize_answer(option) for head, _ in heads)
    }
    if not lines and len(said) == len(options) and not any(":" in line for line in said):
        return dict(zip(options, said, strict=True))  # the two lines asked for, without their heads
    return lines


def source_of(option: str, copied: str, days: Sequence[Day], read: Reading, role: str | None = None) -> str | None:
    """The chunk the option's copied date comes from: a sentence shown holds it (the copied text verbatim, else every
    year of it) in a chunk about the option, or about its ``role`` (:meth:`Reading.about`); else None — a date the
    sentences do not hold, or hold for something else (another film's director), decides nothing."""
    verbatim = [c for c, sentence in read.sentences if copied and copied.lower() in sentence.lower()]
    years = [c for c, sentence in read.sentences if all(re.search(rf"\b{d.year}\b", sentence) for d in days)]
    return next((c for c in dict.fromkeys(verbatim + years) if read.about(c, option, role)), None)


def _bounds(day: Day) -> tuple[int, int] | None:
    """The first and last day (ordinals) ``day`` can be, as far as it is given; None for no such date."""
    try:
        last_month = day.month or 12
        last_day = day.day or calendar.monthrange(day.year, last_month)[1]
        return dt.date(day.year, day.month or 1, day.day or 1).toordinal(), dt.date(
            day.year, last_month, last_day
        ).toordinal()
    except ValueError:
        return None


def _range(dates: Sequence[Day], life: bool) -> tuple[int, int] | None:
    """What is compared, as a range the text allows: a date's first and last day, or a life's fewest and most
    days (from the first two dates, birth then death)."""
    if not dates or (life and len(dates) < 2):
        return None
    if not life:
        return _bounds(dates[0])
    birth, death = _bounds(dates[0]), _bounds(dates[1])
    if birth is None or death is None or death[1] < birth[0]:
        return None
    return max(0, death[0] - birth[1]), death[1] - birth[0]


def decide(comparison: Comparison, dates: dict[str, list[Day]]) -> str | None:
    """The option the dates decide, or None when they do not (a date missing, the same year without a month)."""
    first, second = comparison.options
    life = comparison.by == "life"
    a, b = _range(dates.get(first, []), life), _range(dates.get(second, []), life)
    if a is None or b is None or not (a[1] < b[0] or b[1] < a[0]):
        return None
    first_is_later = b[1] < a[0]
    return first if first_is_later == comparison.later else second


def holders_named(text: str, role: str) -> list[str]:
    """The names a text gives for the holder of ``role`` ("directed by Murray Lerner, Lloyd Ritter and Robert M.
    Young" → the first, Murray Lerner): capitalised words (and name particles), up to the first other word."""
    verb = ROLE_VERBS.get(role)
    names: list[str] = []
    for match in _NAMED_BY.finditer(text):
        if match.group(1) != verb:
            continue
        words: list[str] = []
        for word in match.group(2).split():
            if not (word[:1].isupper() or (words and word.lower() in _NAME_PARTICLES)):
                break
            if word.endswith(".") and len(word) > 2:  # a sentence's full stop (an initial, "L.", goes on)
                words.append(word[:-1])
                break
            words.append(word)
        while words and words[-1].lower() in _NAME_PARTICLES:
            words.pop()
        name = " ".join(words)
        if len(words) >= 2 and name not in names:
            names.append(name)
    return names


def holders_to_read(
    index: Index, read_ids: Sequence[str], comparison: Comparison, where: Any = None
) -> list[tuple[str, str, str]]:
    """For a question that compares two options by their ``role``'s dates: (option, holder, chunk) for each option
    whose own text, read, names a holder whose own text (a document titled by the name, among the keyword search's
    first hits for it) is not read yet."""
    if comparison.role is None or comparison.role not in ROLE_VERBS:
        return []
    records, _missing = index.read(list(dict.fromkeys(read_ids)))
    own = {normalize_answer(title_of(r.doc_id)): r for r in records}
    found: list[tuple[str, str, str]] = []
    for option in comparison.options:
        record = own.get(normalize_answer(option))
        names = holders_named(" ".join(record.text.split()), comparison.role) if record else []
        for name in names[:1]:
            hits = [hit.chunk_id for hit in index.keyword_search([name], HITS_LOOKED_AT, where)]
            titled = [r for r in index.read(hits)[0] if normalize_answer(title_of(r.doc_id)) == normalize_answer(name)]
            if titled and titled[0].chunk_id not in read_ids:
                found.append((option, name, titled[0].chunk_id))
    return found


@dataclass(frozen=True)
class Decision:
    """What a reply decides: each option's copied date, the chunk it comes from, and the option the order picks
    (None when the dates do not decide)."""

    copied: dict[str, str]
    sources: dict[str, str]
    decided: str | None


def decision(comparison: Comparison, reply: str, read: Reading) -> Decision:
    """The model's copied dates, checked against what was read, and the option they decide."""
    copied = copied_dates(reply, comparison.options)
    dates = {option: dates_in(text) for option, text in copied.items()}
    sources = {
        o: chunk
        for o, days in dates.items()
        if days and (chunk := source_of(o, copied[o], days, read, comparison.role))
    }
    decided = decide(comparison, dates) if len(sources) == len(comparison.options) else None
    return Decision(copied, sources, decided)


def named_option(answer: str, options: Sequence[str]) -> str | None:
    """The one option the answer names, else None."""
    said = f" {normalize_answer(answer)} "
    named = [o for o in options if f" {normalize_answer(o)} " in said]
    return named[0] if len(named) == 1 else None


class CompareDatesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    read_holders: bool = Field(
        False,
        description="For a question that compares films by their director (a role's holder): an answer given before "
        "the director a film's text names was read goes back once with that director's own text read (no call). "
        "Off: on the 2Wiki dev questions one answer gained, one lost, 20-40 s more where it acts.",
    )


@register
class CompareDates(Policy):
    """An either-or question decided by two dates ("Which film came out first, A or B?", "Who lived longer, A or
    B?", "Which film has the director who was born later, A or B?") asks a 1.5B model to order two dates, and it
    often gets the order wrong with both dates read: on the 2Wiki dev questions it answered "The Magic Place"
    (2011) for the album that came out before Sol Niger Within (1997), and "Jean Grémillon" (1901–1959) as having
    lived longer than Ángel Recasens (1938–2007). Copying a date is easier than ordering two. So when the model
    answers such a question on its own (not at the step limit), one more call without tools shows it the
    sentences with a year from the chunks it read and asks it to copy each option's date (its director's, when
    the question compares films by their director); the harness orders the dates. A copied date must stand in a
    sentence shown; an undecidable pair (a date missing, one year without months) leaves the answer alone. When
    the dates decide the other option, the answer goes back once with the dates, their chunks and the order, and
    the answer from then on is that option (constrained decoding, as choice_answers constrains it to the two).
    With ``read_holders`` (off), before that, when the question compares films by their director and a film's own
    text names a director whose own text was not read (the model read other directors: "Mario Bava", "Howard Hawks"
    for Satyajit Ray), the answer goes back once with those texts read for the model (no call)."""

    name = "compare_dates"
    Settings = CompareDatesSettings
    config: CompareDatesSettings
    summary = (
        'an either-or question decided by two dates ("which came out first") is ordered by the harness from the '
        "dates the model copies; a disagreeing answer goes back once"
    )

    def start(self, run: RunView) -> None:
        self.comparison = compared(run.question)
        self.sent_back = False
        self.decided: str | None = None  # the option the dates decided, once an answer went back for it
        self.holders_read = False
        self.holders: list[dict[str, str]] = []
        self.decisions: list[dict[str, Any]] = []

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        comparison = self.comparison
        if not self.config.read_holders or comparison is None or comparison.role is None:
            return None
        if self.holders_read or run.stop_reason is not None:
            return None
        missing = holders_to_read(run.toolkit.index, run.read_this_question(), comparison, run.toolkit.scope)
        if not missing:
            return None
        self.holders_read = True
        self.acted()
        self.holders = [{"option": option, comparison.role: name, "read": chunk} for option, name, chunk in missing]
        named = "; ".join(f"{option} names its {comparison.role} {name}" for option, name, _chunk in missing)
        said = HOLDERS_READ.format(role=comparison.role, named=named, question=run.question)
        return Hold(said, read=[chunk for _option, _name, chunk in missing], why=f"for each option's {comparison.role}")

    def reread(self, run: RunView, answer: str) -> Reread | None:
        comparison = self.comparison
        if comparison is None or self.sent_back or run.stop_reason is not None:
            return None
        read = reading(run.toolkit.index, run.read_this_question(), comparison)
        if not read.sentences:
            return None

        def verdict(reply: str) -> str | Hold:
            found = decision(comparison, reply, read)
            self.decisions.append({"copied": found.copied, "decided": found.decided})
            if found.decided is None or named_option(answer, comparison.options) == found.decided:
                return answer
            self.sent_back = True
            self.decided = found.decided
            self.acted()
            first, second = comparison.options
            return Hold(
                DECIDED.format(
                    answer=answer[:200],
                    first=first,
                    first_dates=found.copied[first],
                    first_chunk=found.sources[first],
                    second=second,
                    second_dates=found.copied[second],
                    second_chunk=found.sources[second],
                    decided=found.decided,
                    why=comparison.why(found.decided),
                    question=run.question,
                )
            )

        return Reread(dates_messages(run.question, comparison, read), verdict)

    def constrain(self, run: RunView, offer: Offer) -> Constraint | None:
        # told the order, a 1.5B model answered the other option again (1 of 3 sent back on new questions); its
        # answer from now on is the option the dates decide (constrained decoding; what it reads is free)
        return Constraint(options=(self.decided,)) if self.decided else None

    def record(self, run: RunView) -> dict[str, Any] | None:
        record = {"dates": self.decisions, "holders": self.holders}
        return {key: value for key, value in record.items() if value} or None
