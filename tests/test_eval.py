from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arag.eval.datasets import load_dataset
from arag.eval.methods import METHODS
from arag.eval.metrics import contain_acc, exact_match, normalize_answer, parse_judgement, token_f1
from arag.text import without_accents
from conftest import FIXTURES
from support.eval_cli import cli_env, run_cli
from support.scripted_server import ScriptedServer, completion, tool_call

DATASETS = FIXTURES / "datasets"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The Crane Wife", "crane wife"),
        ("  A  tale, of   TWO cities! ", "tale of two cities"),
        ("Hugh's  abbey — St. Maurice", "hugh s abbey st maurice"),
        ("an apple and the anthem", "apple and anthem"),  # articles only as whole words
        ("20 March 851.", "20 march 851"),
        ("“Quoted”", "quoted"),
        ("", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Juan Carlos Falcón", "Juan Carlos Falcon"),
        ("Aldri annet enn bråk", "Aldri annet enn brak"),
        ("Étienne de Crécy", "Etienne de Crecy"),
        ("Zürich, Ziębice", "Zurich, Ziebice"),
        ("plain text 42", "plain text 42"),
    ],
)
def test_without_accents(text: str, expected: str) -> None:
    assert without_accents(text) == expected


@given(st.text(max_size=60))
def test_without_accents_keeps_what_has_none_and_is_idempotent(text: str) -> None:
    once = without_accents(text)
    assert without_accents(once) == once
    if text.isascii():
        assert once == text


def test_answer_metrics_hand_checked() -> None:
    assert contain_acc("She died on 20 March 851 in Tours.", ["20 March 851"]) == 1.0
    assert contain_acc("She died in 851.", ["20 March 851"]) == 0.0
    assert contain_acc("The answer is The Crane Wife", ["crane wife"]) == 1.0
    assert contain_acc("anything", ["", "  "]) == 0.0  # an empty gold never matches
    assert contain_acc("Yes, both are British.", ["no", "yes"]) == 1.0
    assert exact_match("the Crane Wife.", ["Crane Wife"]) == 1.0
    assert exact_match("Crane Wife album", ["Crane Wife"]) == 0.0
    assert token_f1("Crane Wife album", ["The Crane Wife"]) == pytest.approx(0.8)
    assert token_f1("nothing here", ["Crane Wife"]) == 0.0
    assert parse_judgement("Correct") == 1.0
    assert parse_judgement("incorrect.") == 0.0
    assert parse_judgement("**Incorrect** — wrong year") == 0.0
    assert parse_judgement("maybe") is None


def test_dataset_loaders() -> None:
    arag = load_dataset(DATASETS / "arag-mini")
    assert arag.format == "arag" and arag.corpus.name == "chunks.json"
    assert arag.questions[0].gold_titles == ["Lothair II", "Ermengarde of Tours"]
    assert arag.questions[0].answers == ["20 March 851"] and arag.questions[0].type == "compositional"
    assert load_dataset(DATASETS / "arag-mini", corpus="corpus").format == "hipporag"
    hippo = load_dataset(DATASETS / "hippo-mini")
    assert hippo.format == "hipporag" and hippo.questions[0].id == "q1"
    assert hippo.questions[0].answers == ["20 March 851", "20 march 851"]
    assert hippo.questions[1].gold_titles == ["Mehmed II"]
    graph = load_dataset(DATASETS / "graphrag-mini")
    assert graph.format == "graphrag-bench" and graph.questions[0].type == "Fact Retrieval"
    assert graph.questions[1].gold_texts == ["released on October 3, 2006 by Capitol Records"]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def run_eval(
    method: str, out: Path, *options: str, server: ScriptedServer, cache: Path
) -> subprocess.CompletedProcess[str]:
    """``arag eval run`` of ``method`` on the hippo-mini fixture dataset."""
    dataset = str(DATASETS / "hippo-mini")
    return run_cli(
        "eval", "run", "--dataset", dataset, "--method", method, "--out", str(out), *options, server=server, cache=cache
    )


def agent_script(method: str) -> list[dict[str, object]]:
    tools = METHODS[method]
    if tools is None:
        return [completion("20 March 851")]
    first = "keyword_search" if "keyword_search" in tools else "semantic_search"
    args = {"keywords": ["Ermengarde"]} if first == "keyword_search" else {"query": "Ermengarde of Tours death"}
    replies: list[dict[str, object]] = [completion(tool_calls=[tool_call(first, args)])]
    if "chunk_read" in tools:
        replies.append(completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]}, "c2")]))
    replies.append(completion("She died on 20 March 851 [chunk Ermengarde of Tours#0]."))
    return replies


