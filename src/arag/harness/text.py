"""Text rules the policies share: the shape of a question (either-or, yes/no), whether a sentence asks something,
whether an answer says nothing or only restates the question, and how an over-long answer is cut. One module, so
that no policy imports another."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from arag.citations import CITED, without_citations
from arag.text import normalize_answer, says_not_found
from arag.verification import key_terms

# Naive RAG's instruction (arag.eval.methods), and the reread's (phrase_answer): an answer read off a text
SHORT_PHRASE = "Answer the question with a short phrase (a name, date, number or yes/no), no explanation."

# "Which film came out first, Blue Lake or Red Sky?": the options follow the question's last comma
_CHOICE = re.compile(r",\s*([^,?]{1,150}?)\s+or\s+([^,?]{1,150}?)\s*\?\s*$", re.I)
_SECOND_CLAUSE = re.compile(r"(?:and|but)\s+(?:who|whom|whose|what|when|where|which|why|how)\b", re.I)
# a question opened by an auxiliary verb expects yes or no ("Are both films American?", "Did she win?")
_YES_NO = re.compile(
    r"^(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|should|shall|may|might|must)\s", re.I
)
# a sentence whose last clause asks something: "About bone cancer 5 What is bone cancer?", "Is it cancer?" — but not
# a statement that happens to end in "?" ("… is a song by DJ Clue?")
_ASKS = re.compile(
    r"(?:\b(?:what|how|which|who|whom|whose|when|where|why)\b[^.!?]*\?\s*$)"
    r"|(?:^(?:is|are|was|were|do|does|did|can|could|should|will|would|has|have)\b[^.!?]*\?\s*$)",
    re.I,
)

# what a small model wrote where an answer belonged (the note's placeholder, refusals, the format's own words)
PLACEHOLDERS = frozenset(
    normalize_answer(text)
    for text in (
        "nothing yet",
        "nothing",
        "unknown",
        "not known",
        "not found",
        "none",
        "no answer",
        "n/a",
        "not mentioned",
        "not specified",
        "not stated",
        "not provided",
        "not available",
        "no information",
        "no data",
        "i don't know",
        "i do not know",
        "cannot determine",
        "cannot be determined",
        "not enough information",
        "insufficient information",
        "yes/no",
        "yes or no",
        "answer",
        "final answer",
        "...",
    )
)
_REFUSAL = re.compile(
    r"^(?:i (?:do not|don't|cannot|can't)|there is no|the (?:text|documents?|chunks?) (?:does|do) not)\b", re.I
)

CAP_MARGIN = 8  # the grammar counts the JSON string, the answer is stripped: a cut one can be a few chars short
# not arag.corpus.chunking.split_sentences: its rule that a one-letter word before a period is an initial would not end
# "She was the wife of Lothair I." there, and regnal numbers are common in answers (2Wiki's royalty questions)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\]")


def choice_options(question: str) -> list[str]:
    """The two options of an either-or question ("…, A or B?"), else none."""
    match = _CHOICE.search(question.removeprefix("Question:").strip())
    if match is None:
        return []
    first, second = (" ".join(g.split()) for g in match.groups())
    if first.lower() == second.lower() or " or " in f" {first.lower()} {second.lower()} ":
        return []
    if _SECOND_CLAUSE.match(first):  # "…, and when might surgery or radiation be considered?": a second question
        return []
    return [first, second]


def yes_no_question(question: str) -> bool:
    """True for a yes/no question. One that offers alternatives ("Did A or B win?") is not: its answer is one of
    them."""
    text = question.removeprefix("Question:").strip()
    return bool(_YES_NO.match(text)) and " or " not in f" {text.lower()} "


def asks_a_question(sentence: str) -> bool:
    """Whether a sentence is a question (a guide's heading "What is bone cancer?"): never evidence for an answer."""
    return bool(_ASKS.search(sentence.strip()))


def chunk_headings(location: Mapping[str, Any] | None) -> set[str]:
    """The headings a chunk's recorded location names (the last title of each heading path in it), whitespace
    folded: none for a text without headings (a JSON corpus's passages)."""
    paths = (location or {}).get("headings") or []
    return {" ".join(str(path[-1]).split()) for _offset, path in paths if path}


def a_heading(sentence: str, headings: set[str]) -> bool:
    """Whether a sentence is one of its chunk's ``headings`` ("# The Halden Soil Lab", "The Halden Soil Lab"): a
    title, never evidence for an answer. Only the headings the document's structure records count: a short line of
    a list ("Fever and chills") is no heading."""
    return bool(headings) and " ".join(sentence.strip().lstrip("#").split()) in headings


def restates_question(answer: str, question: str) -> bool:
    """Whether every word of an answer that carries content (its citations aside) is a word of the question:
    "Metastatic breast cancer (MBC)" for "What is the definition of metastatic breast cancer (MBC)?" names nothing
    the question did not. An empty answer is not judged here."""
    words = key_terms(without_citations(answer))
    asked = set(key_terms(question))
    return bool(words) and all(word in asked for word in words)


# an answer that is only chunk ids, without the citation's brackets: "Medical#125", "chunk 2wiki#3, 2wiki#4"
_BARE_IDS = re.compile(r"^(?:\W*(?:chunks?\s*:?\s*)?[^\[\]#\n]{1,120}#\d+[\s\],;.]*)+$", re.I)


def says_nothing(answer: str, yes_no: bool = True) -> bool:
    """Whether an answer, its citations aside, is empty, a placeholder, a refusal or only chunk ids; a bare yes or
    no too, unless the question is a yes/no question."""
    text = CITED.sub("", answer).strip()
    normalized = normalize_answer(text)
    bare = not yes_no and normalized in ("yes", "no")
    ids_only = bool(_BARE_IDS.match(text))
    return not normalized or normalized in PLACEHOLDERS or bare or ids_only or bool(_REFUSAL.match(text))


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


# a capitalised phrase of a question: a name ("Maurice, Prince of Orange's" gives "Maurice" and "Prince of Orange")
NAME_PATTERN = re.compile(r"\b[A-Z][\w'’.&-]*(?:\s+(?:of|the|de|la|le|von|van|der|du|da|di)?\s*[A-Z0-9][\w'’.&-]*)*")
# words that open a question or a request, dropped from the front of a capitalised phrase; not
# arag.verification.STOPWORDS, which would also strip a title's first word ("After Earth", "Over the Top")
_QUESTION_WORDS = frozenset(
    [
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "which",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "did",
        "do",
        "does",
        "can",
        "could",
        "has",
        "have",
        "had",
        "will",
        "would",
        "should",
        "in",
        "on",
        "at",
        "for",
        "of",
        "the",
        "a",
        "an",
        "and",
        "or",
        "if",
        "name",
        "tell",
        "give",
        "list",
        "describe",
        "explain",
        "summarize",
        "summarise",
        "please",
        "show",
        "find",
        "compare",
    ]
)
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")  # "Ek Hi Bhool (1940 Film)": the title is "Ek Hi Bhool"
# words capitalised only because they open the question ("As of 2019, …", "According to the report, who …",
# "Between 2018 and 2019, which …"): dropped from the front of the question's first capitalised phrase only, so a
# title that opens with one elsewhere in the question ("Over the Top") keeps it
_OPENERS = frozenset(
    [
        "as",
        "from",
        "between",
        "according",
        "during",
        "since",
        "until",
        "among",
        "across",
        "within",
        "excluding",
        "including",
        "besides",
        "given",
        "assuming",
        "considering",
        "regarding",
        "following",
        "based",
        "by",
        "to",
        "with",
        "without",
        "under",
        "over",
        "after",
        "before",
        "about",
        "apart",
        "other",
        "per",
        "prior",
        "upon",
        "out",
        "all",
        "both",
        "each",
        "except",
        "beyond",
        "like",
        "unlike",
        "via",
        "versus",
    ]
)
# a date is no name the documents must spell the same way ("Fiscal 2018", "December 31", "31 December 2019")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_DATE_WORDS = frozenset(
    [*_MONTHS, *(m[:3] for m in _MONTHS), "sept", "fiscal", "year", "years", "ended", "ending", "quarter"]
)
_DATE_NUMBER = re.compile(r"\d+(?:st|nd|rd|th)?|fy\d+")
_QUARTER = re.compile(r"[QH]\d|FY")
# an acronym's lower-case modifier is no part of its name: "HER2-negative" → "HER2", "BRCA-mutated" → "BRCA"
_ACRONYM_MODIFIER = re.compile(r"^(\w*(?:[A-Z]\w*[A-Z]|\d)\w*)-[a-z]+$")
_ACRONYM = re.compile(r"^[^a-z\s]*[A-Z][^a-z\s]*[A-Z0-9][^a-z\s]*$|^[A-Z]+\d[\w]*$")
# where a question asks a second thing: "How long is the flight, and who leads the team?"
# ", and who …", also after a preposition (", and since when …", ", and on what date …")
_SECOND_PART = re.compile(
    r",?\s+and\s+(?=(?:(?:since|until|on|in|at|from|for|by|to|with|after|before|during)\s+)?"
    r"(?:who|whom|whose|what|when|where|which|why|how)\b)",
    re.I,
)


