"""A word-level index of the lower-cased chunk texts, for keywords too short or too common for trigrams.

keyword_search scores a chunk by Σ_k count(k, chunk) · len(k), where count is ``str.count`` (non-overlapping)
in the lower-cased text. A keyword made only of word characters (``\\w``) cannot match across a character that
is not one, so every occurrence lies inside one maximal run of word characters — one *word* of the text — and

    count(k, chunk) = Σ over the distinct words w of the chunk: w.count(k) · (how often w occurs in the chunk)

exactly, overlaps included (the greedy scan restarts at every word, as it does in the whole text). So the
index keeps the vocabulary and, per word, its postings (chunk row, occurrences); a query finds the vocabulary words
that contain the keyword (str.find over the vocabulary as one string), then adds up their postings. The work is
proportional to the postings touched, not to the text: "the" or "II" no longer makes every chunk's text be
fetched and scanned. A keyword with other characters ("el tonto", "dr. who") is counted in the text, but only of
the chunks that hold each of its word runs as the keyword places them (:meth:`WordIndex.candidates`), which
common trigrams could not narrow; a run that must be a whole word, a word's start or its end is looked up by
bisection in the sorted vocabulary (sorted once, on first use), not by a pass over it.

Files (beside the rest of a generation; an index written before them keeps the trigram path for every keyword)::

    words.txt          the vocabulary, one word per line (UTF-8)
    word_ptr.npy       int64[n_words+1]: each word's postings range
    word_rows.npy      int32[n_postings]: chunk rows, ascending within a word
    word_counts.npy    int32[n_postings]: occurrences of the word in that chunk
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

WORD = re.compile(r"\w+")
COMMON_RUN = 64  # a phrase's word run with this many postings per candidate left narrows too little to gather
LAST = chr(0x10FFFF)  # sorts after every word character (it is none)
FILES = ("words.txt", "word_ptr.npy", "word_rows.npy", "word_counts.npy")


def is_word(keyword_lower: str) -> bool:
    """Whether the word index counts this lower-cased keyword exactly (it is one run of word characters)."""
    return WORD.fullmatch(keyword_lower) is not None


class WordIndexBuilder:
    """Collects the postings while chunks are written, in row order."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._words: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._lengths: list[int] = []

    def add(self, text_lower: str) -> None:
        """The next chunk's lower-cased text (rows are numbered in the order of the calls)."""
        counted = Counter(WORD.findall(text_lower))
        ids = self._ids
        self._words.append(np.fromiter((ids.setdefault(w, len(ids)) for w in counted), np.int32, len(counted)))
        self._counts.append(np.fromiter(counted.values(), np.int32, len(counted)))
        self._lengths.append(len(counted))

    def save(self, folder: Path) -> None:
        """Write the four files into ``folder``."""
        words = np.concatenate(self._words) if self._words else np.zeros(0, np.int32)
        counts = np.concatenate(self._counts) if self._counts else np.zeros(0, np.int32)
        rows = np.repeat(np.arange(len(self._lengths), dtype=np.int32), self._lengths)
        order = np.argsort(words, kind="stable")  # stable: rows stay ascending within a word
        ptr = np.zeros(len(self._ids) + 1, np.int64)
        np.cumsum(np.bincount(words, minlength=len(self._ids)), out=ptr[1:])
        np.save(folder / "word_ptr.npy", ptr)
        np.save(folder / "word_rows.npy", rows[order])
        np.save(folder / "word_counts.npy", counts[order])
        (folder / "words.txt").write_text("\n".join(self._ids), encoding="utf-8")


