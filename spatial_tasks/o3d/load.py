"""Load O3-D: join ``visual_questions`` to its image subsets and resolve images lazily.

``visual_questions`` (one row per image-question pair, no images) names its image by
``(subset_name, image_name)``. ``build_docs`` builds one ``{image_name: row}`` dict per subset it
needs (once), resolves every question in O(1), and returns canonical docs (schema.DOC_FEATURES)
that carry only ``(source, subset_name, subset_row, image_column)`` — no pixels. ``image_for(doc)``
fetches the one image a model needs from the subset datasets, which live (memory-mapped Arrow)
in a module-level registry keyed by the source, and loads each subset only when first needed.

Hooks for an lmms-eval task YAML (dataset_path: liuyiqian/O3-D, dataset_name: visual_questions,
test_split: train)::

    process_docs: a utils.py function calling
        spatial_tasks.o3d.load.process_docs(dataset, source=..., subsets=[...], marked=True)
    doc_to_visual: !function spatial_tasks.o3d.load.doc_to_visual

``source`` must be what the YAML's dataset_path points at (Hub id or local folder); it defaults to
$SPATIAL_TASKS_O3D_SOURCE, else the Hub id.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from PIL import Image

from spatial_tasks.common import images
from spatial_tasks.common.origin import Origin, fingerprint, folder_cache, in_memory, origin_for
from spatial_tasks.common.validate import INSPECT_HINT, dataset_file_problem, require_columns
from spatial_tasks.o3d import markers, schema
from spatial_tasks.o3d.schema import SchemaError

MEMORY_PREFIX = "memory:"


# --------------------------------------------------------------------------------------------
# Registry: one entry per source, holding its subsets (lazily loaded) and their image_name indexes


class O3DSource(Mapping):
    """The subsets of one O3-D source, loaded on first use and indexed by image_name once.

    ``path`` given: subsets come from ``datasets.load_dataset(path, subset, split='train',
    **load_kwargs)``. ``subsets`` given: those datasets (in memory or already loaded) are used.
    """

    def __init__(self, key: str, subsets: Mapping[str, datasets.Dataset] | None = None, *,
                 path: str | None = None, load_kwargs: Mapping[str, Any] | None = None):
        self.key = key
        self.path = path
        self.load_kwargs = dict(load_kwargs or {})
        self._subsets: dict[str, datasets.Dataset] = dict(subsets or {})
        self._indexes: dict[str, dict[str, int]] = {}
        self._views: dict[tuple[str, str], datasets.Dataset] = {}
        self._image_cols: dict[str, frozenset[str]] = {}
        self._origins: dict[str, Origin] = {}
        self._checked: set[tuple[str, int, str]] = set()  # image cells already checked (several tasks share them)
        self._available: tuple[str, ...] | None = None
        self._lock = threading.RLock()

    # Mapping protocol: the subsets this source has (loaded ones, or the official names for a path)
    def __getitem__(self, name: str) -> datasets.Dataset:
        return self.subset(name)

    def __iter__(self):
        return iter(self._subsets if self.path is None else dict.fromkeys([*self._subsets, *schema.SUBSETS]))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def loaded(self) -> tuple[str, ...]:
        return tuple(self._subsets)

    def available(self) -> tuple[str, ...] | None:
        """The subsets this source has: the given ones, a local folder's configs; None when they
        cannot be listed without loading (a Hub id)."""
        if self.path is None:
            return tuple(self._subsets)
        if self._available is None and os.path.isdir(self.path):
            try:
                names = datasets.get_dataset_config_names(self.path, **_builder_kwargs(self.load_kwargs))
            except Exception:  # noqa: BLE001 - an unreadable card: fall back to loading each subset
                names = None
            self._available = tuple(n for n in names or () if n != schema.QUESTIONS_CONFIG) or None
        return self._available

    def subset(self, name: str) -> datasets.Dataset:
        with self._lock:
            if name in self._subsets:
                return self._subsets[name]
            if self.path is None:
                raise KeyError(f"O3-D source {self.key!r} has no subset {name!r} "
                               f"(has: {sorted(self._subsets)})")
            try:
                ds = datasets.load_dataset(self.path, name, split=schema.SPLIT, **folder_cache(self.path, self.load_kwargs))
            except Exception as exc:  # the datasets error names the config; add the source
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                first = dataset_file_problem(self.path, name, **self.load_kwargs) or first
                raise KeyError(f"cannot load subset {name!r} from O3-D source {self.path!r}: {first}{INSPECT_HINT}") from exc
            self._subsets[name] = ds
            return ds

    def origin(self, name: str) -> Origin:
        """Where subset ``name``'s rows live (file and row for messages)."""
        with self._lock:
            if name not in self._origins:
                ds = self.subset(name)
                if self.path is None:
                    self._origins[name] = Origin(label=f"O3-D subset {name!r} of {self.key}")
                else:
                    self._origins[name] = origin_for(ds, self.path, name, schema.SPLIT, self.load_kwargs)
            return self._origins[name]

    def where(self, name: str, row: int, column: str | None = None) -> str:
        return self.origin(name).locate(int(row)) + (f", column {column!r}" if column else "")

    def columns(self, name: str) -> tuple[str, ...]:
        return tuple(self.subset(name).column_names)

    def index(self, name: str) -> dict[str, int]:
        """{image_name: row} for one subset, built once; a name on two rows is an error."""
        with self._lock:
            if name not in self._indexes:
                ds = self.subset(name)
                if "image_name" not in ds.column_names:
                    raise SchemaError(f"{self.origin(name).where}: subset {name!r} lacks column 'image_name' "
                                      f"(has: {ds.column_names}){INSPECT_HINT}")
                names = ds.select_columns(["image_name"]).with_format("arrow")[:]["image_name"].to_pylist()
                index: dict[str, int] = {}
                for row, image_name in enumerate(names):
                    if not isinstance(image_name, str) or not image_name.strip():
                        raise SchemaError(f"{self.where(name, row)}, field 'image_name': empty image name "
                                          f"{image_name!r}")
                    if image_name in index:
                        raise SchemaError(f"{self.where(name, row)}, field 'image_name': duplicate image name "
                                          f"{image_name!r} (also at {self.where(name, index[image_name])})")
                    index[image_name] = row
                self._indexes[name] = index
            return self._indexes[name]

    def _image_columns(self, name: str) -> frozenset[str]:
        """Columns with a datasets Image feature (cached: ``Dataset.features`` deep-copies)."""
        cols = self._image_cols.get(name)
        if cols is None:
            features = self.subset(name).features
            cols = frozenset(c for c, f in features.items() if isinstance(f, datasets.Image))
            self._image_cols[name] = cols
        return cols

    def _view(self, name: str, column: str) -> datasets.Dataset:
        """(column, image_name) of one subset, Arrow-formatted: a row costs ~10 us, not a full decode."""
        with self._lock:
            key = (name, column)
            if key not in self._views:
                ds = self.subset(name)
                if column not in ds.column_names:
                    raise SchemaError(f"subset {name!r} of {self.key!r} lacks column {column!r} "
                                      f"(has: {ds.column_names}){INSPECT_HINT}")
                self._views[key] = ds.select_columns([column, "image_name"]).with_format("arrow")
            return self._views[key]

    def encoded(self, name: str, row: int, column: str, image_name: str | None = None) -> bytes:
        """The encoded bytes of one image cell; checks the row still holds ``image_name``."""
        record = self._view(name, column)[int(row)]
        found = record.column("image_name")[0].as_py()
        where = self.where(name, row, column)
        if image_name is not None and found != image_name:
            raise SchemaError(f"{where}: holds image_name {found!r}, expected {image_name!r} (the source "
                              "changed since the docs were built)")
        if column not in self._image_columns(name):
            raise SchemaError(f"{where}: column {column!r} is not an image column of subset {name!r}")
        return images.cell_bytes(record.column(column)[0].as_py(), where, self.origin(name), int(row))

    def image(self, name: str, row: int, column: str, image_name: str | None = None) -> Image.Image:
        """The decoded PIL image in one cell (strict decode; not converted)."""
        return images.open_image(self.encoded(name, row, column, image_name), self.where(name, row, column))

    def check_images(self, name: str, rows: Iterable[int], columns: Iterable[str], reference: str | None = None) -> int:
        """``images.check_image`` on the given cells of subset ``name``; returns how many. With a
        ``reference`` column, the masks and depth map of each row (``AUXILIARY_IMAGE_COLUMNS``) must
        have its size: markers and depth are read pixel for pixel against that image."""
        columns = list(columns)
        cells = [(row, column) for row in sorted(set(rows)) for column in columns
                 if (name, row, column) not in self._checked]
        sizes: dict[tuple[int, str], tuple[int, int]] = {}
        for row, column in images.progress(cells, f"O3-D {name}: checking images"):
            _, sizes[row, column] = images.check_image(self.encoded(name, row, column), self.where(name, row, column))
            self._checked.add((name, row, column))
        if reference is not None:
            for (row, column), size in sorted(sizes.items()):
                want = sizes.get((row, reference))
                if column in AUXILIARY_IMAGE_COLUMNS and want is not None and size != want:
                    raise SchemaError(f"{self.where(name, row, column)}: {size[0]} x {size[1]} px, but its image "
                                      f"{reference!r} is {want[0]} x {want[1]} px (a {column} must match it pixel "
                                      "for pixel)")
        return len(cells)


