"""The harness's contract, checked: the paper's agent and tools name no policy, a policy only returns effects,
what compose.py makes of a bundle does not depend on the order a profile lists it in, and the loop ends whatever
the policies do. (Each policy's own behaviour: test_policies.py.)"""

from __future__ import annotations

import ast
import io
import json
import shutil
import tokenize
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arag
from arag.agent import Agent, AgentResult, Step
from arag.agent.actions import Action
from arag.corpus.build import build_index
from arag.errors import ConfigError
from arag.eval.runner import check_run_dir
from arag.eval.runs import confident_stop_threshold, load_runs, threshold_changes
from arag.harness import POLICIES, Hold, NextAction, Policy, load_profile, register
from arag.harness.profiles import policy_configs, resolved_policy_settings, with_default_settings
from arag.index import Index
from arag.models.endpoint import ChatTurn, Usage
from arag.settings import AgentSettings
from conftest import FIXTURES, fake_settings
from support.eval_cli import run_cli
from support.random_model import RandomModel, varied_corpus
from support.scripted_server import ScriptedServer

SRC = Path(arag.__file__).parent
CORE = [*sorted((SRC / "agent").rglob("*.py")), *sorted((SRC / "tools").rglob("*.py"))]
POLICY_MODULES = sorted((SRC / "harness" / "policies").glob("[!_]*.py"))
QUESTIONS = [
    "When did Lothair II's mother die?",
    "Who died first, Hucbert or Anne of Kiev?",
    "Did Ermengarde of Tours die in 851?",
    "What did the abbot's sister marry?",
    "Who was Person 12's father?",
    "In which year did the monk who keeps the scriptorium ledger join the abbey?",
    "What is the annual parking budget of the abbey?",
]
EXTRAS = ["option_check", "supported_answer", "same_name", "confident_stop", "repeat_stop"]


@pytest.fixture(scope="module")
def harness_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    folder = tmp_path_factory.mktemp("harness")
    build_index([varied_corpus(folder)], folder / "idx", fake_settings())
    return Index.open(folder / "idx", threads=1)


# ---------------------------------------------------------------- the paper's core names no policy
def test_the_papers_agent_and_tools_name_no_policy() -> None:
    names = set(POLICIES)
    assert set(load_profile("compact").policies) <= names and CORE
    for path in CORE:
        for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            where = f"{path.relative_to(SRC)}:{token.start[0]}"
            if token.type == tokenize.NAME:
                assert token.string not in names, f"{where} names the policy {token.string}"
            elif token.type == tokenize.STRING:
                text = token.string
                assert not any(text.strip("\"'frbu") == name for name in names), f"{where}: {text}"
                assert not [name for name in names if "_" in name and name in text], f"{where}: {text[:80]}"
            elif token.type == tokenize.COMMENT:
                assert not [name for name in names if "_" in name and name in token.string], f"{where}"
    for prompt in (SRC / "agent" / "prompts").glob("*.md"):
        assert not [name for name in names if "_" in name and name in prompt.read_text(encoding="utf-8")]


def test_no_field_of_a_result_a_step_or_an_action_is_one_policys() -> None:
    agent_settings = AgentSettings()
    configs = policy_configs(agent_settings)
    declared = {f.name for cls in POLICIES.values() for f in cls(configs[cls.name], agent_settings).fields()}
    assert {"plan", "found", "confidence"} <= declared  # the premise: these are policies' fields
    for record in (AgentResult, Step, Action, NextAction):
        owned = {f.name for f in fields(record)} & (set(POLICIES) | declared | {"rereads"})
        assert not owned, f"{record.__name__} has fields of single policies: {owned}"


# ---------------------------------------------------------------- a policy returns effects, and writes nothing
HOOK_ARGUMENTS = {"run", "result", "call", "offer", "base", "spec"}
MUTATORS = {
    "append", "extend", "add", "update", "pop", "clear", "remove", "discard", "setdefault", "insert", "popitem",
    "tell", "observe", "finish", "fail", "remember", "record_turn", "record_action", "call", "call_tool",
    "harness_call", "harness_read", "reread_answer", "answer_instead", "record", "retitle",
}  # fmt: skip


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


@pytest.mark.parametrize("path", POLICY_MODULES, ids=lambda p: p.stem)
def test_a_policy_writes_nothing_but_its_own_state_and_imports_no_other_policy(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        while any(isinstance(t, ast.Tuple | ast.List) for t in targets):
            targets = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t])]
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript):
                assert _root(target) == "self", f"{path.name}:{node.lineno} assigns to {ast.unparse(target)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            root = _root(node.func)
            called = f"{path.name}:{node.lineno} calls {ast.unparse(node.func)}"
            assert not (root in HOOK_ARGUMENTS and node.func.attr in MUTATORS), called
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("setattr", "delattr", "exec", "eval"), f"{path.name}:{node.lineno}"
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            assert not module.startswith(("arag.harness.policies", "arag.agent")), f"{path.name} imports {module}"
            assert not (module == "arag.harness" and any(a.name == "policies" for a in node.names)), path.name
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("arag.harness.policies") for a in node.names), path.name


