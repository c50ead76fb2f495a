"""What a user needs of an answer, measured: absent questions (evidence taken out), refusals, the multi-hop slice,
citations that hold the answer (arag.eval.absent, arag.eval.measures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.agent.prompts import REFUSED
from arag.citations import cited_ids
from arag.errors import ConfigError
from arag.eval.absent import absent_corpus
from arag.eval.datasets import load_dataset
from arag.eval.measures import answer_holder, citation_record, correct, is_multi_hop, measures, refused, stalled
from arag.eval.metrics import KeyTerms
from arag.text import normalize_answer, says_not_found
from conftest import FIXTURES
from support.eval_cli import run_cli
from support.scripted_server import ScriptedServer, completion, tool_call

DATASETS = FIXTURES / "datasets"
MEDICAL = DATASETS / "medical-mini"


def test_absent_passages_are_the_gold_titles_and_a_question_whose_answer_remains_is_left_out(tmp_path: Path) -> None:
    dataset = load_dataset(DATASETS / "hippo-mini")
    absent = absent_corpus(dataset, dataset.questions, None, tmp_path)
    kept = json.loads(absent.dataset.corpus.read_text())
    titles = {p["title"] for p in kept}
    gold = {t for q in dataset.questions for t in q.gold_titles}
    original = json.loads(dataset.corpus.read_text())
    assert titles == {p["title"] for p in original} - gold and absent.removed == len(original) - len(kept)
    remaining = " " + " ".join(normalize_answer(p["title"] + " " + p["text"]) for p in kept) + " "
    for question in absent.dataset.questions:  # an absent question's answer is nowhere in what remains
        assert not any(f" {normalize_answer(a)} " in remaining for a in question.answers)
    asked = {q.id for q in absent.dataset.questions}
    assert asked | set(absent.left_out) == {q.id for q in dataset.questions} and not asked & set(absent.left_out)
    # "Murad II", the father of Mehmed II, has a passage of his own, not a gold one: the answer is still there
    assert absent.left_out["q2"] == "its answer 'Murad II' is still in the corpus"
    assert "q1" in asked and absent.dataset.name == "hippo-mini-absent"
    again = absent_corpus(dataset, dataset.questions, None, tmp_path)  # cached: the same file, not rewritten
    assert again.dataset.corpus == absent.dataset.corpus


def test_absent_sentences_are_where_the_key_terms_match_and_the_rest_of_the_document_stays(tmp_path: Path) -> None:
    dataset = load_dataset(MEDICAL)
    key_terms = KeyTerms.load(MEDICAL / "key_terms.json")
    absent = absent_corpus(dataset, dataset.questions, key_terms, tmp_path)
    (document,) = json.loads(absent.dataset.corpus.read_text())
    text = document["context"]
    assert "Tyrosine kinase inhibitors are the main treatment." in text  # no key term: kept
    assert "A dental exam is done before radiation." in text
    for gone in ("face, head, and neck", "BCR::ABL1 protein", "Tobacco and alcohol"):
        assert gone not in text
    assert [q.id for q in absent.dataset.questions] == ["Medical-m1", "Medical-m2", "Medical-m3"]
    assert absent.left_out == {"Medical-m4": "nothing names its evidence (no key terms, no quoted evidence)"}
    for question in absent.dataset.questions:  # no sentence (nor three neighbours) of what remains holds it
        assert not key_terms.score(question.id, text.split(". ")[0])


def test_absent_questions_need_passages_not_precut_chunks(tmp_path: Path) -> None:
    dataset = load_dataset(DATASETS / "arag-mini")  # chunks.json
    with pytest.raises(ConfigError, match="--corpus corpus"):
        absent_corpus(dataset, dataset.questions, None, tmp_path)


@pytest.mark.parametrize(
    "answer,said",
    [
        ("Not in the documents: searched for sick days.", True),
        ("The documents do not mention a stock ticker.", True),
        ("The texts do not say when she died.", True),
        ("Unknown.", True),
        ("I could not find who leads it.", True),
        ("There is no information about paid sick days.", True),
        ("The orchard's bank account number is not provided in the given text. [chunk orchard/about.md#0]", True),
        ("The rent is not specified in the documents.", True),
        ("A fee is not listed in the context.", True),
        ("No phone number provided.", True),
        ("None given.", True),
        ("No phone number provided. [chunk lab/minutes.txt#0]", True),
        ("Unknown [chunk a#0] [chunk b#1]", True),
        ("No side effects were mentioned.", True),
        ("No fee is charged for students.", False),
        ("Radiation is not provided in the first year.", False),
        ("The drug is not given in pregnancy.", False),
        ("27 days [chunk handbook#3]", False),
        ("Not found in the bone marrow, but in the blood.", False),
        ("No, both films are American.", False),
    ],
)
def test_says_not_found(answer: str, said: bool) -> None:
    assert says_not_found(answer) is said


@given(st.text(max_size=300))
def test_says_not_found_reads_any_text(text: str) -> None:
    assert isinstance(says_not_found(text), bool)


def test_a_citation_of_a_title_with_a_comma_is_one_id_when_it_is_known() -> None:
    answer = "The Hague [chunk Louis of Nassau, Lord of De Lek#0] [chunks A#0, B#1]"
    known = {"Louis of Nassau, Lord of De Lek#0", "A#0", "B#1"}
    assert cited_ids(answer, known) == ["Louis of Nassau, Lord of De Lek#0", "A#0", "B#1"]
    assert cited_ids(answer) == ["Louis of Nassau", "Lord of De Lek#0", "A#0", "B#1"]


def test_citation_record_names_unshown_chunks_and_those_holding_the_answer() -> None:
    texts = {"E#0": "Ermengarde of Tours (d. 20 March 851).", "L#0": "Lothair II was king.", "X#0": "x"}
    holds = answer_holder(["20 March 851"], {"L#0"}, None)  # L#0: a gold passage's chunk, it holds the evidence
    record = citation_record(
        "20 March 851 [chunk E#0] [chunk L#0] [chunk Z#9]",
        {"E#0", "L#0", "X#0"},
        lambda ids: {i: texts[i] for i in ids if i in texts},
        holds,
    )
    assert record == {"cited": ["E#0", "L#0", "Z#9"], "unshown": ["Z#9"], "holding": ["E#0", "L#0"]}
    assert not answer_holder(["yes"], set(), None)("A#0", "yes, she did")  # yes/no is in any text: not evidence
    scorer = KeyTerms({"m": {"groups": [["bcr abl*"]]}}).score
    assert answer_holder(["It aims to stop BCR::ABL1."], set(), lambda t: scorer("m", t))("M#1", "BCR-ABL1 fusion")


def _record(**fields: object) -> dict[str, object]:
    return {"stop_reason": "answered", "answer_from": "model", "latency_s": 1.0, "prediction": "x", **fields}


def test_measures_by_hand() -> None:
    records = [
        _record(type="compositional", contain_acc=1.0, citations={"cited": ["a"], "unshown": [], "holding": ["a"]}),
        _record(type="compositional", contain_acc=0.0, citations={"cited": ["b"], "unshown": ["b"], "holding": []}),
        _record(type="comparison", contain_acc=1.0, citations={"cited": [], "unshown": [], "holding": []}),
        _record(type="comparison", contain_acc=0.0, not_found=True, prediction="Not in the documents"),
        _record(absent=True, contain_acc=0.0, not_found=True, stop_reason="max_steps", latency_s=3.0),
        _record(absent=True, contain_acc=0.0, not_found=False, stop_reason="stalled", latency_s=5.0),
    ]
    measured = measures(records)
    values = {name: (v["value"], v["n"]) if v else None for name, v in measured.items() if name != "latency_p50_s"}
    assert values == {
        "answerable": (0.5, 4),
        "multi_hop": (0.5, 2),
        "absent_said": (0.5, 2),
        "false_refusals": (0.25, 4),
        "cites_evidence": (0.5, 2),  # of the two right answers, one cites a chunk that holds the answer
        "unshown_cited": (1 / 3, 3),
        "own_answers": (4 / 6, 6),
        "stalled": (1 / 6, 6),
    }
    assert measured["latency_p50_s"] == 1.0
    assert measures([])["answerable"] is None


@pytest.mark.parametrize(
    ("stop_reason", "repeats", "stuck"),
    [
        ("stalled", 0, True),  # a loop guard ended it
        ("max_steps", 3, True),  # the step limit, after three repeated calls: it went round in a loop
        ("max_steps", 2, False),
        ("answered", 5, False),  # it repeated itself, then answered
        ("model_calls", 4, False),
    ],
)
def test_a_run_is_stalled_when_a_guard_ended_it_or_it_reached_the_step_limit_repeating(
    stop_reason: str, repeats: int, stuck: bool
) -> None:
    trajectory = [{"observation": "keyword_search …: 3 chunks"}]
    trajectory += [{"observation": f"{REFUSED}\nClosest to the question …"} for _ in range(repeats)]
    trajectory += [{"observation": "Not a repeat: You already made this exact call; quoted inside a text"}]
    record = {"stop_reason": stop_reason, "trajectory": trajectory}
    assert stalled(record) is stuck
    assert (measures([_record(**record)])["stalled"]["value"] == 1.0) is stuck


def test_a_refusal_is_never_a_right_answer_and_key_terms_score_first() -> None:
    assert correct({"contain_acc": 1.0, "prediction": "Not in the documents; it is not 851"}) == 0.0
    assert correct({"contain_acc": 0.0, "key_terms_acc": 1.0, "prediction": "x"}) == 1.0
    assert correct({"contain_acc": 1.0, "key_terms_acc": None, "prediction": "x"}) is None  # not scored
    assert refused({"prediction": "Unknown"}) and not refused({"prediction": "Unknown", "not_found": False})
    assert is_multi_hop({"type": "bridge_comparison"}) and is_multi_hop({"type": "Complex Reasoning"})
    assert is_multi_hop({"type": "3hop1"}) and not is_multi_hop({"type": "comparison"})


def test_eval_run_absent_records_refusals_and_made_up_answers(tmp_path: Path, server: ScriptedServer) -> None:
    search = completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair II"]})])
    server.replies = [search, completion("Not in the documents: I searched for Lothair II.")]
    server.default = completion("20 March 851")  # the other absent questions: a made-up answer
    out = tmp_path / "absent"
    dataset = str(DATASETS / "hippo-mini")
    proc = run_cli(
        "eval", "run", "--dataset", dataset, "--method", "arag-full", "--absent", "--out", str(out),
        "--profile", "paper", server=server, cache=tmp_path / "cache",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"] == "hippo-mini-absent" and "q2" in config["absent"]["left_out"]
    assert "q2" not in config["question_ids"] and config["absent"]["removed"] > 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["id"] == "q1" and first["absent"] and first["not_found"]
    assert all(r["absent"] and not r["not_found"] for r in records[1:])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["measures"]["absent_said"]["value"] == pytest.approx(1 / len(records))
    assert summary["measures"]["answerable"] is None
    analysis = run_cli("eval", "analyze", str(out), server=server, cache=tmp_path / "cache")
    assert analysis.returncode == 0, analysis.stderr
    tags = [json.loads(line)["tag"] for line in (out / "analysis.jsonl").read_text().splitlines()]
    assert tags == ["correct"] + ["made_up"] * (len(records) - 1)
    assert "absent_said" in analysis.stdout


def test_an_absent_run_of_some_ids_asks_over_the_corpus_of_a_run_of_all(tmp_path: Path, server: ScriptedServer) -> None:
    server.default = completion("Not in the documents.")
    dataset, cache = str(DATASETS / "hippo-mini"), tmp_path / "cache"
    every, some = tmp_path / "every", tmp_path / "some"
    ids = tmp_path / "ids.txt"
    ids.write_text("q1\n")
    for out, extra in ((every, []), (some, ["--ids-file", str(ids)])):
        proc = run_cli(
            "eval", "run", "--dataset", dataset, "--method", "direct", "--absent", "--out", str(out), *extra,
            server=server, cache=cache,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    first, second = (json.loads((out / "config.json").read_text()) for out in (every, some))
    assert first["corpus_file"] == second["corpus_file"] and first["absent"] == second["absent"]
    assert second["question_ids"] == ["q1"] and "q1" in first["question_ids"]
