"""``spatial-tasks inspect``: whether a split is the VAGUE release's table, and whether a folder
is in one of its layouts."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.common.origin import Origin
from spatial_tasks.common.validate import DataError
from spatial_tasks.vague import load


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    missing = [c for c in load.TABLE_COLUMNS if c not in ds.column_names]
    if missing:
        return f"not the VAGUE release's table: missing column(s) {missing}"
    try:  # the rows themselves must load, not only the columns fit
        load.docs_from_table(ds, Origin(label=name, root=root))
    except DataError as err:
        return f"the columns fit, but the rows do not load: {err}"
    return "accepted: VAGUE, the Hub release's table (subsets from image_name)"


def inspect_folder(folder: Path) -> str:
    """The GitHub layout (item files and tagged images) or the Hub release's, read as a folder."""
    try:
        layout = load.check_folder(folder)
    except DataError as err:
        return str(err)
    return "accepted: " + ("the Hub release's layout" if layout == "hub" else
                           "the GitHub layout (item files + <image_name>_annot.jpg images)")
