"""What a benchmark tells the shared layers about itself: the ``Benchmark`` description.

Each benchmark writes one in ``spatial_tasks/<name>/benchmark.py`` (``BENCHMARK = Benchmark(...)``)
and ``spatial_tasks/registry.py`` lists it. The shared layers -- results, verify, report, inspect,
the task catalogue and ``custom-task``, prompts, baselines, the ``evaluate`` modules and the CLI --
loop over the registry and read only these fields; none of them knows a benchmark by name.

The same words mean the same thing in every benchmark:

- a **record** is one question's outcome (what ``process_results`` logs and ``rescore`` re-makes
  from a logged sample); ``record`` is its pydantic type;
- ``records_from_samples(path, **options)``: the records of one ``*_samples_<task>.jsonl`` file (a
  command passes its ``samples.SamplesFile``, read once, and keeps the result: ``common.runset``);
- ``score(reference, prediction, **options)``: one record from a question (its logged record or
  its doc) and a model output -- what Hugging Face ``evaluate`` calls per question;
- ``summary(records, **options)``: the figures of a set of records (what ``rescore`` prints);
- ``scorecard``: the headline figures, each defined once (``Headline.figure``), with the unit
  the bootstrap resamples.

The description carries what every benchmark has; what only some do is a ``Capability`` they list
(``ReleasedOutputs``, ``Study``, ``PromptSpace``, ``PromptCheck``, ``DeclaredMetrics``,
``FolderInspection``), and the shared layers loop over ``registry.offering(kind)``.

A description is light to import: it names the code of its own folder with ``Later("module:name")``,
imported when first used, so ``spatial-tasks --help`` and the registry stay fast. Nothing here
imports lmms-eval.
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from spatial_tasks.common.intervals import (
    ITERATIONS,
    SEED,
    GroupedMeans,
    cluster_bootstrap,
    grouped_bootstrap,
    wilson,
)

Rows = Sequence[dict]
C = TypeVar("C", bound="Capability")


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
        figure) over these rows; NaN where the figure is undefined. (A command keeps them per scope:
        ``common.runset.Scope``.)"""
        return {figure.metric: self._interval(figure, rows, iterations, seed)
                for figure in ((*self.headlines, *self.details) if figures is None else figures)}

    def _interval(self, figure: Headline, rows: Rows, iterations: int, seed: int) -> tuple[float, float, float, str]:
        value = figure.value(rows)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return (float(value), *figure.interval(rows, self.unit, iterations, seed))
        return (math.nan, math.nan, math.nan, "none")


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
class Proof:
    """One line of the demo report's intro: a ``spatial_baseline`` rule's figure and what it proves."""

    rule: str
    task: str  # the lmms-eval task or group whose figure is quoted
    metric: str  # its metric in lmms-eval's results
    symbol: str  # how the line names the figure
    claim: str  # what the figure proves


@dataclass(frozen=True)
class KnownModel:
    """A model trained to a known behaviour (docs/known-models.md) that the demo evaluates, probes and
    quotes: its shipped checkpoint, what it runs, and the figure that shows what was planted."""

    name: str
    checkpoint: Path
    tasks: str  # the lmms-eval tasks it answers in the demo (first-token logits)
    figures_task: str  # the task whose figures the intro quotes
    metric: str  # the figure that shows the behaviour, quoted with its interval
    also: tuple[str, ...]  # figures quoted beside it
    claim: str  # what the figure shows


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
    proves: tuple[Proof, ...] = ()  # the intro's line per rule: its figure and what it proves
    notes: tuple[str, ...] = ()  # the intro's lines on anything else the demo runs of it
    known_models: tuple[KnownModel, ...] = ()  # run beside the random models, one intro line each
    # what the report page's sample browser opens on (``page.page_data``'s ``view``; runs named by folder)
    view: Mapping[str, object] | None = None


@dataclass(frozen=True)
class SampleView:
    """One logged question as the report page's sample browser shows it (``Benchmark.browse``)."""

    key: str  # the question's identity across runs: two runs are paired on it
    gold: str  # the right answer, as text
    correct: bool | None  # None: not right or wrong per question (VAGUE free-form: BERTScore)
    fields: Mapping[str, str] = field(default_factory=dict)  # its own fields: shown, and offered as filters


