"""Re-split part of ``spatial-tasks report``: consistent / counter accuracy on the real depth
benchmarks (paper Tables 1 and 2), next to the paper's numbers."""

from __future__ import annotations

import re
from pathlib import Path

from spatial_tasks.common.formatting import number
from spatial_tasks.common.plots import grouped_hbars
from spatial_tasks.common.runset import RunSet
from spatial_tasks.spatialtunnel.resplit import metrics

NAMES = {"embspatial": "EmbSpatial-Bench", "cv_bench_3d": "CV-Bench-3D"}
LEGEND = [
    "- **Acc_con / Acc_ctr**: accuracy on depth questions whose farther object is higher / lower in the image "
    "(paper Table 2); **Δ** = Acc_con − Acc_ctr, the help the \"higher ⇒ farther\" shortcut gives.",
    "- **Acc_amb**: accuracy where the two objects' box centres are less than 5 % of the image height apart "
    "(not in Acc_con / Acc_ctr). **n_con / n_ctr / n_amb**: questions per split (paper Table 1: EmbSpatial "
    "976 / 129 / 101, CV-Bench-3D 363 / 65 / 172); **n_unk**: questions without the boxes to place them.",
    "- Paper rows in the figure are Table 2's (percent, shown as fractions).",
]


def resplit_figures(runs: RunSet, out: Path) -> tuple[list[Path], list[str]]:
    """The re-splits' section over the run set's part: (files written, markdown lines)."""
    table = ["| run | task | source | n | Acc | Acc_con | Acc_ctr | Δ | Acc_amb | n_con | n_ctr | n_amb | n_unk |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    bars: dict[str, dict[str, float]] = {}
    sources = set()
    for entry in sorted(runs.tasks, key=lambda e: (e.run.label, e.task)):
        run, task, records = entry.run, entry.task, entry.records()
        if not records:
            continue
        source = records[0]["source"]
        sources.add(source)
        s = metrics.summary(records)
        table.append(f"| {run.label} | {task} | {NAMES.get(source, source)} | {s['n']} | {number(s['acc_all'])} | "
                     f"{number(s['acc_cons'])} | {number(s['acc_ctr'])} | {number(s['delta'], signed=True)} | "
                     f"{number(s['acc_amb'])} | {s['n_cons']} | {s['n_ctr']} | {s['n_amb']} | {s['n_unknown']} |")
        bars[f"{run.label} · {NAMES.get(source, source)}"] = {"acc_cons": s["acc_cons"], "acc_ctr": s["acc_ctr"]}
    if not bars:
        return [], []
    for model, row in metrics.paper_table2().items():
        for source in sorted(sources):
            cons, ctr = row[source]
            bars[f"paper · {model} · {NAMES[source]}"] = {"acc_cons": cons / 100, "acc_ctr": ctr / 100}
    slug = "_".join(sorted(re.sub(r"\W+", "", s) for s in sources))
    figure = grouped_hbars(bars, ["acc_cons", "acc_ctr"], out / f"spatialtunnel_resplit_{slug}.png",
                           title="Real depth questions: consistent vs counter accuracy (paper Table 2)",
                           xlabel="accuracy", key_labels={"acc_cons": "consistent (farther object higher)",
                                                          "acc_ctr": "counter (farther object lower)"},
                           notes=["Rows 'paper ·' are the paper's Table 2 for comparison."])
    return [figure], [*table, "", *LEGEND]