def test_a_run_records_what_a_reread_changed(tmp_path: Path, server: ScriptedServer) -> None:
    sentence = "Ermengarde of Tours was a queen of the Franks, I read [chunk Ermengarde of Tours#0]."
    server.replies = [*agent_script("arag-full")[:-1], completion(sentence), completion("20 March 851")]
    out = tmp_path / "run"
    proc = run_eval("arag-full", out, "--limit", "1", "--policy", "+phrase_answer", server=server, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert record["prediction"] == "20 March 851 [chunk Ermengarde of Tours#0]" and record["contain_acc"] == 1.0
    assert record["policy_records"]["phrase_answer"] == {"reread": {"before": sentence, "after": record["prediction"]}}
    assert record["policies_acted"]["phrase_answer"] == 1 and len(record["model_calls"]) == 4


def test_an_answer_is_scored_by_its_words_not_by_the_ids_it_cites(tmp_path: Path, server: ScriptedServer) -> None:
    server.replies = [completion("She died in 850 [chunk 20 March 851#0] [chunk Ermengarde of Tours#0]")]
    out = tmp_path / "run"
    proc = run_eval("direct", out, "--limit", "1", server=server, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert "[chunk 20 March 851#0]" in record["prediction"] and "20 March 851" in record["gold"]
    assert record["contain_acc"] == 0.0 and record["exact_match"] == 0.0
    assert record["f1"] == pytest.approx(0.0)  # "she died in 850" shares no word with the gold


@pytest.mark.parametrize("method", list(METHODS))
def test_runner_end_to_end_for_every_method(tmp_path: Path, server: ScriptedServer, method: str) -> None:
    server.replies = [*agent_script(method), completion("correct")]
    out = tmp_path / "run"
    proc = run_eval(method, out, "--limit", "1", "--judge", server=server, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 1
    record = records[0]
    assert {
        "id",
        "question",
        "gold",
        "prediction",
        "contain_acc",
        "retrieved_tokens",
        "steps",
        "stop_reason",
        "latency_s",
        "usage",
        "cost",
        "trajectory",
    } <= set(record)
    assert record["id"] == "q1" and record["contain_acc"] == 1.0 and record["llm_acc"] == 1.0
    assert record["stop_reason"] == "answered"
    if METHODS[method] is not None:  # agent methods record every model call
        assert len(record["model_calls"]) == record["usage"]["calls"] >= 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["questions"] == 1 and summary["contain_acc"] == 1.0 and summary["method"] == method
    if method == "direct":
        assert record["retrieved_tokens"] == 0 and record["retrieval_recall"] == 0.0
    else:
        # gold passages: Lothair II and Ermengarde of Tours; recall counts which of them were surfaced
        assert record["retrieved_tokens"] > 0
        surfaced = {"Lothair II#0", "Ermengarde of Tours#0"} & set(record["retrieved_chunks"])
        assert record["retrieval_recall"] == len(surfaced) / 2 > 0
    if METHODS[method] and "chunk_read" in METHODS[method]:  # type: ignore[operator]
        assert record["read_recall"] == 0.5
    if method == "naive-rag":
        prompt = server.requests[0]["messages"][-1]["content"]
        assert "Retrieved chunks" in prompt and "[chunk " in prompt
    if METHODS[method] is not None:
        offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
        assert offered == METHODS[method]
    # the judge saw the gold answer and the prediction
    assert "Gold answer: 20 March 851" in server.requests[-1]["messages"][0]["content"]


def test_resume_after_kill_has_no_loss_or_duplicates(tmp_path: Path, server: ScriptedServer) -> None:
    questions = [{"id": f"q{i}", "question": f"Question number {i}?", "answer": "Waldrada"} for i in range(12)]
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.json").write_text((FIXTURES / "hipporag_corpus.json").read_text())
    (data / "questions.json").write_text(json.dumps(questions))
    server.default = completion("Waldrada")
    server.delay_s = 0.15
    out = tmp_path / "run"
    env = cli_env(server, tmp_path / "cache")
    args = [
        sys.executable,
        "-m",
        "arag",
        "eval",
        "run",
        "--dataset",
        str(data),
        "--method",
        "direct",
        "--out",
        str(out),
        "--workers",
        "2",
    ]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 4):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = {json.loads(line)["id"] for line in results.read_text().splitlines()}
    assert 4 <= len(partial) < 12
    # a torn last line, as a kill in the middle of a write leaves it
    with results.open("a") as handle:
        handle.write('{"id": "q99", "question": "tor')
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ids = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert sorted(ids) == sorted(f"q{i}" for i in range(12)) and len(ids) == len(set(ids))
    assert json.loads((out / "summary.json").read_text())["questions"] == 12
    # only the unfinished questions were asked again
    assert len(server.requests) <= 12 + 2


def test_error_on_one_question_is_recorded(tmp_path: Path, server: ScriptedServer) -> None:
    server.replies = [(400, {"error": {"message": "bad request"}}), completion("20 March 851")]
    out = tmp_path / "run"
    proc = run_eval("direct", out, "--limit", "2", server=server, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["stop_reason"] for r in records] == ["error", "answered"]
    assert "HTTP 400" in records[0]["error"]
    assert json.loads((out / "summary.json").read_text())["errors"] == 1


def test_resuming_under_other_settings_is_refused_naming_what_differs(tmp_path: Path, server: ScriptedServer) -> None:
    server.default = completion("She died on 20 March 851.")
    out = tmp_path / "run"
    first = run_eval("arag-full", out, "--limit", "1", "--max-steps", "3", server=server, cache=tmp_path / "cache")
    assert first.returncode == 0, first.stderr
    config = json.loads((out / "config.json").read_text())
    del config["settings"]["agent"]["stall_limit"]  # a run made before a setting existed
    (out / "config.json").write_text(json.dumps(config))
    asked = len(server.requests)
    other = run_eval("arag-full", out, "--limit", "1", "--max-steps", "4", server=server, cache=tmp_path / "cache")
    assert other.returncode == 1
    assert "Traceback" not in other.stderr
    message = other.stderr.strip().splitlines()[-1]  # one line (the progress bar may come before it)
    assert message.startswith("error: ")
    assert "settings.agent.max_steps: 3 → 4" in message and "settings.agent.stall_limit: absent → 2" in message
    assert message.endswith("use another --out") and len(server.requests) == asked  # refused before any question
    assert len((out / "results.jsonl").read_text().splitlines()) == 1  # the run's answers are left as they were


def test_eval_run_embedder_option_is_recorded_and_part_of_the_run(tmp_path: Path, server: ScriptedServer) -> None:
    server.default = completion("She died on 20 March 851.")
    out = tmp_path / "run"
    first = run_eval("arag-full", out, "--limit", "1", "--embedder", "fake:16", server=server, cache=tmp_path / "cache")
    assert first.returncode == 0, first.stderr
    assert json.loads((out / "config.json").read_text())["settings"]["index"]["embedder"] == "fake:16"
    other = run_eval("arag-full", out, "--limit", "1", server=server, cache=tmp_path / "cache")  # env: fake
    assert other.returncode == 1 and 'settings.index.embedder: "fake:16" → "fake"' in other.stderr


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_a_resume_is_refused_exactly_when_the_configs_differ(before: object, after: object) -> None:
    from arag.eval.runner import _differences

    found = _differences(before, after)
    assert bool(found) == (before != after) and _differences(before, before) == []
    assert all(" → " in line and len(line) < 200 for line in found)  # each difference fits on a line


def test_report_and_sweep(tmp_path: Path, server: ScriptedServer) -> None:
    server.default = completion("She died on 20 March 851.")
    sweep = run_cli(
        "eval",
        "sweep",
        "--dataset",
        str(DATASETS / "hippo-mini"),
        "--method",
        "arag-full",
        "--out",
        str(tmp_path / "sweep"),
        "--max-steps",
        "1,3",
        server=server,
        cache=tmp_path / "cache",
    )
    assert sweep.returncode == 0, sweep.stderr
    direct = run_eval("direct", tmp_path / "direct", server=server, cache=tmp_path / "cache")
    assert direct.returncode == 0, direct.stderr
    report = run_cli(
        "eval",
        "report",
        str(tmp_path / "sweep" / "steps-1"),
        str(tmp_path / "sweep" / "steps-3"),
        str(tmp_path / "direct"),
        "--out",
        str(tmp_path / "report"),
        server=server,
        cache=tmp_path / "cache",
    )
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| Method | hippo-mini LLM-Acc | hippo-mini Contain-Acc |" in text
    # 1 of 3 golds is "20 March 851"; the Wilson 95 % interval of 1/3 is [6.1, 79.2]
    assert "| A-RAG (Full) (max_steps 1) | – | 33.3 [6.1, 79.2] (n=3) |" in text
    assert "| Direct answer | – | 33.3 [6.1, 79.2] (n=3) |" in text
    assert "## Efficiency" in text
    assert "| Direct answer − A-RAG (Full) (max_steps 1) | hippo-mini | Contain-Acc | +0.0 [+0.0, +0.0] | 3 |" in text
    assert "## Failure analysis" in text
    for name in ("accuracy_vs_steps.png", "accuracy_vs_tokens.png"):
        data = (tmp_path / "report" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_report_of_unfinished_run_is_a_clear_error(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "empty").mkdir()
    proc = run_cli("eval", "report", str(tmp_path / "empty"), server=server, cache=tmp_path / "cache")
    assert proc.returncode == 1 and "no summary.json" in proc.stderr and "Traceback" not in proc.stderr


def test_retrieval_metrics(tmp_path: Path, server: ScriptedServer) -> None:
    proc = run_cli("eval", "retrieval", "--dataset", str(DATASETS / "arag-mini"), server=server, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads(proc.stdout)
    assert metrics["format"] == "arag" and metrics["questions_with_gold_in_corpus"] == 3
    assert 0.0 <= metrics["recall@5_semantic"] <= 1.0 and metrics["recall@5_keyword_entities"] == 1.0
    assert metrics["embedder"] == "fake"

    several = run_cli(
        "eval", "retrieval", "--dataset", str(DATASETS / "arag-mini"), "--embedder", "fake:16", "--embedder", "fake",
        server=server, cache=tmp_path / "c",
    )  # fmt: skip
    assert several.returncode == 0, several.stderr
    rows = json.loads(several.stdout)
    assert [row["embedder"] for row in rows] == ["fake:16", "fake"]
    assert rows[1] == metrics  # the same embedder gives the same figures (its cached index)
    refused = run_cli(
        "eval", "retrieval", "--dataset", str(DATASETS / "arag-mini"), "--embedder", "fake:16", "--embedder", "fake",
        "--index", str(tmp_path / "one"), server=server, cache=tmp_path / "c",
    )  # fmt: skip
    assert refused.returncode == 1 and "holds one embedder's index" in refused.stderr


def test_hub_dataset_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from arag.errors import ConfigError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(ConfigError, match="pass a local folder"):
        load_dataset("hf:Ayanami0730/rag_test/2wikimultihopqa")


def test_dataset_errors(tmp_path: Path) -> None:
    from arag.errors import ConfigError

    with pytest.raises(ConfigError, match="not a folder"):
        load_dataset(tmp_path / "missing")
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError, match=r"no dataset found in .*looked for: questions\.json.*Corpus/NAME\.json"):
        load_dataset(tmp_path / "d")
    (tmp_path / "d" / "questions.json").write_text('[{"id": 1}]')
    (tmp_path / "d" / "corpus.json").write_text('[{"title": "t", "text": "x"}]')
    with pytest.raises(ConfigError, match='no "question" text'):
        load_dataset(tmp_path / "d")
    (tmp_path / "d" / "questions.json").write_text("[{")
    with pytest.raises(ConfigError, match=r"questions\.json is not valid JSON"):
        load_dataset(tmp_path / "d")


def _copy_graphrag(target_corpus: Path, target_questions: Path) -> None:
    target_corpus.parent.mkdir(parents=True, exist_ok=True)
    target_questions.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATASETS / "graphrag-mini" / "corpus.json", target_corpus)
    shutil.copy(DATASETS / "graphrag-mini" / "questions.json", target_questions)


def test_dataset_release_layouts(tmp_path: Path) -> None:
    from arag.errors import ConfigError

    flat = tmp_path / "flat"
    _copy_graphrag(flat / "medical.json", flat / "medical_questions.json")
    loaded = load_dataset(flat)
    assert (loaded.name, loaded.format, loaded.corpus.name) == ("medical", "graphrag-bench", "medical.json")
    assert len(loaded.questions) == len(load_dataset(DATASETS / "graphrag-mini").questions)

    tree = tmp_path / "GraphRAG-Bench"
    for subset in ("medical", "novel"):
        _copy_graphrag(
            tree / "Datas" / "Corpus" / f"{subset}.json", tree / "Datas" / "Questions" / f"{subset}_questions.json"
        )
    with pytest.raises(ConfigError, match=r"several subsets \(medical, novel\): pick one with --subset"):
        load_dataset(tree)
    assert load_dataset(tree, subset="novel").corpus == tree / "Datas" / "Corpus" / "novel.json"
    assert load_dataset(tree / "Datas", subset="medical").name == "medical"
    with pytest.raises(ConfigError, match=r"no subset 'legal' .*subsets here: medical, novel"):
        load_dataset(tree, subset="legal")

    hippo = tmp_path / "hippo"
    hippo.mkdir()
    shutil.copy(DATASETS / "hippo-mini" / "corpus.json", hippo / "musique_corpus.json")
    shutil.copy(DATASETS / "hippo-mini" / "questions.json", hippo / "musique.json")
    loaded = load_dataset(hippo)
    assert (loaded.name, loaded.format) == ("musique", "hipporag")

    explicit = load_dataset(
        corpus_file=flat / "medical.json", questions_file=flat / "medical_questions.json", subset="med"
    )
    assert (explicit.name, explicit.format) == ("med", "graphrag-bench")
    with pytest.raises(ConfigError, match="go together"):
        load_dataset(corpus_file=flat / "medical.json")


def test_cached_evaluation_index_is_rebuilt_when_the_embedder_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arag.eval.runner import index_for
    from arag.settings import IndexSettings

    monkeypatch.setenv("ARAG_CACHE_DIR", str(tmp_path))
    dataset = load_dataset(DATASETS / "arag-mini")
    settings = IndexSettings(embedder="fake", threads=1)
    first = index_for(dataset, settings)
    manifest_path = first.store.index_dir / "manifest.json"
    first.close()
    manifest = json.loads(manifest_path.read_text())
    manifest["embedder"]["fingerprint"] = "fake-hash-v0-64"  # as if built by an older model or recipe
    manifest_path.write_text(json.dumps(manifest))
    again = index_for(dataset, settings)
    assert again.manifest.embedder["fingerprint"] == "fake-hash-v1-64"
    assert again.semantic_search("Lothair", 1)


def test_authors_protocol_prompts_and_tool_names_are_used_and_recorded(tmp_path: Path, server: ScriptedServer) -> None:
    judge_prompt = tmp_path / "judge.txt"
    judge_prompt.write_text('Q: {question}\nGold: {gold_answer}\nPred: {predicted_answer}\nReply {"judgment": ...}')
    system_prompt = tmp_path / "system.txt"
    system_prompt.write_text("You are the authors' agent.")
    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion(tool_calls=[tool_call("read_chunk", {"chunk_ids": ["Ermengarde of Tours#0"]}, "c2")]),
        completion("She died on 20 March 851."),
        completion('{"judgment": "correct"}'),
    ]
    out = tmp_path / "run"
    proc = run_cli(
        "eval", "run", "--dataset", str(DATASETS / "hippo-mini"), "--method", "arag-full", "--out", str(out),
        "--limit", "1", "--judge", "--judge-prompt-file", str(judge_prompt), "--system-prompt-file", str(system_prompt),
        server=server, cache=tmp_path / "cache", extra_env={"ARAG_AGENT__TOOL_NAMES": '{"chunk_read": "read_chunk"}'},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, _, _, judged = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["keyword_search", "semantic_search", "read_chunk"]
    assert "call read_chunk for full text" in first["tools"][0]["function"]["description"]
    assert first["messages"][0]["content"].startswith("You are the authors' agent.")
    assert judged["messages"][0]["content"].startswith("Q: When did Lothair II's mother die?\nGold: 20 March 851")
    assert '{"judgment": ...}' in judged["messages"][0]["content"]  # braces that are not placeholders stay
    record = json.loads((out / "results.jsonl").read_text())
    assert record["llm_acc"] == 1.0 and record["read_recall"] == 0.5  # one of its two gold passages, read as read_chunk
    protocol = json.loads((out / "config.json").read_text())["settings"]["protocol"]
    import hashlib

    assert protocol == {
        "system_prompt_sha256": hashlib.sha256(b"You are the authors' agent.").hexdigest(),
        "system_prompt_file": str(system_prompt),
        "judge_prompt_sha256": hashlib.sha256(judge_prompt.read_bytes()).hexdigest(),
        "judge_prompt_file": str(judge_prompt),
        "tool_names": ["keyword_search", "semantic_search", "read_chunk"],
        "actions": "native",  # a hosted model: the paper's native tool calls
        "policies": ["search_first"],  # the paper profile's one policy (JSON actions only)
    }
    bad = tmp_path / "bad.txt"
    bad.write_text("Is this right? {question}")
    refused = run_eval(
        "direct", tmp_path / "r2", "--judge", "--judge-prompt-file", str(bad), server=server, cache=tmp_path / "c"
    )
    assert refused.returncode == 1 and "has no {gold} placeholder" in refused.stderr


def test_llama_cpp_timings_are_kept_per_call_and_reported_as_the_machine_speed() -> None:
    from arag.eval.report import _token_speed
    from arag.models.endpoint import parse_completion

    body = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 1000}},
        "timings": {"prompt_n": 200, "prompt_ms": 6000.0, "predicted_n": 40, "predicted_ms": 3200.5},
    }
    turn = parse_completion(json.dumps(body).encode())
    assert turn.timings == {"prompt_ms": 6000.0, "generation_ms": 3200.5}
    body["timings"] = {"prompt_ms": -1, "predicted_ms": True, "draft_n": 2.5, "draft_n_accepted": -3}
    assert parse_completion(json.dumps(body).encode()).timings == {}  # nonsense is dropped, not reported
    body["timings"] = {"predicted_ms": 900.0, "draft_n": 24, "draft_n_accepted": 15}  # a drafting server
    assert parse_completion(json.dumps(body).encode()).timings == {
        "generation_ms": 900.0,
        "drafted_tokens": 24,
        "accepted_drafts": 15,
    }

    def call(prompt: int, cached: int, generated: int, prompt_ms: float, generation_ms: float) -> dict[str, float]:
        return {
            "prompt_tokens": prompt,
            "cached_tokens": cached,
            "completion_tokens": generated,
            "prompt_ms": prompt_ms,
            "generation_ms": generation_ms,
        }

    untimed = {"prompt_tokens": 900, "cached_tokens": 0, "completion_tokens": 10}  # an endpoint without timings
    calls = [call(1200, 1000, 40, 6000.0, 3200.0), call(1300, 1200, 60, 3000.0, 4800.0), untimed]
    assert _token_speed([{"model_calls": calls}]) == "30 / 80"  # (6000 + 3000) / 300, (3200 + 4800) / 100
    assert _token_speed([{"model_calls": [untimed]}]) == "–"


