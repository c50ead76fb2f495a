"""Which chat model a run gets: the embedded server's options come from settings (no model is loaded here)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from arag.models import choice as runtime
from arag.models import llama_build
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


@pytest.mark.parametrize("avx512", [True, False])
def test_embedded_model_gets_lookup_decoding_from_settings_or_its_build(
    fake_local: list[_FakeServer], monkeypatch: pytest.MonkeyPatch, avx512: bool
) -> None:
    info = "CPU : AVX2 = 1 | AVX512 = 1 |" if avx512 else "CPU : AVX2 = 1 |"
    monkeypatch.setattr(llama_build, "build_info", lambda: info)
    model, embedded = runtime.chat_model(Settings(), threads=2)
    assert LLMSettings().lookup_tokens is None  # unset: by the build
    assert embedded and model.local and fake_local[0].options["lookup_tokens"] == (8 if avx512 else 0)
    runtime.chat_model(Settings(), threads=2)
    assert len(fake_local) == 1  # one server per process and options
    runtime.chat_model(Settings(llm=LLMSettings(lookup_tokens=5)), threads=2)
    assert len(fake_local) == 2 and fake_local[1].options["lookup_tokens"] == 5
    runtime.chat_model(Settings(llm=LLMSettings(lookup_tokens=0)), threads=2)
    # 0 is off on any build: a server of its own, or the default's where the default is off
    assert [s.options["lookup_tokens"] for s in fake_local] == ([8, 5, 0] if avx512 else [0, 5])


def test_the_build_check_reads_llama_cpps_own_account() -> None:
    assert llama_build.built_for_avx512("CPU : AVX2 = 1 | AVX512 = 1 | OPENMP = 1 |")
    assert not llama_build.built_for_avx512("CPU : AVX2 = 1 | AVX512 = 0 |")
    assert not llama_build.built_for_avx512(None)  # no embedded model installed


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


# --- llama.cpp's OpenMP threads (libgomp reads how long to spin once, when xllamacpp is first imported) ---


def test_openmp_spin_count_is_set_unless_the_user_chose_a_wait_policy() -> None:
    unset: dict[str, str] = {}
    llama_build.set_openmp_waiting(unset)
    assert unset == {"GOMP_SPINCOUNT": llama_build.GOMP_SPIN_COUNT}
    for chosen in ({"OMP_WAIT_POLICY": "PASSIVE"}, {"GOMP_SPINCOUNT": "0"}):
        environ = dict(chosen)
        llama_build.set_openmp_waiting(environ)
        assert environ == chosen


@pytest.mark.parametrize("first_import", ["local_available", "build_info"])
def test_openmp_spin_count_is_set_before_xllamacpp_is_first_imported(
    first_import: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # the import fails: what matters is the environment before it
    check = local_llm.local_available if first_import == "local_available" else llama_build.build_info
    assert not check()
    assert os.environ["GOMP_SPINCOUNT"] == llama_build.GOMP_SPIN_COUNT


# --- the llama.cpp build for this CPU (scripts/setup.sh: python -m arag.models.llama_build) ---

SAPPHIRE_RAPIDS = (
    "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma f16c bmi2 avx512f avx512bw avx512vbmi avx512_vnni "
    "avx512_bf16 avx_vnni amx_tile amx_int8\n\nprocessor\t: 1\nflags\t\t: fpu\n"
)


def test_cpu_flags_are_read_from_the_first_processor() -> None:
    flags = llama_build.cpu_flags(SAPPHIRE_RAPIDS)
    assert {"avx512f", "avx512_vnni", "amx_int8"} <= flags
    assert llama_build.cpu_flags("processor\t: 0\n") == set()


def test_avx512_cpu_gets_each_extension_it_has_and_never_amx() -> None:
    options = llama_build.cmake_options(llama_build.cpu_flags(SAPPHIRE_RAPIDS))
    assert options is not None
    for option in ("GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16", "GGML_AVX_VNNI"):
        assert f"-D{option}=ON" in options
    assert "-DGGML_NATIVE=OFF" in options  # native would turn on AMX, which crashed
    assert not [o for o in options if "AMX" in o]
    assert "-DLLAMA_LLGUIDANCE=OFF" in options and "-DLLAMA_BUILD_BORINGSSL=OFF" in options  # offline
    only_f = llama_build.cmake_options({"avx", "avx2", "fma", "f16c", "bmi2", "avx512f"})
    assert only_f is not None and "-DGGML_AVX512=ON" in only_f and "-DGGML_AVX512_VNNI=ON" not in only_f


def test_cpu_without_avx512_or_without_the_wheels_baseline_keeps_the_wheel() -> None:
    assert llama_build.cmake_options({"avx", "avx2", "fma", "f16c", "bmi2"}) is None
    assert llama_build.cmake_options({"avx512f"}) is None  # no AVX2/FMA: not a CPU the options describe
    assert llama_build.cmake_options(set()) is None


class _Setup:
    """main() with the machine, pip and the compiler replaced: what it would build, install and keep."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, flags: str, installed: str, smoke: str | None) -> None:
        self.pip: list[tuple[str, ...]] = []
        self.built: list[list[str]] = []
        monkeypatch.setattr(llama_build, "this_cpu_flags", lambda: llama_build.cpu_flags(flags))
        monkeypatch.setattr(llama_build, "_installed_build_info", lambda: installed)
        monkeypatch.setattr(llama_build, "_smoke_test", lambda: smoke)
        monkeypatch.setattr(llama_build, "_pip", lambda *args, env=None: self.pip.append(args))
        monkeypatch.setattr(llama_build.importlib.metadata, "version", lambda name: "2026.10.11549")

        def build(options: list[str], version: str, build_constraint: Path | None = None) -> Path:
            self.built.append(options)
            return Path("/venv/llama-native/x/xllamacpp-2026.10.11549-cp310-abi3-linux_x86_64.whl")

        monkeypatch.setattr(llama_build, "build", build)


