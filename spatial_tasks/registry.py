"""The benchmarks: one line each. Every shared layer loops over ``benchmarks()``.

Adding a benchmark: a folder ``spatial_tasks/<name>/`` with a ``benchmark.py`` that defines
``BENCHMARK = Benchmark(...)`` (``spatial_tasks.benchmark`` says what each field is for), its task
YAMLs in ``tasks/<name>/``, and one line below. ``$SPATIAL_TASKS_BENCHMARKS`` (comma-separated
module names) adds benchmarks that live outside this package, after these.
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache
from pathlib import Path
from typing import TypeVar

from spatial_tasks.benchmark import Benchmark, Capability
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.runset import RunSet

MODULES = (
    "spatial_tasks.spatialtunnel.benchmark",
    "spatial_tasks.spatialtunnel.resplit.benchmark",
    "spatial_tasks.o3d.benchmark",
    "spatial_tasks.dori.benchmark",
    "spatial_tasks.vague.benchmark",
)
EXTRA_ENV = "SPATIAL_TASKS_BENCHMARKS"
C = TypeVar("C", bound=Capability)


class UnknownBenchmark(LookupError):
    """A name that no registered benchmark has."""


class BenchmarkFailed(UserError, RuntimeError):
    """A benchmark's own code raised where a shared layer called it; the message names the
    benchmark, its module and what it was asked to do, so the other benchmarks can still be served."""


def guarded(benchmark: Benchmark, what: str, call, *args, **kwargs):
    """``call(*args, **kwargs)``, a piece of ``benchmark``'s own code; whatever it raises comes back
    as one ``BenchmarkFailed`` line naming the benchmark, the module and ``what``."""
    try:
        return call(*args, **kwargs)
    except BenchmarkFailed:
        raise
    except Exception as exc:  # noqa: BLE001 -- a benchmark's code may raise anything: named, contained
        module = getattr(call, "module", None) or getattr(call, "__module__", None) or benchmark.name
        message = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise BenchmarkFailed(f"benchmark {benchmark.name} ({module}): {what} failed: {type(exc).__name__}: "
                              f"{message}") from exc


def extra_module_in(err: BaseException) -> tuple[str, str] | None:
    """(benchmark module given in ``$SPATIAL_TASKS_BENCHMARKS``, the module that raised) when the
    innermost frame of ``err``'s traceback that lies in such a benchmark's package raised it; else
    None. An error in one of this package's own benchmarks is a bug of ours, not named this way."""
    extras = [m for m in modules() if m not in MODULES]
    if not extras:
        return None
    tb, found = err.__traceback__, None
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        for extra in extras:
            package = extra.rsplit(".", 1)[0] if "." in extra else extra
            if name == extra or name == package or name.startswith(package + "."):
                found = (extra, name)
        tb = tb.tb_next
    return found


def modules() -> tuple[str, ...]:
    extra = tuple(m.strip() for m in os.environ.get(EXTRA_ENV, "").split(",") if m.strip())
    return MODULES + tuple(m for m in extra if m not in MODULES)


def _described(module: str, out: dict[str, Benchmark]) -> Benchmark:
    """The module's BENCHMARK; an error naming the module when it does not import, defines none, or
    reuses a registered name."""
    try:
        imported = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 -- any failure of a module we are told to load is named
        raise ValueError(f"{module}: does not import ({type(exc).__name__}: {exc})") from exc
    description = getattr(imported, "BENCHMARK", None)
    if not isinstance(description, Benchmark):
        raise TypeError(f"{module}: defines no BENCHMARK = spatial_tasks.benchmark.Benchmark(...)")
    if description.name in out:
        raise ValueError(f"{module}: a benchmark named {description.name!r} is already registered")
    return description


@cache
def _load(names: tuple[str, ...]) -> dict[str, Benchmark]:
    """The registry. A benchmark of this package that fails is a bug and stops here; one added by
    ``$SPATIAL_TASKS_BENCHMARKS`` that fails is left out with one warning naming it and why, so that
    it cannot break every command and every run of the others."""
    out: dict[str, Benchmark] = {}
    for module in names:
        try:
            description = _described(module, out)
        except (TypeError, ValueError) as exc:
            if module in MODULES:
                raise
            _say_left_out(str(exc))
            continue
        out[description.name] = description
    return out


def benchmarks() -> dict[str, Benchmark]:
    """name -> description, in registry order."""
    return _load(modules())


def leave_out(benchmark: Benchmark, why: str) -> None:
    """Leave an added benchmark (``$SPATIAL_TASKS_BENCHMARKS``) out of this process's registry, with
    one warning naming its module and why; every other benchmark is unaffected."""
    current = benchmarks()
    if current.get(benchmark.name) is not benchmark:
        return
    module = benchmark_module(benchmark.name)
    if module in MODULES:
        raise ValueError(f"{module}: one of this package's own benchmarks cannot be left out ({why})")
    del current[benchmark.name]
    _say_left_out(f"{module}: {why}")


def _say_left_out(what: str) -> None:
    """The one warning of an added benchmark left out."""
    from loguru import logger

    logger.warning(f"${EXTRA_ENV}: {what}; left out, the other benchmarks are unaffected")


def benchmark_module(name: str) -> str | None:
    """The module whose BENCHMARK is the registered benchmark called ``name`` (None: no such one)."""
    described = benchmarks().get(name)
    return next((m for m in modules() if getattr(sys.modules.get(m), "BENCHMARK", None) is described), None) \
        if described is not None else None


def get(name: str) -> Benchmark:
    try:
        return benchmarks()[name]
    except KeyError:
        raise UnknownBenchmark(f"no benchmark named {name!r}; benchmarks: {', '.join(benchmarks())}") from None


def read_runs(*roots: Path) -> RunSet:
    """The lmms-eval runs under ``roots``, each task's records made by its registered benchmark: the
    value a command reads once and hands to report, verify, results, rescore and the page
    (``common.runset``)."""
    return RunSet.read(roots, benchmarks())


def offering(kind: type[C]) -> list[tuple[Benchmark, C]]:
    """(benchmark, its capability) for every benchmark that offers one of this kind, in registry
    order: how a shared layer reaches what only some benchmarks do."""
    return [(b, found) for b in benchmarks().values() if (found := b.offers(kind)) is not None]