class WordIndex:
    """Read side: exact keyword counts from the postings. Loaded once, shared by threads."""

    def __init__(self, vocabulary: list[str], ptr: np.ndarray, rows: np.ndarray, counts: np.ndarray) -> None:
        # the vocabulary as one string, "\n" around every word ("\n" is no word character): a substring search
        # over it finds the words that contain, start or end with a keyword at the speed of str.find
        self._text = "\n" + "\n".join(vocabulary) + "\n"
        lengths = np.fromiter((len(w) + 1 for w in vocabulary), np.int64, len(vocabulary))
        self._starts = np.concatenate(([1], 1 + np.cumsum(lengths)))[: len(vocabulary)]
        self._ptr, self._rows, self._counts = ptr, rows, counts
        self._vocabulary = vocabulary
        self._lock = threading.Lock()
        self._sorted_by: dict[bool, tuple[list[str], np.ndarray]] = {}  # reversed?: sorted (reversed) words, ids

    @staticmethod
    def problem(n_words: int, n_chunks: int, ptr: np.ndarray, rows: np.ndarray, counts: np.ndarray) -> str:
        """What is wrong with these arrays ("" if nothing): the file to blame, then why."""
        if ptr.ndim != 1 or len(ptr) != n_words + 1 or ptr.dtype.kind not in "iu":
            return f"word_ptr.npy: {ptr.shape} {ptr.dtype}, expected ({n_words + 1},) integers for the words"
        if int(ptr[0]) != 0 or int(ptr[-1]) != len(rows) or bool((np.diff(ptr) < 0).any()):
            return "word_ptr.npy: the postings ranges are out of order"
        if (
            rows.ndim != 1
            or rows.dtype.kind not in "iu"
            or (len(rows) and not 0 <= int(rows.min()) <= int(rows.max()) < n_chunks)
        ):
            return "word_rows.npy: rows outside the index's chunks"
        if counts.shape != rows.shape or counts.dtype.kind not in "iu" or (len(counts) and int(counts.min()) < 1):
            return "word_counts.npy: one positive count per posting expected"
        return ""

    def _words_with(self, pattern: str) -> tuple[np.ndarray, np.ndarray]:
        """(word ids, matches in each) of the non-overlapping matches of ``pattern`` (word characters) in the
        vocabulary string."""
        positions = np.fromiter(_find_all(self._text, pattern), np.int64)
        if not len(positions):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ids, matches = np.unique(np.searchsorted(self._starts, positions, side="right") - 1, return_counts=True)
        return ids, matches

    def _sorted(self, reverse: bool) -> tuple[list[str], np.ndarray]:
        """The vocabulary sorted (``reverse``: each word reversed, then sorted) and the word ids in that order,
        built on first use: a word's start or end is then found by bisection, not by a pass over the vocabulary."""
        with self._lock:
            if reverse not in self._sorted_by:
                keys = [w[::-1] for w in self._vocabulary] if reverse else self._vocabulary
                order = sorted(range(len(keys)), key=keys.__getitem__)
                self._sorted_by[reverse] = ([keys[i] for i in order], np.asarray(order, np.int64))
            return self._sorted_by[reverse]

    def _words_starting(self, word: str, whole: bool = False, reverse: bool = False) -> np.ndarray:
        """Ids of the vocabulary words that start with ``word`` (``reverse``: that end with it; ``whole``: that
        are it). A word of the vocabulary has no other character than word ones, so the words beginning with
        ``word`` sort between it and it followed by the last code point, which is no word character."""
        keys, ids = self._sorted(reverse)
        key = word[::-1] if reverse else word
        lo = bisect.bisect_left(keys, key)
        hi = (lo + 1 if lo < len(keys) and keys[lo] == key else lo) if whole else bisect.bisect_left(keys, key + LAST)
        return ids[lo:hi]

    def _gather(self, word_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions in the postings arrays of every posting of these words, and each word's posting count."""
        starts, ends = self._ptr[word_ids], self._ptr[word_ids + 1]
        lengths = ends - starts
        # without a Python loop over the words: each posting's position is its word's start plus its rank
        shift = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        return shift + np.arange(int(lengths.sum())), lengths

    def _postings(self, keyword_lower: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk rows, occurrences of the keyword in that chunk's words) — a row may appear once per word."""
        ids, per_word = self._words_with(keyword_lower)
        if not len(ids):
            return np.zeros(0, np.int32), np.zeros(0, np.int64)
        positions, lengths = self._gather(ids)
        occurrences = self._counts[positions].astype(np.int64) * np.repeat(per_word, lengths)
        return self._rows[positions], occurrences

    def candidates(self, keyword_lower: str) -> np.ndarray | None:
        """Sorted rows of the chunks that may contain a keyword with other characters than word ones (a
        superset), or None when it has no word characters. Each run of word characters in the keyword lies in one
        word of a matching text: the whole word where other characters stand on both sides of it in the keyword,
        the word's start or end where on one side — so "el tonto" needs a word ending in "el" and one starting
        with "tonto", and only chunks with both are counted in their text. Runs are taken rarest first, and a run
        whose postings outnumber the chunks left by more than ``COMMON_RUN`` times is not gathered ("the" in
        "The Heart Of Doreon"): the superset stays a superset, and the text count that follows is exact."""
        runs = list(WORD.finditer(keyword_lower))
        if not runs:
            return None
        words = []
        for run in runs:
            word, left, right = run.group(), run.start() > 0, run.end() < len(keyword_lower)
            if left and right:
                ids = self._words_starting(word, whole=True)
            elif left:
                ids = self._words_starting(word)
            elif right:
                ids = self._words_starting(word, reverse=True)
            else:
                ids, _ = self._words_with(word)
            words.append((int((self._ptr[ids + 1] - self._ptr[ids]).sum()), ids))
        words.sort(key=lambda sized: sized[0])
        found: np.ndarray | None = None
        for n_postings, ids in words:
            if found is not None and (not len(found) or n_postings > COMMON_RUN * len(found)):
                break
            rows = np.unique(self._rows[self._gather(ids)[0]]) if len(ids) else np.zeros(0, np.int32)
            found = rows if found is None else np.intersect1d(found, rows, assume_unique=True)
        return found

    def add_scores(self, scores: np.ndarray, keyword_lower: str, weight: int) -> None:
        """``scores[row] += count(keyword, chunk) · weight`` for every chunk (``scores``: int64[n_chunks])."""
        rows, occurrences = self._postings(keyword_lower)
        if len(rows):  # float64 sums of integers stay exact far beyond any count here (2**53)
            scores += np.bincount(rows, weights=occurrences * weight, minlength=len(scores)).astype(np.int64)

    def chunk_count(self, keyword_lower: str, limit: int) -> int:
        """How many chunks contain the keyword, up to ``limit``."""
        rows, _ = self._postings(keyword_lower)
        return min(limit, len(np.unique(rows)))


class LazyWordIndex:
    """A generation's word index, loaded by ``load`` on first use (opening an index stays cheap)."""

    def __init__(self, load: Callable[[], WordIndex | None]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._loaded = False
        self._index: WordIndex | None = None

    def get(self) -> WordIndex | None:
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._index = self._load()
                    self._loaded = True
        return self._index


def _find_all(text: str, pattern: str) -> Iterator[int]:
    """Start of each non-overlapping match, left to right, as str.count counts them (str.find measured several
    times faster than a regular expression on a vocabulary's worth of text)."""
    at = text.find(pattern)
    while at >= 0:
        yield at
        at = text.find(pattern, at + len(pattern))


def top_scores(scores: np.ndarray, top_k: int) -> list[tuple[int, int]]:
    """The ``top_k`` chunks with a score above 0, best first, ties by row: ``[(row, score), ...]``."""
    rows = np.flatnonzero(scores > 0)
    if top_k <= 0 or not len(rows):
        return []
    values = scores[rows]
    if len(rows) > top_k:  # every row that could be among the best: at least the k-th best score
        kth = np.partition(values, len(values) - top_k)[len(values) - top_k]
        keep = values >= kth
        rows, values = rows[keep], values[keep]
    order = np.lexsort((rows, -values))[:top_k]
    return [(int(rows[i]), int(values[i])) for i in order]
