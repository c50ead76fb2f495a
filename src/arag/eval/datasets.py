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


QUESTION_NAMES = ("questions.json", "question.json", "qa.json")


def load_dataset(
    path: str | Path | None = None,
    corpus: str = "auto",
    subset: str | None = None,
    corpus_file: Path | None = None,
    questions_file: Path | None = None,
) -> Dataset:
    """A dataset as its release lays it out, or as two explicit files.

    Layouts recognised in a folder (``corpus`` picks chunks.json or the passages when both exist):

    * A-RAG release / a-rag's own: ``questions.json`` + ``chunks.json`` and/or ``corpus.json``
      (also ``hf:Ayanami0730/rag_test/NAME``);
    * HippoRAG / LinearRAG: ``NAME.json`` (questions) + ``NAME_corpus.json``;
    * GraphRAG-Bench, flat: ``NAME_questions.json`` + ``NAME.json``; as released: ``Corpus/NAME.json`` +
      ``Questions/NAME_questions.json``, under the folder or its ``Datas/``.

    ``subset`` names NAME where a folder holds several."""
    if corpus_file is not None or questions_file is not None:
        if corpus_file is None or questions_file is None:
            raise ConfigError("--corpus-file and --questions-file go together: give both")
        for file in (corpus_file, questions_file):
            if not file.is_file():
                raise ConfigError(f"{file} is not a file")
        name = subset or questions_file.stem.removesuffix("_questions").removesuffix("questions").strip("_-")
        return _dataset(name or questions_file.parent.name, corpus_file, questions_file)
    if path is None:
        raise ConfigError("give --dataset FOLDER, or --corpus-file and --questions-file")
    if str(path).startswith("hf:"):
        path = download_arag_dataset(str(path)[3:])
    folder = Path(path)
    if not folder.is_dir():
        raise ConfigError(f"dataset {folder} is not a folder")
    looked_for: list[str] = []

    plain_questions = next((folder / n for n in QUESTION_NAMES if (folder / n).is_file()), None)
    looked_for.append(f"{'/'.join(QUESTION_NAMES)} with chunks.json or corpus.json (A-RAG)")
    if plain_questions is not None and subset is None:
        chunks, passages = folder / "chunks.json", folder / "corpus.json"
        if corpus == "chunks" or (corpus == "auto" and chunks.is_file()):
            if not chunks.is_file():
                raise ConfigError(f"no chunks.json in {folder} (--corpus chunks)")
            return Dataset(folder.name, "arag", chunks, parse_questions(_read_json(plain_questions)))
        if passages.is_file():
            return _dataset(folder.name, passages, plain_questions)
        if corpus == "corpus":
            raise ConfigError(f"no corpus.json in {folder} (--corpus corpus)")

    pairs = _subset_pairs(folder)
    looked_for += [
        "NAME.json + NAME_corpus.json (HippoRAG, LinearRAG)",
        "NAME_questions.json + NAME.json (GraphRAG-Bench)",
        "Corpus/NAME.json + Questions/NAME_questions.json, also under Datas/ (GraphRAG-Bench release)",
    ]
    if subset is not None:
        if subset not in pairs:
            known = f"; subsets here: {', '.join(sorted(pairs))}" if pairs else ""
            raise ConfigError(f"no subset {subset!r} in {folder}{known}")
        corpus_path, questions_path = pairs[subset]
        return _dataset(subset, corpus_path, questions_path)
    if len(pairs) == 1:
        name, (corpus_path, questions_path) = next(iter(pairs.items()))
        return _dataset(name, corpus_path, questions_path)
    if len(pairs) > 1:
        raise ConfigError(f"{folder} holds several subsets ({', '.join(sorted(pairs))}): pick one with --subset NAME")
    raise ConfigError(
        f"no dataset found in {folder}; looked for: " + "; ".join(looked_for) + " (or give --corpus-file and "
        "--questions-file)"
    )


def _subset_pairs(folder: Path) -> dict[str, tuple[Path, Path]]:
    """Subset name → (corpus file, questions file) for the release layouts that name files by subset."""
    pairs: dict[str, tuple[Path, Path]] = {}
    for questions in sorted(folder.glob("*_questions.json")):  # GraphRAG-Bench, flat
        name = questions.name.removesuffix("_questions.json")
        if (folder / f"{name}.json").is_file():
            pairs[name] = (folder / f"{name}.json", questions)
    for corpus_path in sorted(folder.glob("*_corpus.json")):  # HippoRAG / LinearRAG
        name = corpus_path.name.removesuffix("_corpus.json")
        if (folder / f"{name}.json").is_file():
            pairs.setdefault(name, (corpus_path, folder / f"{name}.json"))
    for root in (folder, folder / "Datas"):  # GraphRAG-Bench release tree
        for corpus_path in sorted((root / "Corpus").glob("*.json")) if (root / "Corpus").is_dir() else []:
            questions = root / "Questions" / f"{corpus_path.stem}_questions.json"
            if questions.is_file():
                pairs.setdefault(corpus_path.stem, (corpus_path, questions))
    return pairs


def _first_record(sample: Any) -> dict[str, Any]:
    first = sample[0] if isinstance(sample, list) and sample else sample
    return first if isinstance(first, dict) else {}


def _dataset(name: str, corpus_path: Path, questions_path: Path) -> Dataset:
    questions = parse_questions(_read_json(questions_path))
    sample = _read_json(corpus_path)
    if isinstance(sample, list) and sample and all(isinstance(x, str) for x in sample[:5]):
        kind = "arag"  # A-RAG chunks.json: ["0:text", ...]
    elif _first_record(sample).get("context") is not None:
        kind = "graphrag-bench"
    else:
        kind = "hipporag"
    return Dataset(name, kind, corpus_path, questions)


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
