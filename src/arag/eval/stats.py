"""Intervals people can trust: Wilson intervals for accuracies, paired bootstrap for differences.

Accuracies here are means of per-question scores in [0, 1] (Contain-Acc and LLM-Acc are 0/1 per question);
for 0/1 scores the Wilson score interval is exact enough at the small n of local runs, where the normal
approximation gives intervals outside [0, 1]. A difference of two methods on the *same* questions is
paired: the bootstrap resamples questions, not the two runs independently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP_SAMPLES = 10_000


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95 % interval and the number of questions it rests on."""

    value: float
    low: float
    high: float
    n: int

    def percent(self) -> str:
        """``"33.3 [12.1, 61.6] (n=12)"``."""
        return f"{100 * self.value:.1f} [{100 * self.low:.1f}, {100 * self.high:.1f}] (n={self.n})"

    def to_dict(self) -> dict[str, float | int]:
        return {"value": self.value, "ci95_low": self.low, "ci95_high": self.high, "n": self.n}


def wilson(successes: float, n: int, z: float = Z95) -> Estimate:
    """The Wilson score interval of a proportion."""
    if n <= 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), n)


def accuracy(scores: list[float | None]) -> Estimate:
    """Mean of per-question scores (None = not scored, left out) with a Wilson interval."""
    present = [s for s in scores if s is not None]
    return wilson(sum(present), len(present))


def paired_difference(
    first: dict[str, float | None], second: dict[str, float | None], seed: int = 0
) -> Estimate | None:
    """``mean(second − first)`` over the questions both scored, with a paired bootstrap 95 % interval
    (seeded, so a report is reproducible); None when they share no question."""
    shared = sorted(q for q in first.keys() & second.keys() if first[q] is not None and second[q] is not None)
    if not shared:
        return None
    diffs = np.array([float(second[q]) - float(first[q]) for q in shared])  # type: ignore[arg-type]
    resampled = diffs[np.random.default_rng(seed).integers(0, len(diffs), size=(BOOTSTRAP_SAMPLES, len(diffs)))]
    low, high = np.quantile(resampled.mean(axis=1), [0.025, 0.975])
    return Estimate(float(diffs.mean()), float(low), float(high), len(diffs))