_REGISTRY: dict[str, O3DSource] = {}
_REGISTRY_LOCK = threading.Lock()


def _builder_kwargs(load_kwargs: Mapping[str, Any]) -> dict:
    return {k: load_kwargs[k] for k in ("revision", "token", "cache_dir") if k in load_kwargs}


def _normalise_key(source: str) -> str:
    if not source.startswith(MEMORY_PREFIX) and os.path.isdir(source):
        return os.path.abspath(source)
    return source


def source_key(source: str, load_kwargs: Mapping[str, Any] | None = None) -> str:
    """What a doc's ``source`` field holds: enough to open the subsets again in any process -- the
    Hub id or absolute folder, and the load options (revision ...) when there are any."""
    path = _normalise_key(source)
    kwargs = _builder_kwargs(load_kwargs or {})
    if not kwargs or path.startswith(MEMORY_PREFIX):
        return path
    return json.dumps({"path": path, "load_kwargs": kwargs}, sort_keys=True)


def _parse_key(key: str) -> tuple[str, dict]:
    if key.startswith("{"):
        value = json.loads(key)
        return value["path"], dict(value.get("load_kwargs") or {})
    return key, {}


def register_source(source: str, subsets: Mapping[str, datasets.Dataset] | None = None, *,
                    load_kwargs: Mapping[str, Any] | None = None) -> O3DSource:
    """The registry entry for ``source`` (created on first call; later ``subsets`` are added)."""
    key = source_key(source, load_kwargs)
    with _REGISTRY_LOCK:
        entry = _REGISTRY.get(key)
        if entry is None:
            path = None if key.startswith(MEMORY_PREFIX) else _parse_key(key)[0]
            entry = O3DSource(key, subsets, path=path, load_kwargs=load_kwargs)
            _REGISTRY[key] = entry
        else:
            for name, ds in (subsets or {}).items():
                if name not in entry._subsets:
                    entry._subsets[name] = ds
        return entry