@dataclass(frozen=True)
class Later:
    """Code of the benchmark's own folder, imported on first use: ``"package.module:attribute"``
    (``"package.module"`` for a module). The one way a description says "load later": its task
    modules are heavy to import, and ``spatial-tasks --help`` and the registry must stay fast.
    Calling it calls the attribute."""

    target: str

    def load(self) -> Any:
        module, _, attribute = self.target.partition(":")
        imported = importlib.import_module(module)
        return getattr(imported, attribute) if attribute else imported

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        """The named function's parameters (a shared layer may ask which optional ones it takes)."""
        return inspect.signature(self.load())


@dataclass(frozen=True)
class Source:
    """Where a benchmark's data comes from: the default release (a Hub id), the environment
    variable that points its tasks elsewhere, and what ``spatial-tasks list`` adds to it."""

    default: str
    env: str | None = None
    note: str | None = None

    def override(self) -> str | None:
        """``$env`` where it is set (not empty)."""
        return (os.environ.get(self.env, "").strip() if self.env else "") or None

    def chosen(self) -> str:
        """What a load reads now: ``$env`` where set, else the default release."""
        return self.override() or self.default


@dataclass(frozen=True)
class Paper:
    """Whose ``paper_results.yaml`` holds the tables (a re-split is in its parent's paper), the
    figures ``verify`` compares per run (``PaperFigures``) and the columns it leaves alone (each
    with its reason where it is set)."""

    name: str
    figures: Callable[[dict[str, list[dict]]], PaperFigures]
    not_checked: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Section:
    """A section of ``spatial-tasks report``: ``write(inputs, out)`` -> (files, markdown lines), where a
    benchmark's section gets its part of the command's run set (``common.runset.RunSet``) and a study's
    its folders; ``title`` heads it (default: the benchmark's title)."""

    write: Callable[[Any, Path], tuple[list[Path], list[str]]]
    title: str | None = None


class Capability:
    """Something only some benchmarks do. A benchmark lists what it offers in ``capabilities``; a
    shared layer loops over the benchmarks that offer one (``registry.offering``)."""


@dataclass(frozen=True)
class ReleasedOutputs(Capability):
    """Answers that come from outside lmms-eval (O3-D's released model outputs): ``scopes(rows)``
    -> {scope: rows} for the scorecard, and ``cells(file, decimals)`` -> (rows {model, paper_model,
    table, cell, ours}, models) of every reproducible paper cell, which ``verify`` needs exact."""

    scopes: Callable[[list[dict]], dict[str, list[dict]]]
    cells: Callable[[Path, int], tuple[list[dict], list[str]]]


@dataclass(frozen=True)
class Study(Capability):
    """A study that is not an lmms-eval run (SpatialTunnel's contrastive probing): under a folder,
    ``figures(root)`` -> [(study folder, model, paper table, scope, {column: value})] for
    ``verify``; ``holds(folder)``: whether a folder is one of its study folders (``marks`` says
    what makes one, for the error when none is); the report's ``section`` over its folders; and
    ``demo``, the study of the demo's tiny model on the bundled data."""

    figures: Callable[[Path], list[tuple[Path, str, str, str, dict]]]
    section: Section
    holds: Callable[[Path], bool]
    marks: str
    # the demo's run of it: (tiny model folder, out) -> its study folder, for the report
    demo: Callable[[Path, Path], Path] | None = None


@dataclass(frozen=True)
class PromptSpace(Capability):
    """The whole enumerable prompt space (``spatial-tasks prompts`` lists it instead of the
    prompts of the bundled docs): ``prompts()`` -> {prompt, tags} dicts."""

    prompts: Callable[[], Iterator[dict]]


@dataclass(frozen=True)
class PromptCheck(Capability):
    """A task's prompt parameters (its lmms_eval_specific_kwargs) checked where they enter:
    ``check(kwargs)`` raises ValueError naming the parameter (custom-task --prompt, and a task's
    docs at the run's start)."""

    check: Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class DeclaredMetrics(Capability):
    """A task may declare only some of the headline metrics: ``names(samples file)`` -> the metric
    names its task declared (the scorecard shows only those)."""

    names: Callable[[Path], tuple[str, ...]]


