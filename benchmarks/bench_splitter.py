"""Our sentence splitter against pysbd (a maintained rule-based splitter) on real passages.

    python benchmarks/bench_splitter.py --passages 500     # needs: pip install pysbd

Prints sentences/s of both, and boundary agreement: the share of pysbd's sentence boundaries we also
produce, and the share of ours pysbd also produces (boundaries compared by character offset).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from arag.corpus.chunking import split_sentences


def pysbd_boundaries(segmenter: Any, text: str) -> set[int]:
    out, cursor = set(), 0
    for sentence in segmenter.segment(text):
        start = text.find(sentence.strip(), cursor)
        if start < 0:
            continue
        cursor = start + len(sentence.strip())
        out.add(start)
    return out - {0}


def ours_boundaries(text: str) -> set[int]:
    out = set()
    for span in split_sentences(text):
        piece = text[span.start : span.end]
        out.add(span.start + (len(piece) - len(piece.lstrip())))
    return out - {0}


def main() -> None:
    import pysbd

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets/2wikimultihopqa/corpus.json"))
    parser.add_argument("--passages", type=int, default=500)
    args = parser.parse_args()
    passages = json.loads(args.data.read_text())
    texts = [p["text"] for p in random.Random(0).sample(passages, min(args.passages, len(passages)))]
    segmenter = pysbd.Segmenter(language="en", clean=False)
    started = time.perf_counter()
    theirs = [pysbd_boundaries(segmenter, t) for t in texts]
    pysbd_s = time.perf_counter() - started
    started = time.perf_counter()
    ours = [ours_boundaries(t) for t in texts]
    ours_s = time.perf_counter() - started
    both = sum(len(a & b) for a, b in zip(ours, theirs, strict=True))
    n_theirs, n_ours = sum(map(len, theirs)), sum(map(len, ours))
    print(
        f"{len(texts)} passages: ours {ours_s * 1000:.0f} ms, pysbd {pysbd_s * 1000:.0f} ms "
        f"({pysbd_s / ours_s:.0f}x slower)"
    )
    print(
        f"boundaries: pysbd {n_theirs}, ours {n_ours}, shared {both}; recall vs pysbd {both / n_theirs:.3f}, "
        f"precision vs pysbd {both / n_ours:.3f}"
    )
    shown = 0
    for text, a, b in zip(texts, ours, theirs, strict=True):
        for offset in sorted(a ^ b)[:1]:
            if shown < 8:
                side = "only ours" if offset in a else "only pysbd"
                print(f"  {side}: …{text[max(0, offset - 50) : offset]!r} | {text[offset : offset + 30]!r}…")
                shown += 1


if __name__ == "__main__":
    main()