def get_source(source: str) -> O3DSource:
    """The registered source; a Hub id or folder not yet registered in this process (a doc from
    another process, or unpickled) is registered from its key."""
    entry = _REGISTRY.get(source) or _REGISTRY.get(_normalise_key(source))
    if entry is None:  # a bare path of a source registered with load options
        same = [e for e in _REGISTRY.values() if e.path is not None and e.path == _normalise_key(source)]
        entry = same[0] if len(same) == 1 else None
    if entry is not None:
        return entry
    if source.startswith(MEMORY_PREFIX):
        raise KeyError(f"docs refer to in-memory O3-D subsets {source!r} that this process has not "
                       "registered; build the docs with build_docs(...) in this process")
    path, kwargs = _parse_key(source)
    return register_source(path, load_kwargs=kwargs)


def clear_registry() -> None:
    """Forget every source and every drawn marker image (tests, or to free memory)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
    markers.MARKER_CACHE.clear()


def _memory_key(subsets: Mapping[str, datasets.Dataset]) -> str:
    h = hashlib.sha1()
    for name in sorted(subsets):
        ds = subsets[name]
        h.update(name.encode())
        h.update(fingerprint(ds).encode())
    return MEMORY_PREFIX + h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# The join


def _columns(ds: datasets.Dataset, names: Sequence[str]) -> dict[str, list]:
    """Plain Python lists of non-image columns (respects a filtered dataset's indices)."""
    if not names:
        return {}
    return ds.select_columns(list(names)).with_format("arrow")[:].to_pydict()


QUESTION_KINDS = {"subset_name": "string", "image_name": "string", "is_marked": "any", "question": "string",
                  "ques_clarity": "float"}
# Image columns a doc may read besides the one it shows (markers, depth baselines): checked too.
AUXILIARY_IMAGE_COLUMNS = ("targ_seg", "dist_seg", "depth_map")


def _subset_plan(src: O3DSource, name: str, need_plain: bool, need_marked: bool, where_used: str) -> dict:
    """Which column each question kind shows, checked against the subset's columns."""
    ds = src.subset(name)
    cols = tuple(ds.column_names)
    where = f"{src.origin(name).where}: subset {name!r} (used by {where_used})"
    for col in schema.REQUIRED_SUBSET_COLUMNS:
        if col == "odd_position" and name in schema.CROPPED_SUBSETS:
            continue  # the crop tag in each name gives the ground truth
        if col not in cols:
            raise SchemaError(f"{where} lacks column {col!r} (has: {list(cols)}){INSPECT_HINT}")
    plan = {"columns": cols, "plain": None, "marked": None, "draw": False}
    if need_plain:
        plan["plain"] = schema.plain_image_column(cols)
        if plan["plain"] is None:
            raise SchemaError(f"{where} has no 'augmented_image' or 'image' column for unmarked questions "
                              f"(has: {list(cols)}){INSPECT_HINT}")
    if need_marked:
        if "marked_image" in cols:
            plan["marked"] = "marked_image"
        else:
            missing = [c for c in ("image", "targ_seg", "dist_seg") if c not in cols]
            if missing:
                raise SchemaError(f"{where} has no 'marked_image' and lacks {missing} needed to draw "
                                  f"markers (has: {list(cols)}){INSPECT_HINT}")
            plan["marked"] = "image"
            plan["draw"] = True
    image_cols = src._image_columns(name)
    shown = {plan["plain"], plan["marked"]} - {None}
    # the image the masks and depth map describe: the augmented photo where there is one, else the render
    plan["size_reference"] = next((c for c in ("augmented_image", "image") if c in image_cols), None)
    plan["checked"] = sorted(c for c in shown | {plan["size_reference"], *AUXILIARY_IMAGE_COLUMNS}
                             if c in image_cols)
    return plan


def _question_values(q: Mapping[str, list], texts_ok, origin: Origin, src: O3DSource) -> list[bool]:
    """Check every visual_questions row's own fields; returns is_marked as booleans."""
    available = src.available()
    marks = []
    for i, (subset, name, mark, clarity) in enumerate(zip(q["subset_name"], q["image_name"], q["is_marked"],
                                                          q["ques_clarity"])):
        def bad(field: str, problem: str, i=i) -> SchemaError:
            return SchemaError(f"{origin.locate(i)}, field {field!r}: {problem}")

        if not isinstance(subset, str) or not subset.strip():
            raise bad("subset_name", f"empty subset name {subset!r}")
        if available is not None and subset not in available:
            raise bad("subset_name", f"no subset {subset!r} in the O3-D source {src.key} (it has: {sorted(available)})")
        if not isinstance(name, str) or not name.strip():
            raise bad("image_name", f"empty image name {name!r}")
        try:
            marks.append(schema.as_bool(mark))
        except SchemaError as exc:
            raise bad("is_marked", str(exc)) from None
        if clarity is None or float(clarity) not in schema.CLARITY_LEVELS:
            raise bad("ques_clarity", f"{clarity!r} is not one of the clarity levels {sorted(schema.CLARITY_LEVELS)}")
        if not texts_ok[i]:
            raise bad("question", "empty question text")
    return marks


def build_docs(questions: datasets.Dataset, subsets: Mapping[str, datasets.Dataset], *,
               source: str | None = None, subset_names: Iterable[str] | None = None,
               marked: bool | None = None, clarity: float | None = None, origin: Origin | None = None,
               check_images: bool = True) -> datasets.Dataset:
    """Canonical O3-D docs (schema.DOC_FEATURES), one per kept ``visual_questions`` row, in order.

    ``subsets`` maps config name -> dataset (an ``O3DSource`` loads them lazily). ``source`` names
    the registry entry that ``image_for`` will read (default: the O3DSource's key, or a hash of the
    given datasets). ``subset_names`` / ``marked`` / ``clarity`` keep only those subsets, marked or
    unmarked questions, that clarity. ``origin`` (common.origin) says where ``questions`` came from.

    Everything is checked here, where O3-D enters: every visual_questions row (subset exists,
    image name, is_marked, clarity level, question text), every referenced subset row (unique
    image names, odd_position, cue codes, strengths, depth scales) and every image cell the docs
    can read (``images.check_image``; skip with ``check_images=False``). Errors are SchemaError /
    KeyError naming the file (or split), row and field.
    """
    src = _source_for(subsets, source)
    origin = origin or in_memory("visual_questions")
    questions_in = _read_questions(questions, origin, src)
    keep_subsets = None if subset_names is None else set(subset_names)
    rows = [i for i, (s, m, c) in enumerate(zip(questions_in.q["subset_name"], questions_in.marks,
                                                 questions_in.q["ques_clarity"]))
            if (keep_subsets is None or s in keep_subsets) and (marked is None or m == marked)
            and (clarity is None or float(c) == clarity)]
    plans = _plans_of_kept(src, questions_in, rows, origin)
    subset_rows, needed_rows = _resolve_images(src, plans, questions_in, rows, origin)
    fields = _image_fields(src, plans, needed_rows, check_images)
    per_q, meta_idx = _question_fields(questions_in, rows, subset_rows, plans, fields)
    table = _doc_table(src, questions_in, rows, per_q, fields.table.take(pa.array(meta_idx, type=pa.int64())))
    # An explicit fingerprint: without one, datasets pickles and hashes the whole table (a full copy).
    h = hashlib.sha1(f"o3d-docs|{fingerprint(questions)}|{src.key}|"
                     f"{sorted(keep_subsets) if keep_subsets is not None else None}|{marked}|{clarity}".encode())
    for s in sorted(plans):
        h.update(f"|{s}:{fingerprint(src.subset(s))}".encode())
    return datasets.Dataset(table, fingerprint=h.hexdigest()[:16])


def _source_for(subsets: Mapping[str, datasets.Dataset], source: str | None) -> O3DSource:
    """The O3DSource the docs will read their images from (registered, so ``image_for`` finds it)."""
    if isinstance(subsets, O3DSource) and (source is None or _normalise_key(source) == subsets.key):
        with _REGISTRY_LOCK:
            _REGISTRY.setdefault(subsets.key, subsets)
        return subsets
    if isinstance(subsets, O3DSource):
        return register_source(source, {name: subsets.subset(name) for name in subsets.loaded()})
    return register_source(source or _memory_key(subsets), subsets)


@dataclass
class _Questions:
    """visual_questions, checked: Arrow columns, the join keys as lists, the parsed markings."""
    table: pa.Table
    q: dict[str, list]
    marks: list[bool]
    text: pa.ChunkedArray


def _read_questions(questions: datasets.Dataset, origin: Origin, src: O3DSource) -> _Questions:
    if len(questions) == 0:
        raise SchemaError(f"{origin.where}: visual_questions has no rows")
    require_columns(questions, QUESTION_KINDS, origin, "O3-D visual_questions", SchemaError)
    # Python lists only for what the join loops over; question text stays in Arrow.
    table = questions.select_columns(list(schema.QUESTION_COLUMNS)).with_format("arrow")[:]
    q = {c: table.column(c).to_pylist() for c in ("subset_name", "image_name", "is_marked", "ques_clarity")}
    text = table.column("question")
    texts_ok = pc.fill_null(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0),
                            False).to_numpy(zero_copy_only=False)
    return _Questions(table, q, _question_values(q, texts_ok, origin, src), text)


