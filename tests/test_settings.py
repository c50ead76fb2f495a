from __future__ import annotations

import json
from pathlib import Path

import pytest

from arag.agent.prompts import system_prompt
from arag.errors import ConfigError
from arag.settings import load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith(("ARAG_", "OPENAI_")):
            monkeypatch.delenv(key)


def test_defaults_have_descriptions() -> None:
    from arag.settings import Settings

    def walk(model: type) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if not field.description:
                missing.append(f"{model.__name__}.{name}")
            annotation = field.annotation
            if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
                missing += walk(annotation)
        return missing

    assert walk(Settings) == []


def test_reference_env_names_and_openai_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-fallback/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    monkeypatch.setenv("ARAG_MODEL", "gpt-4o-mini")
    settings = load_settings()
    assert (settings.llm.base_url, settings.llm.api_key, settings.llm.model) == (
        "http://openai-fallback/v1",
        "sk-fallback",
        "gpt-4o-mini",
    )
    monkeypatch.setenv("ARAG_BASE_URL", "http://arag/v1")
    assert load_settings().llm.base_url == "http://arag/v1"  # ARAG_* wins over OPENAI_*


def test_precedence_file_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "settings.toml"
    config.write_text('[agent]\nmax_steps = 7\ntoken_budget = 5000\n[llm]\nmodel = "from-file"\ntemperature = 0.3\n')
    settings = load_settings(config)
    assert (settings.agent.max_steps, settings.llm.model, settings.llm.temperature) == (7, "from-file", 0.3)
    monkeypatch.setenv("ARAG_AGENT__MAX_STEPS", "12")
    monkeypatch.setenv("ARAG_MODEL", "from-env")
    settings = load_settings(config)
    assert (settings.agent.max_steps, settings.llm.model, settings.agent.token_budget) == (12, "from-env", 5000)
    settings = load_settings(config, {"agent": {"max_steps": 3}, "llm": {"model": None}})
    assert settings.agent.max_steps == 3 and settings.llm.model == "from-env"  # None means "flag not given"


def test_unknown_and_invalid_keys_are_errors(tmp_path: Path) -> None:
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"agent": {"max_stepz": 3}}))
    with pytest.raises(ConfigError, match=r"agent\.max_stepz"):
        load_settings(config)
    config.write_text(json.dumps({"agent": {"max_steps": 0}}))
    with pytest.raises(ConfigError, match=r"agent\.max_steps"):
        load_settings(config)
    config.write_text("{broken")
    with pytest.raises(ConfigError, match="not valid"):
        load_settings(config)
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "missing.toml")


def test_system_prompt_is_a_data_file_and_overridable(tmp_path: Path) -> None:
    assert "[chunk ID]" in system_prompt()
    custom = tmp_path / "prompt.md"
    custom.write_text("You are a terse research assistant.")
    assert system_prompt(None, custom) == "You are a terse research assistant."
