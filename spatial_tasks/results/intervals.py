"""Confidence intervals for the headline metrics (95 % unless told otherwise).

* ``wilson``: the Wilson score interval (Wilson 1927) of a proportion k/n. Used where a metric is
  a plain share of right answers over questions (every outcome 0 or 1): O3-D accuracy, VAGUE
  accuracy, SpatialTunnel v under exact match.
* ``cluster_bootstrap``: the percentile bootstrap over units, seeded. Used for everything else
  (means of probabilities, differences, averages over tasks, standard deviations of group means).
  A unit is what makes items paired -- the image of SpatialTunnel's consistent and counter
  questions, the scene of O3-D's near / far and question-variant rows, the VAGUE item -- and all
  its rows are drawn together, so a difference (Δ, bias, SDGM) is taken over paired resamples.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Sequence
from statistics import NormalDist

LEVEL = 0.95
ITERATIONS = 1000
SEED = 0


def wilson(successes: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of the proportion successes/n; (NaN, NaN) when n is 0."""
    if n <= 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if successes <= 0 else max(0.0, centre - half)  # exact ends: no 1e-19 from rounding
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return low, high


def cluster_bootstrap(rows: Sequence[dict], statistic: Callable[[Sequence[dict]], float],
                      unit: Callable[[dict], Hashable], iterations: int = ITERATIONS, seed: int = SEED,
                      level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of ``statistic`` over ``iterations`` resamples of the units (with
    replacement, every row of a drawn unit kept). Replicates where the statistic is undefined
    (NaN) are dropped; with fewer than half of them defined, or a single unit, (NaN, NaN)."""
    groups: dict[Hashable, list[dict]] = {}
    for row in rows:
        groups.setdefault(unit(row), []).append(row)
    units = list(groups.values())
    if len(units) < 2:
        return math.nan, math.nan
    rng = random.Random(seed)
    values = []
    for _ in range(iterations):
        sample = [row for _ in units for row in units[rng.randrange(len(units))]]
        value = statistic(sample)
        if isinstance(value, (int, float)) and math.isfinite(value):
            values.append(float(value))
    if len(values) < iterations / 2:
        return math.nan, math.nan
    values.sort()
    tail = (1 - level) / 2
    return _quantile(values, tail), _quantile(values, 1 - tail)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted values (numpy's default rule)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
