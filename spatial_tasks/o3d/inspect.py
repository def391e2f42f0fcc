"""``spatial-tasks inspect``: whether a split is O3-D's visual_questions or one of its image subsets."""

from __future__ import annotations

from pathlib import Path

import datasets

from spatial_tasks.o3d import schema
from spatial_tasks.o3d.load import QUESTION_KINDS


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    missing = [c for c in QUESTION_KINDS if c not in ds.column_names]
    if not missing:
        return "accepted: O3-D visual_questions (the image subsets are read from the same source)"
    subset = [c for c in schema.REQUIRED_SUBSET_COLUMNS if c not in ds.column_names]
    images = [c for c, f in ds.features.items() if isinstance(f, datasets.Image)]
    if not subset and images:
        return f"accepted: an O3-D image subset (image columns {images})"
    lacking = subset or "an image column"
    return f"neither O3-D's visual_questions (missing {missing}) nor an image subset (missing {lacking})"
