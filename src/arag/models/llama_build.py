"""A llama.cpp build for this CPU, made at setup: ``python -m arag.models.llama_build``.

The prebuilt xllamacpp wheel is compiled for AVX2, the widest instruction set every x86-64 machine it targets has.
On cores with AVX-512 the same xllamacpp version built from its source distribution with AVX-512 (and VNNI, VBMI,
BF16 where present) processes prompts about 1.5x faster (docs/benchmarks.md): half of a question's time with
the embedded model. ``bash scripts/setup.sh build`` runs this on request, never before the first answer: the
prebuilt wheel answers meanwhile (``--advice`` says whether a build would help). ``ARAG_LLAMA_BUILD=wheel`` keeps
the wheel, ``=native`` makes a failed build an error instead of a notice. The compile shows its progress.

The build is checked before it is kept: a fresh process loads a packaged model on it and generates a few tokens;
if that fails, the locked wheel is reinstalled. The built wheel is kept in the virtual environment under a key of
the version and the build options, so running the setup again does not compile again.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, MutableMapping
from pathlib import Path
from types import ModuleType

# /proc/cpuinfo flag -> ggml's CMake option, for the extensions ggml has kernels for
AVX512_OPTIONS = {
    "avx512f": "GGML_AVX512",
    "avx512vbmi": "GGML_AVX512_VBMI",
    "avx512_vnni": "GGML_AVX512_VNNI",
    "avx512_bf16": "GGML_AVX512_BF16",
    "avx_vnni": "GGML_AVX_VNNI",
}
# what the prebuilt wheel already assumes; a CPU without these gains nothing from a build
BASELINE_OPTIONS = {"avx": "GGML_AVX", "avx2": "GGML_AVX2", "fma": "GGML_FMA", "f16c": "GGML_F16C", "bmi2": "GGML_BMI2"}
# Offline: llguidance is a Rust crate fetched at build time and BoringSSL is fetched from GitHub (neither is used:
# the server is reached over 127.0.0.1 and a-rag's grammars are llama.cpp's own). GGML_NATIVE is off because it also
# turns on AMX, whose matrix kernels crashed at the first decode of the Q4_K_M models here (a segmentation fault in
# ggml_backend_amx_mul_mat); the options are named one by one instead.
FIXED_OPTIONS = ["-DLLAMA_LLGUIDANCE=OFF", "-DLLAMA_BUILD_BORINGSSL=OFF", "-DGGML_NATIVE=OFF"]
PACKAGE = "xllamacpp"
SMOKE_TIMEOUT_S = 600
# what a build took on 2 cores (docs/models.md), for the estimate shown before the compile has gone far enough
FIRST_BUILD_S = 300
# the files a build of each xllamacpp version compiles (counted in its verbose output), for the percentage; an
# unknown version shows the count alone
BUILD_FILES = {"2026.10.11549": 197}
# CMake's line for each file compiled ("[ 45%] Building CXX object …"); its percentage is per target, and the build
# makes nine targets one after another, so the files are counted instead
_COMPILED = re.compile(r"^\s*\[\s*\d{1,3}%\]\s+Building (?:C|CXX) object ")
# setuptools' line when llama.cpp is built and the Cython bindings are compiled, the last long step
_BINDINGS = re.compile(r"building '\w+\.\w+' extension")


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of the first processor in a /proc/cpuinfo text."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return set(value.split())
    return set()


def this_cpu_flags() -> set[str]:
    if platform.system() != "Linux" or not Path("/proc/cpuinfo").is_file():
        return set()  # macOS and Windows: the wheel (Metal, or its own build matrix)
    return cpu_flags(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))


def cmake_options(flags: set[str]) -> list[str] | None:
    """The CMake options of a build for a CPU with these flags, or None when the prebuilt wheel already fits it
    (no AVX-512, or not even the wheel's own AVX2 baseline)."""
    if "avx512f" not in flags or not set(BASELINE_OPTIONS) <= flags:
        return None
    options = [f"-D{option}=ON" for option in BASELINE_OPTIONS.values()]
    options += [f"-D{option}=ON" for flag, option in AVX512_OPTIONS.items() if flag in flags]
    return FIXED_OPTIONS + options


# llama.cpp's CPU threads meet at an OpenMP barrier after every operation, and libgomp reads how long a waiting
# thread spins before it sleeps once, when it is loaded (the first import of xllamacpp). Sleeping at once
# (OMP_WAIT_POLICY=PASSIVE) cost a third of generation speed on a quiet machine; libgomp's default (300,000 spins)
# cut generation to a tenth while another process held one of the 2 cores; spinning forever (ACTIVE) keeps a core
# busy while the server idles. 3,000 spins measured as fast as the default alone and close to PASSIVE beside other
# work (docs/benchmarks.md).
GOMP_SPIN_COUNT = "3000"


def set_openmp_waiting(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set llama.cpp's OpenMP spin count before xllamacpp is imported, unless the user chose a wait policy."""
    if "GOMP_SPINCOUNT" not in environ and "OMP_WAIT_POLICY" not in environ:
        environ["GOMP_SPINCOUNT"] = GOMP_SPIN_COUNT


def import_llama_cpp() -> ModuleType | None:
    """xllamacpp, imported with the OpenMP spin count set first; None without the 'local' extra."""
    set_openmp_waiting()
    try:
        import xllamacpp
    except ImportError:
        return None
    return xllamacpp


def build_info() -> str | None:
    """llama.cpp's own account of the instruction sets it was built with (``AVX512 = 1 | ...``), None without
    the embedded model installed."""
    xllamacpp = import_llama_cpp()
    return None if xllamacpp is None else " ".join(str(xllamacpp.get_system_info()).split())


def built_for_avx512(info: str | None) -> bool:
    """Whether a build_info() says llama.cpp was compiled for AVX-512 (by main below)."""
    return "AVX512 = 1" in (info or "")


def _installed_build_info() -> str:
    """build_info() of the package installed now, from a fresh process (this one may hold an older import)."""
    code = "from arag.models.llama_build import build_info; print(build_info() or '')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False).stdout.strip()


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True, env=env)


class BuildProgress:
    """Where a compile is, from the files CMake reports compiling: how many of the expected ones, and an estimate of
    the time left (the pace so far once it means something, before that the time a build took here)."""

    def __init__(self, expected: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.expected, self.clock = expected, clock
        self.started = clock()
        self.files = 0
        self.bindings = False  # llama.cpp is compiled; the Python bindings are

    def feed(self, line: str) -> bool:
        """Read one line of the build's output; True when it moved the build on (a file compiled, the bindings)."""
        if _BINDINGS.search(line) and not self.bindings:
            self.bindings = True
            return True
        if not _COMPILED.match(line):
            return False
        self.files += 1
        return True

    def fraction(self) -> float | None:
        """The share of the expected files compiled (below 1 until the end: a count can be off by a file)."""
        return None if not self.expected else min(0.99, self.files / self.expected)

    def left_s(self) -> float:
        elapsed = self.clock() - self.started
        done = self.fraction()
        if done is not None and done >= 0.05:
            return max(0.0, elapsed * (1 - done) / done)
        return max(0.0, FIRST_BUILD_S - elapsed)

    def line(self) -> str:
        if self.bindings:
            return f"compiled llama.cpp ({self.files} files); compiling the Python bindings (a minute or two)"
        minutes, seconds = divmod(int(self.left_s()), 60)
        done = self.fraction()
        count = f"{self.files} files" if done is None else f"{self.files} of {self.expected} files, {100 * done:.0f} %"
        return f"compiling llama.cpp: {count}, about {minutes} min {seconds:02d} s left"


def compile_with_progress(command: list[str], env: dict[str, str] | None = None, expected: int | None = None,
                          log: Path | None = None) -> None:  # fmt: skip
    """Run the wheel build, showing its progress on one line (a terminal) or a line per tenth (a log), its whole
    output kept in ``log``; on failure raise with the output's last lines."""
    progress = BuildProgress(expected)
    tail: deque[str] = deque(maxlen=30)
    live = sys.stdout.isatty()
    shown = 0  # tenths shown in a log
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    with open(log or os.devnull, "w", encoding="utf-8") as kept:
        for raw in process.stdout:
            kept.write(raw)
            tail.append(raw.rstrip())
            if not progress.feed(raw):
                continue
            if live:
                print(f"\r  {progress.line()}   ", end="", flush=True)
                continue
            if progress.bindings:
                print(f"  {progress.line()}", flush=True)
                continue
            done = progress.fraction()
            tenths = int(10 * done) if done is not None else progress.files // 10  # a tenth, or 10 files
            if tenths > shown:
                shown = tenths
                print(f"  {progress.line()}", flush=True)
    code = process.wait()
    if live:
        print()
    minutes, seconds = divmod(int(progress.clock() - progress.started), 60)
    print(f"  compiled {progress.files} files in {minutes} min {seconds:02d} s", flush=True)
    if code != 0:
        where = f" (the whole output: {log})" if log else ""
        raise RuntimeError(f"the build failed (exit status {code}){where}: " + " | ".join(tail)[-2000:])


def _smoke_test() -> str | None:
    """Load the smallest packaged model on the installed build in a fresh process and generate; the failure, or
    None. A crash (a signal) must not take this process with it, hence the subprocess."""
    code = (
        "import json, urllib.request\n"
        "from arag.models.local import MODELS, LocalServer, resolve_model, _part_paths\n"
        "names = sorted((n for n, m in MODELS.items() if _part_paths(m)), key=lambda n: MODELS[n].size)\n"
        "if names:\n"
        "    server = LocalServer(resolve_model(names[0]), threads=2)\n"
        "    body = {'messages': [{'role': 'user', 'content': 'Say yes.'}], 'max_tokens': 4}\n"
        "    request = urllib.request.Request(server.base_url + '/chat/completions', json.dumps(body).encode(),\n"
        "                                     {'Content-Type': 'application/json'})\n"
        "    urllib.request.urlopen(request, timeout=300).read()\n"
        "    print('generated with', names[0])\n"
        "else:\n"
        "    print('no packaged model installed: the build loaded without generating')\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"no answer within {SMOKE_TIMEOUT_S} s"
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"exit status {done.returncode}: {tail}"
    print(done.stdout.strip())
    return None


def build(options: list[str], version: str, build_constraint: Path | None = None) -> Path:
    """The wheel of xllamacpp ``version`` built with ``options``, compiled once per venv; ``build_constraint``
    pins the tools its source builds with (setuptools, Cython, versioneer)."""
    pins = build_constraint.read_text(encoding="utf-8") if build_constraint else ""
    key = hashlib.sha256("\n".join([version, *options, pins]).encode()).hexdigest()[:12]
    wheel_dir = Path(sys.prefix) / "llama-native" / f"{version}-{key}"
    wheels = sorted(wheel_dir.glob(f"{PACKAGE}-*.whl"))
    if wheels:
        return wheels[0]
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (Debian: apt-get install cmake g++)")
    print(f"building llama.cpp ({PACKAGE} {version}) for this CPU: {' '.join(options)}", flush=True)
    env = {**os.environ, "CMAKE_ARGS": " ".join(options), "NPROC": str(os.cpu_count() or 2)}
    staging = wheel_dir.parent / f"{wheel_dir.name}.partial"  # not with_suffix: the version has dots
    shutil.rmtree(staging, ignore_errors=True)
    pinned = ["--build-constraint", str(build_constraint)] if build_constraint else []
    # --no-cache-dir: pip's wheel cache is keyed by the source alone, not by CMAKE_ARGS; -v: CMake's progress
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-cache-dir", *pinned]
    command = [*pip_wheel, "--no-binary", PACKAGE, "-w", str(staging), f"{PACKAGE}=={version}"]
    wheel_dir.parent.mkdir(parents=True, exist_ok=True)
    log = wheel_dir.parent / f"{wheel_dir.name}.log"
    print(f"  the whole output: {log}", flush=True)
    compile_with_progress(command, env, BUILD_FILES.get(version), log)
    shutil.rmtree(wheel_dir, ignore_errors=True)
    staging.rename(wheel_dir)
    return sorted(wheel_dir.glob(f"{PACKAGE}-*.whl"))[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print", action="store_true", help="print the build options for this CPU and exit")
    parser.add_argument(
        "--advice", action="store_true", help="say whether a build for this CPU would be faster, and how; no build"
    )
    parser.add_argument(
        "--build-constraint", type=Path, default=None, help="a pip constraints file for the build's tools"
    )
    args = parser.parse_args(argv)
    mode = os.environ.get("ARAG_LLAMA_BUILD", "auto")
    if mode not in ("auto", "native", "wheel"):
        print(f"ARAG_LLAMA_BUILD must be auto, native or wheel, not {mode!r}", file=sys.stderr)
        return 2
    options = cmake_options(this_cpu_flags())
    if args.print:
        print(" ".join(options) if options else "the prebuilt wheel fits this CPU")
        return 0
    installed = _installed_build_info()
    if mode == "wheel" or not installed:
        return 0
    if args.advice:
        if options is not None and not built_for_avx512(installed):
            minutes = FIRST_BUILD_S // 60
            print(
                "llama.cpp: the prebuilt AVX2 wheel answers now; this CPU has AVX-512, and a build for it processes "
                f"prompts about 1.5x faster: bash scripts/setup.sh build (~{minutes} min on 2 cores, once)"
            )
        return 0
    if options is None:
        print("llama.cpp: the prebuilt wheel fits this CPU (no AVX-512)")
        return 0
    if built_for_avx512(installed):
        print(f"llama.cpp: already built for this CPU ({installed})")
        return 0
    version = importlib.metadata.version(PACKAGE)
    try:
        wheel = build(options, version, args.build_constraint)
        _pip("install", "-q", "--no-deps", "--force-reinstall", str(wheel))
        failure = _smoke_test()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        failure = str(exc)
    if failure is None:
        print(f"llama.cpp built for this CPU: {_installed_build_info()}")
        return 0
    _pip("install", "-q", "--no-deps", "--force-reinstall", "--only-binary", PACKAGE, f"{PACKAGE}=={version}")
    print(f"llama.cpp: kept the prebuilt AVX2 wheel; the build for this CPU failed: {failure}", file=sys.stderr)
    return 1 if mode == "native" else 0


if __name__ == "__main__":
    sys.exit(main())
