"""Map every SpatialTunnel source onto the canonical per-question doc (schema.DOC_FIELDS).

Sources:
* our generator's datasets (one row per image, questions nested; schema.IMAGE_FEATURES);
* the official ``cubec/spatialtunnel`` TSV configs (phase_variation, size_variation): base64
  images, exact columns not published. We accept per-question rows (question + answer) or
  per-image rows (obj1 + obj2 names, then the paper's four questions are generated), and derive
  geometry from whatever columns exist: pixel centres, else angles (+ depths) through the
  analytic camera of geometry.py. Missing essentials raise an error listing the columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import datasets

from spatial_tasks.common import images
from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.questions import TEMPLATE_BY_ID, questions_for, resolve_template
from spatial_tasks.spatialtunnel.schema import DOC_FIELDS

# Official-TSV column aliases (lower-cased); the first present wins.
ALIASES: dict[str, tuple[str, ...]] = {
    "image": ("image",),
    "image_id": ("image_id", "index", "id"),
    "question": ("question",),
    "answer": ("answer",),
    "obj1": ("obj1", "object1", "obj1_name", "far_object"),
    "obj2": ("obj2", "object2", "obj2_name", "near_object"),
    "theta1": ("theta1", "theta_1", "phase1", "angle1"),
    "theta2": ("theta2", "theta_2", "phase2", "angle2"),
    "theta1_index": ("theta1_index", "theta1_idx", "phase1_idx", "i1"),
    "theta2_index": ("theta2_index", "theta2_idx", "phase2_idx", "i2"),
    "depth1": ("depth1", "z1", "dist1"),
    "depth2": ("depth2", "z2", "dist2"),
    "size1": ("size1", "s1"),
    "size2": ("size2", "s2"),
    "x1": ("x1", "obj1_x", "cx1"),
    "y1": ("y1", "obj1_y", "cy1"),
    "x2": ("x2", "obj2_x", "cx2"),
    "y2": ("y2", "obj2_y", "cy2"),
    "width": ("width", "image_width"),
    "height": ("height", "image_height"),
}
NOMINAL_RESOLUTION = 512  # relations are scale-free; used only when a source gives no image size


class SourceError(ValueError):
    """A dataset that cannot be mapped onto the canonical schema; the message says why."""


def to_docs(dataset: datasets.Dataset, label: str = "spatialtunnel", variant: str | None = None) -> datasets.Dataset:
    """Canonical per-question docs (no image column) for any supported source."""
    columns = set(dataset.column_names)
    if {"questions", "image_id", "image"} <= columns:
        docs = list(_docs_from_generated(dataset, label))
    else:
        docs = list(_docs_from_official(dataset, label, variant))
    if not docs:
        raise SourceError(f"{label}: the dataset has no rows")
    return datasets.Dataset.from_list(docs)


def _base(image_source: str, row: int) -> dict:
    doc = dict.fromkeys(DOC_FIELDS)
    doc.update(benchmark="spatialtunnel", image_source=image_source, image_row=row)
    return doc


def _finish(doc: dict, template_id: int) -> dict:
    template = TEMPLATE_BY_ID[template_id]
    doc.update(
        template_id=template_id,
        subject=template.subject,
        comparison=template.relation,
        question_id=f"{doc['image_id']}-q{template_id}",
    )
    if doc["y1"] is not None and doc["y2"] is not None and doc["height"]:
        rel = geometry.vertical_relation(doc["y1"], doc["y2"], doc["height"])
        doc.update(dy=rel.dy, relation=rel.three_way, relation_two_way=rel.two_way)
    else:
        doc.update(relation="unknown", relation_two_way="unknown")
    return doc


def _docs_from_generated(dataset: datasets.Dataset, label: str) -> Iterable[dict]:
    key = images.register(images.ImageTable(dataset, "image", label, images.decode_pil))
    meta = dataset.remove_columns(["image"])  # iterate without decoding images
    for row, rec in enumerate(meta):
        for q in _transpose(rec["questions"]):
            doc = _base(key, row)
            for field in ("image_id", "variant", "grid", "theta1_index", "theta2_index", "theta1", "theta2",
                          "depth1", "depth2", "size1", "size2", "size1_nominal", "obj1", "obj2",
                          "radius1_px", "radius2_px", "width", "height"):
                doc[field] = rec[field]
            doc["x1"], doc["y1"] = rec["pixel1"]
            doc["x2"], doc["y2"] = rec["pixel2"]
            doc.update(question=q["question"], answer=q["answer"], source="spatial-tasks generator")
            yield _finish(doc, int(q["template_id"]))


def _transpose(questions) -> list[dict]:
    """datasets returns a Sequence of structs as a dict of lists; accept both shapes."""
    if isinstance(questions, dict):
        keys = list(questions)
        return [dict(zip(keys, values)) for values in zip(*(questions[k] for k in keys))]
    return list(questions)


def _resolve_columns(columns: Iterable[str]) -> dict[str, str]:
    lower = {c.lower(): c for c in columns}
    found = {}
    for field, names in ALIASES.items():
        for name in names:
            if name in lower:
                found[field] = lower[name]
                break
    return found


def _docs_from_official(dataset: datasets.Dataset, label: str, variant: str | None) -> Iterable[dict]:
    cols = _resolve_columns(dataset.column_names)
    per_question = {"question", "answer"} <= cols.keys()
    per_image = {"obj1", "obj2"} <= cols.keys()
    if "image" not in cols or not (per_question or per_image):
        missing = sorted(({"image"} - cols.keys()) | ({"question", "answer"} - cols.keys()))
        raise SourceError(
            f"{label}: cannot map onto the SpatialTunnel schema: missing column(s) {missing} "
            f"(or obj1 + obj2 instead of question + answer); found columns {sorted(dataset.column_names)}"
        )
    variant = variant or ("size" if "size" in label else "phase")
    key = images.register(images.ImageTable(dataset, cols["image"], label, images.decode_base64))
    meta = dataset.remove_columns([cols["image"]])
    for row, rec in enumerate(meta):
        get = {field: rec[col] for field, col in cols.items() if field != "image"}
        image_id = str(get.get("image_id", row))
        if per_question:
            answer = _yes_no(get["answer"])
            resolved = resolve_template(str(get["question"]), answer) if answer else None
            if resolved is None:
                raise SourceError(
                    f"{label}: row {row}: question {get['question']!r} / answer {get['answer']!r} is not in "
                    "the paper's four-template wording"
                )
            template_id, obj1, obj2 = resolved
            items = [(template_id, str(get["question"]), answer)]
        else:
            obj1, obj2 = str(get["obj1"]), str(get["obj2"])
            items = [(q["template_id"], q["question"], q["answer"]) for q in questions_for(obj1, obj2)]
        geo = _official_geometry(get, variant)
        for template_id, question, answer in items:
            doc = _base(key, row)
            doc.update(geo)
            doc.update(image_id=image_id, variant=variant, obj1=obj1, obj2=obj2, question=question,
                       answer=answer, source=f"official TSV ({label})")
            yield _finish(doc, template_id)


def _yes_no(value: object) -> str | None:
    text = str(value).strip().lower()
    return {"yes": "Yes", "no": "No"}.get(text)


def _num(value: object) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def _official_geometry(get: dict, variant: str) -> dict:
    """Geometry fields derivable from an official row: pixel centres if given, else from angles."""
    geo = {f: _num(get.get(f)) for f in ("theta1", "theta2", "depth1", "depth2", "size1", "size2",
                                          "x1", "y1", "x2", "y2", "width", "height")}
    geo["radius1_px"] = geo["radius2_px"] = None
    grid = geometry.DEFAULT_GRID
    for i in ("1", "2"):
        index = _num(get.get(f"theta{i}_index"))
        if geo[f"theta{i}"] is None and index is not None:
            geo[f"theta{i}"] = geometry.theta_degrees(int(index), grid)
        if geo[f"theta{i}"] is not None:
            geo[f"theta{i}_index"] = int(round(geo[f"theta{i}"] / (360.0 / grid))) % grid
    geo["grid"] = grid
    geo["size1_nominal"] = geo["size1"] if variant == "size" else None
    if geo["y1"] is None and geo["theta1"] is not None and geo["theta2"] is not None:
        size1 = geo["size1"] or 0.2
        size2 = geo["size2"] or 0.1
        w = int(geo["width"] or NOMINAL_RESOLUTION)
        h = int(geo["height"] or NOMINAL_RESOLUTION)
        c1 = geometry.object_center(geo["theta1"], geo["depth1"] or geometry.DEPTH_FAR, size1)
        c2 = geometry.object_center(geo["theta2"], geo["depth2"] or geometry.DEPTH_NEAR, size2)
        (geo["x1"], geo["y1"]), (geo["x2"], geo["y2"]) = geometry.project(c1, w, h), geometry.project(c2, w, h)
        geo.update(width=w, height=h,
                   radius1_px=geometry.projected_radius_px(size1, c1[1], w),
                   radius2_px=geometry.projected_radius_px(size2, c2[1], w))
    for k in ("width", "height"):
        if geo[k] is not None:
            geo[k] = int(geo[k])
    return geo
