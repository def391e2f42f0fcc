"""O3-D part of ``spatial-tasks report``: cue heatmaps (paper Fig. 5), near-far bias and SDGM bars.

Each run's O3-D samples are re-scored (``rescore.records_from_samples_file``, as ``rescore_samples`` does, so the
figures agree with the results table) and pooled over the run's O3-D tasks:

* one 8x8 cue heatmap per run that has cue-group rows: its accuracy per single cue and cue pair
  over the paper's SDGM population (regular strength, no ICL, clarity >= 3) in the lower
  triangle; in the upper triangle a depth baseline's, when one is among the runs
  (``spatial_baseline`` with ``rule=depth_model`` preferred, else ``rule=depth_oracle``), as
  the paper shows DepthAnythingV2 there;
* ``o3d_near_far_bias.png``: bias_NF = Acc_F - Acc_N (Eq. 1) per run;
* ``o3d_sdgm.png``: SDGM vision vs language (Eq. 2) per run.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import defaultdict
from pathlib import Path

from spatial_tasks.o3d import plots
from spatial_tasks.o3d.rescore import records_from_samples_file, summarise_model, task_metrics

BASELINE_PREFERENCE = ("rule=depth_model", "rule=depth_oracle")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80]


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:+.3f}" if isinstance(value, float) and value < 0 else f"{value:.3f}"


def _display(label: str) -> str:
    """A run label wrapped for an axis tick ("spatial_baseline(rule=always_far)" is long)."""
    return textwrap.fill(label.replace(",", ", ").replace("(", " ("), width=22, break_long_words=True)


def _baseline_label(labels: list[str], exclude: str | None = None) -> str | None:
    for marker in BASELINE_PREFERENCE:
        for label in labels:
            if label != exclude and label.startswith("spatial_baseline") and marker in label:
                return label
    return None


def o3d_figures(entries, out: Path) -> tuple[list[Path], list[str]]:
    """entries: (run, task, samples_path) triples. Returns (files written, markdown lines)."""
    out = Path(out)
    by_run: dict[str, list[tuple[str, Path]]] = defaultdict(list)
    for run, task, samples in entries:
        by_run[run.label].append((task, Path(samples)))
    tasks: dict[str, dict[str, dict]] = {}
    summaries: dict[str, dict] = {}
    for label, items in by_run.items():
        pooled: list[dict] = []
        tasks[label] = {}
        for task, samples in sorted(items):
            records, names = records_from_samples_file(samples)
            tasks[label][task] = task_metrics(records, names)
            pooled += records
        summaries[label] = summarise_model(pooled)

    files: list[Path] = []
    labels = list(summaries)
    for label in labels:
        cells = summaries[label].get("cue_group_accuracy") or {}
        if not cells:
            continue
        base = _baseline_label(labels, exclude=label)
        upper = summaries[base].get("cue_group_accuracy") if base else None
        files.append(plots.plot_cue_heatmap(
            cells, upper, out / f"o3d_cue_heatmap_{_slug(label)}.png", lower_name=label,
            upper_name=base or "(no depth baseline run)",
            title="O3-D accuracy per cue and cue pair (Fig. 5; regular strength, clarity ≥ 3)"))
    shown = {label: _display(label) for label in labels}
    files.append(plots.plot_near_far_bias(
        {shown[label]: s.get("bias_nf") for label, s in summaries.items()}, out / "o3d_near_far_bias.png",
        n={shown[label]: sum((s.get("n", {}).get("bias_nf") or {}).values()) for label, s in summaries.items()},
        title="O3-D near–far bias (Eq. 1) over the SDGM population (regular strength, clarity ≥ 3)"))
    files.append(plots.plot_sdgm(
        {shown[label]: {"vision": s.get("sdgm_vision"), "language": s.get("sdgm_language")}
         for label, s in summaries.items()},
        out / "o3d_sdgm.png",
        groups={shown[label]: {k: (s.get("n", {}).get(f"sdgm_{k}") or {}).get("groups") for k in ("vision", "language")}
                for label, s in summaries.items()}))

    lines = ["| run | task | n | acc | acc_near | acc_far | bias_nf | unparseable | sdgm_vision | sdgm_language | consistency |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, per_task in tasks.items():
        for task, m in sorted(per_task.items()):
            lines.append(f"| {label} | {task} | {m.get('n')} | " + " | ".join(
                _fmt(m.get(k)) for k in ("acc", "acc_near", "acc_far", "bias_nf", "unparseable", "sdgm_vision",
                                         "sdgm_language", "consistency")) + " |")
    cols = ("HP", "OC", "RS", "TG", "SA", "LS", "FO", "FS", "sim0", "sim1", "sim2", "real0", "real1", "real2")
    lines += ["", "Pooled over each run's O3-D tasks (Table 12 cells; bias and SDGM over the SDGM population):", "",
              "| run | " + " | ".join(cols) + " | bias_nf | sdgm_vision | sdgm_language | C |",
              "|---|" + "---:|" * (len(cols) + 4)]
    for label, s in summaries.items():
        lines.append(f"| {label} | " + " | ".join(_fmt(s.get(c)) for c in cols) + " | " + " | ".join(
            _fmt(s.get(k)) for k in ("bias_nf", "sdgm_vision", "sdgm_language", "language_consistency")) + " |")
    return files, lines

