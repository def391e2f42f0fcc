"""SpatialTunnel part of ``spatial-tasks report``: heatmaps, size curves, summary bars, table."""

from __future__ import annotations

import re
from pathlib import Path

from spatial_tasks.spatialtunnel import metrics, plots
from spatial_tasks.spatialtunnel.rescore import records_from_samples


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80]


def spatialtunnel_figures(entries, out: Path) -> tuple[list[Path], list[str]]:
    """entries: (run, task, samples_path) triples. Returns (files written, markdown lines)."""
    files: list[Path] = []
    curves: dict[str, dict[float, float]] = {}
    bars: dict[str, dict[str, float]] = {}
    table = ["| run | task | protocol | n | v | v_cons | v_ctr | Δ | v(s1=.1) | v(s1=.3) | Δ_s |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run, task, samples in entries:
        records = records_from_samples(samples)
        protocol = records[0]["protocol"]
        s = metrics.summary(records)
        fmt = lambda key: "–" if s.get(key) is None or s[key] != s[key] else f"{s[key]:.3f}"  # noqa: E731
        table.append(f"| {run.label} | {task} | {protocol} | {s['n']} | {fmt('v')} | {fmt('v_cons')} | "
                     f"{fmt('v_ctr')} | {fmt('delta')} | {fmt('v_s010')} | {fmt('v_s030')} | {fmt('delta_s')} |")
        name = f"{run.label} · {task}"
        bars[name] = {k: s[k] for k in ("v", "v_cons", "v_ctr")}
        if "size_curve" in s:
            curves[name] = s["size_curve"]
        else:
            files.append(plots.heatmap(
                metrics.cell_grid(records), metrics.cell_relations(records),
                f"SpatialTunnel per-cell v — {name}\nv={s['v']:.3f}  v_cons={s['v_cons']:.3f}  "
                f"v_ctr={s['v_ctr']:.3f}  Δ={s['delta']:+.3f}",
                out / f"spatialtunnel_heatmap_{_slug(run.label)}_{_slug(task)}.png"))
    if curves:
        files.append(plots.size_curves(curves, "SpatialTunnel size sweep (v against s1)",
                                       out / "spatialtunnel_size_curve.png"))
    files.append(plots.summary_bars(bars, "SpatialTunnel: v, v_cons, v_ctr per run and task",
                                    out / "spatialtunnel_summary.png"))
    return files, table
