"""A command's lmms-eval runs, read once and handed to every consumer as a value (issue 66, item 1).

``RunSet.read(roots, benchmarks)`` finds every run under the folders (``samples.find_runs``) and, per run
and task, a ``TaskRun``: its samples file (parsed on first use, then kept: ``samples.SamplesFile``), the
benchmark whose records it logged, those records re-scored (per option set) and the metrics its task
declared; ``software_of(run)`` reads what its run recorded. ``RunSet.scope(tasks)`` pools the records of some tasks of
one run (one task, a group, a run's whole benchmark) and keeps their intervals. Each of these is made
when first asked and kept on the value, so ``report``, ``verify``, ``results``, ``rescore``, the page and
every benchmark section -- which all take the run set as an argument -- read a file once however many
of them ask, and an added benchmark gets the same without writing anything for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from spatial_tasks.benchmark import Benchmark, DeclaredMetrics, Headline
from spatial_tasks.common.environment import ENVIRONMENT_KEY
from spatial_tasks.common.intervals import ITERATIONS, SEED
from spatial_tasks.common.samples import Run, SamplesFile, find_runs, samples_benchmark

Interval = tuple[float, float, float, str]  # value, 95 % low, high, method


def _options_key(benchmark: Benchmark | None, options: Mapping[str, Any]) -> tuple:
    """The options this benchmark takes (``Benchmark.options``), as a key: others are not its concern."""
    taken = benchmark.options if benchmark is not None else ()
    return tuple(sorted((k, v) for k, v in options.items() if k in taken))


@dataclass(eq=False)
class TaskRun:
    """One task of one run: its samples file and what is made of it, each on first use."""

    run: Run
    task: str
    file: SamplesFile
    known: Mapping[str, Benchmark]  # the benchmarks this command knows (the registry's)
    _records: dict[tuple, list[dict]] = field(default_factory=dict, repr=False)

    @property
    def path(self) -> Path:
        return self.file.path

    @cached_property
    def benchmark_name(self) -> str | None:
        """The benchmark named by the file's first logged record (``samples.samples_benchmark``)."""
        return samples_benchmark(self.file)

    @property
    def benchmark(self) -> Benchmark | None:
        """Its benchmark when this command knows it (None: another harness's task, or no record)."""
        return self.known.get(self.benchmark_name) if self.benchmark_name is not None else None

    @cached_property
    def empty(self) -> bool:
        """Whether the file holds no logged sample at all."""
        return next(iter(self.file.lines()), None) is None

    def records(self, **options: Any) -> list[dict]:
        """Its benchmark's records, re-scored with the options it takes (a new list each time, the same
        records: consumers read them, never change them)."""
        benchmark = self.benchmark
        if benchmark is None:
            return []
        key = _options_key(benchmark, options)
        if key not in self._records:
            self._records[key] = benchmark.records_from_samples(self.file, **dict(key))
        return list(self._records[key])

    @cached_property
    def declared(self) -> tuple[str, ...] | None:
        """The metric names its task declared (``DeclaredMetrics``), or None: every headline."""
        offered = self.benchmark.offers(DeclaredMetrics) if self.benchmark is not None else None
        return offered.names(self.file) if offered is not None else None

    @property
    def key(self) -> tuple[str, str, str]:
        return (str(self.run.folder), self.run.stamp, self.task)


@dataclass(eq=False)
class Scope:
    """Records pooled from tasks of one run, with their scorecard intervals kept per figure."""

    benchmark: Benchmark
    records: list[dict]
    _intervals: dict[tuple, Interval] = field(default_factory=dict, repr=False)

    def intervals(self, figures: Sequence[Headline] | None = None, iterations: int = ITERATIONS,
                  seed: int = SEED) -> dict[str, Interval]:
        """metric -> (value, low, high, method) of ``figures`` (default: every headline and detail)."""
        card = self.benchmark.scorecard
        wanted = list((*card.headlines, *card.details) if figures is None else figures)
        missing = [f for f in wanted if (f.metric, iterations, seed) not in self._intervals]
        if missing:
            found = card.intervals(self.records, iterations, seed, missing)
            self._intervals.update({(metric, iterations, seed): value for metric, value in found.items()})
        return {f.metric: self._intervals[f.metric, iterations, seed] for f in wanted}