def test_every_packaged_policy_is_documented_and_owns_its_settings() -> None:
    for name, cls in POLICIES.items():
        module = cls.__module__
        assert module == f"arag.harness.policies.{name}", f"{name} lives in {module}"
        assert cls.summary and cls.__doc__ and len(cls.__doc__) > 80, name
        assert cls.Settings.__module__ in (module, "arag.harness.contract"), f"{name}: settings from elsewhere"
    bundled = set(load_profile("compact").policies) | set(load_profile("paper").policies)
    assert bundled <= set(POLICIES)


# ---------------------------------------------------------------- the order of a profile changes nothing
def _profile(tmp_path: Path, policies: list[str]) -> Path:
    path = tmp_path / f"profile-{abs(hash(tuple(policies)))}.toml"
    compact = (SRC / "harness" / "profiles" / "compact.toml").read_text(encoding="utf-8")
    start, end = compact.index("policies = ["), compact.index("]", compact.index("policies = [")) + 1
    path.write_text(compact[:start] + f"policies = {json.dumps(policies)}" + compact[end:], encoding="utf-8")
    return path


def _runs(index: Index, profile: Path, seed: int, local: bool, **options: Any) -> tuple[list[str], list[Any]]:
    """Every request the model was sent and every result, on the test questions (latencies left out)."""
    model = RandomModel(seed, local)
    agent = Agent(index, model, AgentSettings(profile=str(profile), **options))  # type: ignore[arg-type]
    results = []
    for question in QUESTIONS:
        result = agent.run(question).to_dict()
        result.pop("latency_s")
        for step in result["trajectory"]:
            step.pop("latency_s")
        for call in result["model_calls"]:
            call.pop("latency_s")
        results.append(result)
    return model.requests, results


