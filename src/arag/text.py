"""Text rules shared across layers: the text no store can hold, and answers normalised as the paper's metrics
compare them (used by the evaluation and by the harness's answer checks)."""

from __future__ import annotations

import re
import string

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…"}


def storable(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD, as every store holds text."""
    return _UNSTORABLE.sub("\ufffd", text) if _UNSTORABLE.search(text) else text


def never_stored(text: str) -> bool:
    """Whether ``text`` holds a character no stored text can contain (NUL, a lone surrogate): it matches nothing."""
    return _UNSTORABLE.search(text) is not None


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles (a/an/the), fold whitespace."""
    text = text.lower()
    text = "".join(" " if ch in _PUNCTUATION else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())
