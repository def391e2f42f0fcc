"""Consistent / counter / ambiguous re-splits of real depth benchmarks (SpatialTunnel paper §3,
Tables 1 and 2): where EmbSpatial-Bench and CV-Bench-3D depth questions enter, checked once.

A depth question compares a farther and a nearer object. It is *consistent* when the farther
object is higher in the image (the "higher ⇒ farther" shortcut gives the right answer),
*counter* when it is lower, and *ambiguous* when their box centres are less than 5 % of the image
height apart vertically -- ``geometry.vertical_relation``, the same pure function as the tunnel's
split. Accuracy on consistent and counter questions and Δ = Acc_con − Acc_ctr measure the
reliance on the shortcut; ambiguous questions are reported apart.

Sources, in the schemas lmms-eval's own tasks read (its ``embspatial`` and ``cv_bench_3d``):

* EmbSpatial-Bench (``FlagEval/EmbSpatial-Bench``, split ``test``): ``question_id, question,
  answer_options`` (list), ``answer`` (index into the options), ``relation`` (left, right, above,
  below, far, close), ``data_source``, ``image`` and ``objects`` = {``name``: [...], ``bbox``:
  [[x, y, w, h], ...]} (top-left corner, width, height: the box centre row is y + h / 2, as the
  probing authors read it). Depth questions: relation far or close; the answer option names the
  farthest (far) or closest (close) object among the options.
* CV-Bench 3D (``nyu-visionx/CV-Bench``, config ``3D``, split ``test``): ``idx, type, task,
  prompt, choices`` (two object names), ``answer`` ("(A)" / "(B)": the CLOSER object), ``image``
  and ``bbox`` = one [x1, y1, x2, y2] box per choice, in the choices' order. Depth questions:
  task "Depth".

With more than two options (EmbSpatial) the paper's two-object rule needs a pair; we compare the
answer with the competitor the shortcut would pick: for "far" the highest other object, for
"close" the lowest. The question is consistent when the shortcut picks the answer by more than
5 % of the height, counter when it picks another object by more than that, ambiguous otherwise.
With two options this is exactly the paper's rule. The box formats and this reduction are our
reading of the public data: the network-marked test checks Table 1's counts (EmbSpatial 976 /
129 / 101, CV-Bench-3D 363 / 65 / 172) when the real data is at hand.

Options without a box are not compared; a question whose answer (or every competitor) has no
box is ``unknown`` and counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import datasets

from spatial_tasks.common import images
from spatial_tasks.common.origin import Origin, in_memory
from spatial_tasks.common.validate import SourceError, columns, short
from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.resplit.metrics import BENCHMARK

SOURCES = ("embspatial", "cv_bench_3d")
DEPTH_RELATIONS = ("far", "close")
# Fields added to each kept doc (the source's own fields stay, so lmms-eval's prompt functions work;
# EmbSpatial's own ``relation`` is its question type, so the split is ``depth_split``).
ADDED = ("benchmark", "resplit_source", "depth_split", "dy", "image_height", "asks_far", "option_rows")


class ResplitError(SourceError):
    """A depth question that cannot be placed; the message names the file, row and field."""


def _box(value: object, fmt: str, where: str) -> tuple[float, float, float, float]:
    """(x1, y1, x2, y2) of a box given as xywh or xyxy; an error names the field."""
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise ResplitError(f"{where}: a box is 4 numbers, got {short(value)}")
    try:
        a, b, c, d = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ResplitError(f"{where}: a box is 4 numbers, got {short(value)}") from None
    if not all(math.isfinite(v) for v in (a, b, c, d)):
        raise ResplitError(f"{where}: box {short(value)} has a non-finite number")
    x1, y1, x2, y2 = (a, b, a + c, b + d) if fmt == "xywh" else (a, b, c, d)
    if x2 < x1 or y2 < y1:
        raise ResplitError(f"{where}: box {short(value)} has a negative size ({fmt})")
    return x1, y1, x2, y2


def _centre_row(box: tuple[float, float, float, float]) -> float:
    return (box[1] + box[3]) / 2


def _check_in_image(box, width: int, height: int, where: str) -> None:
    slack = 0.02 * max(width, height)  # annotation boxes may overhang by a pixel or two
    if box[0] < -slack or box[1] < -slack or box[2] > width + slack or box[3] > height + slack:
        raise ResplitError(f"{where}: box {tuple(round(v, 1) for v in box)} lies outside the "
                           f"{width} x {height} image")


def shortcut_relation(answer_row: float | None, other_rows: Sequence[float], asks_far: bool, height: int) -> dict:
    """The split of one depth question (see the module docstring): ``answer_row`` is the answer
    object's box-centre row, ``other_rows`` the other options' rows, ``asks_far`` whether the
    question asks for the farther/farthest object. Returns {relation, dy, far, near} where far /
    near are "answer" / "competitor"; dy > 0 when the farther of the two is higher."""
    if answer_row is None or not other_rows:
        return {"relation": "unknown", "dy": None, "far": None, "near": None}
    if asks_far:  # the answer is farther than every option; the shortcut picks the highest
        competitor = min(other_rows)
        relation = geometry.vertical_relation(row_far=answer_row, row_near=competitor, height_px=height)
        far, near = "answer", "competitor"
    else:  # the answer is nearer than every option; the shortcut picks the lowest
        competitor = max(other_rows)
        relation = geometry.vertical_relation(row_far=competitor, row_near=answer_row, height_px=height)
        far, near = "competitor", "answer"
    return {"relation": relation.three_way, "dy": relation.dy, "far": far, "near": near}


def _objects(value: object, where: str) -> list[tuple[str, object]]:
    """EmbSpatial's ``objects`` as (name, bbox) pairs: a struct of lists or a list of structs."""
    if isinstance(value, Mapping):
        names, boxes = value.get("name"), value.get("bbox")
        if not isinstance(names, list) or not isinstance(boxes, list) or len(names) != len(boxes):
            raise ResplitError(f"{where}: 'objects' must hold equally long 'name' and 'bbox' lists, "
                               f"got {short(value)}")
        return list(zip(names, boxes))
    if isinstance(value, list) and all(isinstance(o, Mapping) and {"name", "bbox"} <= set(o) for o in value):
        return [(o["name"], o["bbox"]) for o in value]
    raise ResplitError(f"{where}: 'objects' must be {{'name': [...], 'bbox': [...]}}, got {short(value)}")


