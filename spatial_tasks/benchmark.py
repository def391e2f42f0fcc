"""What a benchmark tells the shared layers about itself: the ``Benchmark`` description.

Each benchmark writes one in ``spatial_tasks/<name>/benchmark.py`` (``BENCHMARK = Benchmark(...)``)
and ``spatial_tasks/registry.py`` lists it. The shared layers -- results, verify, report, inspect,
the task catalogue and ``custom-task``, prompts, baselines, the ``evaluate`` modules and the CLI --
loop over the registry and read only these fields; none of them knows a benchmark by name.

The same words mean the same thing in every benchmark:

- a **record** is one question's outcome (what ``process_results`` logs and ``rescore`` re-makes
  from a logged sample); ``record`` is its pydantic type;
- ``records_from_samples(path, **options)``: the records of one ``*_samples_<task>.jsonl`` file;
- ``score(reference, prediction, **options)``: one record from a question (its logged record or
  its doc) and a model output -- what Hugging Face ``evaluate`` calls per question;
- ``summary(records, **options)``: the figures of a set of records (what ``rescore`` prints);
- ``scorecard``: the headline figures, each defined once (``Headline.figure``), with the unit
  the bootstrap resamples.

A description is light to import: it names functions of its own folder and imports them when
called, so ``spatial-tasks --help`` and the registry stay fast. Nothing here imports lmms-eval.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spatial_tasks.common.intervals import (
    ITERATIONS,
    SEED,
    GroupedMeans,
    cluster_bootstrap,
    grouped_bootstrap,
    wilson,
)

Rows = Sequence[dict]


def binary(values: list[float]) -> tuple[float, int] | None:
    """(right answers, questions) when every value is 0 or 1 (then a Wilson interval), else None."""
    return (sum(values), len(values)) if values and all(v in (0.0, 1.0) for v in values) else None


def distinct(records: Sequence[dict], *keys: str) -> dict[str, str]:
    """A benchmark's ``settings``: each key's distinct values over the records, sorted and joined by
    commas (a key no record has is left out)."""
    out = {}
    for key in keys:
        values = sorted({str(r[key]) for r in records if r.get(key) is not None})
        if values:
            out[key] = ",".join(values)
    return out


@dataclass(frozen=True)
class Headline:
    """One headline figure, defined once: ``figure`` is either a ``GroupedMeans`` (a function of
    per-group means; its bootstrap runs as matrix products) or a plain function of the rows. The
    value and the interval both come from it."""

    metric: str
    label: str  # as the scorecard heads its column
    figure: GroupedMeans | Callable[[Rows], float]
    # (right answers, questions) when the figure is a plain share of 0/1 outcomes over these rows
    # (then the Wilson interval), else None (then the cluster bootstrap)
    proportion: Callable[[Rows], tuple[float, int] | None] | None = None
    # whether a task or group with these rows is one the scorecard may show this figure for
    # (O3-D: accuracy, bias and SDGM vision of the marked images; SDGM language of the rest)
    scope: Callable[[Rows], bool] = lambda rows: True

    @property
    def grouped(self) -> GroupedMeans | None:
        return self.figure if isinstance(self.figure, GroupedMeans) else None

    def value(self, rows: Rows) -> float:
        return self.grouped.figure(rows) if self.grouped is not None else self.figure(rows)

    def interval(self, rows: Rows, unit: Callable[[dict], Hashable], iterations: int, seed: int
                 ) -> tuple[float, float, str]:
        counts = self.proportion(rows) if self.proportion is not None else None
        if counts is not None:
            return *wilson(*counts), "wilson"
        if self.grouped is not None:
            return *grouped_bootstrap(rows, self.grouped, unit, iterations, seed), "cluster_bootstrap"
        return *cluster_bootstrap(rows, self.figure, unit, iterations, seed), "cluster_bootstrap"


@dataclass(frozen=True)
class Scorecard:
    """A benchmark's headline figures (the scorecard's columns) and the resampling unit."""

    unit: Callable[[dict], Hashable]  # rows of one unit are paired: resampled together
    headlines: tuple[Headline, ...]
    applies: Callable[[Rows], bool] = lambda rows: bool(rows)
    # figures with intervals in the benchmark's own tables and plots, not on the scorecard
    details: tuple[Headline, ...] = ()

    def intervals(self, rows: Rows, iterations: int = ITERATIONS, seed: int = SEED,
                  figures: Sequence[Headline] | None = None) -> dict[str, tuple[float, float, float, str]]:
        """metric -> (value, low, high, method) of ``figures`` (default: every headline and detail
        figure) over these rows; NaN where the figure is undefined."""
        out = {}
        for figure in (*self.headlines, *self.details) if figures is None else figures:
            value = figure.value(rows)
            if isinstance(value, (int, float)) and math.isfinite(value):
                out[figure.metric] = (float(value), *figure.interval(rows, self.unit, iterations, seed))
            else:
                out[figure.metric] = (math.nan, math.nan, math.nan, "none")
        return out


# What ``verify`` compares: (paper table id, where the figure comes from, {column: our value}).
PaperFigures = list[tuple[str, str, dict]]


@dataclass(frozen=True)
class Command:
    """A CLI command the benchmark adds: ``spatial-tasks GROUP NAME`` (GROUP "" for a top-level
    command); ``function`` is a typer command function."""

    group: str
    name: str
    function: Callable[..., None]
    group_help: str | None = None  # for a group of its own


@dataclass(frozen=True)
class Demo:
    """A benchmark's part of ``spatial-tasks demo`` (the main job, offline, on the bundled samples)."""

    tasks: str  # its bundled-sample tasks (comma-separated), run by each baseline rule
    rules: tuple[str, ...] = ()  # the spatial_baseline rules to run, each a separate evaluation
    model_tasks: str | None = None  # what the tiny Qwen2.5-VL answers as text (default: ``tasks``)
    # generation settings of that run: benchmarks with the same settings share one evaluation
    model_gen_kwargs: str | None = None
    logit_tasks: str | None = None  # what the first-token (Yes/No logit) models answer
    sample_note: str | None = None  # the report's line on its bundled sample data
    notes: tuple[str, ...] = ()  # the report's bullets: what each baseline proves
    # a study beside the evaluations: (tiny model folder, out) -> its folder for the report
    study: Callable[[Path, Path], Path] | None = None


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as every shared layer sees it (module docstring)."""

    name: str  # the task prefix, the records' ``benchmark`` field, the folder name
    title: str
    # -- data: the default release and the environment variable that points its tasks elsewhere
    default_source: str | None = None
    source_env: str | None = None
    tasks_dir: Path | None = None  # its task YAMLs outside this package (default: tasks/<task_folder>)
    task_folder: str | None = None  # its folder under this package's tasks/ (default: its name)
    source_note: str | None = None  # what `spatial-tasks list` adds to its default source
    # -- records and figures
    record: str | None = None  # "module:Class", the pydantic type of its record (``record_type()``)
    records_from_samples: Callable[..., list[dict]] | None = None
    # the metric names a samples file's task declared (None: every headline applies)
    metric_names: Callable[[Path], tuple[str, ...]] | None = None
    score: Callable[..., dict] | None = None
    summary: Callable[..., dict] | None = None
    options: tuple[str, ...] = ()  # what ``score`` / ``summary`` / ``records_from_samples`` accept
    option_values: Mapping[str, tuple] = field(default_factory=dict)  # an option's allowed values
    scorecard: Scorecard | None = None
    # -- the papers: whose paper_results.yaml holds our tables (a re-split is in its parent's paper)
    paper: str | None = None
    paper_figures: Callable[[dict[str, list[dict]]], PaperFigures] | None = None
    not_checked: frozenset[str] = frozenset()  # paper columns ``verify`` leaves alone (with the reason)
    # answers that come from outside lmms-eval (O3-D's released outputs): rows -> {scope: rows},
    # and ``release_cells(file, decimals)``: (rows {model, paper_model, table, cell, ours}, models)
    # of every reproducible paper cell, which must agree exactly
    released_scopes: Callable[[list[dict]], dict[str, list[dict]]] | None = None
    release_cells: Callable[[Path, int], tuple[list[dict], list[str]]] | None = None
    # studies that are not lmms-eval runs (SpatialTunnel's contrastive probing): under a folder,
    # [(study folder, model, paper table, scope, {column: value})] for verify, and the report's
    # section (title, (folders, out) -> (files, markdown lines))
    study_figures: Callable[[Path], list[tuple[Path, str, str, str, dict]]] | None = None
    study_section: tuple[str, Callable[[list[Path], Path], tuple[list[Path], list[str]]]] | None = None
    # -- the report: its section (files, markdown lines) from [(run, task, samples file)]
    report: Callable[[list, Path], tuple[list[Path], list[str]]] | None = None
    report_title: str | None = None
    # -- inspect: whether a split (a datasets.Dataset of its first rows, its name, the folder's
    # files, and optionally ``root=`` the local folder) or a whole folder loads through our loader:
    # "accepted: ..." or the reason it does not
    inspect_split: Callable[..., str] | None = None
    inspect_folder: Callable[[Path], str | None] | None = None
    # -- the spatial_baseline rules: the module that registers them (``@rule(name, ...)``)
    baselines: str | None = None
    # -- prompts: what makes two docs show another kind of prompt (None: the first doc stands for
    # all); ``prompt_space``: the whole enumerable prompt space instead, when there is one
    prompt_kind: Callable[[Mapping], object] | None = None
    prompt_space: Callable[[], Iterator[dict]] | None = None
    # -- custom-task: the data spec for --data (None: the shared rule for a datasets folder / Hub id)
    custom_data: Callable[[Any], dict | None] | None = None  # (catalog.CustomData) -> spec
    # -- a task's prompt parameters (its lmms_eval_specific_kwargs) checked where they enter:
    # ValueError naming the parameter (custom-task --prompt, and the task's docs at the run's start)
    check_prompt: Callable[[Mapping[str, Any]], None] | None = None
    # -- the settings its figures depend on, from the records (BERTScore backbone, option-order
    # seed, answer reader, protocol): recorded in every result record and shown in the report
    settings: Callable[[Sequence[dict]], dict[str, str]] | None = None
    demo: Demo | None = None
    # its CLI commands: a module (CLI level: it may use the results layer) with COMMANDS = [Command]
    commands: str | None = None

    def record_type(self) -> type | None:
        """The record's pydantic type, imported on first use (task modules are heavy to import)."""
        if self.record is None:
            return None
        module, _, name = self.record.partition(":")
        return getattr(importlib.import_module(module), name)

    def tasks_folder(self) -> Path:
        """Its task YAMLs: ``tasks_dir``, else this package's ``tasks/<task_folder or name>``."""
        if self.tasks_dir is not None:
            return Path(self.tasks_dir)
        from spatial_tasks.paths import tasks_dir

        return tasks_dir() / (self.task_folder or self.name)

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Every option named and valued as the benchmark takes it (else ValueError naming the
        option), before any question is scored: a bad option must not be blamed on a question."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ValueError(f"{self.name}: unknown option(s) {unknown}; it takes {list(self.options) or 'none'}")
        for name, value in options.items():
            allowed = self.option_values.get(name)
            if allowed is not None and value is not None and (value not in allowed or isinstance(value, bool)):
                raise ValueError(f"{self.name}: option {name}={value!r} is not one of "
                                 f"{', '.join(map(repr, allowed))}")

    def title_for_report(self) -> str:
        return self.report_title or self.title
