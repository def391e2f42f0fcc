"""SpatialTunnel part of ``spatial-tasks report``: a table per run and task with a legend, per-cell
heatmaps (paper Fig. 3), the size-sweep curves (Table 9) and the v / v_cons / v_ctr bars."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from spatial_tasks.common.formatting import number, slug, with_interval
from spatial_tasks.common.plots import grouped_hbars
from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.yesno import label_mass_warning
from spatial_tasks.spatialtunnel import metrics, plots

# Column names are the metric names of lmms-eval's table and of `rescore` (the legend gives the paper's symbols).
COLUMNS = tuple((name, name) for name in ("v", "v_cons", "v_ctr", "delta", "v_amb", "v_s010", "v_s030", "delta_s",
                                          "unparseable"))
SIGNED = ("delta", "delta_s")
INTERVALS_NOTE = ("Wilson under exact match; otherwise a seeded percentile bootstrap over images, 1,000 resamples, "
                  "each image's consistent and counter questions drawn together")
LEGEND = [
    "- **v**: mean correctness over the questions -- accuracy under exact match (paper Table 8), "
    "p = σ(ℓ_Yes − ℓ_No) or 1 − p from the first generated token's logits (Table 3).",
    "- **v_cons / v_ctr**: v on consistent pairs (the farther object is higher in the image) / on counter pairs "
    "(it is lower): the split of the paper's §3.",
    "- **delta** (the paper's Δ) = v_cons − v_ctr: how much the \"higher ⇒ farther\" shortcut helps (0 = no reliance "
    "on it).",
    "- **v_amb**: v on the pairs whose objects are less than 5 % of the image height apart vertically (the three-way "
    "rule the paper applies to real benchmarks). In the tunnel the paper splits every pair two ways, so these pairs "
    "are also in v_cons or v_ctr (by the sign of the height difference); v_amb is a view across both, and the "
    "heatmaps outline its cells with dots.",
    "- **v_s010 / v_s030 / delta_s**: the size variant (Table 9): v when the farther object is small, s1 = 0.1 (size "
    "agrees with depth) / large, s1 = 0.3 (size conflicts), and their difference (the paper's Δ_s).",
    "- **unparseable**: share of answers with neither yes nor no (or logits that are not numbers); they count as wrong.",
    f"- **[low, high]**: the 95 % interval of v, v_cons, v_ctr and delta ({INTERVALS_NOTE}).",
    "- **n**: questions scored. **n/a**: not defined for these rows (no such pairs, no size rows, or no readable answer).",
]
MASS_COLUMNS = (("label_mass_median", "m median"), ("label_mass_below_half", "m < 0.5"))
MASS_NOTE = (
    "- **m median / m < 0.5**: the label mass m = p(Yes) + p(No) of the first generated token (every answer spelling "
    "counted): its median over the questions, and the share of questions with m under 1/2. p = σ(ℓ_Yes − ℓ_No) "
    "reads only that part of the model's answer; a median under 1/2 is warned about below the table. In-process "
    "scorers take it from the full softmax; a served top_logprobs reply gives a lower bound where a label is "
    "censored. Rule baselines have none (n/a).")
CENSORED_NOTE = (
    "- **censored**: questions of a served run (`openai_yesno`, dialect top_logprobs) whose Yes or No token was "
    "not among the server's top log-probabilities; that label's value is bounded by the last one listed, so p is "
    "an upper bound for a censored Yes (lower for No), and 1/2 when both are censored. Rerun with the vllm or "
    "sglang dialect for exact values.")


def _short(task: str) -> str:
    return task.removeprefix("spatialtunnel_") or task


def spatialtunnel_figures(runs: RunSet, out: Path) -> tuple[list[Path], list[str]]:
    """The SpatialTunnel section over the run set's SpatialTunnel part: (files written, markdown lines)."""
    files: list[Path] = []
    curves: dict[str, dict[str, dict[float, float]]] = defaultdict(dict)
    bars: dict[str, dict[str, float]] = {}
    whiskers: dict[str, dict[str, tuple[float, float]]] = {}
    entries = sorted(runs.tasks, key=lambda e: (e.run.label, e.task))
    served = any("censored" in r for entry in entries for r in entry.records())
    massed = any("label_mass" in r for entry in entries for r in entry.records())
    columns = (COLUMNS + ((("n_censored", "censored"),) if served else ())  # only served runs can censor a label
               + (MASS_COLUMNS if massed else ()))  # only models that score logits have a label mass
    warnings = []
    header = "| run | task | protocol | n | " + " | ".join(name for _, name in columns) + " |"
    table = [header, "|---|---|---|---:|" + "---:|" * len(columns)]
    for entry in entries:
        run, task, records = entry.run, entry.task, entry.records()
        if not records:
            continue
        protocol = records[0]["protocol"]
        s = metrics.summary(records)
        s.setdefault("unparseable", metrics.unparseable_share(records))
        ci = {key: (low, high) for key, (_, low, high, _) in runs.scope([entry]).intervals().items()}
        cells = [str(s[key]) if key == "n_censored" and key in s else
                 with_interval(s.get(key), ci.get(key), signed=key in SIGNED) for key, _ in columns]
        table.append(f"| {run.label} | {task} | {protocol} | {s['n']} | " + " | ".join(cells) + " |")
        if warning := label_mass_warning(s.get("label_mass_median")):
            warnings.append(f"- **Warning** ({run.label}, {task}): {warning}.")
        name = f"{run.label} · {_short(task)}"
        if "size_curve" in s:
            curves[protocol][run.label] = s["size_curve"]
            continue
        bars[name] = {k: s[k] for k in ("v", "v_cons", "v_ctr")}
        whiskers[name] = {k: ci[k] for k in ("v", "v_cons", "v_ctr")}
        files.append(plots.heatmap(
            metrics.cell_grid(records), metrics.cell_relations(records), metrics.cell_relations(records, two_way=False),
            f"SpatialTunnel per-cell v: {run.label}, {task}\nv={number(s['v'])}  v_cons={number(s['v_cons'])}  "
            f"v_ctr={number(s['v_ctr'])}  delta={number(s['delta'], signed=True)}",
            out / f"spatialtunnel_heatmap_{slug(run.label)}_{slug(task)}.png"))
    if curves:
        files.append(plots.size_curves(curves, "SpatialTunnel size sweep: v against the farther object's size (Table 9)",
                                       out / "spatialtunnel_size_curve.png"))
    if bars:
        files.append(grouped_hbars(bars, ["v", "v_cons", "v_ctr"], out / "spatialtunnel_summary.png",
                                   title="SpatialTunnel phase variant: v, v_cons, v_ctr per run and task "
                                         "(Tables 3 and 8)",
                                   xlabel="v (mean correctness)", reference=0.5, reference_label="chance (0.5)",
                                   errors=whiskers,
                                   notes=["v_cons: the farther object is higher in the image; v_ctr: it is lower.",
                                          "Whiskers: 95 % intervals (Wilson under exact match; else a bootstrap over "
                                          "images, pairs drawn together)."]))
    notes = [*([CENSORED_NOTE] if served else []), *([MASS_NOTE] if massed else [])]
    return files, [*table, *([""] + warnings if warnings else []), "", *LEGEND, *notes]
