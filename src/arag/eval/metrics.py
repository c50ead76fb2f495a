"""Answer metrics: Contain-Acc, exact match, token F1 (normalised as in SQuAD), and LLM-Acc with a judge."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from arag.text import normalize_answer

JUDGE_PROMPT = """You are grading an answer to a question against the gold answer.
The answer is correct if it carries the key information of the gold answer, is consistent with it, and
contradicts nothing in it; extra correct detail is fine, a different or hedged answer is not.

Question: {question}
Gold answer: {gold}
Predicted answer: {prediction}

Reply with exactly one word: correct or incorrect."""


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


_PLACEHOLDERS = {
    "question": ("question",),
    "gold": ("gold", "gold_answer", "golden_answer", "answer", "ground_truth"),
    "prediction": ("prediction", "predicted_answer", "pred", "response", "model_answer"),
}


def render_judge_prompt(template: str, question: str, gold: str, prediction: str) -> str:
    """The judge prompt with its placeholders filled. Only the known names are replaced, so a prompt that
    shows JSON examples in braces stays as it is."""
    values = {"question": question, "gold": gold, "prediction": prediction}
    names = {alias: values[key] for key, aliases in _PLACEHOLDERS.items() for alias in aliases}
    return re.sub(r"\{(\w+)\}", lambda m: names.get(m.group(1), m.group(0)), template)


def check_judge_prompt(template: str, source: str) -> None:
    from arag.errors import ConfigError

    present = set(re.findall(r"\{(\w+)\}", template))
    for key, aliases in _PLACEHOLDERS.items():
        if key != "question" and not present & set(aliases):
            raise ConfigError(f"judge prompt {source} has no {{{key}}} placeholder (or one of {', '.join(aliases)})")


_VERDICT_KEYS = ("judgment", "judgement", "verdict", "result", "correct", "is_correct", "label", "score")


def parse_judgement(reply: str) -> float | None:
    """1.0 for "correct", 0.0 for "incorrect", None if the judge said neither. Also reads a JSON verdict
    ({"judgment": "correct"}, {"is_correct": true}, {"score": 1}) as other judge prompts ask for."""
    import json

    start, end = reply.find("{"), reply.rfind("}")
    if 0 <= start < end:
        try:
            data = json.loads(reply[start : end + 1])
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            for key in _VERDICT_KEYS:
                value = data.get(key)
                if isinstance(value, bool):
                    return float(value)
                if isinstance(value, (int, float)) and value in (0, 1):
                    return float(value)
                if isinstance(value, str):
                    verdict = parse_judgement(value)
                    if verdict is not None:
                        return verdict
    words = re.findall(r"[a-z]+", reply.lower())
    if not words:
        return None
    if "incorrect" in words[:3] or words[0] in {"wrong", "no", "false"}:
        return 0.0
    if "correct" in words[:3] or words[0] in {"yes", "true", "right"}:
        return 1.0
    for word in words:  # a verdict after some reasoning
        if word in ("incorrect", "wrong"):
            return 0.0
        if word == "correct":
            return 1.0
    return None


class KeyTerms:
    """Key-term accuracy, for datasets whose gold answers are sentences (GraphRAG-Bench): a file of groups of
    alternative terms per question id, extracted once from the gold answers (benchmarks/key_terms/). A term
    matches the normalised prediction as whole words (a trailing ``*``: as a word prefix); a prediction is
    correct when at least ``min`` groups (default: all) match. A question listed as null, or not listed, is not
    scored (None)."""

    def __init__(self, questions: dict[str, dict[str, object] | None], source: str = "key terms") -> None:
        from arag.errors import ConfigError

        self.rules: dict[str, tuple[list[list[re.Pattern[str]]], int] | None] = {}
        for qid, rule in questions.items():
            if rule is None:
                self.rules[str(qid)] = None
                continue
            groups = rule.get("groups") if isinstance(rule, dict) else None
            if not isinstance(groups, list) or not groups or not all(isinstance(g, list) and g for g in groups):
                raise ConfigError(f"{source}: question {qid} needs non-empty 'groups' of terms, or null")
            if any(not normalize_answer(str(term).rstrip("*")) for group in groups for term in group):
                raise ConfigError(f"{source}: question {qid} has a term that is empty once normalised")
            patterns = [[_term_pattern(str(term)) for term in group] for group in groups]
            required = rule.get("min", len(groups))
            if not isinstance(required, int) or not 1 <= required <= len(groups):
                raise ConfigError(f"{source}: question {qid}: 'min' must be 1 to {len(groups)}")
            self.rules[str(qid)] = (patterns, required)

    @classmethod
    def load(cls, path: str | Path) -> KeyTerms:
        import json

        from arag.errors import ConfigError

        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the key terms {path}: {exc}") from None
        questions = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(questions, dict):
            raise ConfigError(f'key terms {path}: expected {{"questions": {{ID: {{"groups": [[...]]}}}}}}')
        return cls(questions, str(path))

    def score(self, question_id: str, prediction: str) -> float | None:
        rule = self.rules.get(str(question_id))
        if rule is None:
            return None
        groups, required = rule
        text = f" {normalize_answer(prediction)} "
        matched = sum(1 for group in groups if any(p.search(text) for p in group))
        return float(matched >= required)


def _term_pattern(term: str) -> re.Pattern[str]:
    prefix = term.endswith("*")
    words = normalize_answer(term.rstrip("*"))
    return re.compile(rf" {re.escape(words)}{'' if prefix else ' '}")