def _letter_index(answer: object, n: int, where: str) -> int:
    text = str(answer).strip().strip("()").strip()
    if len(text) == 1 and text.isalpha() and ord(text.upper()) - 65 < n:
        return ord(text.upper()) - 65
    raise ResplitError(f"{where}: answer {short(answer)} is not one of the {n} options' letters (A), (B), ...")


def _require(dataset: datasets.Dataset, needed: Sequence[str], origin: Origin, what: str) -> None:
    missing = [c for c in needed if c not in dataset.column_names]
    if missing:
        raise ResplitError(f"{origin.where}: missing column(s) {missing} needed for {what}; "
                           f"found columns {sorted(dataset.column_names)}")


EMBSPATIAL_COLUMNS = ("question_id", "answer_options", "answer", "relation", "objects", "image")
CV_BENCH_COLUMNS = ("idx", "task", "choices", "answer", "bbox", "image")


def embspatial_split(dataset: datasets.Dataset, origin: Origin) -> tuple[list[int], list[dict]]:
    """(rows kept, added fields per kept row) for EmbSpatial-Bench's far/close questions."""
    _require(dataset, EMBSPATIAL_COLUMNS, origin,
             "the EmbSpatial depth re-split")
    table = columns(dataset, ["question_id", "answer_options", "answer", "relation", "objects"])
    cells = images.ImageTable(dataset, "image", origin)
    rows, added = [], []
    for row, relation in enumerate(table["relation"]):
        where = origin.locate(row)
        if str(relation).strip().lower() not in DEPTH_RELATIONS:
            continue
        options, answer = table["answer_options"][row], table["answer"][row]
        if not isinstance(options, list) or len(options) < 2:
            raise ResplitError(f"{where}, field 'answer_options': expected a list of at least 2 objects, got {short(options)}")
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(options):
            raise ResplitError(f"{where}, field 'answer': {short(answer)} is not an index into the {len(options)} options")
        width, height = cells_size(cells, row)
        boxes: dict[str, float] = {}
        for name, bbox in _objects(table["objects"][row], f"{where}, field 'objects'"):
            box = _box(bbox, "xywh", f"{where}, field 'objects', box of {short(name)}")
            _check_in_image(box, width, height, f"{where}, field 'objects', box of {short(name)}")
            boxes.setdefault(str(name).strip().lower(), _centre_row(box))
        names = [str(o).strip().lower() for o in options]
        option_rows = [boxes.get(n) for n in names]
        asks_far = str(relation).strip().lower() == "far"
        answer_row = option_rows[answer]
        others = [r for i, (n, r) in enumerate(zip(names, option_rows)) if i != answer and r is not None and n != names[answer]]
        split = shortcut_relation(answer_row, others if answer_row is not None else [], asks_far, height)
        rows.append(row)
        added.append(_added("embspatial", split, height, asks_far, option_rows))
    return rows, added


