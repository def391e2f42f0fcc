"""Figures of a probe: axis coherence and VD-EI per layer, and a PCA of the deltas per axis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from spatial_tasks.common.plots import save
from spatial_tasks.spatialtunnel.probe.metrics import AXES

AXIS_NAMES = {"H": "horizontal (left/right)", "V": "vertical (above/below)", "D": "distance (far/close)"}
AXIS_COLOURS = {"H": "#dd8452", "V": "#55a868", "D": "#8172b3"}
LABEL_COLOURS = {"left": "#dd8452", "right": "#f3c29b", "above": "#55a868", "below": "#a8d5b0",
                 "far": "#8172b3", "close": "#c6bde0"}


def coherence_plot(per_layer: Mapping[int, Mapping[str, float]], chosen: int | None, model: str,
                   paper: Mapping[str, float] | None, path: Path) -> Path:
    """Two panels over the layers: Coh_H/V/D, then VD-EI (Eq. 3, solid; the code's, dashed);
    ``chosen``: the analysis layer (None: no layer qualified)."""
    paper = paper if chosen is not None else None
    layers = sorted(per_layer)
    fig = Figure(figsize=(9, 6.4))
    top, bottom = fig.subplots(2, 1, sharex=True)
    for axis in AXES:
        top.plot(layers, [per_layer[k][f"Coh_{axis}"] for k in layers], marker="o", markersize=3,
                 color=AXIS_COLOURS[axis], label=f"Coh_{axis} {AXIS_NAMES[axis]}")
        if paper:
            top.scatter([chosen], [paper[f"Coh_{axis}"]], marker="*", s=120, color=AXIS_COLOURS[axis],
                        edgecolor="black", zorder=3)
    bottom.plot(layers, [per_layer[k]["VD-EI"] for k in layers], marker="o", markersize=3, color="#c44e52",
                label="VD-EI (Eq. 3)")
    bottom.plot(layers, [per_layer[k]["VD-EI (code)"] for k in layers], linestyle="--", color="#937860",
                label="VD-EI (authors' code)")
    if paper:
        bottom.scatter([chosen], [paper["VD-EI"]], marker="*", s=120, color="#c44e52", edgecolor="black",
                       zorder=3, label="paper, Table 5")
    for ax in (top, bottom):
        if chosen is not None:
            ax.axvline(chosen, color="grey", linestyle=":", linewidth=1)
        ax.axhline(0, color="black", linewidth=0.5)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_ylabel("axis coherence\n(mean pairwise cosine)")
    bottom.set_ylabel("VD-EI")
    bottom.set_xlabel("decoder layer (0-based); " + (f"dotted: chosen layer {chosen}" if chosen is not None
                                                       else "no layer qualifies (App. D.4)"))
    top.legend(fontsize=8, loc="best")
    bottom.legend(fontsize=8, loc="best")
    top.set_title(f"Contrastive probing, {model}" + ("  (stars: paper's Table 5 at its layer)" if paper else ""),
                  fontsize=10)
    return save(fig, path)


def _pca_2d(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates on the first two principal components, their explained-variance ratios)."""
    centred = vectors - vectors.mean(axis=0)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    k = min(2, components.shape[0])
    coords = centred @ components[:k].T
    if k < 2:
        coords = np.hstack([coords, np.zeros((coords.shape[0], 2 - k))])
    variance = singular ** 2
    ratio = variance[:2] / variance.sum() if variance.sum() > 0 else np.zeros(2)
    return coords, np.pad(ratio, (0, 2 - len(ratio)))


def pca_plot(deltas: np.ndarray, labels: Sequence[str], layer: int, model: str, path: Path) -> Path:
    """Four panels at ``layer``: all deltas by answer, then each axis's deltas alone (PC1 x PC2).
    A model that encodes an axis coherently separates its two answers along one direction."""
    deltas = np.asarray(deltas, dtype=np.float64)
    labels = list(labels)
    fig = Figure(figsize=(13, 3.6))
    panels = fig.subplots(1, 4)
    groups = [("all axes", list(range(len(labels))))]
    groups += [(AXIS_NAMES[axis], [i for i, label in enumerate(labels) if label in AXES[axis]]) for axis in AXES]
    for ax, (title, rows) in zip(panels, groups):
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        if len(rows) < 2:
            ax.text(0.5, 0.5, "fewer than 2 pairs", ha="center", va="center", transform=ax.transAxes)
            continue
        coords, ratio = _pca_2d(deltas[rows])
        for label in dict.fromkeys(labels[i] for i in rows):
            mask = [labels[i] == label for i in rows]
            ax.scatter(coords[mask, 0], coords[mask, 1], s=10, alpha=0.8, color=LABEL_COLOURS[label], label=label)
        ax.set_xlabel(f"PC1 ({ratio[0]:.0%})", fontsize=8)
        ax.set_ylabel(f"PC2 ({ratio[1]:.0%})", fontsize=8)
        ax.legend(fontsize=7, loc="best", markerscale=1.5)
    fig.suptitle(f"PCA of the deltas h(swapped) − h(original), layer {layer}, {model}", fontsize=10)
    return save(fig, path)
