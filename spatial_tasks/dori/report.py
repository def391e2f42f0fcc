"""DORI part of ``spatial-tasks report``: per-run tables (Table 2 layout, soft accuracy, the §5
breakdowns) and three figures: coarse vs granular per task, hard vs soft accuracy, and accuracy
by number of options."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from spatial_tasks.common.formatting import is_defined, number, slug, with_interval
from spatial_tasks.common.intervals import wilson
from spatial_tasks.common.plots import PALETTE, grouped_hbars, save, wrap_label
from spatial_tasks.common.runset import RunSet
from spatial_tasks.dori import metrics
from spatial_tasks.dori.metrics import SCORECARD
from spatial_tasks.dori.rescore import split_by_seed
from spatial_tasks.dori.schema import GRANULARITIES, TASKS

LEGEND = [
    "- **coarse / granular**: accuracy (share of questions whose selected option is the answer; paper Table 2). "
    "**Avg**: the unweighted mean over the tasks present (computed; the paper's printed Avg is not always this mean).",
    "- **soft**: soft accuracy of the granular questions (§4): 0.5 for the task's near miss (view parallelism within "
    "45°, the 30° left/right mirror, an adjacent single-axis position of the same major category, one correct "
    "compound component, an adjacent inter-object range in the same direction, the opposite viewer-scene direction, "
    "canonical operations in the wrong order; tasks/dori/README.md).",
    "- **chance**: mean of 1/(number of options). **A first**: share of questions whose answer the seeded order shows "
    "as option A -- exactly what always answering A scores.",
    "- **unparseable / declined / refused**: answers with no readable selection / that chose \"Cannot be "
    "determined\" where it is not the answer (or said so, or \"I don't know\") / that refused; all count as wrong.",
    "- **[low, high]**: 95 % interval -- Wilson for a task's accuracy, a seeded bootstrap over questions (1,000 "
    "resamples) for Avg.",
    "- **n/a**: no questions of that kind in the run.",
]


def _runs(runs: RunSet) -> dict[str, list[dict]]:
    pooled: dict[str, list[dict]] = {}
    for entry in sorted(runs.tasks, key=lambda e: (e.run.label, e.task)):
        pooled.setdefault(entry.run.label, []).extend(entry.records())
    out = {}
    for label, records in pooled.items():
        out.update(split_by_seed(label, records))
    return {label: records for label, records in out.items() if records}


AVG = "Avg (mean over tasks)"


def _intervals(records: list[dict]) -> dict:
    """95 % intervals: (task, granularity) -> Wilson of its accuracy; AVG -> {granularity: the
    headline's bootstrap over questions} (spatial_tasks.results)."""
    groups = metrics.by(records, lambda r: [(r["task"], r["granularity"])])
    out: dict = {key: wilson(sum(bool(r["correct"]) for r in rows), len(rows)) for key, rows in groups.items()}
    figures = SCORECARD.intervals(records)
    out[AVG] = {g: figures[f"avg_{g}"][1:3] for g in GRANULARITIES}
    return out


def _task_table(label: str, records: list[dict]) -> list[str]:
    acc = metrics.per_task(records)
    soft = metrics.per_task(records, metrics.soft_accuracy)
    groups = metrics.by(records, lambda r: [(r["task"], r["granularity"])])
    ci = _intervals(records)
    lines = [f"**{label}** ({len(records)} questions)", "",
             "| task | coarse | granular | granular soft | chance C/G | A first C/G | n C/G |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for task, code in TASKS.items():
        if not any((task, g) in groups for g in GRANULARITIES):
            continue
        rs = {g: groups.get((task, g), []) for g in GRANULARITIES}
        coarse, granular = (with_interval(acc.get((task, g)), ci.get((task, g))) for g in GRANULARITIES)
        lines.append(f"| {code} {task.replace('_', ' ')} | {coarse} | {granular} | {number(soft.get((task, 'granular')))} | "
                     f"{number(metrics.chance(rs['coarse']))} / {number(metrics.chance(rs['granular']))} | "
                     f"{number(metrics.expected_always_first(rs['coarse']))} / "
                     f"{number(metrics.expected_always_first(rs['granular']))} | "
                     f"{len(rs['coarse'])}/{len(rs['granular'])} |")
    coarse, granular = (with_interval(metrics.task_average(records, g), ci[AVG][g]) for g in GRANULARITIES)
    lines.append(f"| **Avg** | {coarse} | {granular} | "
                 f"{number(metrics.task_average(records, 'granular', metrics.soft_accuracy))} | | | |")
    absent = [f"{code} {task.replace('_', ' ')}" for task, code in TASKS.items()
              if not any((task, g) in groups for g in GRANULARITIES)]
    if absent:  # a task the data holds no questions of is named, never dropped without a word
        lines += ["", f"Not in this run's data (no questions, so not in Avg): {', '.join(absent)}."]
    lines += ["", f"unparseable {number(metrics.unparseable_share(records))}, declined "
                  f"{number(metrics.declined_share(records))}, refused {number(metrics.refused_share(records))}", ""]
    for name in metrics.BREAKDOWNS:
        cells = [f"{key}: {number(value)} (n={n})" for key, (value, n) in metrics.breakdown(records, name).items()]
        lines.append(f"- by {name.replace('_', ' ')}: " + "; ".join(cells))
    return [*lines, ""]


def _by_options_plot(runs: dict[str, list[dict]], path: Path) -> Path:
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.add_subplot()
    sizes = sorted({int(r["n_options"]) for rs in runs.values() for r in rs})
    for k, (label, records) in enumerate(runs.items()):
        table = metrics.breakdown(records, "n_options")
        ys = [table.get(n, (math.nan, 0))[0] for n in sizes]
        ax.plot(sizes, [y if is_defined(y) else np.nan for y in ys], marker="o", color=PALETTE[k % len(PALETTE)],
                label=wrap_label(label, 50))
        for n, y in zip(sizes, ys):
            if is_defined(y):
                ax.annotate(number(y, 2), (n, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    grid = np.linspace(min(sizes), max(sizes), 100) if len(sizes) > 1 else np.array(sizes, dtype=float)
    ax.plot(grid, 1 / grid, linestyle="--", color="#555555", linewidth=0.9, label="chance (1 / options)")
    ax.set_xticks(sizes)
    ax.set_ylim(-0.03, 1.08)
    ax.set_xlabel("number of options", fontsize=9)
    ax.set_ylabel("accuracy", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.set_title("DORI: accuracy by number of options (the paper: 42.5% at 3 options, 6% at 16)", fontsize=10)
    return save(fig, path)


def dori_figures(read: RunSet, out: Path) -> tuple[list[Path], list[str]]:
    """The DORI section over the run set's DORI part: (files written, markdown lines)."""
    runs = _runs(read)
    files: list[Path] = []
    lines: list[str] = []
    hard_soft: dict[str, dict[str, float]] = {}
    for label, records in runs.items():
        lines += _task_table(label, records)
        acc = metrics.per_task(records)
        rows = {f"{code} {task.replace('_', ' ')}": {g: acc.get((task, g)) for g in GRANULARITIES}
                for task, code in TASKS.items() if any((task, g) in acc for g in GRANULARITIES)}
        rows[AVG] = {g: metrics.task_average(records, g) for g in GRANULARITIES}
        ci = _intervals(records)
        errors = {f"{code} {task.replace('_', ' ')}": {g: ci.get((task, g)) for g in GRANULARITIES}
                  for task, code in TASKS.items()} | {AVG: ci[AVG]}
        files.append(grouped_hbars(rows, list(GRANULARITIES), out / f"dori_coarse_granular_{slug(label)}.png",
                                   title=f"DORI coarse vs granular accuracy per task: {label}", xlabel="accuracy",
                                   errors={k: {g: v for g, v in e.items() if v} for k, e in errors.items()},
                                   notes=["Coarse: categorical questions; granular: metric ones (Table 2).",
                                          "Whiskers: 95 % intervals (Wilson per task; Avg: bootstrap over "
                                          "questions)."]))
        soft = metrics.per_task(records, metrics.soft_accuracy)
        for task, code in TASKS.items():
            if (task, "granular") in acc:
                hard_soft[f"{label} · {code}"] = {"hard": acc[(task, "granular")], "soft": soft[(task, "granular")]}
    if hard_soft:
        files.append(grouped_hbars(hard_soft, ["hard", "soft"], out / "dori_hard_soft.png",
                                   title="DORI granular questions: hard vs soft accuracy (§4)", xlabel="accuracy",
                                   key_labels={"hard": "hard (exact option)", "soft": "soft (0.5 for near misses)"},
                                   notes=["The paper finds soft = hard for view parallelism and directional facing."]))
    if runs:
        files.append(_by_options_plot(runs, out / "dori_by_options.png"))
    return files, [*lines, *LEGEND]
