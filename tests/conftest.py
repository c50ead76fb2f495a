from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from arag.corpus.build import build_index
from arag.index import Index
from arag.settings import IndexSettings
from support.scripted_server import ScriptedServer

# no test asserts on wall-clock time, hypothesis's per-example deadline included: two cores shared with a
# benchmark or a model made a 0.3 s example fail a 200 ms deadline
settings.register_profile("arag", deadline=None)
settings.load_profile("arag")

FIXTURES = Path(__file__).parent / "fixtures"
SLOW_TIERS = ("model", "postgres", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test of a slow tier (a real model, PostgreSQL, a browser) is also ``slow``: ``-m "not slow"`` is the quick
    unit tier, ``-m postgres`` (or model, browser) one tier; CI runs them all."""
    for item in items:
        if any(item.get_closest_marker(tier) for tier in SLOW_TIERS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (tests/support/scripted_server.py), closed after the test."""
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


# FUZZ_SCALE=10 multiplies every property-based test's example count (docs/reliability.md: the campaign)
FUZZ_SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Derived model files go to a per-session directory, never the user's cache."""
    path = tmp_path_factory.mktemp("arag-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARAG_CACHE_DIR", str(path))
        yield path


def fake_settings(**kwargs) -> IndexSettings:
    return IndexSettings(embedder="fake", threads=1, **kwargs)


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """A writable copy of the fixture corpus."""
    target = tmp_path / "corpus"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture(scope="session")
def hippo_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    path = tmp_path_factory.mktemp("hippo") / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], path, fake_settings())
    return Index.open(path, threads=1)


@pytest.fixture(scope="session")
def chunks_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    path = tmp_path_factory.mktemp("chunks") / "idx"
    build_index([FIXTURES / "arag_chunks.json"], path, fake_settings())
    return Index.open(path, threads=1)


@pytest.fixture(scope="session")
def people_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    """120 short biographies where "director" and "father" are everywhere, and one film named once."""
    folder = tmp_path_factory.mktemp("people")
    docs = [
        {
            "title": f"Person {i}",
            "text": f"Person {i} was a film director, an art director and a stage director. "
            f"His father was a director too. He was born in Town {i}.",
        }
        for i in range(120)
    ]
    docs.append({"title": "Fortunella", "text": "Fortunella is a 1958 Italian film by Eduardo De Filippo."})
    docs.append({"title": "Town 7", "text": "Town 7 is a village. Its mayor was a former director."})
    (folder / "corpus.json").write_text(json.dumps(docs), encoding="utf-8")
    build_index([folder / "corpus.json"], folder / "idx", fake_settings())
    return Index.open(folder / "idx", threads=1)


def folder_index(tmp_path_factory: pytest.TempPathFactory, name: str, files: dict[str, str]) -> Index:
    """An index (fake embedder) of a folder ``name`` holding ``files`` (file name → text)."""
    folder = tmp_path_factory.mktemp(name) / name
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    build_index([folder], folder.parent / "idx", fake_settings())
    return Index.open(folder.parent / "idx", threads=1)


def fake_run(index: Index, *policies: str, question: str = "q?", view: object = None, **settings: object):
    """A RunState over ``index`` with no model behind it (the policies' unit tests drive it by hand), and the
    named policies started on it, as the loop starts them (their run limits applied)."""
    from arag.agent.state import RunState
    from arag.harness.compose import Harness
    from arag.harness.profiles import policy_configs
    from arag.harness.registry import POLICIES
    from arag.settings import AgentSettings
    from arag.tools import ResultView, Toolkit

    agent_settings = AgentSettings(**settings)  # type: ignore[arg-type]
    configs = policy_configs(agent_settings)
    toolkit = Toolkit(index, view=view if isinstance(view, ResultView) else ResultView())
    toolkit.focus_query = question
    run = RunState(question, "system", toolkit, agent_settings, lambda call, text: {"role": "user", "content": text})
    started = [POLICIES[name](configs[name], agent_settings) for name in policies]
    start = Harness(started).start(run)
    run.limits = run.limits.combine(start.limits)
    if start.says:
        run.tell(start.says)
    return run, started


def guarded_call(run, policies, name: str, arguments: dict[str, object]):
    """One new tool call as the loop makes it, then shown to the model with the policies' notes."""
    from dataclasses import replace

    from arag.agent.loop import new_call
    from arag.harness.compose import Harness
    from arag.tools import ToolCall

    harness = Harness(policies)
    call, result = new_call(run, harness, ToolCall(name, arguments))
    notes = harness.notes(run, result)
    if notes:
        result = replace(result, observation=result.observation + "".join(f"\n{n}" for n in notes))
    run.observe(call, result)
    return result
