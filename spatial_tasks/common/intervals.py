"""Confidence intervals for the headline metrics (95 % unless told otherwise).

* ``wilson``: the Wilson score interval (Wilson 1927) of a proportion k/n. Used where a metric is
  a plain share of right answers over questions (every outcome 0 or 1): O3-D accuracy, VAGUE
  accuracy, SpatialTunnel v under exact match.
* ``cluster_bootstrap``: the percentile bootstrap over units, seeded. Used for everything else
  (means of probabilities, differences, averages over tasks, standard deviations of group means).
  A unit is what makes items paired -- the image of SpatialTunnel's consistent and counter
  questions, the scene of O3-D's near / far and question-variant rows, the VAGUE item -- and all
  its rows are drawn together, so a difference (Δ, bias, SDGM) is taken over paired resamples.
  A figure made of per-group means (``GroupedMeans``: every headline figure but VAGUE's) is
  resampled by ``grouped_bootstrap``, the same bootstrap as matrix products: a full O3-D run's
  SDGM takes well under a second instead of a minute (benchmarks/bootstrap_time.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

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
    replicates = (statistic([row for _ in units for row in units[rng.randrange(len(units))]])
                  for _ in range(iterations))
    return _percentile_interval(replicates, iterations, level)


def _percentile_interval(replicates: Iterable[object], iterations: int, level: float) -> tuple[float, float]:
    """The percentile interval of the defined replicates (NaN ones dropped); (NaN, NaN) when
    fewer than half of the ``iterations`` are defined."""
    values = sorted(float(v) for v in replicates if isinstance(v, (int, float)) and math.isfinite(v))
    if len(values) < iterations / 2:
        return math.nan, math.nan
    tail = (1 - level) / 2
    return _quantile(values, tail), _quantile(values, 1 - tail)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted values (numpy's default rule)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class GroupedMeans:
    """A figure that depends on the rows only through per-group means of one value per row:
    ``key(row)`` is the row's group (None: the row is not used), ``value(row)`` its value,
    ``combine({group: mean})`` the figure; ``readable(row)`` (optional): the figure is NaN when no
    used row is readable. For such a figure the cluster bootstrap needs no Python pass over the
    rows per resample: units are drawn as multinomial counts, and each resample's group sums are
    one matrix product (``grouped_bootstrap``). ``combine(means of all rows)`` must equal the
    metric function itself; the tests check it on real records."""

    key: Callable[[dict], Hashable | None]
    value: Callable[[dict], float]
    combine: Callable[[dict[Hashable, float]], float]
    readable: Callable[[dict], bool] | None = None

    def figure(self, rows: Sequence[dict]) -> float:
        """The figure from all rows (each unit once): what the metric function computes."""
        sums: dict[Hashable, list[float]] = {}
        readable = False
        for row in rows:
            group = self.key(row)
            if group is None:
                continue
            total = sums.setdefault(group, [0.0, 0.0])
            total[0] += float(self.value(row))
            total[1] += 1
            readable = readable or self.readable is None or self.readable(row)
        if not readable:
            return math.nan
        return self.combine({g: total / n for g, (total, n) in sums.items()})


def grouped_bootstrap(rows: Sequence[dict], figure: GroupedMeans, unit: Callable[[dict], Hashable],
                      iterations: int = ITERATIONS, seed: int = SEED, level: float = LEVEL) -> tuple[float, float]:
    """``cluster_bootstrap`` for a ``GroupedMeans`` figure: the same resampling (units drawn with
    replacement, all rows of a drawn unit kept, NaN replicates dropped, the same percentile rule),
    drawn with numpy's generator (``seed``) instead of Python's, so the draws differ from
    ``cluster_bootstrap``'s but not their distribution."""
    units: dict[Hashable, int] = {}
    groups: dict[Hashable, int] = {}
    cells: list[tuple[int, int, float, float]] = []  # (unit, group, value, readable)
    for row in rows:
        u = units.setdefault(unit(row), len(units))
        group = figure.key(row)
        if group is None:
            continue
        g = groups.setdefault(group, len(groups))
        cells.append((u, g, float(figure.value(row)), float(figure.readable is None or figure.readable(row))))
    if len(units) < 2 or not cells:
        return math.nan, math.nan
    u_idx, g_idx, values, readable = (np.array(column) for column in zip(*cells, strict=True))
    n_units, n_groups = len(units), len(groups)
    sums = np.zeros((n_units, n_groups))
    counts = np.zeros((n_units, n_groups))
    np.add.at(sums, (u_idx.astype(int), g_idx.astype(int)), values)
    np.add.at(counts, (u_idx.astype(int), g_idx.astype(int)), 1.0)
    readable_per_unit = np.bincount(u_idx.astype(int), weights=readable, minlength=n_units)
    names = list(groups)
    rng = np.random.default_rng(seed)

    def replicates() -> Iterator[float]:
        for start in range(0, iterations, 250):  # 250 resamples x units counts at a time: bounded memory
            draws = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=min(250, iterations - start))
            for total, n, any_read in zip(draws @ sums, draws @ counts, draws @ readable_per_unit, strict=True):
                yield (figure.combine({names[g]: total[g] / n[g] for g in range(n_groups) if n[g] > 0})
                       if any_read > 0 else math.nan)

    return _percentile_interval(replicates(), iterations, level)