def without_qualifier(text: str) -> str:
    """A title or a name without the bracket that ends it ("Camille (1926 film)" → "Camille", "William Axt (1922)"
    → "William Axt")."""
    return _QUALIFIER.sub("", text)


def _a_date(words: list[str]) -> bool:
    """Whether a capitalised phrase is a date: date words and at least one number ("December 31", "Fiscal 2018",
    "Q4 2019"); a month alone ("the March outage") stays a name, and so does an acronym ("APR")."""
    numbers = [w for w in words if _DATE_NUMBER.fullmatch(w.lower().strip(".,")) or _QUARTER.fullmatch(w)]
    return bool(numbers) and all(
        w in numbers or (w.lower().strip(".,") in _DATE_WORDS and not w.isupper()) for w in words
    )


def question_names(question: str) -> list[str]:
    """What a question names and its answer depends on: the two options of an either-or question, else its
    capitalised phrases (names, titles), each without a possessive "'s" and a trailing "(…)" qualifier; words of a
    question ("Which", "When") and a word capitalised only because it opens the question ("From", "As of") are not
    names, nor is a date ("December 31, 2019", "FY19"); a run of acronyms ("AJCC TNM") names each, and an acronym's
    lower-case modifier ("HER2-negative") is not part of it."""
    options = choice_options(question)
    if options:
        found = [_without_possessive(option) for option in options]
    else:
        text = question.removeprefix("Question:").strip()
        found = [name for match in NAME_PATTERN.finditer(text) for name in _names_in(match.group(), match.start() == 0)]
    names: list[str] = []
    for name in found:
        if len(name) >= 3 and name not in names:
            names.append(name)
    return names


