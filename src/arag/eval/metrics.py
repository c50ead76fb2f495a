"""Answer metrics: Contain-Acc, exact match, token F1 (normalised as in SQuAD), and LLM-Acc with a judge."""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…"}

JUDGE_PROMPT = """You are grading an answer to a question against the gold answer.
The answer is correct if it carries the key information of the gold answer, is consistent with it, and
contradicts nothing in it; extra correct detail is fine, a different or hedged answer is not.

Question: {question}
Gold answer: {gold}
Predicted answer: {prediction}

Reply with exactly one word: correct or incorrect."""


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles (a/an/the), fold whitespace."""
    text = text.lower()
    text = "".join(" " if ch in _PUNCTUATION else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def contain_acc(prediction: str, golds: list[str]) -> float:
    """1 if any normalised gold answer is a substring of the normalised prediction (the paper's Contain-Acc)."""
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(g) and normalize_answer(g) in pred for g in golds))


def exact_match(prediction: str, golds: list[str]) -> float:
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def token_f1(prediction: str, golds: list[str]) -> float:
    best = 0.0
    pred_tokens = normalize_answer(prediction).split()
    for gold in golds:
        gold_tokens = normalize_answer(gold).split()
        common = Counter(pred_tokens) & Counter(gold_tokens)
        overlap = sum(common.values())
        if not overlap:
            continue
        precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def parse_judgement(reply: str) -> float | None:
    """1.0 for "correct", 0.0 for "incorrect", None if the judge said neither."""
    words = re.findall(r"[a-z]+", reply.lower())
    if not words:
        return None
    if "incorrect" in words[:3] or words[0] in {"wrong", "no", "false"}:
        return 0.0
    if "correct" in words[:3] or words[0] in {"yes", "true", "right"}:
        return 1.0
    return None