@settings(max_examples=12)
@given(data=st.data())
def test_a_profiles_order_changes_no_request_and_no_result(
    harness_index: Index, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp_path = tmp_path_factory.mktemp("order")
    extras = data.draw(st.lists(st.sampled_from(EXTRAS), unique=True, max_size=4), label="extras")
    listed = [*load_profile("compact").policies, *extras]
    shuffled = data.draw(st.permutations(listed), label="order")
    seed, local = data.draw(st.integers(0, 10**6), label="seed"), data.draw(st.booleans(), label="local")
    action_mode = data.draw(st.sampled_from(["auto", "flat-json"]), label="actions")
    first = _runs(harness_index, _profile(tmp_path, listed), seed, local, action_mode=action_mode)
    again = _runs(harness_index, _profile(tmp_path, list(shuffled)), seed, local, action_mode=action_mode)
    assert first[0] == again[0]  # the same constraints (grammars), edits and observations, request by request
    assert first[1] == again[1]  # the same answers, trajectories, acts and records


def test_the_random_model_reaches_every_policy(harness_index: Index, tmp_path: Path) -> None:
    """The premise of the order test: on these questions the random model's runs make every policy act."""
    acted: set[str] = set()
    profile = _profile(tmp_path, [*load_profile("compact").policies, *EXTRAS])
    for seed in range(12):
        for result in _runs(harness_index, profile, seed, local=True)[1]:
            acted |= set(result["policies_acted"])
    assert acted == set(load_profile("compact").policies) | set(EXTRAS)


# ---------------------------------------------------------------- the loop ends, whatever the policies do
class HoldsForever(Policy):
    """Sends every answer back (a user's policy gone wrong): the loop's own bound on model calls ends the run."""

    name = "holds_forever_for_test"
    summary = "holds every answer"

    def on_answer(self, run: Any, answer: str) -> Hold:
        return Hold("Not yet: answer again.")


class AlwaysAnswers(RandomModel):
    def complete(self, messages: list[dict[str, Any]], **request: Any) -> ChatTurn:
        self.requests.append(json.dumps(messages))
        content = json.dumps({"answer": "Tours"})
        return ChatTurn({"role": "assistant", "content": content}, content, [], "stop", Usage(10, 3, 0, 1))


@pytest.fixture(scope="module")
def holds_forever() -> Any:
    register(HoldsForever)
    yield HoldsForever
    del POLICIES[HoldsForever.name]


@pytest.mark.parametrize("max_steps", [1, 4, 10])
def test_a_policy_that_always_holds_cannot_keep_the_loop_going(
    harness_index: Index, holds_forever: Any, max_steps: int
) -> None:
    # answer_in_text off: "Tours" is in no text shown on the runs that read nothing (its own tests cover that)
    agent_settings = AgentSettings(max_steps=max_steps, policies=[f"+{holds_forever.name}", "-answer_in_text"])
    agent = Agent(harness_index, AlwaysAnswers(0), agent_settings)
    result = agent.run("When did Lothair II's mother die?")
    assert agent.max_model_calls == 2 * max_steps + 6
    assert result.stop_reason == "model_calls" and result.answer.startswith("Tours")
    assert len(result.model_calls) == agent.max_model_calls + 1  # the bound, then the forced answer
    capped = Agent(harness_index, AlwaysAnswers(0), agent_settings.model_copy(update={"max_model_calls": 3}))
    assert len(capped.run("When did Lothair II's mother die?").model_calls) == 4


@settings(max_examples=25)
@given(seed=st.integers(0, 10**6), max_steps=st.integers(1, 6), hold=st.booleans(), local=st.booleans())
def test_model_calls_stay_within_the_loops_bound(
    harness_index: Index, holds_forever: Any, seed: int, max_steps: int, hold: bool, local: bool
) -> None:
    switches = [f"+{name}" for name in EXTRAS] + ([f"+{holds_forever.name}"] if hold else [])
    agent = Agent(harness_index, RandomModel(seed, local), AgentSettings(max_steps=max_steps, policies=switches))
    rereaders = len([p for p in agent.bundle.harness().policies if type(p).reread is not Policy.reread])
    for question in QUESTIONS[:3]:
        result = agent.run(question)
        assert len(result.model_calls) <= agent.max_model_calls + 1 + rereaders
        # the packaged policies hold an answer only so often: only a policy that always holds meets the bound
        assert hold or result.stop_reason != "model_calls"


# ---------------------------------------------------------------- runs recorded before the harness
def test_a_run_recorded_before_the_harness_still_loads(tmp_path: Path, server: ScriptedServer) -> None:
    """tests/fixtures/runs/before-harness was written by the code before the harness (98342be): records with
    "plan", "rereads" and each step's "confidence", its config with every policy's settings in full."""
    run = shutil.copytree(FIXTURES / "runs" / "before-harness", tmp_path / "run")
    (loaded,) = load_runs([run])
    records = loaded["records"]
    assert len(records) == 3 and records[2]["rereads"][0]["policy"] == "phrase_answer"
    assert confident_stop_threshold(run) == 0.8
    assert threshold_changes(records[0], 0.8, 0.5)  # read off the steps' recorded confidences
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    # what a run records of the policies' settings is what it recorded then, a setting added since at its default
    # (the behaviour before it): such a run can be resumed, and not under another value of a setting
    recorded = config["settings"]["agent"]["policy"]
    assert resolved_policy_settings(AgentSettings()) == with_default_settings(recorded)
    now = {**config, "settings": {**config["settings"], "agent": {**config["settings"]["agent"]}}}
    now["settings"]["agent"]["policy"] = resolved_policy_settings(AgentSettings())
    check_run_dir(run, now)
    other = AgentSettings(policy={"closest_sentence": {"pronouns": True}})
    now["settings"]["agent"]["policy"] = resolved_policy_settings(other)
    with pytest.raises(ConfigError, match=r"closest_sentence\.pronouns"):
        check_run_dir(run, now)
    for command in (["report", str(run), "--out", str(tmp_path / "report")], ["analyze", str(run)]):
        done = run_cli("eval", *command, server=server, cache=tmp_path / "cache")
        assert done.returncode == 0, done.stderr
    exported = run_cli("eval", "export", str(run), "--out", str(tmp_path / "export"), server=server, cache=tmp_path)
    assert exported.returncode == 0 and (tmp_path / "export" / "train.jsonl").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the combination rules themselves
@given(st.lists(st.lists(st.sampled_from(["hit 1", "a#0", "b#0", "c#0", "d#0"]), unique=True), max_size=4))
def test_readable_ids_combine_as_an_intersection_whatever_the_order(lists: list[list[str]]) -> None:
    from arag.harness.compose import _intersection

    combined = _intersection(lists)
    assert combined is None if not lists else set(combined) == set.intersection(*map(set, lists))
    assert _intersection(list(reversed(lists))) == combined


@given(st.lists(st.tuples(st.none() | st.integers(1, 9), st.none() | st.integers(1, 9)), max_size=5))
def test_run_limits_combine_by_minimum(pairs: list[tuple[int | None, int | None]]) -> None:
    from arag.harness import Limits

    combined = Limits()
    for stall, reads in pairs:
        combined = combined.combine(Limits(stall, reads))
    stalls, reads = [p[0] for p in pairs if p[0] is not None], [p[1] for p in pairs if p[1] is not None]
    assert combined == Limits(min(stalls, default=None), min(reads, default=None))


def test_two_policies_cannot_add_one_field_or_two_notes() -> None:
    from arag.errors import ConfigError
    from arag.harness import Field
    from arag.harness.compose import declared_fields

    def adds(*added: Field) -> Policy:
        cls = type("Adds", (Policy,), {"name": f"adds_{id(added)}", "summary": "", "fields": lambda self: added})
        return cls(policy_configs(AgentSettings())["plan"], AgentSettings())

    plan, note = Field("plan", {"type": "string"}), Field("found", {"type": "string"}, place="note")
    assert set(declared_fields([adds(plan), adds(note)])) == {"plan", "found"}
    with pytest.raises(ConfigError, match="another policy's too"):
        declared_fields([adds(plan), adds(plan)])
    with pytest.raises(ConfigError, match="two notes"):
        declared_fields([adds(note), adds(Field("said", {"type": "string"}, place="note"))])
