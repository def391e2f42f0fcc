"""Figures every benchmark's report shares: horizontal grouped bars that stay readable.

One row per run (a short label on the left, any length of name fits), one bar per figure, the
value printed at every bar's end -- so a bar of exactly 0 still shows (a tick at 0 and "0.000")
and an undefined figure says "n/a" instead of looking like 0. Drawn on matplotlib's Agg canvas
(no global backend switch); every function writes one PNG and returns its path.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from spatial_tasks.common.formatting import UNDEFINED, is_defined, number

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")
LABEL_WIDTH = 34  # characters per line of a row label


def wrap_label(label: str, width: int = LABEL_WIDTH) -> str:
    """A run label broken at commas, spaces and brackets into lines of ``width`` characters."""
    spaced = label.replace(",", ", ").replace("(", " (").replace(" · ", "  · ")
    return "\n".join(textwrap.wrap(spaced, width=width, break_long_words=True, break_on_hyphens=False)) or label


CAPTION_KEY = "Title"  # the PNG text chunk that carries a figure's caption (the report page reads it)


def caption_of(fig: Figure) -> str:
    """A figure's caption: its suptitle, else its axes' titles, on one line ("" when it has none)."""
    titles = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    titles = titles or [ax.get_title() for ax in fig.axes]
    return " ".join(" ".join(t.split()) for t in titles if t.strip())


def save(fig: Figure, path: str | Path, dpi: float = 150) -> Path:
    """Write ``fig`` as a PNG with its caption (``caption_of``) in the file's ``CAPTION_KEY`` text."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fig.canvas is None or not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata={CAPTION_KEY: caption_of(fig)})
    return path


def grouped_hbars(rows: Mapping[str, Mapping[str, float | None]], keys: Sequence[str], path: str | Path, *,
                  title: str, xlabel: str, xlim: tuple[float, float] = (0.0, 1.0), reference: float | None = None,
                  reference_label: str | None = None, key_labels: Mapping[str, str] | None = None,
                  signed: bool = False, digits: int = 3, notes: Sequence[str] = (),
                  errors: Mapping[str, Mapping[str, tuple[float, float]]] | None = None) -> Path:
    """``rows``: label -> {key: value}; one group of ``len(keys)`` bars per label, top to bottom
    in the given order. ``signed`` prints values with their sign (a bias). ``reference`` draws a
    dashed line (chance, or 0). ``notes`` are printed under the axes. ``errors``: label -> {key:
    (low, high)}, drawn as whiskers (a 95 % interval; say which in a note)."""
    labels = list(rows)
    k = len(keys)
    height = 0.8 / max(k, 1)
    fig = Figure(figsize=(8.0, 1.0 + 0.32 * k * max(len(labels), 1) + 0.25 * len(notes)))
    ax = fig.add_subplot()
    span = xlim[1] - xlim[0]
    for j, key in enumerate(keys):
        ys = np.arange(len(labels)) + (j - (k - 1) / 2) * height
        values = [rows[label].get(key) for label in labels]
        widths = [v if is_defined(v) else 0.0 for v in values]
        colour = PALETTE[j % len(PALETTE)]
        name = (key_labels or {}).get(key, key)
        ax.barh(ys, widths, height=height * 0.9, color=colour, label=name)
        for y, label in zip(ys, labels):
            low, high = (errors or {}).get(label, {}).get(key, (None, None))
            if is_defined(low) and is_defined(high):
                ax.errorbar([(low + high) / 2], [y], xerr=[[(high - low) / 2]], fmt="none", ecolor="#222222",
                            elinewidth=0.9, capsize=2.5)
        for y, value, label in zip(ys, values, labels):
            low, high = (errors or {}).get(label, {}).get(key, (None, None))
            if not is_defined(value):
                ax.text(0, y, f" {UNDEFINED}", va="center", ha="left", fontsize=7, color="#777777", style="italic")
                continue
            ax.plot([value, value], [y - height * 0.45, y + height * 0.45], color=colour, linewidth=1.5)
            right = value >= 0
            edge = (high if right else low) if is_defined(low) and is_defined(high) else value  # text clears the whisker
            ax.text(edge + (0.01 if right else -0.01) * span, y, number(value, digits, signed=signed),
                    va="center", ha="left" if right else "right", fontsize=7)
    if reference is not None:
        ax.axvline(reference, color="#555555", linestyle="--", linewidth=0.8, label=reference_label)
    ax.set_yticks(range(len(labels)), labels=[wrap_label(label) for label in labels], fontsize=7.5)
    ax.invert_yaxis()
    pad = 0.14 * span  # room for the value labels
    ax.set_xlim(xlim[0] - (pad if xlim[0] < 0 else 0), xlim[1] + pad)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    # legend between the title and the axes, notes under the x label: nothing overlaps
    entries = k + (reference_label is not None)
    columns = min(entries, 4)
    ax.legend(fontsize=7.5, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=columns, frameon=False)
    rows = -(-entries // columns)  # the title sits above every legend row
    ax.set_title("\n".join(textwrap.wrap(title, 70)), fontsize=10, pad=22 + 13 * (rows - 1))
    for i, note in enumerate(notes):
        ax.annotate(note, xy=(0, 0), xycoords="axes fraction", xytext=(0, -34 - 11 * i), textcoords="offset points",
                    fontsize=7, color="#444444", va="top")
    return save(fig, path)
