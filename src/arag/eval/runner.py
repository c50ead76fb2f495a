"""Runs a method over a dataset: crash-safe, resumable, concurrent, with a live accuracy bar."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arag.citations import without_citations
from arag.errors import ARagError, ConfigError, EmbedderError, IndexFormatError, IndexNotFoundError
from arag.eval.datasets import Dataset, Question, load_dataset
from arag.eval.measures import answer_holder, citation_record
from arag.eval.methods import Method, MethodOutput
from arag.eval.metrics import (
    JUDGE_PROMPT,
    KeyTerms,
    check_judge_prompt,
    contain_acc,
    exact_match,
    parse_judgement,
    render_judge_prompt,
    token_f1,
)
from arag.eval.runs import CONFIG, RESULTS, SUMMARY, mean_present, read_results, summarize
from arag.harness.profiles import resolved_policy_settings, with_default_settings
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.models.llama_build import build_info
from arag.models.local import lookup_tokens
from arag.settings import AgentSettings, IndexSettings, Settings, load_settings
from arag.store import is_database_url

if TYPE_CHECKING:
    from arag.corpus.build import StageProgress


def run_dataset(run_dir: Path) -> Dataset:
    """The dataset a recorded run (``arag eval run``'s directory) asked, over the corpus it asked it over."""
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    corpus_file = Path(config["corpus_file"])
    corpus = corpus_file.stem if corpus_file.stem in ("corpus", "chunks") else "auto"
    dataset = DatasetChoice(Path(config["dataset_path"]), corpus).load()
    if config.get("absent"):  # asked over the corpus without their evidence: that corpus's index
        dataset = replace(dataset, name=f"{dataset.name}-absent", corpus=corpus_file)
    return dataset


def run_index(run_dir: Path) -> tuple[Index, Settings]:
    """The index a recorded run used — its dataset's corpus with its index settings — and those settings, so a
    script can check the run's records against what the run saw."""
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    settings = load_settings(None, {"index": config["settings"]["index"]})
    return index_for(run_dataset(run_dir), settings.index), settings


def index_for(
    dataset: Dataset, settings: IndexSettings, index_dir: str | Path | None = None, progress: Any = None
) -> Index:
    """The dataset corpus's index, built once per (corpus file, index settings) and reused afterwards."""
    from arag.corpus.build import build_index
    from arag.files import cache_dir, sha256_file

    if index_dir is not None and is_database_url(index_dir):
        with contextlib.suppress(IndexNotFoundError):
            return Index.open_with(index_dir, settings)
        build_index([dataset.corpus], index_dir, settings, rebuild=True, progress=progress)
        return Index.open_with(index_dir, settings)
    if index_dir is None:
        # the corpus by content, not by mtime: a copied or re-extracted dataset (a new mtime) reuses its index,
        # and hashing even a large corpus file costs seconds against the minutes of a rebuild
        key = json.dumps(
            [
                str(dataset.corpus.resolve()),
                sha256_file(dataset.corpus),
                settings.built_by(),
            ]
        )
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        index_dir = cache_dir() / "indexes" / f"{dataset.name}-{dataset.format}-{digest}"
    index_dir = Path(index_dir)
    if (index_dir / "manifest.json").exists():
        # a cache entry built by another a-rag version or embedder is rebuilt, not an error
        with contextlib.suppress(IndexFormatError):
            index = Index.open_with(index_dir, settings)
            try:
                index.embedder  # noqa: B018 - loads the embedder and checks it built the index
                return index
            except EmbedderError:
                index.close()
    build_index([dataset.corpus], index_dir, settings, rebuild=True, progress=progress)
    return Index.open_with(index_dir, settings)


def read_ids_file(path: Path) -> set[str]:
    """Question ids from a file: a JSON list, or one id per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the ids file {path}: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            ids = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{path} is not a JSON list of ids: {exc}") from None
        if not isinstance(ids, list):
            raise ConfigError(f"{path} is not a JSON list of ids")
        return {str(i) for i in ids}
    return {line.strip() for line in text.splitlines() if line.strip()}


def select_questions(
    questions: list[Question], limit: int | None, seed: int | None, question_type: str | None = None
) -> list[Question]:
    """The first ``limit`` questions, or a seeded random sample of ``limit`` (kept in dataset order); with
    ``question_type``, of the questions of that type only."""
    if question_type is not None:
        kinds = sorted({str(q.type) for q in questions})
        questions = [q for q in questions if q.type == question_type]
        if not questions:
            raise ConfigError(f"no question has type {question_type!r}; types here: {', '.join(kinds)}")
    if limit is None or limit >= len(questions):
        return list(questions)
    if seed is None:
        return questions[:limit]
    picked = set(random.Random(seed).sample(range(len(questions)), limit))
    return [q for i, q in enumerate(questions) if i in picked]


_WORD = re.compile(r"[^0-9a-z]+")


def _squash(text: str) -> str:
    return _WORD.sub("", text.lower())


class GoldChunks:
    """Maps a question's gold passage titles to the chunk ids that contain those passages."""

    def __init__(self, index: Index, dataset: Dataset) -> None:
        self.by_title: dict[str, set[str]] = {}
        self._squashed: list[tuple[str, str]] | None = None
        self._index = index
        documents = {d.doc_id for d in index.store.documents()}
        ranges = index.store.doc_chunk_rows()
        if dataset.format != "arag":  # one document per passage, titled: chunk ids are "<title>#n"
            for title in documents:
                lo, hi = ranges.get(title, (0, 0))
                self.by_title[title] = {r.chunk_id for r in index.store.chunks(range(lo, hi)).values()}
            return
        passages = dataset.corpus.parent / "corpus.json"
        if not passages.is_file():
            return
        squashed = self._chunks_squashed()
        for passage in json.loads(passages.read_text(encoding="utf-8")):
            probe = _squash(passage.get("text", ""))[:60]
            if probe:
                found = {cid for cid, text in squashed if probe in text}
                self.by_title.setdefault(passage.get("title", ""), set()).update(found)

    def _chunks_squashed(self) -> list[tuple[str, str]]:
        if self._squashed is None:
            self._squashed = [(r.chunk_id, _squash(r.text)) for r in self._index.store.iter_chunks()]
        return self._squashed

    def gold_sets(self, question: Question) -> list[set[str]]:
        """One set of chunk ids per gold passage (by title) or quoted evidence text."""
        gold = [self.by_title[t] for t in question.gold_titles if self.by_title.get(t)]
        for text in question.gold_texts:
            probe = _squash(text)[:80]
            found = {cid for cid, chunk in self._chunks_squashed() if probe and probe in chunk}
            if found:
                gold.append(found)
        return gold

    def recall(self, question: Question, retrieved: list[str]) -> float | None:
        """Fraction of the gold passages (that exist in the corpus) found among ``retrieved`` chunk ids."""
        gold = self.gold_sets(question)
        if not gold:
            return None
        seen = set(retrieved)
        return sum(1 for chunks in gold if chunks & seen) / len(gold)


def cited_evidence(
    index: Index,
    gold: GoldChunks,
    key_terms: KeyTerms | None,
    question: Question,
    prediction: str,
    shown: list[str],
) -> dict[str, list[str]]:
    """What an answer cites (arag.eval.measures.citation_record): the chunks cited, those never ``shown``, and those
    holding the answer (a gold passage's chunk, the key terms, or a gold answer in its text)."""
    gold_chunks = set().union(*gold.gold_sets(question))
    scorer = (lambda text: key_terms.score(question.id, text)) if key_terms is not None else None
    return citation_record(
        prediction,
        set(shown),
        lambda ids: {r.chunk_id: r.text for r in index.read(ids)[0]},
        answer_holder(question.answers, gold_chunks, scorer),
    )


def load_judge_prompt(path: Path | None) -> str:
    """The judge prompt template: the packaged one, or a file (e.g. the authors' own, by path)."""
    if path is None:
        return JUDGE_PROMPT
    try:
        template = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the judge prompt {path}: {exc}") from None
    check_judge_prompt(template, str(path))
    return template


def judge(model: ChatModel, question: Question, prediction: str, template: str = JUDGE_PROMPT) -> float | None:
    prompt = render_judge_prompt(template, question.question, " / ".join(question.answers), prediction)
    turn = model.complete([{"role": "user", "content": prompt}])
    return parse_judgement(turn.content)


_ABSENT = object()  # a key one side of a comparison lacks
_RUN_IDENTITY = (
    "dataset",
    "method",
    "settings",
    "absent",
)  # what a resumed run must share with the run in its directory


def _differences(before: Any, after: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as "path: before → after" (a key one side lacks shows as absent)."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            inner = f"{path}.{key}" if path else str(key)
            found.extend(_differences(before.get(key, _ABSENT), after.get(key, _ABSENT), inner))
        return found
    return [] if before == after else [f"{path or 'config'}: {_brief(before)} → {_brief(after)}"]


def _brief(value: Any, limit: int = 60) -> str:
    if value is _ABSENT:
        return "absent"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class DatasetChoice:
    """Which dataset a run answers, and which of its questions."""

    path: Path | None
    corpus: str = "auto"
    subset: str | None = None
    corpus_file: Path | None = None
    questions_file: Path | None = None
    question_type: str | None = None  # only the questions of this type are sampled from
    key_terms: Path | None = None  # the key terms that score this dataset's answers (benchmarks/key_terms)
    ids_file: Path | None = None  # of the questions selected, only these ids
    # ask them as absent questions: over the corpus without their evidence (arag.eval.absent); right: "not found"
    absent: bool = False

    def load(self) -> Dataset:
        return load_dataset(self.path, self.corpus, self.subset, self.corpus_file, self.questions_file)

    def questions(
        self, dataset: Dataset, limit: int | None, seed: int | None, first: int | None = None
    ) -> list[Question]:
        """The questions a run answers: sampled (``limit``, ``seed``, the type), the first ``first`` of them, and of
        those the ones in the ids file."""
        return self.of_ids(self.selected(dataset, limit, seed, first))

    def selected(self, dataset: Dataset, limit: int | None, seed: int | None, first: int | None) -> list[Question]:
        """The questions sampled (``limit``, ``seed``, the type), the first ``first`` of them."""
        return select_questions(dataset.questions, limit, seed, self.question_type)[:first]

    def of_ids(self, questions: list[Question]) -> list[Question]:
        """Of ``questions``, the ones in the ids file (all without one)."""
        if self.ids_file is None:
            return questions
        wanted = read_ids_file(self.ids_file)
        return [q for q in questions if q.id in wanted]


def run_method(
    choice: DatasetChoice,
    method: str,
    out_dir: Path,
    settings: Settings,
    *,
    workers: int = 1,
    limit: int | None = None,
    seed: int | None = None,
    first: int | None = None,
    local_model: str | None = None,
    judge: bool = False,
    naive_top_k: int = 5,
    index_dir: str | None = None,
    index_progress: StageProgress | None = None,
    on_start: Callable[[str, int, int], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run ``method`` on the chosen questions into ``out_dir`` (resumed if it holds the same run); returns the
    summary. ``on_start(label, questions, already answered)`` is called once the index and the models are ready."""
    from arag.eval.methods import make_method
    from arag.models.choice import chat_model

    dataset = choice.load()
    questions = choice.questions(dataset, limit, seed, first)
    key_terms = KeyTerms.load(choice.key_terms) if choice.key_terms else None
    absent = None
    if choice.absent:
        from arag.eval.absent import absent_corpus

        # the evidence of every question selected is taken out, the ids file only picks which are asked: a run of
        # some of them asks over the same corpus as a run of all
        absent = absent_corpus(dataset, choice.selected(dataset, limit, seed, first), key_terms)
        dataset, questions = absent.dataset, choice.of_ids(absent.dataset.questions)
        if not questions:
            raise ConfigError("none of the selected questions stays absent once its evidence is taken out")
    judge_prompt = load_judge_prompt(settings.eval.judge_prompt_file)
    index = index_for(dataset, settings.index, index_dir, progress=index_progress)
    model, embedded = chat_model(settings, local_model=local_model, threads=settings.index.threads)
    judge_model = None
    if judge:
        judge_model = (
            chat_model(settings, llm=settings.judge, local_model=local_model)[0]
            if (settings.judge.model or settings.judge.base_url)
            else model
        )
    method_impl = make_method(method, index, model, settings.agent, None, naive_top_k)  # JSON actions: the agent's call
    protocol = {
        "system_prompt_sha256": _sha256_text(method_impl.system_prompt),
        "system_prompt_file": str(settings.agent.system_prompt_file) if settings.agent.system_prompt_file else None,
        "judge_prompt_sha256": _sha256_text(judge_prompt) if judge else None,
        "judge_prompt_file": str(settings.eval.judge_prompt_file) if settings.eval.judge_prompt_file else None,
        "tool_names": list(method_impl.tool_names),
        "actions": method_impl.actions,
        "policies": list(method_impl.policies),
    }
    config = {
        "dataset": dataset.name,
        "dataset_path": str(choice.path or choice.questions_file),
        "corpus_file": str(dataset.corpus),
        "format": dataset.format,
        "method": method,
        "model": model.model,
        "embedded_model": embedded,
        # the instruction sets of the embedded model's llama.cpp build: it sets the speed, not the identity
        "llama_cpp": build_info() if embedded else None,
        "judge_model": judge_model.model if judge_model else None,
        "settings": {
            # Direct and Naive RAG run no agent: its settings are not part of their identity
            "agent": _agent_settings(settings.agent) if method_impl.tool_names else None,
            "index": settings.index.model_dump(mode="json", exclude={"threads"}),
            "naive_top_k": naive_top_k,
            "protocol": protocol,
            # the embedded model's speculative decoding and flash attention change near-tie tokens (rounding), so
            # they belong to a run's identity: a run directory is not resumed under another setting
            "lookup_tokens": lookup_tokens(settings.llm) if embedded else None,
            "flash_attention": settings.llm.flash_attention if embedded else None,
        },
        "limit": limit,
        "seed": seed,
        "first": first,
        "question_type": choice.question_type,
        "ids_file": str(choice.ids_file) if choice.ids_file else None,
        "key_terms": str(choice.key_terms) if choice.key_terms else None,
        "question_ids": [q.id for q in questions],
        **({"absent": absent.describe()} if absent is not None else {}),
    }
    check_run_dir(out_dir, config)
    if on_start is not None:
        done = read_results(out_dir / RESULTS)
        on_start(f"{method} on {dataset.name}", len(questions), sum(1 for q in questions if q.id in done))
    return run_eval(
        dataset,
        method_impl,
        index,
        out_dir,
        config,
        questions,
        workers,
        judge_model,
        on_result,
        judge_prompt,
        key_terms,
    )


def _agent_settings(agent: AgentSettings) -> dict[str, Any]:
    """The agent's settings as a run records them: every policy's settings in full, defaults included (the
    settings leave out what a user did not set)."""
    return {**agent.model_dump(mode="json"), "policy": resolved_policy_settings(agent)}


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check_run_dir(out_dir: Path, config: dict[str, Any]) -> None:
    """Refuse to resume a run directory that holds a run of another configuration (it would mix two
    configurations' answers); the message names what differs."""
    config_path = out_dir / CONFIG
    if not config_path.exists():
        return
    previous = json.loads(config_path.read_text())
    policy = ((previous.get("settings") or {}).get("agent") or {}).get("policy")
    if isinstance(policy, dict):  # recorded before a setting was added: it ran with that setting's default
        previous["settings"]["agent"]["policy"] = with_default_settings(policy)
    changed = _differences({k: previous.get(k) for k in _RUN_IDENTITY}, {k: config.get(k) for k in _RUN_IDENTITY})
    if changed:
        shown = "; ".join(changed[:3]) + (f"; and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise ConfigError(f"{out_dir} holds a run with other settings ({shown}); use another --out")


def run_eval(
    dataset: Dataset,
    method: Method,
    index: Index,
    out_dir: Path,
    config: dict[str, Any],
    questions: list[Question],
    workers: int = 1,
    judge_model: ChatModel | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    judge_prompt: str = JUDGE_PROMPT,
    key_terms: KeyTerms | None = None,
) -> dict[str, Any]:
    """Answer every question not yet in ``out_dir/results.jsonl``; returns the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config_path = out_dir / CONFIG
    check_run_dir(out_dir, config)
    if not config_path.exists():
        tmp = config_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(config, indent=2))
        os.replace(tmp, config_path)
    results_path = out_dir / RESULTS
    finished = read_results(results_path, repair=True)
    gold = GoldChunks(index, dataset)
    asked_absent = "absent" in config
    lock = threading.Lock()
    started = time.perf_counter()

    def one(question: Question) -> dict[str, Any]:
        t0 = time.perf_counter()
        try:
            output = method.answer(question.question)
            error = output.error
        except ARagError as exc:
            output, error = MethodOutput("", "error"), str(exc)
        except Exception as exc:  # one question's failure, whatever it is, must not end the run
            output, error = MethodOutput("", "error"), f"{type(exc).__name__}: {exc}"
        citations = cited_evidence(index, gold, key_terms, question, output.prediction, output.retrieved_chunks)
        words = without_citations(output.prediction)  # scored by what it says: a cited id naming the gold is no answer
        record: dict[str, Any] = {
            "id": question.id,
            "question": question.question,
            "gold": question.answers,
            "type": question.type,
            "prediction": output.prediction,
            **({"absent": True} if asked_absent else {}),
            "not_found": output.not_found,
            "citations": citations,
            "contain_acc": contain_acc(words, question.answers),
            "exact_match": exact_match(words, question.answers),
            "f1": token_f1(words, question.answers),
            **({"key_terms_acc": key_terms.score(question.id, words)} if key_terms else {}),
            "retrieved_tokens": output.retrieved_tokens,
            "steps": output.steps,
            "stop_reason": output.stop_reason,
            "answer_from": output.answer_from,
            "policies_acted": output.policies_acted,
            **({"policy_records": output.policy_records} if output.policy_records else {}),
            **({"verification": output.verification} if output.verification is not None else {}),
            "latency_s": round(time.perf_counter() - t0, 3),
            "usage": output.usage.to_dict(),
            "model_calls": output.model_calls,
            "cost": output.cost,
            "retrieval_recall": gold.recall(question, output.retrieved_chunks),
            "read_recall": gold.recall(question, output.read_chunks),
            "retrieved_chunks": output.retrieved_chunks,
            "trajectory": output.trajectory,
            "error": error,
        }
        if judge_model is not None and output.prediction and not error:
            try:
                record["llm_acc"] = judge(judge_model, question, output.prediction, judge_prompt)
            except Exception as exc:  # a failed judgement is recorded; the answer stands
                record["llm_acc"], record["judge_error"] = None, str(exc) if isinstance(exc, ARagError) else repr(exc)
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with lock, results_path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        if on_result:
            on_result(record)
        return record

    todo = [q for q in questions if q.id not in finished]
    if workers <= 1:
        for question in todo:
            one(question)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, todo))
    summary = summarize(results_path, config, wall_s=time.perf_counter() - started)
    tmp = out_dir / (SUMMARY + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2))
    os.replace(tmp, out_dir / SUMMARY)
    return summary


_QUESTION_WORDS = frozenset(
    ["who", "what", "when", "where", "which", "why", "how", "is", "are", "did", "do", "does", "was", "were"]
)
_ENTITY = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|van)?\s*[A-Z][\w'’.-]*)*")


def question_entities(question: str) -> list[str]:
    """Capitalized phrases of a question, without question words and possessive 's (keyword-search queries)."""
    entities = [re.sub(r"['’]s$", "", e) for e in _ENTITY.findall(question)]
    return [e for e in entities if e.lower() not in _QUESTION_WORDS]


def retrieval_metrics(dataset: Dataset, index: Index, k: int = 5, naive_top_k: int = 5) -> dict[str, Any]:
    """Recall@k of gold passages, no LLM: semantic_search(question), Naive RAG's top-k, keyword search on the
    question's capitalized entities."""
    gold = GoldChunks(index, dataset)
    rows: dict[str, list[float | None]] = {"semantic": [], "naive_rag": [], "keyword_entities": []}
    for question in dataset.questions:
        semantic = [h.chunk_id for h in index.semantic_search(question.question, max(k, naive_top_k))]
        entities = question_entities(question.question)
        keyword = [h.chunk_id for h in index.keyword_search(entities, k)] if entities else []
        rows["semantic"].append(gold.recall(question, semantic[:k]))
        rows["naive_rag"].append(gold.recall(question, semantic[:naive_top_k]))
        rows["keyword_entities"].append(gold.recall(question, keyword))
    covered = sum(1 for v in rows["semantic"] if v is not None)
    return {
        "dataset": dataset.name,
        "format": dataset.format,
        "questions": len(dataset.questions),
        "questions_with_gold_in_corpus": covered,
        "k": k,
        "naive_top_k": naive_top_k,
        **{
            f"recall@{k}_{name}" if name != "naive_rag" else f"recall@{naive_top_k}_naive_rag": mean_present(values)
            for name, values in rows.items()
        },
    }
