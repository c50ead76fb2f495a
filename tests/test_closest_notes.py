"""benchmarks/closest_notes.py: a re-run's answer told apart as the change's effect or as drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "closest_notes.py"
spec = importlib.util.spec_from_file_location("closest_notes", SCRIPT)
assert spec and spec.loader
closest_notes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(closest_notes)


def step(tool: str, arguments: dict[str, Any], observation: str, thought: str = "") -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments, "observation": observation, "thought": thought}


SEARCH = step("keyword_search", {"keywords": ["Kestrel"]}, "hits")
READ = step("chunk_read", {"chunk_ids": ["a#0"]}, 'text\nClosest to the question: "A." [chunk a#0]. If this answers')


def record(prediction: str, *steps: dict[str, Any], answer_from: str = "model") -> dict[str, Any]:
    return {"prediction": prediction, "not_found": False, "trajectory": list(steps), "answer_from": answer_from}


def test_an_answer_is_changed_by_the_change_when_an_observation_differs_first() -> None:
    other_note = {**READ, "observation": 'text\nClosest to the question: "It B." [chunk a#0]. If this answers'}
    later = step("keyword_search", {"keywords": ["B"]}, "hits")
    assert closest_notes.why_differs(record("x", SEARCH, READ), record("y", SEARCH, other_note, later)) == "changed"


def test_an_answer_drifted_when_the_model_parted_with_every_observation_the_same() -> None:
    first_call_differs = step("keyword_search", {"keywords": ["Kestrel", "founder"]}, "other hits")
    assert closest_notes.why_differs(record("x", SEARCH, READ), record("y", first_call_differs)) == "drift"
    # the same steps, another answer of the model's own: drift; of the harness's (a ranking): the change
    assert closest_notes.why_differs(record("x", SEARCH, READ), record("y", SEARCH, READ)) == "drift"
    harness = record("y", SEARCH, READ, answer_from="the closest sentence read")
    assert closest_notes.why_differs(record("x", SEARCH, READ), harness) == "changed"


def test_the_same_answer_is_the_same_whatever_the_path() -> None:
    assert closest_notes.why_differs(record("x", SEARCH, READ), record("x", READ)) == "same"


def test_a_note_is_read_off_a_recorded_read() -> None:
    assert closest_notes.notes(record("x", SEARCH, {**READ, "observation": "[chunk a#0]\n" + READ["observation"]})) == [
        (["a#0"], ("A.", "a#0"))
    ]