def _plans_of_kept(src: O3DSource, qs: _Questions, rows: list[int], origin: Origin) -> dict[str, dict]:
    """One plan (which image column, markers drawn or stored) per subset the kept questions use."""
    first_row: dict[str, int] = {}
    kinds: dict[str, set[bool]] = {}
    for i in rows:
        s = qs.q["subset_name"][i]
        first_row.setdefault(s, i)
        kinds.setdefault(s, set()).add(qs.marks[i])
    plans = {}
    for s, k in kinds.items():
        try:
            plans[s] = _subset_plan(src, s, False in k, True in k, origin.locate(first_row[s]))
        except KeyError as exc:
            raise KeyError(f"{origin.locate(first_row[s])}, field 'subset_name': {exc.args[0]}") from None
    return plans


def _resolve_images(src: O3DSource, plans: dict[str, dict], qs: _Questions, rows: list[int],
                    origin: Origin) -> tuple[list[int], dict[str, set[int]]]:
    """Each kept question's row in its subset (O(1) through the per-subset index), and the rows
    each subset must provide."""
    indexes = {s: src.index(s) for s in plans}
    subset_rows: list[int] = []
    needed_rows: dict[str, set[int]] = {s: set() for s in plans}
    for i in rows:
        s, name = qs.q["subset_name"][i], qs.q["image_name"][i]
        row = indexes[s].get(name)
        if row is None:
            raise SchemaError(f"{origin.locate(i)}, field 'image_name': no image {name!r} in subset {s!r} "
                              f"({src.origin(s).where}, {len(indexes[s])} images)")
        subset_rows.append(row)
        needed_rows[s].add(row)
    return subset_rows, needed_rows


