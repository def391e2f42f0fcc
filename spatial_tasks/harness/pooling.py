"""(4) Group metrics from pooled records (``aggregation`` -> ``PooledValue``; ``pool_subtasks``) and
(5) one logged record per doc (``fan_out`` -> the record once, a ``RecordRef`` pointer elsewhere;
reading the pointer back is the samples reader's job: ``common.samples.is_record_ref``), to the metrics
the task's YAML declares (``ResultsHook``)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

MetricFunction = Callable[[Sequence[dict]], "float | None"]


class PooledValue(float):
    """A metric value that also remembers the records it was computed from and the function.

    Behaves as a float everywhere (printing, JSON, arithmetic). Copying or pickling gives a plain
    float, so the records never leave the process that evaluated them; only ``pool_subtasks``,
    which lmms-eval calls right after the subtasks' aggregations, reads them. An undefined metric
    (None) is NaN.
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
    """Stands for the per-doc record under another metric key of the same doc; lmms-eval's JSON
    fallback writes it as ``<BENCH record: see 'KEY'>``."""

    __slots__ = ("key", "record")

    def __init__(self, record: dict, key: str):
        self.record = record
        self.key = key

    def __str__(self) -> str:
        return f"<{self.record.get('benchmark', 'spatial-tasks')} record: see {self.key!r}>"

    __repr__ = __str__


def fan_out(record: dict, names: Sequence[str]) -> dict:
    """``process_results``' return: the record under the first metric, a RecordRef elsewhere."""
    return {name: record if k == 0 else RecordRef(record, names[0]) for k, name in enumerate(names)}


class ResultsHook:
    """A task's ``process_results``: ``record(doc, results)`` makes the doc's one record, fanned out to the
    metrics the task's YAML declares (its ``metric_list``). The seam binds those when lmms-eval loads the
    task's data (``harness.download``), so tasks with different metric lists share one hook, and a new
    metric is one entry in the benchmark's table and one line in the YAML."""

    def __init__(self, name: str, record: Callable[[Any, list], dict]):
        self.__name__ = self.__qualname__ = name
        self.record = record
        self.metrics: tuple[str, ...] = ()
        # a first-token scorer asks the task's hook whether it scores payloads (common.yesno.scores_payloads)
        self.scores_first_token_payload = getattr(record, "scores_first_token_payload", False)

    def bound(self, metrics: Sequence[str]) -> ResultsHook:
        """This hook for a task that declares ``metrics``."""
        hook = copy.copy(self)
        hook.metrics = tuple(metrics)
        return hook

    def __call__(self, doc, results) -> dict:
        if not self.metrics:
            raise TypeError(f"{self.__name__}: called without its task's metrics -- spatial-tasks' lmms-eval seam is not "
                            "installed (spatial_tasks.harness.install), or the hook was called by hand: bind them "
                            "with .bound(names)")
        return fan_out(self.record(doc, results), self.metrics)

    def __repr__(self) -> str:
        return f"<spatial-tasks process_results {self.__name__}>"


def unwrap(items: Iterable[Any]) -> list:
    return [item.record if isinstance(item, RecordRef) else item for item in items]


def aggregation(name: str, function: MetricFunction) -> Callable[[list], PooledValue]:
    """An lmms-eval aggregation for metric ``name``: ``function`` of the records, pooled-able.

    A metric that fails here must not take the run with it: lmms-eval computes every aggregation
    before it writes results or samples, so an exception would discard the whole run. The
    failure is logged as one line and the metric is NaN ("n/a"); ``spatial-tasks rescore``
    recomputes it from the samples once the cause is fixed."""

    def agg(items: list) -> PooledValue:
        records = unwrap(items)
        return PooledValue(computed(name, function, records), records, name, function)

    agg.__name__ = agg.__qualname__ = f"agg_{name}"
    agg.__doc__ = function.__doc__
    agg.metric_function = function  # what makes registering it again a no-op
    return agg


def registered_name(prefix: str, metric: str) -> str:
    """The lmms-eval aggregation name of a benchmark's metric: ``o3d_acc``."""
    return f"{prefix}_{metric}"


def register_aggregations() -> list[str]:
    """Register every benchmark's metric table (``Benchmark.metrics``) with lmms-eval, each metric
    as ``<prefix>_<metric>``, so a task YAML names it as a string (``aggregation: o3d_acc``).

    Runs in the entry point (``install``), i.e. whenever ``lmms_eval.models`` is imported -- in the
    CLI and in every process of a multi-process run, before any task is built. lmms-eval resolves
    a string aggregation when it builds a task (``get_aggregation``, which only warns on an unknown
    name), but a group's ``aggregate_metric_list`` takes only "mean" or a function: group configs
    keep ``!function utils.pool_subtasks``. Idempotent. A benchmark's names are all checked before
    any is registered: one of ours whose name another package holds is an error (a bug of ours);
    a benchmark added by ``$SPATIAL_TASKS_BENCHMARKS`` whose table fails to load, or whose name is
    taken, is left out with one warning (``registry.leave_out``) -- the entry point must never
    fail, or lmms-eval drops every model of ours with it."""
    from lmms_eval.api.registry import AGGREGATION_REGISTRY, register_aggregation

    from spatial_tasks.registry import MODULES, benchmark_module, benchmarks, leave_out

    names = []
    for benchmark in list(benchmarks().values()):
        try:
            planned = _planned(benchmark, AGGREGATION_REGISTRY)
        except Exception as exc:  # noqa: BLE001 -- an added benchmark's code may raise anything
            if benchmark_module(benchmark.name) in MODULES:
                raise
            leave_out(benchmark, f"its lmms-eval metrics cannot be registered ({type(exc).__name__}: {exc})")
            continue
        for name, metric, function in planned:
            if name not in AGGREGATION_REGISTRY:
                register_aggregation(name)(aggregation(metric, function))
            names.append(name)
    return names


def _planned(benchmark, held: dict) -> list[tuple[str, str, MetricFunction]]:
    """(aggregation name, metric, function) of every metric ``benchmark`` declares; ValueError when
    a name is held by another function (another benchmark's, lmms-eval's, another package's)."""
    planned = []
    for prefix, table in benchmark.metrics.items():
        for metric, function in table.load().items():
            name = registered_name(prefix, metric)
            other = held.get(name)
            if other is not None and getattr(other, "metric_function", None) is not function:
                raise ValueError(f"{benchmark.name}: the lmms-eval aggregation name {name!r} is already registered "
                                 f"by {getattr(other, '__module__', '?')}; rename the metric or its prefix")
            planned.append((name, metric, function))
    return planned


def computed(name: str, function: MetricFunction, records: list) -> float | None:
    from loguru import logger as log

    try:
        return function(records)
    except Exception as err:  # noqa: BLE001 - any failure: keep the run, report n/a (see aggregation)
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        log.error(f"metric {name}: could not be computed ({type(err).__name__}: {first[:300]}); reporting n/a. "
                  "The samples are kept: fix the cause and run `spatial-tasks rescore` on them")
        return None


def pool_subtasks(values: list, sizes: list, weight_by_size: bool = True) -> float:
    """Group aggregation (``aggregate_metric_list: aggregation: !function ...pool_subtasks``): the
    metric recomputed on the union of the subtasks' records -- never a mean of means."""
    from loguru import logger as log

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
    name = names.pop()
    return PooledValue(computed(name, function, records), records, name, function)
