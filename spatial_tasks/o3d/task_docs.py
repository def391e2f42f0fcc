"""O3-D's ``process_docs`` hooks: each task's slice of the canonical docs (``load.py``), with its
images read from the task's own source (``subset_source``) and the cue strengths a source leaves
null filled in as the authors' renders imply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
from loguru import logger as log

from spatial_tasks.common.origin import fingerprint
from spatial_tasks.harness import DocsHook, TaskData
from spatial_tasks.o3d import load, schema
from spatial_tasks.o3d.demonstrations import attach_demonstrations
from spatial_tasks.o3d.slices import Slice

# Synthetic subsets of the tasks: kb-no-lp (HP without linear perspective) is a separate
# experiment that Table 12 leaves out (tasks/o3d/README.md, "Paper vs authors' code" (5)).

# ---------------------------------------------------------------------------------------------
# Where the image subsets live
# ---------------------------------------------------------------------------------------------

_PASSED_TO_SUBSETS = ("revision", "token", "cache_dir")


def subset_source(data: TaskData) -> tuple[str, dict]:
    """(source, load kwargs) of a task's image subsets, from its TaskData: its dataset_path, or for
    a local builder (``dataset_path: parquet`` + ``data_files``, as the bundled sample) the dataset
    root above ``.../visual_questions/<file>``."""
    kwargs = {k: data.kwargs[k] for k in _PASSED_TO_SUBSETS if k in data.kwargs}
    if data.kwargs.get("load_from_disk"):
        raise schema.SchemaError(f"task {data.task}: load_from_disk gives a saved visual_questions split, which "
                                 "says nothing about the image subsets; point dataset_path at the O3-D folder")
    if not data.is_local_builder:
        folder = data.local_folder
        return (str(folder) if folder is not None else data.path), kwargs
    root = _root_of_data_files(data.kwargs.get("data_files"))
    if root is None:
        raise schema.SchemaError(f"task {data.task}: its data_files {data.kwargs.get('data_files')!r} are not "
                                 f"<root>/{schema.QUESTIONS_CONFIG}/<file> in the official layout, so the image "
                                 "subsets cannot be found")
    return root, kwargs


def _data_file_paths(data_files: Any) -> list[str]:
    if isinstance(data_files, str):
        return [data_files]
    if isinstance(data_files, Mapping):
        return [p for v in data_files.values() for p in _data_file_paths(v)]
    if isinstance(data_files, (list, tuple)):
        return [p for v in data_files for p in _data_file_paths(v)]
    return []


def _root_of_data_files(data_files: Any) -> str | None:
    """The folder in the official layout (``<root>/visual_questions/<file>``) holding the files."""
    for file in _data_file_paths(data_files):
        path = Path(file)
        if path.parent.name == schema.QUESTIONS_CONFIG and path.parent.parent.is_dir():
            return str(path.parent.parent.resolve())
    return None


# ---------------------------------------------------------------------------------------------
# The hooks
# ---------------------------------------------------------------------------------------------


def build_task_docs(questions: datasets.Dataset, data: TaskData, *, subsets: Sequence[str], marked: bool,
                    clarity: float | None = None) -> datasets.Dataset:
    """Canonical docs of one task: the questions of ``subsets`` with this marking (and clarity), their
    images from the task's own source (``subset_source``)."""
    source, load_kwargs = subset_source(data)
    how = f"${data.override}" if data.override else f"task {data.task}'s dataset_path"
    log.info(f"O3-D image subsets from {source!r} ({how})")
    origin = data.origin(questions)
    docs = load.process_docs(questions, source=source, subsets=subsets, marked=marked, clarity=clarity,
                             load_kwargs=load_kwargs, origin=origin)
    if len(docs) == 0:
        kind = "marked" if marked else "unmarked"
        level = "" if clarity is None else f" at clarity {clarity:g}"
        raise schema.SchemaError(f"{origin.where}: no {kind} questions{level} about the subsets {list(subsets)}; "
                                 "this task has nothing to evaluate on this data")
    asked = set(docs.unique("subset_name"))
    if asked != set(subsets):  # e.g. a generated folder with some cue sets only
        log.info(f"{origin.where}: evaluating the subsets {sorted(asked)}; no questions about "
                 f"{sorted(set(subsets) - asked)}")
    return _fill_missing_strengths(docs)


def _fill_missing_strengths(docs: datasets.Dataset) -> datasets.Dataset:
    """Cue strengths that the source leaves null, recovered as the authors' renders imply.

    The single-strength sets (FS, every 2-cue set) are regular (1.0). Each single-cue scene was
    rendered at strength 1 and then 2, so within one (subset, cue, target position) the images
    sorted by name alternate 1, 2, 1, 2 ... -- the rule that reproduces the paper's sim1 from the
    authors' released outputs (README, "Paper vs authors' code" (3)). Applied only to null values,
    over all images of the subset (not only those this task asks about).
    """
    table = docs.with_format("arrow")[:]
    strength = table.column("cue_strength").to_pylist()
    synthetic = table.column("synthetic").to_pylist()
    cues = table.column("cues").to_pylist()
    todo = [i for i, (s, syn, c) in enumerate(zip(strength, synthetic, cues)) if s is None and syn and c]
    if not todo:
        return docs
    names = table.column("image_name").to_pylist()
    subset_names = table.column("subset_name").to_pylist()
    positions = table.column("odd_position").to_pylist()
    sources = table.column("source").to_pylist()
    parity: dict[tuple, dict[str, float]] = {}
    for i in todo:
        c = tuple(cues[i])
        if len(c) != 1 or c == ("FS",):
            strength[i] = 1.0
            continue
        key = (sources[i], subset_names[i], c, positions[i])
        if key not in parity:
            parity[key] = _render_order_strengths(sources[i], subset_names[i], c, positions[i])
        strength[i] = parity[key].get(names[i])
    column = pa.array(strength, type=pa.float64())
    new = table.set_column(table.schema.get_field_index("cue_strength"), "cue_strength", column)
    return datasets.Dataset(new, fingerprint=f"{fingerprint(docs)}-strengths"[:64])


def _render_order_strengths(source: str, subset: str, cues: tuple, position: str) -> dict[str, float]:
    ds = load.get_source(source).subset(subset)
    meta = ds.select_columns(["image_name", "cues", "odd_position"]).with_format("arrow")[:].to_pydict()
    group = sorted({n for n, c, p in zip(meta["image_name"], meta["cues"], meta["odd_position"])
                    if tuple(schema.parse_cues(c)) == cues and str(p).strip().lower() == position})
    return {name: 1.0 if k % 2 == 0 else 2.0 for k, name in enumerate(group)}


def task_docs(questions: datasets.Dataset, data: TaskData) -> datasets.Dataset:
    """Every O3-D task's process_docs: its slice (``Slice.of(data.metadata)``) of the questions."""
    chosen = Slice.of(data.metadata, data.task)
    docs = build_task_docs(questions, data, subsets=chosen.subsets, marked=chosen.marked, clarity=chosen.clarity)
    return attach_demonstrations(docs) if chosen.demonstrations else docs


process_docs = DocsHook("o3d.process_docs", task_docs, source=schema.SOURCE)
