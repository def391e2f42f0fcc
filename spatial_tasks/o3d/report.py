"""O3-D part of ``spatial-tasks report``: cue heatmaps (paper Fig. 5), near-far bias and SDGM bars.

Each run's O3-D samples are re-scored (the run set's records, as ``rescore_samples`` reads them, so the
figures agree with the results table) and pooled over the run's O3-D tasks:

* one 8x8 cue heatmap per run that has cue-group rows: its accuracy per single cue and cue pair
  over the paper's SDGM population (regular strength, no ICL, clarity >= 3) in the lower
  triangle; in the upper triangle a depth baseline's, when one is among the runs
  (``spatial_baseline`` with ``rule=depth_model`` preferred, else ``rule=depth_oracle``), as
  the paper shows DepthAnythingV2 there;
* ``o3d_near_far_bias.png``: bias_nf = acc_far - acc_near (Eq. 1) per run;
* ``o3d_sdgm.png``: SDGM vision vs language (Eq. 2) per run.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from spatial_tasks.common.formatting import number, slug, with_interval
from spatial_tasks.common.runset import RunSet, TaskRun
from spatial_tasks.o3d import metrics, plots
from spatial_tasks.o3d.metrics import SCORECARD
from spatial_tasks.o3d.rescore import SDGM_FAMILIES, summary, task_metrics

BASELINE_PREFERENCE = ("rule=depth_model", "rule=depth_oracle")


def _baseline_label(labels: list[str], exclude: str | None = None) -> str | None:
    for marker in BASELINE_PREFERENCE:
        for label in labels:
            if label != exclude and label.startswith("spatial_baseline") and marker in label:
                return label
    return None


POOLED = "(pooled)"


def o3d_figures(runs: RunSet, out: Path) -> tuple[list[Path], list[str]]:
    """The O3-D section over the run set's O3-D part: (files written, markdown lines)."""
    out = Path(out)
    by_run: dict[str, list[TaskRun]] = defaultdict(list)
    for entry in runs.tasks:
        by_run[entry.run.label].append(entry)
    tasks: dict[str, dict[str, dict]] = {}
    summaries: dict[str, dict] = {}
    intervals: dict[str, dict] = {}  # label -> task (or POOLED) -> metric -> (value, low, high, method)
    spec = SCORECARD
    for label, entries in by_run.items():
        pooled: list[dict] = []
        tasks[label], intervals[label] = {}, {}
        for entry in sorted(entries, key=lambda e: e.task):
            records = entry.records()
            tasks[label][entry.task] = task_metrics(records, entry.declared or ())
            intervals[label][entry.task] = runs.scope([entry]).intervals()
            pooled += records
        summaries[label] = summary(pooled)
        # the pooled bias and SDGMs are over the SDGM population (summary): resample that
        intervals[label][POOLED] = spec.intervals(metrics.sdgm_population(
            [r for r in pooled if r["image_family"] in SDGM_FAMILIES and r["in_paper"]]))

    files: list[Path] = []
    labels = list(summaries)
    for label in labels:
        cells = summaries[label].get("cue_group_accuracy") or {}
        if not cells:
            continue
        base = _baseline_label(labels, exclude=label)
        upper = summaries[base].get("cue_group_accuracy") if base else None
        files.append(plots.plot_cue_heatmap(
            cells, upper, out / f"o3d_cue_heatmap_{slug(label)}.png", lower_name=label,
            upper_name=base or "(no depth baseline run)",
            title="O3-D accuracy per cue and cue pair (Fig. 5; regular strength, clarity ≥ 3)"))
    shown = {label: label for label in labels}
    def pooled_ci(label: str, metric: str) -> tuple[float, float]:
        return intervals[label][POOLED][metric][1:3]

    files.append(plots.plot_near_far_bias(
        {shown[label]: s.get("bias_nf") for label, s in summaries.items()}, out / "o3d_near_far_bias.png",
        n={shown[label]: sum((s.get("n", {}).get("bias_nf") or {}).values()) for label, s in summaries.items()},
        intervals={shown[label]: pooled_ci(label, "bias_nf") for label in summaries},
        title="O3-D near–far bias (Eq. 1) over the SDGM population (regular strength, clarity ≥ 3)"))
    files.append(plots.plot_sdgm(
        {shown[label]: {"vision": s.get("sdgm_vision"), "language": s.get("sdgm_language")}
         for label, s in summaries.items()},
        out / "o3d_sdgm.png",
        groups={shown[label]: {k: (s.get("n", {}).get(f"sdgm_{k}") or {}).get("groups") for k in ("vision", "language")}
                for label, s in summaries.items()},
        intervals={shown[label]: {k: pooled_ci(label, f"sdgm_{k}") for k in ("vision", "language")}
                   for label in summaries}))

    task_cols = ("acc", "acc_near", "acc_far", "bias_nf", "sdgm_vision", "sdgm_language", "consistency", "unparseable")
    lines = ["| run | task | n | " + " | ".join(task_cols) + " |",
             "|---|---|---:|" + "---:|" * len(task_cols)]
    for label, per_task in tasks.items():
        for task, m in sorted(per_task.items()):
            ci = intervals[label][task]
            lines.append(f"| {label} | {task} | {m.get('n_scored')} | " + " | ".join(
                with_interval(m.get(k), ci[k][1:3] if k in ci else None, signed=k == "bias_nf") for k in task_cols)
                + " |")
    cols = ("HP", "OC", "RS", "TG", "SA", "LS", "FO", "FS", "sim0", "sim1", "sim2", "real0", "real1", "real2")
    pooled = ("bias_nf", "sdgm_vision", "sdgm_language", "consistency", "unparseable")
    lines += ["", "Pooled over each run's O3-D tasks: Table 12's cells (accuracy), and bias and SDGMs over the "
              "paper's SDGM population (synthetic, regular strength, no ICL, clarity ≥ 3):", "",
              "| run | " + " | ".join((*cols, *pooled)) + " |",
              "|---|" + "---:|" * (len(cols) + len(pooled))]
    for label, s in summaries.items():
        ci = intervals[label][POOLED]
        lines.append(f"| {label} | " + " | ".join(number(s.get(c)) for c in cols) + " | " + " | ".join(
            with_interval(s.get(k), ci[k][1:3] if k in ci else None, signed=k == "bias_nf") for k in pooled) + " |")
    return files, [*lines, "", *LEGEND]


