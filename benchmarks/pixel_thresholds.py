"""How SpatialTunnel's pixel-reader figures depend on each threshold of its table
(spatial_tasks/spatialtunnel/pixel_thresholds.py).

For each threshold named below, the figures of benchmarks/pixel_split.py (per table: questions not
placed, and for the 2-way split, the 3-way split and the cells how many labels equal the truth, are
unknown or differ) are computed on the bundled 128 px sample with the threshold at a lower and at a
higher value, and printed beside the figures at the table's value. "same" means no figure moved.

    .venv/bin/python benchmarks/pixel_thresholds.py                 # every threshold below
    .venv/bin/python benchmarks/pixel_thresholds.py WALL_HUE_BAND   # some of them
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from unittest import mock

import datasets

from spatial_tasks.spatialtunnel import pixel_thresholds, pixels

HERE = Path(__file__).parent
SAMPLE = HERE.parent / "tasks" / "spatialtunnel" / "sample"

# threshold -> (a lower value, a higher value) tried in its place
TRIED = {
    "MIN_SATURATION": (0.15, 0.45),
    "MIN_SATURATION_NEAR_WALL": (0.45, 0.75),
    "WALL_HUE_BAND": (12.5, 37.5),
    "NEAR_WALL_SATURATION_GAP": (0.1, 0.3),
    "MIN_CHROMA": (0.03, 0.09),
    "MIN_CHROMA_NEAR_WALL": (0.06, 0.18),
    "WALL_MIN_VALUE": (0.1, 0.3),
    "WALL_SATURATION": ((0.025, 0.25), (0.075, 0.75)),
    "WALL_MIN_PIXELS": (25, 75),
    "MIN_AREA_FRACTION": (0.75e-4, 2.25e-4),
    "CENTRE_EXCLUSION": (0.025, 0.075),
    "TWO_HUE_SHARE": (0.15, 0.45),
    "TWO_HUE_APART": (0.25, 0.75),
    "RIVAL_AREA": (0.25, 0.75),
    "DARK_RATIO": (0.5, 0.7),
    "STRICT_DARK_RATIO": (0.3, 0.5),
    "LOOSE_DARK_RATIO": (0.7, 0.9),
    "DARK_FLOOR": (0.01, 0.03),
    "BLACK_REACH": ((0.75, 1.1), (0.85, 1.2)),
    "COMPLETE": (0.75, 0.95),
    "COMPLETE_SLACK": (0.05, 0.15),
    "LOG_OFFSET": (0.015, 0.045),
    "NEIGHBOURS": (3, 7),
    "FEATURE_SIDE": (16, 48),
    "MIN_BACKGROUND_IMAGES": (2, 4),
    "RING_MARGIN": (0.0075, 0.0225),
    "RING_PERCENTILES": ((1, 99), (3, 97)),
    "MIN_RING_OBJECTS": (3, 7),
    "SIZE_MARGIN": ((0.25, 0.1), (0.45, 0.2)),
    "SIZE_SIGMAS": (2, 4),
    "LEVEL_PX": (1.2, 1.6),
    "BLACK_UNCERTAINTY": (1.25, 1.75),
    "BLACK_EDGE_PX": (1.5, 2.5),
    "MIN_SPHERES": (3, 7),
    "SCALE_EDGE_PX": (0.25, 0.75),
    "CONTACT": (0.4, 0.6),
    "MIN_CELL_IMAGES": (1, 3),
}
FIGURES = ("unplaced", "two_way_agree", "two_way_unknown", "two_way_differ", "three_way_agree", "three_way_unknown",
           "three_way_differ", "cells_agree", "cells_unknown", "cells_differ")


def _pixel_split():
    spec = importlib.util.spec_from_file_location("pixel_split", HERE / "pixel_split.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def figures(split, tables: dict[str, list[Path]]) -> dict[str, tuple[int, ...]]:
    out = {}
    for variant, files in tables.items():
        measured = split.measure(files, variant)
        out[variant] = tuple(measured[key] for key in FIGURES)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="thresholds to move (default: every one in TRIED)")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in TRIED]
    if unknown:
        sys.exit(f"not a threshold this script moves: {unknown}; choose from {sorted(TRIED)}")
    datasets.disable_progress_bars()
    from loguru import logger

    logger.remove()  # the loader's notes on what the pixels left are pixel_split's to print
    split = _pixel_split()
    tables = {v: sorted((SAMPLE / f"{v}_variation").glob("*.parquet")) for v in ("phase", "size")}
    base = figures(split, tables)
    print("figures per table: " + ", ".join(FIGURES))
    print("at the table's values: " + "; ".join(f"{v} {base[v]}" for v in base))
    print("| threshold | value | lower | figures | higher | figures |\n|---|---|---|---|---|---|")
    for name in args.names or TRIED:
        cells = []
        for value in TRIED[name]:
            with mock.patch.object(pixels, name, value), mock.patch.object(pixel_thresholds, name, value):
                moved = figures(split, tables)
            cells += [repr(value), "same" if moved == base else "; ".join(
                f"{v} {moved[v]}" for v in moved if moved[v] != base[v])]
        print(f"| {name} | {getattr(pixel_thresholds, name)!r} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
