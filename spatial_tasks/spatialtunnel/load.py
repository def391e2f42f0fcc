"""Map every SpatialTunnel source onto the canonical per-question doc (schema.DOC_FIELDS).

This is where SpatialTunnel data enters; everything is checked here, once:

* the format is decided explicitly (``detect_format``): our generator's datasets have
  generator-only columns (``questions``, ``pixel1``, ``theta1_index`` ...); the official
  ``cubec/spatialtunnel`` tables have ``index, image, question, answer`` (parquet: an embedded
  image; TSV: base64 text). A dataset with one of our columns but not all of them is an error
  listing what is missing -- it never falls through to the official reader, and an official
  parquet with an Image column is never taken for ours;
* columns and their types, then every value the metrics rely on (ids unique, answers Yes/No and
  consistent with the template, template ids 1-4, pixel positions finite and inside the image,
  image sides > 0, the farther object farther);
* every image (``images.check_image``: truncated or undecodable images, decompression bombs).

Errors are ``SourceError`` (a ValueError), one line naming the file, row and field.

Official tables: the published ones have no positions, angles or depths (``index, image,
question, answer``). The question names both objects by colour and shape and, with the answer,
says which one is farther (``questions.resolve_template``); ``pixels.py`` finds both objects in
the image, and the split and the 16 x 16 cell come from their centres. Objects that cannot be
found are ``unknown``: counted apart, named in a warning, never filed. Other columns, when a copy
has them, are used instead: pixel centres, else angles (+ depths) through the analytic camera of
geometry.py; per-image rows (obj1 + obj2 instead of question + answer) get the paper's four
questions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import datasets
from loguru import logger as log

from spatial_tasks.common import images
from spatial_tasks.common.origin import Origin, in_memory
from spatial_tasks.common.validate import (
    INSPECT_HINT,
    SourceError,
    category,
    check_unique,
    columns,
    finite_number,
    is_finite_number,
    require_columns,
)
from spatial_tasks.spatialtunnel import geometry, pixels
from spatial_tasks.spatialtunnel.questions import (
    TEMPLATE_BY_ID,
    questions_for,
    render_question,
    resolve_template,
)
from spatial_tasks.spatialtunnel.schema import CONFIG_FOR_VARIANT, DOC_FIELDS, IMAGE_FEATURES, VARIANTS

GENERATED = "spatial-tasks generator"
OFFICIAL = "official table"
# Columns only our generator writes (none is an alias of the official TSV's): any marks a dataset as ours.
GENERATOR_ONLY = frozenset({"questions", "pixel1", "pixel2", "size1_nominal", "size2_nominal", "radius1_px",
                            "radius2_px", "sun_rotation", "roughness1", "roughness2", "position1", "position2"})
GENERATED_KINDS = {name: category(feature) for name, feature in IMAGE_FEATURES.items()}

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
NUMERIC_FIELDS = ("theta1", "theta2", "theta1_index", "theta2_index", "depth1", "depth2", "size1", "size2",
                  "x1", "y1", "x2", "y2", "width", "height")
NOMINAL_RESOLUTION = 512  # relations are scale-free; used only when a source gives no image size


def to_docs(dataset: datasets.Dataset, origin: Origin | None = None, variant: str | None = None, *,
            label: str | None = None, check_images: bool = True, grid: int = geometry.DEFAULT_GRID) -> datasets.Dataset:
    """Canonical per-question docs (images as references) for any supported source, checked.

    ``origin`` says where the rows came from (``TaskData.origin``); without it errors name
    ``label`` and the split's rows. ``variant`` is the task's (phase or size): the official tables
    do not say it, and our generator's rows must agree with it. ``grid``: the angular positions
    per object of an official table (the paper's 16; our generator's rows record their own).
    """
    if not isinstance(grid, int) or isinstance(grid, bool) or not 2 <= grid <= 360:
        raise SourceError(f"grid {grid!r}: the angular positions per object are an integer 2-360 (the paper's: 16)")
    origin = origin or in_memory(label or "spatialtunnel")
    if variant is not None and variant not in VARIANTS:
        raise SourceError(f"variant {variant!r} is not one of {list(VARIANTS)}")
    if len(dataset) == 0:
        raise SourceError(f"{origin.where}: the dataset has no rows")
    fmt = detect_format(dataset, origin)
    if fmt == GENERATED:
        docs = list(_docs_from_generated(dataset, origin, variant, check_images))
    else:
        docs = list(_docs_from_official(dataset, origin, variant or "phase", check_images, grid))
    return datasets.Dataset.from_list(docs)


def detect_format(dataset: datasets.Dataset, origin: Origin) -> str:
    """GENERATED or OFFICIAL, decided by the columns; anything else is an error saying why."""
    features = dataset.features
    ours = sorted(GENERATOR_ONLY & set(features))
    if ours:
        missing = [name for name in IMAGE_FEATURES if name not in features]
        if missing:
            raise SourceError(f"{origin.where}: looks like a spatial-tasks generated SpatialTunnel dataset (columns "
                              f"{ours}) but lacks column(s) {missing}; found columns {sorted(features)}{INSPECT_HINT}")
        require_columns(dataset, GENERATED_KINDS, origin, "a generated SpatialTunnel dataset", SourceError)
        return GENERATED
    cols = _resolve_columns(features)
    per_question = {"question", "answer"} <= cols.keys()
    per_image = {"obj1", "obj2"} <= cols.keys()
    if "image" in cols and (per_question or per_image):
        _image_encoding(features[cols["image"]], cols["image"], origin)
        return OFFICIAL
    missing = sorted(({"image"} - cols.keys()) | ({"question", "answer"} - cols.keys()))
    raise SourceError(
        f"{origin.where}: not a SpatialTunnel dataset in a known format: neither our generator's columns "
        f"({', '.join(sorted(GENERATOR_ONLY)[:6])}, ...) nor the official table's index/image/question/answer "
        f"(missing column(s) {missing}, or obj1 + obj2 instead of question + answer); found columns "
        f"{sorted(features)}{INSPECT_HINT}"
    )


def _image_encoding(feature: object, column: str, origin: Origin) -> str:
    """How an official image column stores its images: "image" (an Image column or raw bytes, the
    parquet tables) or "base64" (text, the TSV tables)."""
    if isinstance(feature, datasets.Image):
        return "image"
    kind = getattr(feature, "dtype", None)
    if kind in ("string", "large_string"):
        return "base64"
    if kind in ("binary", "large_binary"):
        return "image"
    if isinstance(feature, dict) and "bytes" in feature:  # an Image column read without its feature type
        return "image"
    raise SourceError(f"{origin.where}: column {column!r} holds {kind or type(feature).__name__} values; the "
                      "official tables store each image embedded (parquet) or as base64 text (TSV)")


def _base(image: dict) -> dict:
    doc = dict.fromkeys(DOC_FIELDS)
    doc.update(benchmark="spatialtunnel", image=image)
    return doc


def _finish(doc: dict, template_id: int) -> dict:
    template = TEMPLATE_BY_ID[template_id]
    doc.update(
        template_id=template_id,
        subject=template.subject,
        comparison=template.relation,
        question_id=f"{doc['image_id']}-q{template_id}",
    )
    if doc["relation"] is not None:  # split already made from the pixels
        return doc
    if doc["y1"] is not None and doc["y2"] is not None and doc["height"]:
        rel = geometry.vertical_relation(doc["y1"], doc["y2"], doc["height"])
        doc.update(dy=rel.dy, relation=rel.three_way, relation_two_way=rel.two_way)
    else:
        doc.update(relation="unknown", relation_two_way="unknown")
    return doc


# ------------------------------------------------------------------------------------------
# Our generator's datasets


_COPIED = ("image_id", "variant", "grid", "theta1_index", "theta2_index", "theta1", "theta2", "depth1", "depth2",
           "size1", "size2", "size1_nominal", "obj1", "obj2", "radius1_px", "radius2_px", "width", "height")


def _docs_from_generated(dataset: datasets.Dataset, origin: Origin, variant: str | None,
                         check: bool) -> Iterable[dict]:
    table = images.ImageTable(dataset, "image", origin)
    meta = columns(dataset, [c for c in IMAGE_FEATURES if c != "image"])
    for row in range(len(dataset)):
        _check_generated_row(meta, row, origin)
        if variant is not None and meta["variant"][row] != variant:
            raise SourceError(f"{origin.locate(row)}, field 'variant': a {meta['variant'][row]} image, but this task "
                              f"reads the {variant} variant (config {CONFIG_FOR_VARIANT[variant]})")
    check_unique(meta["image_id"], origin, "image_id", SourceError)
    if check:
        table.check(description="SpatialTunnel: checking images")
    for row in range(len(dataset)):
        image = table.ref(row)
        for k, q in enumerate(meta["questions"][row]):
            doc = _base(image)
            for field in _COPIED:
                doc[field] = meta[field][row]
            doc["x1"], doc["y1"] = meta["pixel1"][row]
            doc["x2"], doc["y2"] = meta["pixel2"][row]
            doc.update(question=q["question"], answer=q["answer"], source=GENERATED, geometry="recorded")
            yield _finish(doc, int(q["template_id"]))


def _check_generated_row(meta: Mapping[str, list], row: int, origin: Origin) -> None:
    """Every value of one generated row that the docs and metrics rely on."""
    def bad(field: str, problem: str) -> SourceError:
        return SourceError(f"{origin.locate(row)}, field {field!r}: {problem}")

    value = {name: values[row] for name, values in meta.items()}
    if not isinstance(value["image_id"], str) or not value["image_id"].strip():
        raise bad("image_id", f"empty image id {value['image_id']!r}")
    if value["variant"] not in VARIANTS:
        raise bad("variant", f"{value['variant']!r} is not one of {list(VARIANTS)}")
    for field in ("width", "height"):
        if not isinstance(value[field], int) or value[field] <= 0:
            raise bad(field, f"image {field} must be a positive number of pixels, got {value[field]!r}")
    grid = value["grid"]
    if not isinstance(grid, int) or grid < 2:
        raise bad("grid", f"must be an integer >= 2, got {grid!r}")
    for field in ("theta1_index", "theta2_index"):
        if not isinstance(value[field], int) or not 0 <= value[field] < grid:
            raise bad(field, f"{value[field]!r} is not an angular position 0..{grid - 1}")
    for field in ("theta1", "theta2", "size1_nominal", "size2_nominal", "radius1_px", "radius2_px"):
        if not is_finite_number(value[field]):
            raise bad(field, f"must be a finite number, got {value[field]!r}")
    for field in ("depth1", "depth2", "size1", "size2"):
        if not is_finite_number(value[field]) or value[field] <= 0:
            raise bad(field, f"must be a positive finite number, got {value[field]!r}")
    if value["depth1"] <= value["depth2"]:
        raise bad("depth1", f"obj1 must be the farther object (depth1 {value['depth1']} <= depth2 {value['depth2']})")
    for slot in ("1", "2"):
        _check_pixel(value[f"pixel{slot}"], value["width"], value["height"], f"pixel{slot}", bad)
    for field in ("obj1", "obj2"):
        if not isinstance(value[field], str) or not value[field].strip():
            raise bad(field, f"empty object name {value[field]!r}")
    if value["obj1"] == value["obj2"]:
        raise bad("obj2", f"both objects are called {value['obj1']!r}: the questions cannot tell them apart")
    _check_questions(value["questions"], value["obj1"], value["obj2"], bad)


def _check_pixel(pixel, width: int, height: int, field: str, bad) -> None:
    if not isinstance(pixel, (list, tuple)) or len(pixel) != 2 or not all(is_finite_number(v) for v in pixel):
        raise bad(field, f"must be two finite numbers (column, row), got {pixel!r}")
    x, y = pixel
    if not (0 <= x <= width and 0 <= y <= height):
        raise bad(field, f"({x}, {y}) is outside the {width} x {height} image")


def _check_questions(questions, obj1: str, obj2: str, bad) -> None:
    if not isinstance(questions, list) or not questions:
        raise bad("questions", "no questions for this image")
    seen = set()
    for k, q in enumerate(questions):
        where = f"questions[{k}]"
        if not isinstance(q, dict):
            raise bad(where, f"not a question record: {q!r}")
        template_id = q.get("template_id")
        if template_id not in TEMPLATE_BY_ID:
            raise bad(f"{where}.template_id", f"unknown template id {template_id!r} (the paper's are 1-4)")
        if template_id in seen:
            raise bad(f"{where}.template_id", f"template {template_id} appears twice for this image")
        seen.add(template_id)
        answer = q.get("answer")
        if answer not in ("Yes", "No"):
            raise bad(f"{where}.answer", f"{answer!r} is not Yes or No")
        expected = TEMPLATE_BY_ID[template_id].answer
        if answer != expected:
            raise bad(f"{where}.answer", f"template {template_id} asks a question whose answer is {expected} "
                                         f"(obj1 is the farther object), not {answer}")
        text = render_question(template_id, obj1, obj2)
        if q.get("question") != text:
            raise bad(f"{where}.question", f"{q.get('question')!r} is not template {template_id} for these "
                                           f"objects ({text!r})")


# ------------------------------------------------------------------------------------------
# The official TSV configs


def _resolve_columns(names: Iterable[str]) -> dict[str, str]:
    lower = {c.lower(): c for c in names}
    found = {}
    for field, aliases in ALIASES.items():
        for name in aliases:
            if name in lower:
                found[field] = lower[name]
                break
    return found


def _docs_from_official(dataset: datasets.Dataset, origin: Origin, variant: str, check: bool,
                        grid: int) -> Iterable[dict]:
    cols = _resolve_columns(dataset.column_names)
    per_question = {"question", "answer"} <= cols.keys()
    encoding = _image_encoding(dataset.features[cols["image"]], cols["image"], origin)
    table = images.ImageTable(dataset, cols["image"], origin, encoding=encoding)
    meta = columns(dataset, [c for f, c in cols.items() if f != "image"])
    rows = []
    for row in range(len(dataset)):
        get = {field: meta[col][row] for field, col in cols.items() if field != "image"}
        rows.append(_official_row(get, row, origin, per_question, variant, grid))
    seen: dict[tuple[str, int], int] = {}
    for row, r in enumerate(rows):
        for template_id, _, _ in r["items"]:
            key = (r["image_id"], template_id)
            if key in seen:
                raise SourceError(f"{origin.locate(row)}: question {template_id} of image {r['image_id']!r} appears "
                                  f"twice (also at {origin.locate(seen[key])})")
            seen[key] = row
    if check:
        table.check(description="SpatialTunnel: checking images")
    if not any(r["geometry"]["y1"] is not None for r in rows):
        _pixel_geometry(table, rows, origin, variant)
    for row, r in enumerate(rows):
        image = table.ref(row)
        for template_id, question, answer in r["items"]:
            doc = _base(image)
            doc.update(r["geometry"])
            doc.update(image_id=r["image_id"], variant=variant, obj1=r["obj1"], obj2=r["obj2"], question=question,
                       answer=answer, source=f"{OFFICIAL} ({origin.label})")
            yield _finish(doc, template_id)


def _pixel_geometry(table: images.ImageTable, rows: list[dict], origin: Origin, variant: str = "phase") -> None:
    """Positions, cells and split of every official row from its image (module docstring): each
    distinct image is analysed once (``pixels.read_all``); rows whose objects cannot be found
    become unknown, and a label too close to its line to read is decided by its cell's geometry or,
    in the phase variant, by its cell's other images, else unknown, each kind listed in one
    warning. The size variant's s1 is not read from the pixels
    (``pixels.far_size``: not to the sweep's step), so v(s1) and Δ_s stay undefined on an official
    size table, and a log line says so."""
    first_row: dict[str, int] = {}
    keys = []
    for row, r in enumerate(rows):
        key = hashlib.sha1(table.encoded(row)).hexdigest()
        keys.append(key)
        if key in first_row:
            other = rows[first_row[key]]
            if (other["obj1"], other["obj2"]) != (r["obj1"], r["obj2"]):
                raise SourceError(f"{origin.locate(row)}: the same image as {origin.locate(first_row[key])} but its "
                                  f"question names {r['obj1']!r} (farther) and {r['obj2']!r}, that one's "
                                  f"{other['obj1']!r} and {other['obj2']!r}")
        else:
            first_row[key] = row
    distinct = list(first_row.values())
    names = [(rows[r]["obj1"], rows[r]["obj2"]) for r in distinct]
    located = pixels.locate_all(lambda k: table.encoded(distinct[k]), names,
                                progress=lambda ks: images.progress(ks, "SpatialTunnel: locating objects"),
                                variant=variant)
    grid = rows[0]["geometry"]["grid"] if rows else geometry.DEFAULT_GRID
    readings, geometry_unused = pixels.read_all(located, names, grid, variant)
    by_key = {keys[row]: (loc, reading) for row, loc, reading in zip(distinct, located, readings)}
    unknown: dict[str, list[tuple[int, str]]] = {"both": [], "two_way": [], "three_way": []}
    cells_unknown, sizes_unknown = [], []
    filed: dict[str, list[int]] = {"geometry": [], "cell": []}
    for row, r in enumerate(rows):
        loc, reading = by_key[keys[row]]
        split = reading.split
        if reading.filed_by is not None:
            filed[reading.filed_by].append(row)
        geo = r["geometry"]
        if variant == "size" and geo.get("size1_nominal") is None:
            sizes_unknown.append(row)  # s1 is not read from the pixels: pixels.far_size says why
        geo.update(width=loc.width or None, height=loc.height or None, geometry="pixels", dy=split.dy,
                   relation=split.three_way, relation_two_way=split.two_way)
        if loc.ok:
            geo.update(x1=loc.far.x, y1=loc.far.y, x2=loc.near.x, y2=loc.near.y,
                       theta1_index=reading.cells[0], theta2_index=reading.cells[1])
            for i in ("1", "2"):
                index = geo[f"theta{i}_index"]
                geo[f"theta{i}"] = None if index is None else geometry.theta_degrees(index, geo["grid"])
            if None in (geo["theta1_index"], geo["theta2_index"]):
                cells_unknown.append(row)
        if split.problem is not None:
            kind = "both" if not loc.ok else "two_way" if split.two_way == "unknown" else "three_way"
            unknown[kind].append((row, split.problem))
    _say_what_the_pixels_left(origin, rows, distinct, unknown, filed, geometry_unused, sizes_unknown, cells_unknown)


def _say_what_the_pixels_left(origin: Origin, rows: list[dict], distinct: list[int], unknown: dict, filed: dict,
                              geometry_unused, sizes_unknown: list[int], cells_unknown: list[int]) -> None:
    """``_pixel_geometry``'s lines: each kind of unknown label in one warning, what geometry or a cell
    decided, what the pixels cannot give (s1, a black object's cell)."""
    for kind, outside in (("both", "count as unknown (outside v_cons, v_ctr and the cell grid)"),
                          ("two_way", ("are ambiguous, but which object is higher cannot be told (outside v_cons and "
                                       "v_ctr; in v_amb)")),
                          ("three_way", ("are consistent or counter, but whether ambiguous cannot be told (in v_cons "
                                         "and v_ctr; outside v_amb)"))):
        if unknown[kind]:
            shown = "; ".join(f"{origin.locate(row)}: {problem}" for row, problem in unknown[kind][:5])
            more = f" (and {len(unknown[kind]) - 5} more)" if len(unknown[kind]) > 5 else ""
            verb = "could not be placed from the pixels and" if kind == "both" else "placed from the pixels"
            log.warning(f"{origin.where}: {len(unknown[kind])} of {len(rows)} question(s) {verb} {outside}: "
                        f"{shown}{more}")
    if filed["geometry"]:
        log.info(f"{origin.where}: {len(filed['geometry'])} question(s) whose rows are too close to a line to tell "
                 f"were decided by their cell's geometry (its angles, the walls measured on the table's spheres, "
                 f"every size the paper draws; first: {origin.locate(filed['geometry'][0])})")
    if geometry_unused is not None and geometry_unused.image is not None:
        log.warning(f"{origin.where}: the cells' geometry decided no label: "
                    f"{origin.locate(distinct[geometry_unused.image])}: {geometry_unused.reason}")
    elif geometry_unused is not None and (unknown["two_way"] or unknown["three_way"]):  # what geometry could decide
        log.info(f"{origin.where}: the cells' geometry decided no label: {geometry_unused.reason}")
    if filed["cell"]:
        log.info(f"{origin.where}: {len(filed['cell'])} question(s) too close to level to tell took their cell's split, "
                 f"on which the cell's other images agree (the paper files whole cells; first: "
                 f"{origin.locate(filed['cell'][0])})")
    if sizes_unknown:
        log.info(f"{origin.where}: the table records no size s1, and the pixels give it only to about +-0.006, "
                 f"not surely to the sweep's 0.02 step: v(s1 = .1), v(s1 = .3) and Δ_s are left undefined for its "
                 f"{len(sizes_unknown)} question(s) (benchmarks/pixel_split.py measures the reading)")
    if cells_unknown:
        log.info(f"{origin.where}: {len(cells_unknown)} question(s) have a black object too close to a cell's edge to "
                 f"tell its cell (left out of the cell grid; first: {origin.locate(cells_unknown[0])})")


def _official_row(get: dict, row: int, origin: Origin, per_question: bool, variant: str, grid: int) -> dict:
    def bad(field: str, problem: str) -> SourceError:
        return SourceError(f"{origin.locate(row)}, field {field!r}: {problem}")

    image_id = get.get("image_id", row)
    image_id = str(row if image_id is None else image_id)
    if per_question:
        answer = _yes_no(get["answer"])
        if answer is None:
            raise bad("answer", f"{get['answer']!r} is not Yes or No")
        question = get["question"]
        resolved = resolve_template(question, answer) if isinstance(question, str) else None
        if resolved is None:
            raise bad("question", f"{question!r} (answer {answer}) is not in the paper's four-template wording")
        template_id, obj1, obj2 = resolved
        items = [(template_id, question.strip(), answer)]
    else:
        obj1, obj2 = get["obj1"], get["obj2"]
        for field, name in (("obj1", obj1), ("obj2", obj2)):
            if not isinstance(name, str) or not name.strip():
                raise bad(field, f"empty object name {name!r}")
        items = [(q["template_id"], q["question"], q["answer"]) for q in questions_for(obj1, obj2)]
    return {"image_id": image_id, "obj1": obj1, "obj2": obj2, "items": items,
            "geometry": {**_official_geometry(get, variant, bad, grid), "geometry": "columns"}}


def _yes_no(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return {"yes": "Yes", "no": "No"}.get(value.strip().lower())


def _number(get: dict, field: str, bad) -> float | None:
    """A numeric cell: None when the column is absent; an error when the column is there but the
    cell is empty (a NaN in a TSV reads as empty) or not a finite number."""
    if field not in get:
        return None
    value = get[field]
    if value is None or (isinstance(value, str) and not value.strip()):
        raise bad(field, "empty value (blank or NaN) in a column the geometry is read from")
    return finite_number(value, field, bad)


def _official_geometry(get: dict, variant: str, bad, grid: int) -> dict:
    """Geometry fields derivable from an official row: pixel centres if given, else from angles."""
    geo = {f: _number(get, f, bad) for f in NUMERIC_FIELDS}
    for field in ("width", "height"):
        if geo[field] is not None and (geo[field] <= 0 or geo[field] != int(geo[field])):
            raise bad(field, f"image {field} must be a positive number of pixels, got {get[field]!r}")
    for i in ("1", "2"):
        index = geo.pop(f"theta{i}_index")
        if index is not None and not (index == int(index) and 0 <= index < grid):
            raise bad(f"theta{i}_index", f"{index!r} is not an angular position 0..{grid - 1}")
        if geo[f"theta{i}"] is None and index is not None:
            geo[f"theta{i}"] = geometry.theta_degrees(int(index), grid)
        geo[f"theta{i}_index"] = (None if geo[f"theta{i}"] is None
                                  else int(round(geo[f"theta{i}"] / (360.0 / grid))) % grid)
    for i in ("1", "2"):
        x, y = geo[f"x{i}"], geo[f"y{i}"]
        if (x is None) != (y is None):
            raise bad(f"x{i}" if x is None else f"y{i}", "a pixel position needs both x and y")
        width, height = geo["width"], geo["height"]
        if x is not None and (x < 0 or y < 0 or (width and x > width) or (height and y > height)):
            raise bad(f"x{i}", f"({x}, {y}) is outside the image"
                      + (f" of {int(width)} x {int(height)} px" if width and height else ""))
    geo["radius1_px"] = geo["radius2_px"] = None
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
