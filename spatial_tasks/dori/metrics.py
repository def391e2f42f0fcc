"""DORI metrics: pure functions of per-question records (``tasks.score`` makes them).

A record holds ``task``, ``granularity``, ``correct`` (0/1), ``soft`` (0, 0.5 or 1),
``outcome`` (common.choice: selected / declined / refused / unparseable) and the breakdown keys
``source``, ``broad_classes``, ``natural``, ``n_options``. A figure that is undefined (no
records) is NaN (``common.stats``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from spatial_tasks.benchmark import Headline, Scorecard
from spatial_tasks.common.choice import DECLINED, REFUSED, UNPARSEABLE, outcome_share
from spatial_tasks.common.stats import is_defined, mean
from spatial_tasks.dori.schema import GRANULARITIES, TASKS
from spatial_tasks.common.intervals import GroupedMeans


def accuracy(records: Sequence[dict]) -> float:
    """Accuracy (Table 2 cells): the share of questions whose selected option is the answer."""
    return mean([float(r["correct"]) for r in records])


def soft_accuracy(records: Sequence[dict]) -> float:
    """Soft accuracy (§4; Table 6): mean credit, 0.5 for a task's near miss (``soft.py``)."""
    return mean([float(r["soft"]) for r in records])


def unparseable_share(records: Sequence[dict]) -> float:
    """Share of answers from which no selection could be read (scored wrong)."""
    return outcome_share(records, UNPARSEABLE)


def declined_share(records: Sequence[dict]) -> float:
    """Share of answers that declined: "Cannot be determined" where it is not the answer, or "I
    don't know" (scored wrong)."""
    return outcome_share(records, DECLINED)


def refused_share(records: Sequence[dict]) -> float:
    """Share of answers that refused to answer (scored wrong)."""
    return outcome_share(records, REFUSED)


def by(records: Iterable[dict], key: Callable[[dict], Iterable] | str) -> dict:
    """Records grouped by a field (or a function returning every group a record belongs to)."""
    groups: dict = defaultdict(list)
    for r in records:
        values = key(r) if callable(key) else [r.get(key)]
        for value in values:
            groups[value].append(r)
    return dict(groups)


def per_task(records: Sequence[dict], metric: Callable[[Sequence[dict]], float] = accuracy
             ) -> dict[tuple[str, str], float]:
    """``metric`` per (task, granularity), in the paper's task order."""
    groups = by(records, lambda r: [(r["task"], r["granularity"])])
    return {(t, g): metric(groups[(t, g)]) for t in TASKS for g in GRANULARITIES if (t, g) in groups}


def task_average(records: Sequence[dict], granularity: str,
                 metric: Callable[[Sequence[dict]], float] = accuracy) -> float:
    """Table 2's Avg: the unweighted mean over the tasks present of the per-task ``metric`` for one
    granularity. Computed, not copied: the paper's printed Avg is not always this mean."""
    values = [v for (t, g), v in per_task(records, metric).items() if g == granularity and is_defined(v)]
    return mean(values)


BREAKDOWNS: dict[str, Callable[[dict], Iterable]] = {
    "source": lambda r: [r.get("source") or "unknown"],
    "broad_class": lambda r: r.get("broad_classes") or ["Miscellaneous"],  # Table 5 overlaps: every class
    "natural": lambda r: [{True: "natural", False: "simulated"}.get(r.get("natural"), "unknown")],
    "n_options": lambda r: [int(r["n_options"])],
}


def breakdown(records: Sequence[dict], name: str,
              metric: Callable[[Sequence[dict]], float] = accuracy) -> dict:
    """``metric`` per value of a breakdown (source, broad_class, natural, n_options; §5)."""
    groups = by(records, BREAKDOWNS[name])
    return {value: (metric(rs), len(rs)) for value, rs in sorted(groups.items(), key=lambda kv: str(kv[0]))}


def expected_always_first(records: Sequence[dict]) -> float:
    """What always choosing option A scores on these questions: the share whose answer is shown
    first (an exact figure for the seeded order; its expectation over orders is mean(1/n))."""
    return mean([float(r["answer_shown"] == 0) for r in records])


def chance(records: Sequence[dict]) -> float:
    """Expected accuracy of a uniform random choice: mean(1 / number of options)."""
    return mean([1.0 / r["n_options"] for r in records])


def seed_summary(values: Sequence[float], ddof: int = 0) -> tuple[float, float]:
    """(mean, error) over k seeds, error = std / sqrt(k) (the paper's "std_accuracy/
    sqrt(seed_count)"; numpy's default population std, ``ddof=0``; ``ddof=1`` for the sample std).
    Undefined seeds are left out; the error is NaN for a single seed (or ddof >= k)."""
    xs = [v for v in values if is_defined(v)]
    if not xs:
        return math.nan, math.nan
    centre = statistics.fmean(xs)
    if len(xs) - ddof <= 0 or len(xs) < 2:
        return centre, math.nan
    var = sum((x - centre) ** 2 for x in xs) / (len(xs) - ddof)
    return centre, math.sqrt(var) / math.sqrt(len(xs))


# --- The scorecard: the coarse and granular averages over tasks (Table 2's Avg, computed from our
# task cells), each defined once here; the tests check each equals ``task_average``.

def _average(granularity: str) -> Headline:
    """Table 2's Avg: the unweighted mean over the tasks present of their accuracy."""
    return Headline(f"avg_{granularity}", granularity, GroupedMeans(
        lambda r: r["task"] if r["granularity"] == granularity and r["task"] in TASKS else None,
        lambda r: float(r["correct"]), lambda means: sum(means.values()) / len(means) if means else math.nan))


SCORECARD = Scorecard(unit=lambda r: r["question_id"], headlines=(_average("coarse"), _average("granular")))


# The task metrics lmms-eval aggregates, by name: registered as ``dori_<name>`` (``Benchmark.metrics``),
# named so in the task YAMLs, recomputed over the pooled records for a group.
TASK_METRICS = {
    "acc": accuracy,
    "soft": soft_accuracy,
    "unparseable": unparseable_share,
    "declined": declined_share,
    "refused": refused_share,
}