def test_build_pins_its_tools_and_keeps_one_wheel_per_version_options_and_pins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[str, ...]] = []

    def compile_wheel(
        command: list[str], env: dict[str, str] | None = None, expected: int | None = None, log: Path | None = None
    ) -> None:
        assert expected == llama_build.BUILD_FILES.get("2026.10.11549") and log is not None and log.parent.is_dir()
        calls.append(tuple(command))
        assert env is not None and env["CMAKE_ARGS"] == "-DGGML_AVX512=ON"
        assert command[1:4] == ["-m", "pip", "wheel"] and "--no-cache-dir" in command  # keyed by source alone
        staging = Path(command[command.index("-w") + 1])
        staging.mkdir(parents=True)
        (staging / "xllamacpp-2026.10.11549-cp310-abi3-linux_x86_64.whl").write_bytes(b"wheel")

    monkeypatch.setattr(llama_build, "compile_with_progress", compile_wheel)
    monkeypatch.setattr(llama_build.sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(llama_build.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    pins = tmp_path / "requirements-build.lock"
    pins.write_text("cython==3.3.1\n", encoding="utf-8")
    wheel = llama_build.build(["-DGGML_AVX512=ON"], "2026.10.11549", pins)
    assert calls[0][calls[0].index("--build-constraint") + 1] == str(pins)
    assert wheel.is_file() and wheel.parent.parent == tmp_path / "venv" / "llama-native"
    assert llama_build.build(["-DGGML_AVX512=ON"], "2026.10.11549", pins) == wheel and len(calls) == 1  # kept
    pins.write_text("cython==3.3.0\n", encoding="utf-8")
    assert llama_build.build(["-DGGML_AVX512=ON"], "2026.10.11549", pins) != wheel  # other tools: built again
    assert len(calls) == 2


AVX2_WHEEL = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | OPENMP = 1 |"


def test_setup_builds_installs_and_keeps_a_build_that_generates(monkeypatch: pytest.MonkeyPatch) -> None:
    setup = _Setup(monkeypatch, SAPPHIRE_RAPIDS, AVX2_WHEEL, smoke=None)
    assert llama_build.main([]) == 0
    assert len(setup.built) == 1
    wheel = str(llama_build.build([], "2026.10.11549"))
    assert setup.pip == [("install", "-q", "--no-deps", "--force-reinstall", wheel)]


@pytest.mark.parametrize(("mode", "status"), [("auto", 0), ("native", 1)])
def test_a_build_that_crashes_is_replaced_by_the_locked_wheel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], mode: str, status: int
) -> None:
    monkeypatch.setenv("ARAG_LLAMA_BUILD", mode)
    setup = _Setup(monkeypatch, SAPPHIRE_RAPIDS, AVX2_WHEEL, smoke="exit status -11: Segmentation fault")
    assert llama_build.main([]) == status
    assert setup.pip[-1] == (
        "install", "-q", "--no-deps", "--force-reinstall", "--only-binary", "xllamacpp", "xllamacpp==2026.10.11549"
    )  # fmt: skip
    assert "kept the prebuilt AVX2 wheel" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "installed", "mode"),
    [
        (SAPPHIRE_RAPIDS, AVX2_WHEEL, "wheel"),  # asked for the wheel
        (SAPPHIRE_RAPIDS, "", "auto"),  # no embedded model installed
        ("flags\t: avx avx2 fma f16c bmi2\n", AVX2_WHEEL, "auto"),  # no AVX-512: the wheel fits
        (SAPPHIRE_RAPIDS, "CPU : AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 |", "auto"),  # built already
    ],
)
def test_setup_builds_nothing_when_there_is_nothing_to_gain(
    monkeypatch: pytest.MonkeyPatch, flags: str, installed: str, mode: str
) -> None:
    monkeypatch.setenv("ARAG_LLAMA_BUILD", mode)
    setup = _Setup(monkeypatch, flags, installed, smoke=None)
    assert llama_build.main([]) == 0
    assert setup.built == [] and setup.pip == []