def cv_bench_split(dataset: datasets.Dataset, origin: Origin) -> tuple[list[int], list[dict]]:
    """(rows kept, added fields per kept row) for CV-Bench 3D's Depth questions."""
    _require(dataset, CV_BENCH_COLUMNS, origin, "the CV-Bench-3D depth re-split")
    table = columns(dataset, ["task", "choices", "answer", "bbox"])
    cells = images.ImageTable(dataset, "image", origin)
    rows, added = [], []
    for row, task in enumerate(table["task"]):
        where = origin.locate(row)
        if str(task).strip().lower() != "depth":
            continue
        choices, boxes = table["choices"][row], table["bbox"][row]
        if not isinstance(choices, list) or len(choices) != 2:
            raise ResplitError(f"{where}, field 'choices': a Depth question compares 2 objects, got {short(choices)}")
        if not isinstance(boxes, list) or len(boxes) != 2:
            raise ResplitError(f"{where}, field 'bbox': expected one box per choice (2), got {short(boxes)}")
        closer = _letter_index(table["answer"][row], 2, f"{where}, field 'answer'")
        width, height = cells_size(cells, row)
        centre = []
        for k, bbox in enumerate(boxes):
            box = _box(bbox, "xyxy", f"{where}, field 'bbox', box {k}")
            _check_in_image(box, width, height, f"{where}, field 'bbox', box {k}")
            centre.append(_centre_row(box))
        split = shortcut_relation(centre[closer], [centre[1 - closer]], False, height)
        rows.append(row)
        added.append(_added("cv_bench_3d", split, height, False, centre))
    return rows, added


def cells_size(cells: images.ImageTable, row: int) -> tuple[int, int]:
    """The image's (width, height), from a strict check of the cell (a damaged image is an error)."""
    _, size = images.check_image(cells.encoded(row), cells.where(row))
    return size


def _added(source: str, split: dict, height: int, asks_far: bool, option_rows: list) -> dict:
    """``option_rows``: each option's box-centre row (None without a box), for the baselines."""
    return {"benchmark": BENCHMARK, "resplit_source": source, "depth_split": split["relation"], "dy": split["dy"],
            "image_height": height, "asks_far": asks_far, "option_rows": [None if r is None else float(r) for r in option_rows]}


ANSWER_READERS = ("lmms_eval", "spatial_tasks")


def resplit_docs(dataset: datasets.Dataset, source: str, origin: Origin | None = None,
                 answer_reader: str = "lmms_eval") -> datasets.Dataset:
    """The depth questions of ``source``, each with its relation (``origin``: where the rows are,
    for messages) and the ``answer_reader`` that will read its answers (``tasks.read_letter``)."""
    if source not in SOURCES:
        raise ValueError(f"unknown re-split source {source!r}; expected one of {SOURCES}")
    if answer_reader not in ANSWER_READERS:
        raise ValueError(f"answer_reader {answer_reader!r} (the task's metadata) must be one of {ANSWER_READERS}")
    origin = origin or in_memory(source)
    rows, added = (embspatial_split if source == "embspatial" else cv_bench_split)(dataset, origin)
    if not rows:
        raise ResplitError(f"{origin.where}: no depth question ({'relation far/close' if source == 'embspatial' else 'task Depth'}) "
                           f"among {len(dataset)} rows")
    kept = dataset.select(rows)
    for name in ADDED:
        kept = kept.add_column(name, [a[name] for a in added])
    return kept.add_column("answer_reader", [answer_reader] * len(kept))
