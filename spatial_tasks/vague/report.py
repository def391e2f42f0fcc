"""VAGUE part of ``spatial-tasks report``: a table per run (every task's figures, with a legend),
accuracy by setting per model, and the stacked distribution of the chosen option's type per
setting (the paper's Fig. 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from spatial_tasks.common.formatting import number, with_interval
from spatial_tasks.common.intervals import wilson
from spatial_tasks.common.plots import grouped_hbars, save, wrap_label
from spatial_tasks.common.runset import RunSet
from spatial_tasks.vague.rescore import summary
from spatial_tasks.vague.schema import MCQ_SETTINGS

SETTING_NAMES = {"lm": "LM", "sm": "SM", "sm_gpt": "SM (stored captions)", "vlm": "VLM", "vlm_cot": "VLM + CoT",
                 "sm_cot": "SM + CoT", "freeform": "free-form", "freeform_cot": "free-form + CoT"}
STACK = (("correct", "correct", "#55a868"), ("fs_rate", "fake scene (FS)", "#dd8452"),
         ("su_rate", "superficial (SU)", "#c44e52"), ("ne_rate", "nonexistent entity (NE)", "#8172b3"),
         ("unparseable", "no letter read", "#999999"), ("declined", "declined (\"I don't know\")", "#bbbbbb"),
         ("refused", "refused", "#dddddd"))
LEGEND = [
    "- **acc**: MCQ accuracy over all items (answers without a letter count as wrong; Table 1), with its 95 % "
    "Wilson interval. **valid**: answers "
    "with a letter (Tables H3/H4); the others were **unparseable**, **declined** (\"I don't know\") or **refused**.",
    "- **FS / SU / NE**: items answered with the fake-scene, superficial-understanding or nonexistent-entity option "
    "(counts; Table 2, Fig. 4).",
    "- **BLEU-1 / BERTScore F1**: free-form answers against the correct intention (the BERTScore backbone is "
    "$SPATIAL_TASKS_BERTSCORE_MODEL, default roberta-large).",
    "- Settings: LM text only; SM the model's own caption, then text only; SM (stored captions) the dataset's; VLM "
    "the image; + CoT zero-shot chain of thought. **n/a**: not defined for this task.",
]


def _setting(task: str) -> str:
    for setting in sorted(SETTING_NAMES, key=len, reverse=True):
        if task.endswith("_" + setting):
            return setting
    return task


def _subset(task: str) -> str:
    return task.removeprefix("vague_").split("_")[0]


def _stacked(rows: dict[str, dict], path: Path) -> Path:
    labels = list(rows)
    fig = Figure(figsize=(8.0, 1.2 + 0.34 * len(labels)))
    ax = fig.add_subplot()
    left = np.zeros(len(labels))
    for key, name, colour in STACK:
        values = np.array([rows[label].get(key) or 0.0 for label in labels])
        ax.barh(range(len(labels)), values, left=left, color=colour, label=name, height=0.7)
        for y, (x0, v) in enumerate(zip(left, values)):
            if v >= 0.06:
                ax.text(x0 + v / 2, y, number(v, 2), ha="center", va="center", fontsize=6.5, color="white")
        left += values
    ax.set_yticks(range(len(labels)), labels=[wrap_label(label, 44) for label in labels], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of items", fontsize=9)
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=5, frameon=False)
    ax.set_title("VAGUE: which option was chosen, per setting (paper Fig. 4)", fontsize=10, pad=22)
    return save(fig, path)


def _accuracy_interval(records: list[dict]) -> tuple[float, float] | None:
    """The 95 % Wilson interval of the MCQ accuracy (None for free-form tasks)."""
    mcq = [r for r in records if r.get("kind") == "mcq"]
    return wilson(sum(r["chosen"] == r["answer"] for r in mcq), len(mcq)) if mcq else None


def vague_figures(runs: RunSet, out: Path) -> tuple[list[Path], list[str]]:
    """The VAGUE section over the run set's VAGUE part: (files written, markdown lines)."""
    table = ["| run | task | n | acc | valid | FS | SU | NE | BLEU-1 | BERTScore F1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by_setting: dict[str, dict[str, float | None]] = {}
    whiskers: dict[str, dict[str, tuple[float, float] | None]] = {}
    stacked: dict[str, dict] = {}
    for entry in sorted(runs.tasks, key=lambda e: (e.run.label, e.task)):
        run, task, records = entry.run, entry.task, entry.records()
        if not records:
            continue
        s = summary(records)
        setting, subset = _setting(task), _subset(task)
        ci = _accuracy_interval(records)
        table.append(f"| {run.label} | {task} | {s['n']} | {with_interval(s.get('acc'), ci)} | {s.get('valid', 'n/a')} | "
                     f"{s.get('n_fs', 'n/a')} | {s.get('n_su', 'n/a')} | {s.get('n_ne', 'n/a')} | "
                     f"{number(s.get('bleu1'))} | {number(s.get('bertscore_f1'))} |")
        if setting in MCQ_SETTINGS:
            by_setting.setdefault(f"{run.label} · {subset}", {})[setting] = s["acc"]
            whiskers.setdefault(f"{run.label} · {subset}", {})[setting] = ci
            stacked[f"{run.label} · {subset} · {SETTING_NAMES[setting]}"] = {**s, "correct": s["acc"]}
    files = []
    if by_setting:
        keys = [k for k in MCQ_SETTINGS if any(k in row for row in by_setting.values())]
        files.append(grouped_hbars(by_setting, keys, out / "vague_accuracy_by_setting.png",
                                   title="VAGUE MCQ accuracy by setting (Table 1)", xlabel="accuracy",
                                   key_labels=SETTING_NAMES, reference=0.25, reference_label="chance (0.25)",
                                   errors=whiskers, notes=["Whiskers: 95 % Wilson intervals."]))
        files.append(_stacked(stacked, out / "vague_choice_types.png"))
    return files, [*table, "", *LEGEND]