@dataclass
class _ImageFields:
    """Image-level fields, normalised once per referenced image (``records``, also as ``table``)."""
    records: list[dict]
    position: dict[tuple[str, int], int]
    table: pa.Table


def _image_fields(src: O3DSource, plans: dict[str, dict], needed_rows: dict[str, set[int]],
                  check_images: bool) -> _ImageFields:
    records: list[dict] = []
    position: dict[tuple[str, int], int] = {}
    for s in plans:
        needed = sorted(needed_rows[s])
        cols = plans[s]["columns"]
        meta_cols = [c for c in cols if c not in src._image_columns(s)]
        table = _columns(src.subset(s).select(needed), meta_cols) if needed else {}
        for j, r in enumerate(needed):
            position[(s, r)] = len(records)
            records.append(schema.normalise_image_row(s, {c: table[c][j] for c in meta_cols}, cols,
                                                      where=src.where(s, r)))
        if check_images:
            src.check_images(s, needed, plans[s]["checked"], plans[s]["size_reference"])
    meta_schema = pa.schema([schema.DOC_FEATURES.arrow_schema.field(f) for f in schema.IMAGE_FIELDS])
    return _ImageFields(records, position, pa.Table.from_pylist(records, schema=meta_schema))


def _question_fields(qs: _Questions, rows: list[int], subset_rows: list[int], plans: dict[str, dict],
                     fields: _ImageFields) -> tuple[dict[str, list], list[int]]:
    """The question-level doc fields of each kept row, and the row of its image's fields."""
    # question_id's k counts the (subset, image, marking) rows over the WHOLE file, so an id is the
    # same whichever task keeps the row (tasks filter by subset, marking and clarity).
    occurrence: list[int] = []
    counts: dict[tuple[str, str, bool], int] = {}
    for key in zip(qs.q["subset_name"], qs.q["image_name"], qs.marks):
        occurrence.append(counts.get(key, 0))
        counts[key] = occurrence[-1] + 1
    per_q: dict[str, list] = {f: [] for f in schema.QUESTION_FIELDS}
    meta_idx: list[int] = []
    for i, r in zip(rows, subset_rows):
        s, name, is_marked = qs.q["subset_name"][i], qs.q["image_name"][i], qs.marks[i]
        ques_clarity = float(qs.q["ques_clarity"][i])
        m = fields.position[(s, r)]
        meta = fields.records[m]
        plan = plans[s]
        asked = schema.question_side(qs.text[i].as_py()) if meta["crop_side"] else None
        gt = schema.ground_truth_position(meta["odd_position"], meta["crop_side"], meta["crop_depth"], asked)
        meta_idx.append(m)
        per_q["question_id"].append(schema.question_id(s, name, is_marked, occurrence[i]))
        per_q["subset_row"].append(r)
        per_q["image_column"].append(plan["marked"] if is_marked else plan["plain"])
        per_q["draw_markers"].append(is_marked and plan["draw"])
        per_q["is_marked"].append(is_marked)
        per_q["ques_clarity"].append(ques_clarity)
        per_q["clarity_level"].append(schema.clarity_level(ques_clarity))
        per_q["gt_position"].append(gt)
        per_q["gt_label"].append(schema.GT_LABEL[gt])
        per_q["scored"].append(gt != "none")
        per_q["question_side"].append(asked)
    return per_q, meta_idx


