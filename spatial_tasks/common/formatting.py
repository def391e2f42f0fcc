"""Numbers as a person reads them: fixed decimals, no "-0.000", undefined shown as undefined.

A metric that cannot be computed (no rows, one group, no parseable answer) is NaN
(``common.stats``); it is printed as "n/a" -- never as 0.000 or 1.000, which would read as a result.
"""

from __future__ import annotations

import math
import re

from spatial_tasks.common.stats import is_defined

UNDEFINED = "n/a"


def slug(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``._-``; other runs become "_"; at most 80 characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80]


def number(value: object, digits: int = 3, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals ("+0.120" when ``signed``); UNDEFINED for None/NaN/inf.

    Rounding happens first, so float noise (0.30000000000000004) and a tiny negative (-0.0001
    at 3 decimals) print as 0.300 and 0.000, never -0.000 (or +0.000). Integers print as integers.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return UNDEFINED if value is None else str(value)
    if isinstance(value, int):
        return f"{value:+d}" if signed else str(value)
    if not math.isfinite(value):
        return UNDEFINED
    rounded = round(value, digits)
    if rounded == 0:  # also -0.0: zero has no sign
        return f"{0.0:.{digits}f}"
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"


def with_interval(value: object, interval: tuple[float, float] | None, signed: bool = False) -> str:
    """"0.570 [0.512, 0.626]": a figure and its 95 % interval (the figure alone without one)."""
    text = number(value, signed=signed)
    if (not isinstance(value, (int, float)) or not math.isfinite(value) or interval is None
            or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in interval)):
        return text  # an undefined figure has no interval to show
    return f"{text} [{number(interval[0], signed=signed)}, {number(interval[1], signed=signed)}]"
