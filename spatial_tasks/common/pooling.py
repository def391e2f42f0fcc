"""Per-doc records logged once, and group metrics computed on the pooled records.

Two limits of lmms-eval 0.7.3 that every benchmark here meets:

* ``--log_samples`` writes every metric key's value for every doc. A benchmark passes ONE record
  per doc to all its metrics; repeated under ~25 keys that is ~1 GB of samples for O3-D. So the
  record is logged once, under the task's first metric, and the other keys hold a ``RecordRef``
  (written as a short pointer string); ``fan_out`` builds that dict.
* A group's ``aggregate_metric_list`` aggregation receives only the subtasks' final values and
  sizes (``evaluator_utils.consolidate_group_results``), so a weighted mean is all it could do --
  wrong for an SDGM, a bias, Delta = v_cons - v_ctr or any accuracy on a subset. Our aggregations
  therefore return a ``PooledValue``: a float (what lmms-eval prints and writes) that also holds,
  in the evaluating process only, the records and the metric function. ``pool_subtasks`` (the
  groups' aggregation) applies that function to the union of the subtasks' records: the group
  figure is the metric of the pooled records, exactly what rescoring from the samples gives.

lmms-eval matches an ``aggregate_metric_list`` entry's name as a SUBSTRING of the subtask metric
names ("v" also matches "v_cons"), so one entry can pool a family of metrics, each by its own
function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from loguru import logger as log

MetricFunction = Callable[[Sequence[dict]], "float | None"]


class PooledValue(float):
    """A metric value that also remembers the records it was computed from and the function.

    Behaves as a float everywhere (printing, JSON, arithmetic). Copying or pickling gives a plain
    float, so the records never leave the process that evaluated them; only ``pool_subtasks``,
    which lmms-eval calls right after the subtasks' aggregations, reads them. An undefined
    metric (None) is NaN.
    """

    records: list
    metric: str
    function: MetricFunction

    def __new__(cls, value: float | None, records: list, metric: str, function: MetricFunction):
        obj = super().__new__(cls, math.nan if value is None else float(value))
        obj.records = records
        obj.metric = metric
        obj.function = function
        return obj

    def __reduce__(self):
        return float, (float(self),)

    def __copy__(self):
        return float(self)

    def __deepcopy__(self, memo):
        return float(self)


class RecordRef:
    """Stands for the per-doc record under another metric key of the same doc (see the module
    docstring); lmms-eval's JSON fallback writes it as ``<BENCH record: see 'KEY'>``."""

    __slots__ = ("key", "record")

    def __init__(self, record: dict, key: str):
        self.record = record
        self.key = key

    def __str__(self) -> str:
        return f"<{self.record.get('benchmark', 'spatial-tasks')} record: see {self.key!r}>"

    __repr__ = __str__


def is_record_ref(value: object) -> bool:
    """Whether a logged value is a RecordRef's pointer string."""
    return isinstance(value, str) and value.startswith("<") and " record: see '" in value and value.endswith("'>")


def fan_out(record: dict, names: Sequence[str]) -> dict:
    """``process_results``' return: the record under the first metric, a RecordRef elsewhere."""
    return {name: record if k == 0 else RecordRef(record, names[0]) for k, name in enumerate(names)}


def unwrap(items: Iterable[Any]) -> list:
    return [item.record if isinstance(item, RecordRef) else item for item in items]


def aggregation(name: str, function: MetricFunction) -> Callable[[list], PooledValue]:
    """An lmms-eval aggregation for metric ``name``: ``function`` of the records, pooled-able."""
    def agg(items: list) -> PooledValue:
        records = unwrap(items)
        return PooledValue(function(records), records, name, function)

    agg.__name__ = agg.__qualname__ = f"agg_{name}"
    agg.__doc__ = function.__doc__
    return agg


def pool_subtasks(values: list, sizes: list, weight_by_size: bool = True) -> float:
    """Group aggregation (``aggregate_metric_list: aggregation: !function ...pool_subtasks``):
    the metric recomputed on the union of the subtasks' records -- never a mean of means.

    lmms-eval passes the subtasks' values of one metric (PooledValues made by ``aggregation``),
    their sizes and the weight flag; sizes and weights are not needed.
    """
    pooled = [v for v in values if isinstance(v, PooledValue)]
    if len(pooled) != len(values) or not pooled:
        log.warning("group metric: a subtask value carries no records (not made by spatial_tasks); reporting "
                    "NaN. `spatial-tasks rescore` recomputes it from the samples.")
        return math.nan
    names = {v.metric for v in pooled}
    if len(names) != 1:
        log.warning(f"group metric: subtask values of different metrics {sorted(names)}; reporting NaN")
        return math.nan
    records = [r for v in pooled for r in v.records]
    function = pooled[0].function
    return PooledValue(function(records), records, names.pop(), function)