def _without_possessive(name: str) -> str:
    return without_qualifier(re.sub(r"['’]s?$", "", name.strip(" ,.?!:;\"'"))).strip()


def _names_in(phrase: str, opens_question: bool) -> list[str]:
    """The names in one capitalised phrase of a question."""
    words = _without_possessive(phrase).split()
    if opens_question and words and words[0].lower() in _OPENERS:
        words = words[1:]
    while words and words[0].lower() in _QUESTION_WORDS:
        words = words[1:]
    bare = [_ACRONYM_MODIFIER.sub(r"\1", word) for word in words]
    if not bare or _a_date(bare):
        return []
    if len(bare) == 1 or all(_ACRONYM.match(word) for word in bare):
        return bare  # "the AJCC TNM staging": AJCC's system, TNM scores
    return [" ".join(words)]  # "GAAP-based Professional Service" is a label as written


def question_parts(question: str) -> list[str]:
    """The parts of a question that asks two things ("How long is the flight, and who leads the team?" → "How long
    is the flight", "who leads the team"); a question that asks one thing is one part."""
    text = question.removeprefix("Question:").strip()
    parts = [p.strip(" ,?") for p in _SECOND_PART.split(text)]
    return [p for p in parts if p] if len(parts) > 1 else [text]


# words that point back to something an earlier question or answer named ("Who leads it?", "When did she die?")
_POINTS_BACK = re.compile(
    r"\b(?:it|its|they|them|their|he|him|his|she|her|hers|there|that one|this one|the same)\b"
    r"|\b(?:that|this|these|those)\s+(?!is\b|was\b|are\b|were\b)\w+",
    re.I,
)


def standalone(question: str, earlier: Sequence[tuple[str, str]]) -> str:
    """A follow-up that points back ("Who leads it?") with what the latest earlier turn was about — its question's
    names and its answer — in parentheses, as a search can use it; any other question as it is."""
    if not earlier or not _POINTS_BACK.search(question):
        return question
    asked, answered = earlier[-1]
    answer = without_citations(answered).strip()
    context = [*question_names(asked)]
    if answer and not says_not_found(answer):
        context.append(answer)
    context = [c for c in dict.fromkeys(context) if c.lower() not in question.lower()]
    return f"{question} ({'; '.join(context)})" if context else question
