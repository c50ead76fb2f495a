"""Text rules shared across layers: the text no store can hold, and answers normalised as the paper's metrics
compare them (used by the evaluation and by the harness's answer checks)."""

from __future__ import annotations

import re
import string
import unicodedata

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…"}


def storable(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD, as every store holds text."""
    return _UNSTORABLE.sub("\ufffd", text) if _UNSTORABLE.search(text) else text


def never_stored(text: str) -> bool:
    """Whether ``text`` holds a character no stored text can contain (NUL, a lone surrogate): it matches nothing."""
    return _UNSTORABLE.search(text) is not None


def without_accents(text: str) -> str:
    """``text`` with the accents of its letters dropped ("Falcón" → "Falcon", "Bråk" → "Brak"): a name as a user
    types it on a keyboard without them."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles (a/an/the), fold whitespace."""
    text = text.lower()
    text = "".join(" " if ch in _PUNCTUATION else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


# the words an answer opens with when the documents do not hold what was asked: the agent writes them, and the
# evaluation reads them (with the record's ``not_found``) as a refusal
NOT_IN_DOCUMENTS = "Not in the documents"
_NOT_FOUND = re.compile(
    r"\bnot (?:in|(?:found|mentioned|stated|given|provided|specified|listed|included|contained|available) in|"
    r"covered (?:in|by)|in any of) (?:the |these |your )?(?:given |provided |available |above )?"
    r"(?:documents?|texts?|chunks?|corpus|sources?|passages?|context)\b"
    r"|\b(?:the |these )?(?:documents?|texts?|chunks?|passages?|sources?) (?:do|does|did) not (?:say|mention|state|"
    r"contain|hold|give|specify|provide|include|answer)\b"
    r"|\bno (?:information|mention|record|evidence) (?:about|on|of|for|in)\b"
    r"|\b(?:could not|cannot|can't|couldn't|did not|didn't) (?:find|locate)\b",
    re.I,
)
# a short reply that is only a refusal ("Unknown.", "I don't know", "No phone number provided.")
_BARE_REFUSAL = re.compile(
    r"^(?:not found|unknown|no answer|none found|i (?:do not|don't) know|cannot be determined|not available"
    r"|(?:no|none)(?: \w+){0,4} (?:provided|given|listed|mentioned|found|stated|specified))\W*"
    r"(?:\[chunk [^\]]*\]\W*)*$",  # the citations a model adds to everything
    re.I,
)


def says_not_found(answer: str) -> bool:
    """Whether ``answer`` says the documents do not hold what was asked ("Not in the documents: …", "The texts do
    not mention …", "Unknown")."""
    text = " ".join(answer.split())
    return bool(_NOT_FOUND.search(text) or _BARE_REFUSAL.match(text))


# words too common to search for or to check a claim by (arag.verification, the fused search's keywords)
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "his",
        "her",
        "its",
        "their",
        "they",
        "them",
        "this",
        "that",
        "these",
        "those",
        "with",
        "from",
        "into",
        "onto",
        "upon",
        "over",
        "under",
        "about",
        "after",
        "before",
        "than",
        "then",
        "there",
        "here",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "not",
        "but",
        "nor",
        "yet",
        "also",
        "has",
        "have",
        "had",
        "having",
        "been",
        "being",
        "does",
        "did",
        "doing",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "one",
        "two",
        "both",
        "each",
        "other",
        "some",
        "any",
        "all",
        "such",
        "only",
        "own",
        "same",
        "very",
        "more",
        "most",
        "just",
        "said",
        "says",
        "answer",
        "question",
    ]
)