def _doc_table(src: O3DSource, qs: _Questions, rows: list[int], per_q: dict[str, list],
               image_fields: pa.Table) -> pa.Table:
    """The docs as one Arrow table in ``schema.DOC_FEATURES`` order."""
    take = pa.array(rows, type=pa.int64())
    doc_schema = schema.DOC_FEATURES.arrow_schema
    columns = []
    for field in doc_schema:
        f = field.name
        if f in per_q:
            columns.append(pa.array(per_q[f], type=field.type))
        elif f == "source":
            columns.append(pa.array([src.key] * len(rows), type=field.type))
        elif f in ("subset_name", "image_name", "question"):
            columns.append(qs.table.column(f).take(take).combine_chunks().cast(field.type))
        else:
            columns.append(image_fields.column(f).combine_chunks())
    return pa.Table.from_arrays(columns, schema=doc_schema)


def default_source() -> str:
    return schema.SOURCE.chosen()


def process_docs(dataset: datasets.Dataset, *, source: str | None = None,
                 subsets: Iterable[str] | None = None, marked: bool | None = None, clarity: float | None = None,
                 load_kwargs: Mapping[str, Any] | None = None, origin: Origin | None = None) -> datasets.Dataset:
    """lmms-eval ``process_docs``: the loaded ``visual_questions`` split -> canonical docs.

    ``source`` is the same Hub id / folder as the YAML's dataset_path (default: $SPATIAL_TASKS_O3D_SOURCE
    or liuyiqian/O3-D); only the subsets that the kept questions use are loaded.
    """
    src = register_source(source or default_source(), load_kwargs=load_kwargs)
    return build_docs(dataset, src, subset_names=subsets, marked=marked, clarity=clarity,
                      origin=origin or in_memory("visual_questions"))


