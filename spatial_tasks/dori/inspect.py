"""``spatial-tasks inspect``: whether a split loads as DORI (the generator's layout, or an official
release's whose columns map by name)."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.common.origin import Origin
from spatial_tasks.common.validate import DataError
from spatial_tasks.dori import load

DATA_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv", ".tsv", ".arrow")


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    """The generator's layout, or an official-release layout whose columns map by name (task and
    granularity may come from the file paths)."""
    data = [f for f in files if f.endswith(DATA_SUFFIXES)]
    named = data and all(load.task_from_text(f) for f in data)
    origin = Origin(label=name, files=tuple((f, 0) for f in data) if named else (), root=root)
    try:
        if load.is_generated(ds):
            verdict = "accepted: DORI, spatial-tasks generator layout"
        else:
            load.map_columns(ds, origin, name)
            verdict = "accepted: DORI, an official-release layout (columns mapped by name)"
            if named and "task" not in load.resolve_columns(ds.column_names):
                # the rows read here are not tied to their files, so their tasks cannot be checked here
                return f"{verdict} (task and granularity from the file paths)"
    except DataError as err:
        return str(err)
    try:  # the rows themselves must load, not only the columns fit
        load.to_docs(ds, origin, hint=name)
    except DataError as err:
        return f"the columns fit, but the rows do not load: {err}"
    return verdict
