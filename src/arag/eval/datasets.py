"""Benchmark datasets in the formats the field uses, normalised to :class:`Question` + a corpus file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arag.errors import ConfigError

ARAG_HF_DATASET = "Ayanami0730/rag_test"


@dataclass
class Question:
    id: str
    question: str
    answers: list[str]
    type: str | None = None
    evidence: list[Any] = field(default_factory=list)
    gold_titles: list[str] = field(default_factory=list)
    gold_texts: list[str] = field(default_factory=list)  # evidence quoted as text (GraphRAG-Bench)


@dataclass
class Dataset:
    name: str
    format: str  # "arag", "hipporag" or "graphrag-bench"
    corpus: Path
    questions: list[Question]


def _answers(record: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("answer", "answers", "possible_answers", "answer_aliases", "gold_answer"):
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            out.append(value)
        elif isinstance(value, list):
            out.extend(str(v) for v in value if str(v).strip())
    return list(dict.fromkeys(out))


def _gold_titles(record: dict[str, Any]) -> list[str]:
    titles: list[str] = []
    for triple in record.get("evidence") or []:  # 2Wiki / A-RAG: [subject, relation, object] triples
        if isinstance(triple, list) and triple and isinstance(triple[0], str):
            titles.append(triple[0])
    for fact in record.get("supporting_facts") or []:  # HotpotQA / HippoRAG: [title, sentence index]
        if isinstance(fact, list) and fact and isinstance(fact[0], str):
            titles.append(fact[0])
    for paragraph in record.get("paragraphs") or []:  # MuSiQue
        if isinstance(paragraph, dict) and paragraph.get("is_supporting") and paragraph.get("title"):
            titles.append(paragraph["title"])
    return list(dict.fromkeys(titles))


def parse_questions(data: Any) -> list[Question]:
    if not isinstance(data, list):
        raise ConfigError("questions file must be a JSON list of objects")
    questions = []
    for position, record in enumerate(data):
        if not isinstance(record, dict) or not isinstance(record.get("question"), str):
            raise ConfigError(f'question {position} has no "question" text')
        qid = record.get("id", record.get("_id", record.get("qid", position)))
        questions.append(
            Question(
                str(qid),
                record["question"],
                _answers(record),
                record.get("question_type") or record.get("type"),
                record.get("evidence") or record.get("supporting_facts") or [],
                _gold_titles(record),
                [e for e in record.get("evidence") or [] if isinstance(e, str) and e.strip()],
            )
        )
    return questions


def _first(folder: Path, names: list[str]) -> Path | None:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    matches = [p for pattern in names for p in sorted(folder.glob(f"*{pattern}"))]
    return matches[0] if matches else None


def load_dataset(path: str | Path, corpus: str = "auto") -> Dataset:
    """Load a dataset folder (or ``hf:Ayanami0730/rag_test/NAME``). ``corpus`` picks chunks/corpus when both exist."""
    if str(path).startswith("hf:"):
        path = download_arag_dataset(str(path)[3:])
    folder = Path(path)
    if not folder.is_dir():
        raise ConfigError(f"dataset {folder} is not a folder")
    questions_file = _first(folder, ["questions.json", "question.json", "qa.json"])
    if questions_file is None:
        raise ConfigError(f"no questions.json in {folder}")
    questions = parse_questions(_read_json(questions_file))
    chunks = _first(folder, ["chunks.json"])
    passages = _first(folder, ["corpus.json", "_corpus.json"])
    if corpus == "chunks" or (corpus == "auto" and chunks is not None):
        if chunks is None:
            raise ConfigError(f"no chunks.json in {folder}")
        return Dataset(folder.name, "arag", chunks, questions)
    if passages is None:
        raise ConfigError(f"no corpus file (chunks.json or corpus.json) in {folder}")
    sample = _read_json(passages)
    kind = "graphrag-bench" if sample and isinstance(sample[0], dict) and "context" in sample[0] else "hipporag"
    return Dataset(folder.name, kind, passages, questions)


def download_arag_dataset(spec: str) -> Path:
    """The A-RAG release from the Hugging Face hub: ``Ayanami0730/rag_test/<dataset>`` (or just ``<dataset>``)."""
    from huggingface_hub import snapshot_download

    parts = spec.split("/")
    repo, name = (ARAG_HF_DATASET, parts[-1]) if len(parts) != 3 else ("/".join(parts[:2]), parts[2])
    try:
        root = snapshot_download(repo, repo_type="dataset", allow_patterns=[f"{name}/*"])
    except Exception as exc:
        raise ConfigError(
            f"cannot download {repo}/{name} from the Hugging Face hub ({exc}); "
            "pass a local folder with chunks.json and questions.json instead"
        ) from None
    return Path(root) / name


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, absurd nesting
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise ConfigError(f"{path} is not valid JSON ({detail})") from None