def load_o3d(path: str = schema.SOURCE.default, *, subsets: Iterable[str] | None = None, marked: bool | None = None,
             load_kwargs: Mapping[str, Any] | None = None) -> datasets.Dataset:
    """Docs straight from a Hub id or local folder in the official layout (outside lmms-eval)."""
    src = register_source(path, load_kwargs=load_kwargs)
    questions = datasets.load_dataset(src.path or path, schema.QUESTIONS_CONFIG, split=schema.SPLIT,
                                      **folder_cache(src.path or path, load_kwargs))
    origin = origin_for(questions, src.path or path, schema.QUESTIONS_CONFIG, schema.SPLIT, load_kwargs)
    return build_docs(questions, src, subset_names=subsets, marked=marked, origin=origin)


# --------------------------------------------------------------------------------------------
# Images and masks for a doc


def _plain_column(src: O3DSource, doc: Mapping[str, Any]) -> str:
    column = schema.plain_image_column(src.columns(doc["subset_name"]))
    if column is None:
        raise SchemaError(f"subset {doc['subset_name']!r} has no unmarked image column")
    return column


def image_for(doc: Mapping[str, Any], *, marked: bool | None = None) -> Image.Image:
    """The RGB image shown for ``doc`` (marked as the doc says, unless ``marked`` overrides it).

    Marked synthetic images are drawn from the masks on first use and cached (markers.MARKER_CACHE).
    """
    src = get_source(doc["source"])
    subset, row, name = doc["subset_name"], doc["subset_row"], doc["image_name"]
    want_marked = bool(doc["is_marked"]) if marked is None else bool(marked)
    if want_marked == bool(doc["is_marked"]):
        column, draw_markers = doc["image_column"], bool(doc["draw_markers"])
    elif want_marked:
        draw_markers = "marked_image" not in src.columns(subset)
        column = "image" if draw_markers else "marked_image"
    else:
        column, draw_markers = _plain_column(src, doc), False
    if draw_markers:
        def draw() -> Image.Image:
            base = src.image(subset, row, column, name)
            return markers.draw_markers(base, src.image(subset, row, "targ_seg", name),
                                        src.image(subset, row, "dist_seg", name))

        return markers.MARKER_CACHE.get((src.key, subset, name), draw)
    return src.image(subset, row, column, name).convert("RGB")


def doc_to_visual(doc: Mapping[str, Any]) -> list[Image.Image]:
    """lmms-eval ``doc_to_visual``."""
    return [image_for(doc)]


def masks_for(doc: Mapping[str, Any]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(target mask, [one mask per distractor]) as boolean arrays (markers.instance_masks rules)."""
    src = get_source(doc["source"])
    subset, row, name = doc["subset_name"], doc["subset_row"], doc["image_name"]
    targ = markers.as_label_array(src.image(subset, row, "targ_seg", name)) != 0
    dist = markers.instance_masks(src.image(subset, row, "dist_seg", name))
    if not targ.any():
        raise SchemaError(f"subset {subset!r} row {row} (image_name {name!r}): targ_seg is empty")
    if not dist:
        raise SchemaError(f"subset {subset!r} row {row} (image_name {name!r}): dist_seg is empty")
    return targ, dist


def depth_map_for(doc: Mapping[str, Any]) -> Image.Image:
    """The raw depth_map image of a synthetic doc (see depth.ground_truth_depth for decoding)."""
    src = get_source(doc["source"])
    return src.image(doc["subset_name"], doc["subset_row"], "depth_map", doc["image_name"])