@dataclass(frozen=True)
class FolderInspection(Capability):
    """``spatial-tasks inspect`` of a whole local folder (a layout that is not one table):
    ``inspect(folder)`` -> "accepted: ..." or the reason it does not load."""

    inspect: Callable[[Path], str]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as every shared layer sees it (module docstring)."""

    name: str  # the task prefix, the records' ``benchmark`` field, the folder name
    title: str
    # -- records and figures
    record: Later  # the pydantic type of its record (``record_type()``)
    records_from_samples: Callable[..., list[dict]]
    summary: Callable[..., dict]
    paper: Paper
    report: Section
    source: Source | None = None  # None: no default release (``--data`` names one)
    # its lmms-eval metrics: aggregation-name prefix -> Later of a {metric: function of the records}
    # table. Each entry is registered with lmms-eval as ``<prefix>_<metric>`` (what a task YAML's
    # ``aggregation:`` names) and recomputed over the pooled records for a group.
    metrics: Mapping[str, Later] = field(default_factory=dict)
    demo: Demo | None = None  # its part of ``spatial-tasks demo``
    # its models trained to a known behaviour (built by ``spatial-tasks known-model``, shipped); the demo runs
    # those of ``demo.known_models``
    known_models: tuple[KnownModel, ...] = ()
    # its task YAMLs: a folder under this package's tasks/ (default: its name), or a path outside it
    tasks_dir: str | Path | None = None
    score: Callable[..., dict] | None = None
    options: tuple[str, ...] = ()  # what ``score`` / ``summary`` / ``records_from_samples`` accept
    option_values: Mapping[str, tuple] = field(default_factory=dict)  # an option's allowed values
    scorecard: Scorecard | None = None
    # -- inspect: whether a split (a datasets.Dataset of its first rows, its name, the folder's
    # files, and optionally ``root=`` the local folder) loads through our loader:
    # "accepted: ..." or the reason it does not
    inspect_split: Callable[..., str] | None = None
    # -- the spatial_baseline rules: the module that registers them (``@rule(name, ...)``)
    baselines: Later | None = None
    # -- prompts: what makes two docs show another kind of prompt (None: the first doc stands for all)
    prompt_kind: Callable[[Mapping], object] | None = None
    # -- custom-task: the data spec for --data (None: the shared rule for a datasets folder / Hub id)
    custom_data: Callable[[Any], dict | None] | None = None  # (catalog.CustomData) -> spec
    # -- the settings its figures depend on, from the records (BERTScore backbone, option-order
    # seed, answer reader, protocol): recorded in every result record and shown in the report
    settings: Callable[[Sequence[dict]], dict[str, str]] | None = None
    # -- the report page's sample browser: one re-scored record -> ``SampleView`` (None: the
    # page's generic view: the record's question_id or the doc id, lmms-eval's target, no fields)
    browse: Callable[[dict], SampleView] | None = None
    # its CLI commands (CLI level: they may use the results layer): a list of ``Command``
    commands: Later | None = None
    # what only some benchmarks do (``Capability``), at most one of each kind
    capabilities: tuple[Capability, ...] = ()

    def offers(self, kind: type[C]) -> C | None:
        """Its capability of this kind, or None."""
        found = [c for c in self.capabilities if isinstance(c, kind)]
        if len(found) > 1:
            raise ValueError(f"{self.name}: offers {len(found)} {kind.__name__} capabilities; one is meant")
        return found[0] if found else None

    def record_type(self) -> type:
        """The record's pydantic type, imported on first use."""
        return self.record.load()

    def tasks_folder(self) -> Path:
        """Its task YAMLs: ``tasks_dir`` (a folder under this package's tasks/, or a path), else
        this package's ``tasks/<name>``."""
        from spatial_tasks.paths import tasks_dir

        if isinstance(self.tasks_dir, Path):
            return self.tasks_dir
        return tasks_dir() / (self.tasks_dir or self.name)

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
        return self.report.title or self.title