LEGEND = [
    "- **[low, high]**: 95 % interval -- Wilson for acc; a seeded bootstrap over scenes (1,000 resamples; a scene's "
    "near / far and question-variant rows drawn together) for bias_nf and the SDGMs.",
    "- **n**: questions scored (images without an odd object are not scored). **acc**: accuracy; an unparseable "
    "answer counts as wrong. **acc_near / acc_far**: accuracy when the target is nearer / farther than the others "
    "(the paper's Acc_N / Acc_F). Column names are the metric names of lmms-eval's table and of `rescore`.",
    "- **bias_nf** = acc_far − acc_near (the paper's bias_NF, Eq. 1): −1 = always answers \"closer\", +1 = always "
    "\"farther\", 0 = neither.",
    "- **sdgm_vision / sdgm_language** (the paper's SDGM_V / SDGM_L, Eq. 2): standard deviation of acc_near over the "
    "cue groups (vision influence) / over the question groups (language influence), the paper's population std; "
    "**consistency** = 1 − sdgm_language (the paper's C, language consistency).",
    "- Cue columns (Table 12, single-cue images, all strengths): **HP** height in the plane, **OC** occlusion, "
    "**RS** relative size, **TG** texture gradient, **SA** aerial perspective, **LS** light and shadow, **FO** focus, "
    "**FS** familiar size.",
    "- **sim0 / sim1 / sim2**: synthetic images with 0 / 1 / 2 cues (1 and 2 at regular strength); "
    "**real0 / real1 / real2**: the cropped real photos with 0 / 1 / 2 cues (marked).",
    "- **unparseable**: share of answers the paper's parser cannot read. **n/a**: not defined for these rows "
    "(no such images, fewer than two groups, or no parseable answer).",
]