@dataclass(eq=False)
class RunSet:
    """Every run under a command's folders, each task a ``TaskRun`` (module docstring)."""

    roots: tuple[Path, ...]
    runs: list[Run]
    tasks: list[TaskRun]
    by_root: dict[Path, list[Run]]
    known: Mapping[str, Benchmark]  # the benchmarks this command knows (the registry's), in its order
    _scopes: dict[tuple, Scope] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, roots: Sequence[Path], known: Mapping[str, Benchmark]) -> RunSet:
        """The runs under ``roots`` (folders, or samples/results files), in the roots' order."""
        by_root = {Path(root): find_runs(Path(root)) for root in roots}
        runs = [run for found in by_root.values() for run in found]
        tasks = [TaskRun(run, task, SamplesFile(path), known) for run in runs for task, path in sorted(run.samples.items())]
        return cls(tuple(by_root), runs, tasks, by_root, known)

    @property
    def source(self) -> str:
        """The folders it was read from, as a command's JSON names them."""
        return ", ".join(map(str, self.roots))

    def empty(self) -> list[Path]:
        """The samples files that hold no logged sample (a command names them, and leaves them out)."""
        return [t.path for t in self.tasks if t.empty]

    def ours(self) -> list[TaskRun]:
        """The tasks whose records a known benchmark logged (empty files left out)."""
        return [t for t in self.tasks if not t.empty and t.benchmark is not None]

    def of_run(self, run: Run) -> list[TaskRun]:
        """The tasks of one of its runs."""
        return [t for t in self.tasks if t.run == run]

    def only(self, benchmark: str) -> RunSet:
        """The part of the set that one benchmark logged."""
        tasks = [t for t in self.ours() if t.benchmark_name == benchmark]
        return self._part([run for run in self.runs if any(t.run is run for t in tasks)], tasks)

    def within(self, folder: Path) -> RunSet:
        """The part of the set whose runs lie under ``folder``."""
        runs = [run for run in self.runs if Path(run.folder).is_relative_to(folder)]
        return self._part(runs, [t for t in self.tasks if t.run in runs])

    def _part(self, runs: list[Run], tasks: list[TaskRun]) -> RunSet:
        """A part of the set, sharing what was read and kept (the tasks, their records, the scopes)."""
        return replace(self, runs=runs, tasks=tasks, by_root={r: [x for x in rs if x in runs] for r, rs in self.by_root.items()})

    def by_benchmark(self) -> dict[str, RunSet]:
        """Benchmark name -> its part, in the order of the benchmarks this command knows."""
        names = {t.benchmark_name for t in self.ours()}
        return {name: self.only(name) for name in self.known if name in names}

    def scope(self, tasks: Sequence[TaskRun], **options: Any) -> Scope:
        """The pooled records of ``tasks`` (in this order), kept with their intervals."""
        benchmark = tasks[0].benchmark
        key = (tuple(t.key for t in tasks), _options_key(benchmark, options))
        if key not in self._scopes:
            self._scopes[key] = Scope(benchmark, [r for t in tasks for r in t.records(**options)])
        return self._scopes[key]


def run_software(config: dict) -> dict:
    """The software one task of a run recorded (harness: config metadata); {} for runs made before
    spatial-tasks recorded it, or by tasks that are not ours."""
    metadata = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    found = metadata.get(ENVIRONMENT_KEY)
    return {k: (None if v is None else str(v)) for k, v in found.items()} if isinstance(found, dict) else {}


def software_of(run: Run) -> dict:
    """The software one lmms-eval run recorded ({} when none of its tasks did)."""
    configs = run.results().get("configs") or {}
    return next((e for e in (run_software(c) for c in configs.values() if isinstance(c, dict)) if e), {})