def test_cached_evaluation_index_survives_a_new_mtime_but_not_new_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import shutil

    from arag.eval.runner import index_for
    from arag.settings import IndexSettings

    monkeypatch.setenv("ARAG_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(DATASETS / "arag-mini", tmp_path / "arag-mini")
    dataset = load_dataset(tmp_path / "arag-mini")
    settings = IndexSettings(embedder="fake", threads=1)
    first = index_for(dataset, settings)
    built = first.store.index_dir
    first.close()
    os.utime(dataset.corpus, (1_900_000_000, 1_900_000_000))  # a re-copied dataset: same bytes, new mtime
    again = index_for(load_dataset(tmp_path / "arag-mini"), settings)
    assert again.store.index_dir == built
    again.close()
    text = dataset.corpus.read_text()
    assert "lothair" in text
    dataset.corpus.write_text(text.replace("lothair", "lothar"))
    changed = index_for(load_dataset(tmp_path / "arag-mini"), settings)
    assert changed.store.index_dir != built
    assert changed.keyword_search(["lothar ii"], 1) and not changed.keyword_search(["lothair"], 1)


MEDICAL = DATASETS / "medical-mini"  # GraphRAG-Bench's layout: one long document, answers that are sentences


def test_key_terms_score_whole_words_prefixes_and_a_minimum_of_groups() -> None:
    from arag.eval.metrics import KeyTerms

    terms = KeyTerms(
        {
            "a": {"groups": [["bcr abl*"]]},
            "b": {"groups": [["tobacco", "smok*"], ["alcohol"]]},
            "c": {"groups": [["dental"], ["nutrition"], ["speech", "swallow*"]], "min": 2},
            "d": {"groups": [["all"]]},
            "e": None,
        }
    )
    assert terms.score("a", "It stops BCR::ABL1 [chunk Medical#19].") == 1.0
    assert terms.score("a", "It stops BCRABL1") == 0.0
    assert terms.score("b", "Smoking and alcohol.") == 1.0 and terms.score("b", "Smoking only") == 0.0
    assert terms.score("c", "a dental exam and a swallowing test") == 1.0 and terms.score("c", "dental") == 0.0
    assert terms.score("d", "ALL, a leukemia") == 1.0 and terms.score("d", "an allergy") == 0.0  # whole words
    assert terms.score("e", "anything") is None and terms.score("not listed", "x") is None


@pytest.mark.parametrize(
    "rule",
    [{"groups": []}, {"groups": [[]]}, {"groups": [["the"]]}, {"groups": [["x"]], "min": 2}, {"terms": ["x"]}],
)
def test_key_terms_refuse_a_rule_that_cannot_score(rule: dict[str, object]) -> None:
    from arag.errors import ConfigError
    from arag.eval.metrics import KeyTerms

    with pytest.raises(ConfigError, match="question q"):
        KeyTerms({"q": rule})


@given(st.text(max_size=60), st.text(alphabet="abcdefgh .", min_size=1, max_size=12).filter(normalize_answer))
def test_a_key_term_matches_exactly_when_its_words_are_in_the_answer(answer: str, term: str) -> None:
    from arag.eval.metrics import KeyTerms

    score = KeyTerms({"q": {"groups": [[term]]}}).score("q", answer)
    assert score == float(f" {normalize_answer(term)} " in f" {normalize_answer(answer)} ")


def test_eval_run_on_a_question_type_scored_by_key_terms(tmp_path: Path, server: ScriptedServer) -> None:
    server.default = completion("Tobacco and alcohol use; it aims to stop BCR::ABL1.")
    out = tmp_path / "run"
    options = ["--question-type", "Fact Retrieval", "--key-terms", str(MEDICAL / "key_terms.json")]
    run = run_cli(
        "eval", "run", "--dataset", str(MEDICAL), "--method", "direct", "--out", str(out), *options,
        server=server, cache=tmp_path / "cache",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    records = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert sorted(records) == ["Medical-m1", "Medical-m2", "Medical-m3"]  # no Complex Reasoning question
    assert [records[q]["key_terms_acc"] for q in sorted(records)] == [0.0, 1.0, 1.0]
    assert all(r["contain_acc"] == 0.0 for r in records.values())  # the sentence-long golds: Contain-Acc is strict
    summary = json.loads((out / "summary.json").read_text())
    assert summary["key_terms_acc"] == pytest.approx(2 / 3) and summary["key_terms_acc_ci95"]["n"] == 3
    # a second run on some of the ids, then the report: a Key-Terms-Acc column, paired in Key-Terms-Acc
    ids = tmp_path / "ids.txt"
    ids.write_text("Medical-m2\nMedical-m1\n")
    server.default = completion("It stops BCR::ABL1 and is found on the face.")
    subset = tmp_path / "subset"
    run = run_cli(
        "eval", "run", "--dataset", str(MEDICAL), "--method", "naive-rag", "--out", str(subset), *options,
        "--ids-file", str(ids), server=server, cache=tmp_path / "cache",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert [json.loads(line)["id"] for line in (subset / "results.jsonl").read_text().splitlines()] == [
        "Medical-m1",
        "Medical-m2",
    ]
    report = run_cli("eval", "report", str(out), str(subset), "--out", str(tmp_path / "report"), server=server,
                     cache=tmp_path / "cache")  # fmt: skip
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| Method | medical LLM-Acc | medical Contain-Acc | medical Key-Terms-Acc |" in text
    assert "| Naive RAG − Direct answer | medical | Key-Terms-Acc | +50.0 [+0.0, +100.0] | 2 |" in text
    bad = run_cli(
        "eval", "run", "--dataset", str(MEDICAL), "--method", "direct", "--out", str(tmp_path / "bad"),
        "--question-type", "Trivia", server=server, cache=tmp_path / "cache",
    )  # fmt: skip
    assert bad.returncode == 1 and bad.stderr.startswith("error: no question has type 'Trivia'")
    assert "Complex Reasoning, Fact Retrieval" in bad.stderr and "Traceback" not in bad.stderr
