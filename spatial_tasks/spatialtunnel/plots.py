"""SpatialTunnel figures: the per-cell heatmap (paper Fig. 3) and the size-sweep curve (Table 9)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from spatial_tasks.common.plots import save  # noqa: E402


def heatmap(grid: list[list[float]], relations: list[list[str | None]] | None,
            three_way: list[list[str | None]] | None, title: str, path: Path) -> Path:
    """Per-cell v over (theta1, theta2); counter cells (two-way: v_ctr) are hatched and outlined in
    black, ambiguous cells (three-way: v_amb, also in v_cons or v_ctr) outlined with dots."""
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
    ambiguous = [(i, j) for i, row in enumerate(three_way or []) for j, r in enumerate(row) if r == "ambiguous"]
    for i, j in ambiguous:
        ax.add_patch(Rectangle((j - 0.42, i - 0.42), 0.84, 0.84, fill=False, linestyle=(0, (1.5, 1.5)), edgecolor="#00b7ff",
                               linewidth=2.4))
    ticks = list(range(n))
    labels = [f"{360 * k / n:.0f}°" for k in ticks]
    step = max(1, n // 8)
    ax.set_xticks(ticks[::step], labels[::step])
    ax.set_yticks(ticks[::step], labels[::step])
    ax.set_xlabel("θ2 — angular position of the nearer object")
    ax.set_ylabel("θ1 — angular position of the farther object")
    ax.set_title("\n".join(textwrap.fill(line, 64) for line in title.splitlines()), fontsize=9.5)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("v (mean correctness over the 4 questions)")
    handles = [Patch(facecolor="white", edgecolor="black", hatch="///", label="counter cell (v_ctr)"),
               Patch(facecolor="white", edgecolor="grey", label="consistent cell (v_cons)")]
    if ambiguous:
        handles.append(Patch(facecolor="white", edgecolor="#00b7ff", linestyle=(0, (1.5, 1.5)), linewidth=2.0,
                             label="ambiguous (v_amb; also in v_cons or v_ctr)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(handles), fontsize=7.5,
              frameon=False)
    fig.tight_layout()
    save(fig, path, dpi=fig.dpi)
    plt.close(fig)
    return path


def size_curves(curves: dict[str, dict[str, dict[float, float]]], title: str, path: Path) -> Path:
    """v against s1 (the farther object's size; s1 + s2 = 0.4), one panel per protocol
    (``curves``: protocol -> run -> {s1: v}), one line per run with its own marker."""
    protocols = [p for p in ("exact", "logit") if p in curves] + sorted(set(curves) - {"exact", "logit"})
    fig, axes = plt.subplots(1, len(protocols), figsize=(5.2 * len(protocols), 4.4), dpi=120, squeeze=False,
                             sharey=True)
    markers = "osD^vP*Xh"
    colours = plt.get_cmap("tab10").colors
    labels = sorted({label for runs in curves.values() for label in runs})
    style = {label: (colours[k % len(colours)], markers[k % len(markers)]) for k, label in enumerate(labels)}
    handles = {}
    for ax, protocol in zip(axes[0], protocols):
        for label, curve in sorted(curves[protocol].items()):
            xs = sorted(curve)
            colour, marker = style[label]  # one run, one look, in every panel
            (line,) = ax.plot(xs, [curve[x] for x in xs], marker=marker, markersize=4, color=colour,
                              linewidth=1.2, alpha=0.85, label=label)
            handles.setdefault(label, line)
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.axvline(0.2, color="grey", linestyle=":", linewidth=0.8)
        ax.set_xlabel("s1 — size of the farther object (s2 = 0.4 − s1)", fontsize=9)
        ax.set_ylim(-0.04, 1.04)
        ax.set_title({"exact": "exact match (Table 8 protocol)", "logit": "first-token logits (Table 3 protocol)"}
                     .get(protocol, protocol), fontsize=9)
        ax.text(0.105, 0.06, "far object smaller:\nsize agrees with depth", fontsize=7, color="#444444")
        ax.text(0.215, 0.06, "far object larger:\nsize conflicts", fontsize=7, color="#444444")
    axes[0][0].set_ylabel("v (dashed: chance)")
    fig.suptitle(title, fontsize=10)
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=2, fontsize=7.5, frameon=False)
    fig.tight_layout()
    save(fig, path, dpi=fig.dpi)
    plt.close(fig)
    return path
