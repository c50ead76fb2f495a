"""The web page in headless Chromium (Debian's chromium + chromium-driver, driven by selenium; no browser is
downloaded): ask and watch the steps arrive before the answer, open a citation, follow up in a conversation and
open a citation with its supporting sentence highlighted, browse the corpus, open a run
and a trajectory, compare runs, and check that corpus text containing markup renders as text.

Screenshots go to $UI_SCREENSHOTS (docs/ui when refreshing the README's pictures), else a temp folder."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from arag.corpus.build import build_index
from arag.index import Index
from conftest import FIXTURES, fake_settings
from support.live_server import LiveServer, serve
from support.scripted_server import ScriptedServer, completion, tool_call

pytestmark = pytest.mark.browser  # a tier of its own: -m "not browser" leaves it out

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
HOSTILE = (
    "The Glass Orchard\nThe Glass Orchard is a garden kept by head gardener Ottoline Varga. "
    '<script>window.__pwned = 1</script> Visitors once left a note: <img src=x onerror="window.__pwned = 2">. '
    "The orchard opens at dawn."
)


@pytest.fixture(scope="module")
def corpus_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    folder = tmp_path_factory.mktemp("web")
    shutil.copy(FIXTURES / "hipporag_corpus.json", folder / "hipporag_corpus.json")
    (folder / "orchard.md").write_text(HOSTILE)
    build_index([folder / "hipporag_corpus.json", folder / "orchard.md"], folder / "idx", fake_settings())
    return Index.open(folder / "idx", threads=1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    golds = ["20 March 851", "Lotharingia", "Ottoline Varga"]
    for name, predictions in (("naive-rag", ["20 March 851", "Francia", "?"]), ("arag-full", [*golds[:2], "no"])):
        (root / name).mkdir()
        records = [
            {"id": str(i), "question": f"Question {i}?", "gold": [g], "prediction": p, "contain_acc": float(p == g),
             "stop_reason": "answered", "steps": 2, "retrieved_tokens": 40, "latency_s": 2.0,
             "retrieval_recall": 1.0, "read_recall": 1.0, "error": None,
             "trajectory": [{"tool": "keyword_search", "arguments": {"keywords": ["Lothair"]},
                             "observation": "<b>not bold</b> hit 1", "retrieved_tokens": 12, "latency_s": 0.01}]}
            for i, (g, p) in enumerate(zip(golds, predictions, strict=True))
        ]  # fmt: skip
        (root / name / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        (root / name / "config.json").write_text(json.dumps({"method": name, "dataset": "mini"}))
    return root


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), f"{path} is missing: apt-get install chromium chromium-driver (.ci/run does)"
    os.environ["SE_OFFLINE"] = "true"  # selenium must never try to download a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = Path(os.environ.get("TMPDIR", "/tmp")) / f"arag-chromium-{os.getpid()}"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


@pytest.fixture(scope="module")
def site(corpus_index: Index, llm: ScriptedServer, runs: Path) -> Iterator[LiveServer]:
    server = serve(corpus_index, llm, runs=runs)
    yield server
    server.close()


def shot(driver: object, name: str) -> None:
    folder = Path(os.environ.get("UI_SCREENSHOTS") or Path(os.environ.get("TMPDIR", "/tmp")) / "arag-ui")
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{name}.png"))  # type: ignore[attr-defined]


def wait(driver: object, condition: object, seconds: float = 30) -> object:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.05).until(condition)  # type: ignore[arg-type]


def test_ask_shows_steps_before_the_answer_and_opens_citations(browser, site: LiveServer, llm: ScriptedServer) -> None:
    from selenium.webdriver.common.by import By

    llm.delay_s = 0.8  # each model call takes a while: the steps must show up before the answer
    llm.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Ermengarde"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]}, "c2")]),
        completion("She died on 20 March 851 [chunk Ermengarde of Tours#0]."),
    ]
    try:
        browser.get(site.url + "/")
        browser.find_element(By.ID, "question").send_keys("When did Lothair II's mother die?")
        browser.find_element(By.ID, "ask-button").click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#steps li.step"))
        assert not browser.find_element(By.ID, "answer").is_displayed()  # a step is there, the answer is not yet
        wait(browser, lambda d: d.find_element(By.ID, "answer").is_displayed())
    finally:
        llm.delay_s = 0.0
    steps = browser.find_elements(By.CSS_SELECTOR, "#steps li.step summary")
    assert [s.text.split(" ")[0] for s in steps] == ["keyword_search", "chunk_read"]
    assert browser.find_element(By.ID, "answer-text").text == "She died on 20 March 851 [chunk Ermengarde of Tours#0]."
    assert "answered · 2 steps" in browser.find_element(By.ID, "answer-meta").text
    browser.find_element(By.CSS_SELECTOR, "#citations button.citation").click()
    wait(browser, lambda d: d.find_element(By.ID, "chunk-view").is_displayed())
    assert browser.find_element(By.ID, "chunk-title").text == "Ermengarde of Tours#0"
    assert "Ermengarde of Tours" in browser.find_element(By.ID, "chunk-text").text
    assert "chunk 1 of 1" in browser.find_element(By.ID, "chunk-where").text
    shot(browser, "ask")


def test_a_follow_up_in_the_page_keeps_the_thread_and_highlights_the_cited_sentence(
    browser, site: LiveServer, llm: ScriptedServer
) -> None:
    from selenium.webdriver.common.by import By

    llm.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair II"]})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]}, "c2")]),
        completion("Ermengarde of Tours [chunk Lothair II#0]."),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Ermengarde of Tours#0"]}, "c3")]),
        completion("Ermengarde of Tours died on 20 March 851 [chunk Ermengarde of Tours#0]."),
    ]
    browser.get(site.url + "/")
    browser.find_element(By.ID, "question").send_keys("Who was Lothair II's mother?")
    browser.find_element(By.ID, "ask-button").click()
    wait(browser, lambda d: d.find_element(By.ID, "answer").is_displayed())
    assert browser.find_element(By.ID, "answer-text").text == "Ermengarde of Tours [chunk Lothair II#0]."
    browser.find_element(By.ID, "followup").send_keys("And when did she die?")
    browser.find_element(By.ID, "followup-button").click()
    wait(browser, lambda d: "851" in d.find_element(By.ID, "answer-text").text)
    turns = browser.find_elements(By.CSS_SELECTOR, "#thread li.turn")
    assert len(turns) == 1 and turns[0].find_element(By.CSS_SELECTOR, ".q").text == "Who was Lothair II's mother?"
    assert turns[0].find_element(By.CSS_SELECTOR, ".a").text == "Ermengarde of Tours [chunk Lothair II#0]."
    # the follow-up reached the model after the first turn
    assert any("Who was Lothair II's mother?" in str(m.get("content")) for m in llm.requests[-2]["messages"])
    citation = browser.find_element(By.CSS_SELECTOR, "#citations button.citation")
    assert citation.text == "Ermengarde of Tours#0 — hipporag_corpus.json"
    citation.click()
    wait(browser, lambda d: d.find_elements(By.ID, "chunk-sentence"))
    sentence = browser.find_element(By.ID, "chunk-sentence").text
    assert "20 March 851" in sentence and sentence in browser.find_element(By.ID, "chunk-text").text
    assert browser.find_element(By.ID, "chunk-where").text.startswith("hipporag_corpus.json — ")
    shot(browser, "followup")
    browser.find_element(By.ID, "new-conversation").click()
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "#thread li.turn"))
    assert browser.find_element(By.ID, "question").is_enabled()


def test_corpus_search_renders_markup_as_text(browser, site: LiveServer) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site.url + "/")
    browser.find_element(By.CSS_SELECTOR, "button[data-tab=corpus]").click()
    browser.find_element(By.ID, "keywords").send_keys("orchard, script")
    browser.find_element(By.CSS_SELECTOR, "#keyword-form button").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits li"))
    hit = browser.find_element(By.CSS_SELECTOR, "#hits > li")
    assert hit.find_element(By.CSS_SELECTOR, ".hit-id").text == "orchard.md#0"
    assert "<script>window.__pwned = 1</script>" in hit.text  # shown as text
    assert [m.text.lower() for m in hit.find_elements(By.TAG_NAME, "mark")][:2] == ["orchard", "orchard"]
    hit.find_element(By.CSS_SELECTOR, ".hit-id").click()
    wait(browser, lambda d: d.find_element(By.ID, "chunk-view").is_displayed())
    assert '<img src=x onerror="window.__pwned = 2">' in browser.find_element(By.ID, "chunk-text").text
    assert browser.find_elements(By.CSS_SELECTOR, "#hits img, #chunk-view img, #hits script") == []
    assert browser.execute_script("return window.__pwned === undefined")
    browser.find_element(By.ID, "query").send_keys("mistress of Lothair")
    browser.find_element(By.CSS_SELECTOR, "#semantic-form button").click()
    wait(browser, lambda d: "chunks" in d.find_element(By.ID, "search-status").text)
    shot(browser, "corpus")


def test_the_page_shows_who_reads_and_hides_what_its_token_may_not_read(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from arag.serve.access import Access, TokenFile
    from arag.serve.http import create_app
    from arag.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "orchard.md").write_text("---\naccess: [gardeners]\n---\nThe orchard key is under the third stone.\n")
    (docs / "gate.md").write_text("The orchard gate opens at dawn.\n")
    build_index([docs], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    file = TokenFile(tmp_path / "tokens.json")
    token = file.add("visitor", "read", ["default"], ["visitors"])
    server = LiveServer(create_app(index, Settings(), None, access=Access.load(file.path, None)))
    try:
        browser.get(f"{server.url}/?token={token}")
        wait(browser, lambda d: "visitor reads" in d.find_element(By.ID, "who").text)
        assert browser.find_element(By.ID, "who").text == "· visitor reads the open documents and those of visitors"
        wait(browser, lambda d: d.find_element(By.ID, "index-info").text.startswith("1 documents, 1 chunks"))
        browser.find_element(By.CSS_SELECTOR, "button[data-tab=corpus]").click()
        browser.find_element(By.ID, "keywords").send_keys("orchard")
        browser.find_element(By.CSS_SELECTOR, "#keyword-form button").click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits li"))
        assert [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#hits .hit-id")] == ["docs/gate.md#0"]
        assert "third stone" not in browser.page_source
        shot(browser, "principal")
    finally:
        server.close()
        index.close()


def test_runs_open_a_trajectory_and_compare(browser, site: LiveServer) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site.url + "/")
    browser.find_element(By.CSS_SELECTOR, "button[data-tab=runs]").click()
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr")) == 2)
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr")
    assert rows[0].text.startswith("arag-full arag-full mini 3 66.7 [")
    rows[0].click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#run-view tr.clickable"))
    questions = browser.find_elements(By.CSS_SELECTOR, "#run-view tr.clickable")
    assert [q.find_element(By.TAG_NAME, "td").text for q in questions] == ["✓", "✓", "✗"]
    assert questions[2].find_elements(By.TAG_NAME, "td")[5].text == "reasoning"  # its failure tag
    shot(browser, "run")
    questions[0].click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#run-view li.step"))
    step = browser.find_element(By.CSS_SELECTOR, "#run-view li.step")
    step.find_element(By.TAG_NAME, "summary").click()
    assert "<b>not bold</b> hit 1" in step.text and browser.find_elements(By.CSS_SELECTOR, "#run-view b") == []
    shot(browser, "trajectory")
    browser.find_element(By.CSS_SELECTOR, "#compare-a option[value=naive-rag]").click()
    browser.find_element(By.CSS_SELECTOR, "#compare-b option[value=arag-full]").click()
    browser.find_element(By.ID, "compare-button").click()
    wait(browser, lambda d: "differ first" in d.find_element(By.ID, "run-view").text)
    first_row = browser.find_elements(By.CSS_SELECTOR, "#run-view table tr")[1]
    assert first_row.text.startswith("Question 1?")  # the question where the two runs differ comes first
    shot(browser, "compare")
