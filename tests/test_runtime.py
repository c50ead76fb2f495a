"""Which chat model a run gets: the embedded server's options come from settings (no model is loaded here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arag.models import choice as runtime
from arag.models import local as local_llm
from arag.settings import LLMSettings, Settings


class _FakeServer:
    def __init__(self, model_path: Path, **options: Any) -> None:
        self.options = {"path": model_path, **options}  # runtime passes every option by name
        self.base_url, self.model_name = "http://127.0.0.1:9/v1", model_path.stem


@pytest.fixture
def fake_local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[_FakeServer]:
    started: list[_FakeServer] = []

    def server(*args: Any, **kwargs: Any) -> _FakeServer:
        started.append(_FakeServer(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(local_llm, "LocalServer", server)
    monkeypatch.setattr(local_llm, "local_available", lambda: True)
    monkeypatch.setattr(local_llm, "resolve_model", lambda spec=None: tmp_path / "model.gguf")
    monkeypatch.setattr(runtime, "_servers", {})
    return started


def test_embedded_model_gets_lookup_decoding_from_settings(fake_local: list[_FakeServer]) -> None:
    model, embedded = runtime.chat_model(Settings(), threads=2)
    assert embedded and model.local and fake_local[0].options["lookup_tokens"] == LLMSettings().lookup_tokens == 0
    runtime.chat_model(Settings(), threads=2)
    assert len(fake_local) == 1  # one server per process and options
    runtime.chat_model(Settings(llm=LLMSettings(lookup_tokens=8)), threads=2)
    assert len(fake_local) == 2 and fake_local[1].options["lookup_tokens"] == 8


def test_embedded_model_gets_flash_attention_from_settings(fake_local: list[_FakeServer]) -> None:
    runtime.chat_model(Settings(), threads=2)
    assert fake_local[0].options["flash_attention"] == LLMSettings().flash_attention == "off"
    runtime.chat_model(Settings(llm=LLMSettings(flash_attention="on")), threads=2)
    assert len(fake_local) == 2 and fake_local[1].options["flash_attention"] == "on"  # a server per setting


def test_flash_attention_names_map_to_llama_cpp_values() -> None:
    import xllamacpp  # the tests' 'local-test' extra installs it, as for tests/test_local_model.py

    kinds = xllamacpp.llama_flash_attn_type
    assert {
        "auto": int(kinds.LLAMA_FLASH_ATTN_TYPE_AUTO),
        "off": int(kinds.LLAMA_FLASH_ATTN_TYPE_DISABLED),
        "on": int(kinds.LLAMA_FLASH_ATTN_TYPE_ENABLED),
    } == local_llm.FLASH_ATTENTION


def test_flash_attention_setting_takes_only_known_values() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        LLMSettings(flash_attention="fast")  # type: ignore[arg-type]


def test_lookup_tokens_setting_is_bounded() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        LLMSettings(lookup_tokens=-1)
    with pytest.raises(ValidationError):
        LLMSettings(lookup_tokens=65)
