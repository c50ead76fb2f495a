"""Text in images: photos of pages, screenshots, scanned PDF pages. RapidOCR (PaddleOCR's PP-OCRv4 detection and
recognition models as ONNX, run by onnxruntime) — the models ship inside its PyPI wheel, so nothing is downloaded
when a file is read. Each line found is kept with its confidence; lines below MIN_CONFIDENCE are left out (noise
in a photo), and a document records the mean confidence of what it kept (metadata ``ocr_confidence``)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arag.errors import IngestError

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif"}
MIN_CONFIDENCE = 0.5
MAX_PAGES = 500  # pages of one multi-page image read (about 1–2 s each on 2 cores)
MAX_PIXELS = 40_000_000  # a bigger image is scaled down first (a 300-dpi A4 scan is ~8.7 M pixels)
_engine: Any = None
_engine_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class OcrText:
    """The lines read off one image, top to bottom, and the mean confidence of the lines kept."""

    lines: list[str]
    confidence: float | None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def ocr_available() -> bool:
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def _ocr_engine() -> Any:
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError:
                raise IngestError("reading text in images needs the OCR engine: bash scripts/setup.sh") from None
            # two cores are saturated easily: the engine takes at most two, one operator at a time
            threads = min(2, os.cpu_count() or 1)
            _engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1)
        return _engine


def ocr_image(image: Any) -> OcrText:
    """The text of a PIL image."""
    import numpy as np

    image = image.convert("RGB")
    if image.width * image.height > MAX_PIXELS:
        scale = (MAX_PIXELS / (image.width * image.height)) ** 0.5
        image = image.resize((max(1, int(image.width * scale)), max(1, int(image.height * scale))))
    found, _elapsed = _ocr_engine()(np.asarray(image)[:, :, ::-1])  # the engine reads OpenCV's BGR order
    kept = [(str(text).strip(), float(score)) for _box, text, score in found or [] if float(score) >= MIN_CONFIDENCE]
    kept = [(text, score) for text, score in kept if text]
    confidence = round(sum(s for _t, s in kept) / len(kept), 4) if kept else None
    return OcrText([text for text, _score in kept], confidence)


MIN_FIGURE_SIDE = 64  # an embedded picture smaller than this (an icon, a bullet) is not read
MAX_FIGURES = 100  # pictures of one document read by OCR (about 1 s each on 2 cores); the rest keep their alt text


def ocr_figure(blob: bytes) -> OcrText | None:
    """The text of a picture embedded in a document (bytes of any format Pillow reads); None for one too small to
    hold text, one Pillow cannot read (a vector EMF/WMF), or without the OCR engine."""
    import io

    from PIL import Image, UnidentifiedImageError

    if not ocr_available():
        return None
    try:
        with Image.open(io.BytesIO(blob)) as opened:
            if min(opened.size) < MIN_FIGURE_SIDE:
                return None
            image = opened.copy()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    return ocr_image(image)


def read_image(path: Path) -> tuple[str, list[tuple[int, str]], dict[str, Any]]:
    """(text, places — ``page N`` of a multi-page TIFF —, metadata) of an image file."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    pieces: list[str] = []
    places: list[tuple[int, str]] = []
    confidences: list[float] = []
    length = 0
    try:
        with Image.open(path) as opened:
            size, frames = opened.size, getattr(opened, "n_frames", 1)
            for number, frame in enumerate(ImageSequence.Iterator(opened), 1):
                if number > MAX_PAGES:  # a long multi-page scan (or an animation) is read up to here
                    break
                read = ocr_image(frame)
                if not read.lines:
                    continue
                if frames > 1:
                    places.append((length, f"page {number}"))
                piece = read.text + "\n\n"
                pieces.append(piece)
                length += len(piece)
                if read.confidence is not None:
                    confidences.append(read.confidence)
    except (UnidentifiedImageError, OSError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        raise IngestError(f"not a readable image ({type(exc).__name__}: {str(exc)[:200]})") from None
    text = "".join(pieces)
    if not text.strip():
        raise IngestError("no text found in the image (OCR read nothing)")
    metadata = {
        "ocr_confidence": round(sum(confidences) / len(confidences), 4),
        "width": size[0],
        "height": size[1],
        "pages": frames,
    }
    return text, places, metadata
