"""Retrieval metrics and the statistics that say whether a change in them is real.

A search change is only worth keeping if it moves the numbers by more than chance would, so each
per-query metric here comes with a bootstrap interval and a minimum detectable effect.

Relevance is binary: an id is either in `gold` or not, with no graded judgements. A ranked list
is read as its distinct ids in order: a repeated id keeps only its first position, and later
copies neither count again nor take a slot in the top k. A query with empty gold has nothing to
find and nothing to miss, so every metric scores it 1.0 (datasets loaded by `evaluate` never
have one).

The bootstrap resamples the per-query values with replacement, `iterations` times, from a seeded
`random.Random`, and reports the percentile interval of the resampled means (nearest rank, no
interpolation). A paired comparison bootstraps the per-query differences, which keeps each
query's two scores together. Everything is deterministic for a given seed.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Collection, Sequence
from typing import NamedTuple


class Estimate(NamedTuple):
    """A mean and its bootstrap interval (95 % unless asked otherwise)."""

    mean: float
    low: float
    high: float


def _top(ranked: Sequence[str], k: int) -> list[str]:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return list(dict.fromkeys(ranked))[:k]


def recall_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Share of the gold ids found in the top k distinct ids."""
    wanted = set(gold)
    top = _top(ranked, k)
    if not wanted:
        return 1.0
    return len(wanted.intersection(top)) / len(wanted)


def all_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if every gold id is in the top k distinct ids, else 0.0 (SWE-bench "Acc@k")."""
    return 1.0 if set(gold).issubset(_top(ranked, k)) else 0.0


def ndcg_at(ranked: Sequence[str], gold: Collection[str], k: int = 10) -> float:
    """Binary-gain nDCG of the top k with a log2 discount, against min(k, len(gold)) hits."""
    wanted = set(gold)
    top = _top(ranked, k)
    if not wanted:
        return 1.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, id_ in enumerate(top, 1) if id_ in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(wanted)) + 1))
    return dcg / ideal


def reciprocal_rank(ranked: Sequence[str], gold: Collection[str]) -> float:
    """1 / rank of the first gold id among the distinct ids, 0.0 if none is there."""
    wanted = set(gold)
    if not wanted:
        return 1.0
    for rank, id_ in enumerate(dict.fromkeys(ranked), 1):
        if id_ in wanted:
            return 1.0 / rank
    return 0.0


def bootstrap(
    values: Sequence[float], iterations: int = 2000, seed: int = 0, level: float = 0.95
) -> Estimate:
    """Mean of `values` with its percentile-bootstrap interval; ValueError if there are none."""
    # An empty sample raises rather than returning NaN: NaN would slip silently into tables
    # and is not valid JSON, and an evaluation over no queries is always a caller's bug.
    if not values:
        raise ValueError("cannot bootstrap the mean of no values")
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    mean = statistics.fmean(values)
    if min(values) == max(values):
        # Every resample of a constant sample is that constant; say so exactly instead of
        # letting rounding in the resampled means move the bounds by an ulp.
        return Estimate(values[0], values[0], values[0])
    rng = random.Random(seed)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(iterations))
    tail = (1.0 - level) / 2.0
    low = means[min(iterations - 1, math.floor(tail * iterations))]
    high = means[max(0, math.ceil((1.0 - tail) * iterations) - 1)]
    return Estimate(mean, low, high)


def paired_difference(
    a: Sequence[float], b: Sequence[float], iterations: int = 2000, seed: int = 0
) -> Estimate:
    """Mean of the per-query differences b - a with its bootstrap interval."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    return bootstrap([y - x for x, y in zip(a, b, strict=True)], iterations, seed)


def min_detectable_effect(
    values: Sequence[float], alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest mean difference a paired test over this many queries would detect.

    Computes (z[1 - alpha/2] + z[power]) * sd / sqrt(n). Pass the differences of a paired run to
    use their sd directly. Passed one configuration's per-query values, it stands in that sd for
    the sd of the differences: 2 sd^2 (1 - rho) is below sd^2 when the two configurations
    correlate above 0.5, as variants of one retriever do, so the estimate is then conservative.
    Fewer than two values give `math.inf`: one query cannot show any difference.
    """
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must be between 0 and 1, got {alpha} and {power}")
    if len(values) < 2:
        return math.inf
    normal = statistics.NormalDist()
    z = normal.inv_cdf(1.0 - alpha / 2.0) + normal.inv_cdf(power)
    return z * statistics.stdev(values) / math.sqrt(len(values))
