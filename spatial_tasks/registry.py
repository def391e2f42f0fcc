"""The benchmarks: one line each. Every shared layer loops over ``benchmarks()``.

Adding a benchmark: a folder ``spatial_tasks/<name>/`` with a ``benchmark.py`` that defines
``BENCHMARK = Benchmark(...)`` (``spatial_tasks.benchmark`` says what each field is for), its task
YAMLs in ``tasks/<name>/``, and one line below. ``$SPATIAL_TASKS_BENCHMARKS`` (comma-separated
module names) adds benchmarks that live outside this package, after these.
"""

from __future__ import annotations

import importlib
import os
from functools import cache

from spatial_tasks.benchmark import Benchmark

MODULES = (
    "spatial_tasks.spatialtunnel.benchmark",
    "spatial_tasks.spatialtunnel.resplit.benchmark",
    "spatial_tasks.o3d.benchmark",
    "spatial_tasks.dori.benchmark",
    "spatial_tasks.vague.benchmark",
)
EXTRA_ENV = "SPATIAL_TASKS_BENCHMARKS"


class UnknownBenchmark(LookupError):
    """A name that no registered benchmark has."""


def modules() -> tuple[str, ...]:
    extra = tuple(m.strip() for m in os.environ.get(EXTRA_ENV, "").split(",") if m.strip())
    return MODULES + tuple(m for m in extra if m not in MODULES)


@cache
def _load(names: tuple[str, ...]) -> dict[str, Benchmark]:
    out: dict[str, Benchmark] = {}
    for module in names:
        description = getattr(importlib.import_module(module), "BENCHMARK", None)
        if not isinstance(description, Benchmark):
            raise TypeError(f"{module}: defines no BENCHMARK = spatial_tasks.benchmark.Benchmark(...)")
        if description.name in out:
            raise ValueError(f"{module}: a benchmark named {description.name!r} is already registered")
        out[description.name] = description
    return out


def benchmarks() -> dict[str, Benchmark]:
    """name -> description, in registry order."""
    return _load(modules())


def get(name: str) -> Benchmark:
    try:
        return benchmarks()[name]
    except KeyError:
        raise UnknownBenchmark(f"no benchmark named {name!r}; benchmarks: {', '.join(benchmarks())}") from None