def test_an_unknown_build_mode_is_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ARAG_LLAMA_BUILD", "fast")
    assert llama_build.main([]) == 2
    assert "auto, native or wheel" in capsys.readouterr().err


def test_build_progress_counts_the_files_compiled_and_estimates_what_is_left() -> None:
    now = [0.0]
    progress = llama_build.BuildProgress(expected=200, clock=lambda: now[0])
    assert progress.left_s() == llama_build.FIRST_BUILD_S  # nothing compiled yet: the time a build took here
    assert not progress.feed("-- The C compiler identification is GNU 12.2.0")
    assert not progress.feed("[100%] Built target llama-common-base")  # a target's own percentage is no progress
    now[0] = 60.0
    for n in range(40):
        assert progress.feed(f"[ {n % 100:2d}%] Building CXX object ggml/src/CMakeFiles/ggml-cpu.dir/f{n}.cpp.o")
    assert progress.feed("[  3%] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o")
    assert progress.files == 41 and progress.fraction() == 41 / 200
    assert progress.left_s() == pytest.approx(60.0 * 159 / 41)
    assert progress.line().startswith("compiling llama.cpp: 41 of 200 files, 20 %, about 3 min")
    assert progress.feed("  building 'xllamacpp.xllamacpp' extension")  # llama.cpp done: the bindings, said once
    assert not progress.feed("  building 'xllamacpp.xllamacpp' extension")
    assert progress.line() == "compiled llama.cpp (41 files); compiling the Python bindings (a minute or two)"
    unknown = llama_build.BuildProgress(clock=lambda: now[0])  # a version whose count is not known: the count alone
    unknown.feed("[ 50%] Building CXX object x.o")
    assert unknown.fraction() is None and unknown.line().startswith("compiling llama.cpp: 1 files, about ")


def test_a_build_shows_its_progress_in_a_log_keeps_its_output_and_fails_with_its_last_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = "for n in range(50): print(f'[{n % 100:3d}%] Building CXX object x{n}.o')"
    log = tmp_path / "build.log"
    llama_build.compile_with_progress([sys.executable, "-c", script], expected=50, log=log)
    shown = capsys.readouterr().out.splitlines()
    # not a terminal: one line per tenth, never a carriage return
    assert [line.split(",")[1].strip() for line in shown[:-1]] == [f"{p} %" for p in range(10, 100, 10)]
    assert shown[-1].startswith("  compiled 50 files in 0 min")
    assert "\r" not in "".join(shown) and len(log.read_text().splitlines()) == 50
    failing = "print('[ 10%] Building C object a.o'); print('error: no space left on device'); raise SystemExit(2)"
    with pytest.raises(RuntimeError, match=r"exit status 2\) \(the whole output: .*\): .*no space left on device"):
        llama_build.compile_with_progress([sys.executable, "-c", failing], log=log)


@pytest.mark.parametrize(
    ("flags", "installed", "advised"),
    [
        ({"avx2", "avx512f"}, "CPU : AVX2 = 1 |", True),  # the wheel on an AVX-512 CPU: say how to build
        ({"avx2", "avx512f"}, "CPU : AVX2 = 1 | AVX512 = 1 |", False),  # built already
        ({"avx2"}, "CPU : AVX2 = 1 |", False),  # nothing to gain
        ({"avx2", "avx512f"}, "", False),  # no embedded model installed
    ],
)
def test_setup_advises_a_build_only_where_it_helps_and_never_builds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: set[str], installed: str, advised: bool
) -> None:
    monkeypatch.delenv("ARAG_LLAMA_BUILD", raising=False)
    monkeypatch.setattr(llama_build, "this_cpu_flags", lambda: flags | {"avx", "fma", "f16c", "bmi2"})
    monkeypatch.setattr(llama_build, "_installed_build_info", lambda: installed)
    monkeypatch.setattr(llama_build, "build", lambda *a, **k: pytest.fail("--advice must not build"))
    assert llama_build.main(["--advice"]) == 0
    out = capsys.readouterr().out
    assert ("bash scripts/setup.sh build" in out) is advised
