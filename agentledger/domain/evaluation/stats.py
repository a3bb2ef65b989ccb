"""Significance for paired comparisons, in pure Python (no numpy, no scipy).

Both configurations run the same work orders, so results pair up: pass/fail by an exact
two-sided sign test on the discordant pairs (McNemar's exact test), numeric figures by a
percentile bootstrap of the mean paired difference. Randomness is an argument (a seeded
``random.Random``), so a report is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from math import comb

from agentledger.domain._model import Frozen


class SignTest(Frozen):
    """Pairs where only A passed, only B passed, and the exact two-sided p-value."""

    only_a: int
    only_b: int
    p_value: float


class BootstrapCI(Frozen):
    mean_difference: float
    """Mean of B − A over the pairs."""
    low: float
    high: float
    confidence: float
    resamples: int


def sign_test(a: Sequence[bool], b: Sequence[bool]) -> SignTest:
    """Exact binomial test that A and B pass equally often, on the pairs where they disagree."""
    if len(a) != len(b):
        raise ValueError("paired results must have equal length")
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return SignTest(only_a=0, only_b=0, p_value=1.0)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2**n
    return SignTest(only_a=only_a, only_b=only_b, p_value=min(1.0, 2 * tail))


def bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    rng: random.Random,
    *,
    resamples: int = 2_000,
    confidence: float = 0.95,
) -> BootstrapCI:
    """Percentile bootstrap of the mean paired difference B − A."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    if not diffs:
        raise ValueError("no pairs to compare")
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    cut = (1 - confidence) / 2
    low = means[int(cut * (resamples - 1))]
    high = means[int((1 - cut) * (resamples - 1))]
    return BootstrapCI(
        mean_difference=sum(diffs) / n,
        low=low,
        high=high,
        confidence=confidence,
        resamples=resamples,
    )
