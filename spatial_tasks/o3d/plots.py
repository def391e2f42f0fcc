"""O3-D figures from the metric / rescore dicts: the 1-cue/2-cue accuracy heatmap (paper Fig. 5),
the near-far bias bars (Eq. 1) and the vision-vs-language SDGM bars (Eq. 2).

Drawn on matplotlib's Agg canvas directly (no global backend switch); every function writes
one PNG and returns its path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from spatial_tasks.o3d.metrics import VISION_CUES

CMAP = "RdBu_r"  # blue below chance, red above; 0.5 (chance) is white
_MISSING = "#d9d9d9"


def _cue_key(key: object) -> frozenset[str]:
    if isinstance(key, str):
        return frozenset(key.replace(",", "+").replace(" ", "").split("+"))
    return frozenset(key)  # tuple / list / set of cue codes


def _by_cues(values: Mapping | None) -> dict[frozenset[str], float]:
    out: dict[frozenset[str], float] = {}
    for key, value in (values or {}).items():
        if value is not None:
            out[_cue_key(key)] = float(value)
    return out


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    return path


def _text_colour(value: float) -> str:
    return "white" if abs(value - 0.5) > 0.3 else "black"


def plot_cue_heatmap(lower: Mapping, upper: Mapping | None, path: str | Path, *, lower_name: str = "model",
                     upper_name: str = "baseline", cues: Sequence[str] = VISION_CUES,
                     title: str | None = None) -> Path:
    """Paper Fig. 5: accuracy for every single cue and cue pair as an 8x8 matrix.

    ``lower`` and ``upper`` map a cue ("HP") or pair ("HP+OC", ("HP", "OC")) to an accuracy.
    Below the diagonal: ``lower``'s pairs (e.g. a VLM); above: ``upper``'s (e.g. a depth
    baseline such as DepthAnythingV2); each diagonal cell is split, lower-left ``lower``'s single
    cue and upper-right ``upper``'s. Missing cells are grey.
    """
    lo, up = _by_cues(lower), _by_cues(upper)
    k = len(cues)
    matrix = np.full((k, k), np.nan)
    for i, ci in enumerate(cues):
        for j, cj in enumerate(cues):
            if i > j:
                matrix[i, j] = lo.get(frozenset((ci, cj)), np.nan)
            elif i < j:
                matrix[i, j] = up.get(frozenset((ci, cj)), np.nan)
    norm = Normalize(vmin=0.0, vmax=1.0)
    cmap = colormaps[CMAP]
    fig = Figure(figsize=(7.2, 6.2))
    ax = fig.add_subplot()
    ax.add_patch(Rectangle((-0.5, -0.5), k, k, facecolor=_MISSING, zorder=0))
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, norm=norm, zorder=1)
    for i in range(k):
        for j in range(k):
            if i != j and not np.isnan(matrix[i, j]):
                v = matrix[i, j]
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color=_text_colour(v), zorder=3)
    for d, cue in enumerate(cues):  # split diagonal: lower-left = lower, upper-right = upper
        x0, x1, y0, y1 = d - 0.5, d + 0.5, d - 0.5, d + 0.5  # y grows downwards in imshow
        for value, corners, (tx, ty) in (
            (lo.get(frozenset((cue,))), [(x0, y0), (x0, y1), (x1, y1)], (d - 0.22, d + 0.24)),
            (up.get(frozenset((cue,))), [(x0, y0), (x1, y0), (x1, y1)], (d + 0.22, d - 0.22)),
        ):
            face = _MISSING if value is None else cmap(norm(value))
            ax.add_patch(Polygon(corners, closed=True, facecolor=face, edgecolor="black",
                                 linewidth=0.6, zorder=2))
            if value is not None:
                ax.text(tx, ty, f"{value:.2f}", ha="center", va="center", fontsize=6.5,
                        color=_text_colour(value), zorder=3)
    ax.plot([-0.5, k - 0.5], [-0.5, k - 0.5], color="black", linewidth=0.8, zorder=4)
    ax.set_xticks(range(k), labels=list(cues))
    ax.set_yticks(range(k), labels=list(cues))
    ax.set_xlim(-0.5, k - 0.5)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_xlabel("cue")
    ax.set_ylabel("cue")
    ax.set_title((title or "O3-D accuracy per cue (diagonal) and cue pair (off-diagonal)")
                 + f"\nlower-left: {lower_name}   ·   upper-right: {upper_name}", fontsize=10)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("accuracy (0.5 = chance)")
    return _save(fig, path)


def plot_near_far_bias(biases: Mapping[str, float | None], path: str | Path, *, title: str | None = None,
                       n: Mapping[str, object] | None = None) -> Path:
    """Near-far bias (paper Eq. 1) per model: Acc_F - Acc_N in [-1, 1]; -1 = always "closer"
    (near), +1 = always "farther". ``n`` (model -> rows) is printed under the model names."""
    names = list(biases)
    values = [np.nan if biases[m] is None else float(biases[m]) for m in names]
    fig = Figure(figsize=(max(4.5, 1.1 * len(names) + 2), 4.2))
    ax = fig.add_subplot()
    colours = ["#b2182b" if (v > 0) else "#2166ac" for v in np.nan_to_num(values)]
    bars = ax.bar(range(len(names)), np.nan_to_num(values), color=colours, width=0.6)
    for bar, v in zip(bars, values):
        label = "n/a" if np.isnan(v) else f"{v:+.2f}"
        y = 0 if np.isnan(v) else v
        ax.text(bar.get_x() + bar.get_width() / 2, y + (0.04 if y >= 0 else -0.04), label,
                ha="center", va="bottom" if y >= 0 else "top", fontsize=9)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylim(-1.18, 1.18)
    labels = [f"{m}\n(n={n[m]})" if n and m in n else m for m in names]
    ax.set_xticks(range(len(names)), labels=labels, fontsize=8)
    ax.set_ylabel("bias$_{NF}$ = Acc$_F$ − Acc$_N$")
    ax.text(1.01, 1.0, "always far", transform=ax.get_yaxis_transform(), fontsize=8, va="center")
    ax.text(1.01, -1.0, "always near", transform=ax.get_yaxis_transform(), fontsize=8, va="center")
    ax.set_title(title or "O3-D near–far bias (Eq. 1)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def plot_sdgm(sdgms: Mapping[str, Mapping[str, float | None]], path: str | Path, *, title: str | None = None,
              ddof: int = 0, groups: Mapping[str, Mapping[str, int]] | None = None) -> Path:
    """Vision vs language influence per model: SDGM of Acc_N over the cue groups and over the
    question groups (paper Eq. 2). ``sdgms``: model -> {"vision": s, "language": s};
    ``groups`` (model -> {"vision": n, "language": n}) is printed under the model names."""
    names = list(sdgms)
    x = np.arange(len(names))
    width = 0.38
    fig = Figure(figsize=(max(4.5, 1.2 * len(names) + 2), 4.2))
    ax = fig.add_subplot()
    top = 0.0
    for offset, kind, colour in ((-width / 2, "vision", "#4daf4a"), (width / 2, "language", "#984ea3")):
        vals = [sdgms[m].get(kind) for m in names]
        heights = [0.0 if v is None else float(v) for v in vals]
        top = max([top, *heights])
        over = "cue" if kind == "vision" else "question"
        bars = ax.bar(x + offset, heights, width, label=f"{kind} (σ over {over} groups)", color=colour)
        for bar, v in zip(bars, vals):
            ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + 0.005,
                    "n/a" if v is None else f"{v:.3f}", ha="center", va="bottom", fontsize=7.5)
    labels = [f"{m}\n({groups[m].get('vision')} / {groups[m].get('language')} groups)"
              if groups and m in groups else m for m in names]
    ax.set_xticks(x, labels=labels, fontsize=8)
    ax.set_ylim(0, max(0.05, top * 1.25))
    std_name = "population std (paper)" if ddof == 0 else "sample std (authors' pandas)"
    ax.set_ylabel(f"SDGM of Acc$_N$ ({std_name})")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title or "O3-D vision vs language influence (Eq. 2)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def plots_from_rescore(result: Mapping, out_dir: str | Path, *, baseline: Mapping | None = None,
                       baseline_name: str = "baseline",
                       display_names: Mapping[str, str] | None = None) -> dict[str, Path]:
    """All figures of a ``rescore.rescore_released`` result: one cue heatmap per model (upper
    triangle ``baseline``'s cue-group accuracies when given, else empty), the bias bars and the
    SDGM bars. Returns {figure name: path}."""
    out_dir = Path(out_dir)
    names = dict(display_names or {})
    models = result["models"]
    label = {m: names.get(m, m) for m in models}
    paths: dict[str, Path] = {}
    for model, summary in models.items():
        slug = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)
        paths[f"heatmap_{model}"] = plot_cue_heatmap(
            summary.get("cue_group_accuracy") or {}, baseline, out_dir / f"o3d_cue_heatmap_{slug}.png",
            lower_name=label[model], upper_name=baseline_name if baseline else "(no baseline)")
    paths["near_far_bias"] = plot_near_far_bias(
        {label[m]: s.get("bias_nf") for m, s in models.items()}, out_dir / "o3d_near_far_bias.png",
        n={label[m]: sum((s.get("n", {}).get("bias_nf") or {}).values()) for m, s in models.items()})
    paths["sdgm"] = plot_sdgm(
        {label[m]: {"vision": s.get("sdgm_vision"), "language": s.get("sdgm_language")}
         for m, s in models.items()},
        out_dir / "o3d_sdgm.png", ddof=int(result.get("ddof", 0)),
        groups={label[m]: {kind: (s.get("n", {}).get(f"sdgm_{kind}") or {}).get("groups")
                           for kind in ("vision", "language")}
                for m, s in models.items()})
    return paths
