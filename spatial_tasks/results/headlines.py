"""Each benchmark's scorecard (its headline figures), by name: what the scorecard and the
leaderboard show. The figures themselves are defined once, in each benchmark's description
(``spatial_tasks/<benchmark>/benchmark.py``, ``spatial_tasks.benchmark.Scorecard``)."""

from __future__ import annotations

from spatial_tasks.benchmark import Scorecard
from spatial_tasks.registry import benchmarks


def headlines() -> dict[str, Scorecard]:
    """name -> scorecard of every registered benchmark that has one."""
    return {name: b.scorecard for name, b in benchmarks().items() if b.scorecard is not None}
