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
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from spatial_tasks.common.plots import grouped_hbars, save
from spatial_tasks.common.stats import is_defined
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
        if is_defined(value):
            out[_cue_key(key)] = float(value)
    return out


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
            face = _MISSING if value is None else cmap(norm(value))  # _by_cues keeps defined values only
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
                 + f"\nlower-left triangle: {lower_name}\nupper-right triangle: {upper_name}", fontsize=10)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("accuracy (0.5 = chance)")
    return save(fig, path)


def plot_near_far_bias(biases: Mapping[str, float | None], path: str | Path, *, title: str | None = None,
                       n: Mapping[str, object] | None = None,
                       intervals: Mapping[str, tuple[float, float]] | None = None) -> Path:
    """Near-far bias (paper Eq. 1) per model: Acc_F - Acc_N in [-1, 1]; -1 = always "closer"
    (near), +1 = always "farther". ``n`` (model -> rows) is added to the model names;
    ``intervals`` (model -> 95 % interval) are drawn as whiskers."""
    name = {m: (f"{m} (n={n[m]})" if n and m in n else m) for m in biases}
    rows = {name[m]: {"bias": b} for m, b in biases.items()}
    errors = {name[m]: {"bias": ci} for m, ci in (intervals or {}).items() if m in name}
    return grouped_hbars(rows, ["bias"], path, title=title or "O3-D near–far bias (Eq. 1)",
                         xlabel="bias_nf = acc_far − acc_near   (−1: always \"closer\" · 0: none · +1: always \"farther\")",
                         xlim=(-1.0, 1.0), reference=0.0, key_labels={"bias": "bias_nf"}, signed=True, errors=errors,
                         notes=["n/a: no near and far rows, or no parseable answer.",
                                *(["Whiskers: 95 % intervals, bootstrap over scenes."] if errors else [])])


def plot_sdgm(sdgms: Mapping[str, Mapping[str, float | None]], path: str | Path, *, title: str | None = None,
              ddof: int = 0, groups: Mapping[str, Mapping[str, int]] | None = None,
              intervals: Mapping[str, Mapping[str, tuple[float, float]]] | None = None) -> Path:
    """Vision vs language influence per model: SDGM of Acc_N over the cue groups and over the
    question groups (paper Eq. 2). ``sdgms``: model -> {"vision": s, "language": s};
    ``groups`` (model -> {"vision": n, "language": n}) is added to the model names; ``intervals``
    (model -> {"vision": (low, high), ...}) are drawn as whiskers."""
    name = {m: (f"{m} ({groups[m].get('vision')} cue / {groups[m].get('language')} question groups)"
                if groups and m in groups else m) for m in sdgms}
    rows = {name[m]: dict(v) for m, v in sdgms.items()}
    errors = {name[m]: dict(ci) for m, ci in (intervals or {}).items() if m in name}
    top = max([0.05, *(v for r in rows.values() for v in r.values() if is_defined(v))])
    std_name = "population std, the paper's Eq. 2" if ddof == 0 else "sample std, the authors' pandas"
    return grouped_hbars(rows, ["vision", "language"], path,
                         title=title or "O3-D vision vs language influence (Eq. 2): spread of target-near accuracy",
                         xlabel=f"SDGM of Acc_N ({std_name}); larger = more influence",
                         xlim=(0.0, top * 1.15),
                         key_labels={"vision": "vision: σ over cue groups", "language": "language: σ over question groups"},
                         errors=errors,
                         notes=["n/a: fewer than two groups, or no parseable answer.",
                                *(["Whiskers: 95 % intervals, bootstrap over scenes (a resampled SDGM is biased "
                                   "upwards: read them as spread)."] if errors else [])])


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
