"""``spatial-tasks inspect``: whether a split's layout fits a SpatialTunnel reader -- the tunnel
tables, the real benchmarks the re-splits read, or contrastive-probing pairs."""

from __future__ import annotations

import random
from collections import Counter

import datasets

from spatial_tasks.common.origin import Origin, in_memory
from spatial_tasks.common.validate import DataError


def read_split(ds: datasets.Dataset, name: str, root=None) -> str:
    """"accepted: ..." with the task that reads it, or the first reason the tables refuse it."""
    from spatial_tasks.spatialtunnel import load
    from spatial_tasks.spatialtunnel.probe import data as probe_data
    from spatial_tasks.spatialtunnel.resplit import docs as resplit

    for columns, task in ((resplit.EMBSPATIAL_COLUMNS, "EmbSpatial-Bench (spatialtunnel_embspatial_depth_split)"),
                          (resplit.CV_BENCH_COLUMNS, "CV-Bench 3D (spatialtunnel_cv_bench_3d_split)")):
        if set(columns) <= set(ds.column_names):
            return f"accepted: {task}"
    try:
        layout = load.detect_format(ds, in_memory(name))
    except DataError as err:
        first = str(err)
    else:
        try:  # the rows themselves must load, not only the columns fit
            load.to_docs(ds, Origin(label=name, root=root))
        except DataError as err:
            return f"the columns fit the tunnel tables, but the rows do not load: {err}"
        return f"accepted: {layout} (spatialtunnel_phase / _size)"
    try:
        origin = in_memory(name)
        layout = probe_data.detect_layout(ds.column_names, origin)
        skipped, rows = Counter(), []
        pairs = probe_data.pairs_of_table(ds, origin, layout, random.Random(0), skipped, rows, strict=False)
    except DataError:
        return first
    if not pairs:
        return f"{first}; as probing pairs ({layout} layout) no sample row makes a pair: {rows[0] if rows else skipped}"
    return f"accepted: contrastive-probing pairs, {layout} layout (spatial-tasks probe --data)"


def inspect_split(ds: datasets.Dataset, name: str, files=(), root=None) -> str:
    """``Benchmark.inspect_split`` (the folder's file names are not needed here)."""
    return read_split(ds, name, root)
