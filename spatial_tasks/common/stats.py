"""Means and shares for every benchmark's metrics, with one convention for "undefined".

A figure that cannot be computed (no records, no pairs of a kind, no readable answer) is NaN:
in records, in lmms-eval's results, in ``rescore``'s numbers. Reports print it as "n/a"
(``formatting.number``); ``--json`` output writes it as null (strict JSON). Never 0, which
would read as a result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable


def mean(values: Iterable[float]) -> float:
    """The arithmetic mean; NaN for no values."""
    total, count = 0.0, 0
    for value in values:
        total += value
        count += 1
    return total / count if count else math.nan


def share(items: Iterable, predicate: Callable[[object], bool]) -> float:
    """The share of ``items`` for which ``predicate`` holds; NaN for no items."""
    return mean(1.0 if predicate(item) else 0.0 for item in items)


def is_defined(value: object) -> bool:
    """A finite number (not None, NaN, inf or a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
