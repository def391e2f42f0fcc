"""SpatialTunnel figures: the per-cell heatmap (paper Fig. 3) and the size-sweep curve (Table 9)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402


def heatmap(grid: list[list[float | None]], relations: list[list[str | None]] | None, title: str,
            path: Path) -> Path:
    """Per-cell v over (theta1, theta2); counter cells are hatched and outlined in black."""
    values = np.array([[np.nan if v is None else v for v in row] for row in grid], dtype=float)
    n = values.shape[0]
    fig, ax = plt.subplots(figsize=(6.4, 5.6), dpi=120)
    image = ax.imshow(values, cmap="RdYlGn", vmin=0.0, vmax=1.0, origin="lower")
    if relations:
        for i in range(n):
            for j in range(n):
                if relations[i][j] == "counter":
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                           edgecolor="black", linewidth=0.6))
    ticks = list(range(n))
    labels = [f"{360 * k / n:.0f}°" for k in ticks]
    step = max(1, n // 8)
    ax.set_xticks(ticks[::step], labels[::step])
    ax.set_yticks(ticks[::step], labels[::step])
    ax.set_xlabel("θ2 — angular position of the nearer object")
    ax.set_ylabel("θ1 — angular position of the farther object")
    ax.set_title(title, fontsize=10)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("v (mean correctness over the 4 questions)")
    ax.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch="///", label="counter cell"),
                       Patch(facecolor="white", edgecolor="grey", label="consistent cell")],
              loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def size_curves(curves: dict[str, dict[float, float]], title: str, path: Path) -> Path:
    """v against s1 (far object's size; s1 + s2 = 0.4) for each model."""
    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for label, curve in sorted(curves.items()):
        xs = sorted(curve)
        ys = [curve[x] for x in xs]
        ax.plot(xs, ys, marker="o", label=label)
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8, label="chance")
    ax.axvline(0.2, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("s1 — size of the farther object (s2 = 0.4 − s1)")
    ax.set_ylabel("v")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=10)
    ax.text(0.11, 0.03, "far object smaller\n(size agrees with depth)", fontsize=7)
    ax.text(0.235, 0.03, "far object larger\n(size conflicts)", fontsize=7)
    # Outside the axes: with many runs an inside legend hides the curves.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def summary_bars(rows: dict[str, dict[str, float]], title: str, path: Path) -> Path:
    """v, v_cons and v_ctr side by side for each model (paper Table 3 as a chart)."""
    keys = ("v", "v_cons", "v_ctr")
    labels = sorted(rows)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels) + 3), 5.0), dpi=120)
    for k, key in enumerate(keys):
        vals = [rows[m].get(key) for m in labels]
        vals = [np.nan if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in vals]
        ax.bar(x + (k - 1) * 0.26, vals, width=0.26, label=key)
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
