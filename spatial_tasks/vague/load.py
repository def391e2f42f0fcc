"""Where VAGUE data enters: both published layouts -> canonical docs (schema.DOC_FIELDS), every
field checked.

1. **The Hub release** ``HazelNam/vague-bench`` (the default): one parquet file, config default,
   split ``train``, 1,677 rows with an embedded ``image`` and the item's fields as columns -- the
   strings ``image_name, direct, indirect, solution``, the struct ``mcq`` (options and
   ``ordering``) and the struct ``meta`` (caption, ram_entity, img_size, person_bbox, rating,
   fake_caption; no annot_link). lmms-eval loads it with ``datasets``; ``docs_from_table`` maps
   the rows. It has no subset column: an ``image_name`` with '@' is VCR, any other Ego4D (a third
   party's rule, not the authors'; it gives 1,144 and 533 on the release, checked and reported by
   ``subset_counts``). Whether its embedded images carry the person tags is not known, so each
   image is looked at (``has_person_tags``): where the tags are missing, doc_to_visual draws them
   with our person-tag code (``person_tags.py``), and the doc says so (``tags`` = "drawn").
2. **The GitHub layout**: item files (JSON lists; ``vcr_1144_final.json``,
   ``ego4d_533_final.json``) and the person-tagged images ``<image_name>_annot.jpg`` anywhere in the
   folder (``docs_from_folder``). A file's name gives its items' subset; a name that says neither
   or both leaves it to the '@' rule. A JSON file that is not a list of items is named in a warning.

Errors name the file, the item (row and image_name) and the key. The two layouts share the item
checks (``item_to_doc``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from loguru import logger as log

from spatial_tasks.common import images
from spatial_tasks.common.origin import Origin, in_memory
from spatial_tasks.common.validate import (
    INSPECT_HINT,
    SourceError,
    columns,
    is_finite_number,
    parquet_columns,
    short,
)
from spatial_tasks.vague.person_tags import check_boxes
from spatial_tasks.vague.schema import (
    BENCHMARK,
    DOC_FIELDS,
    IMAGE_SUFFIX,
    LETTERS,
    OFFICIAL_COUNTS,
    OPTION_KEYS,
    OPTION_TYPES,
    SUBSETS,
)

TABLE_COLUMNS = ("image", "image_name", "indirect", "solution", "mcq")  # the Hub release's, needed


def subset_of_file(path: Path) -> str | None:
    """The subset a file name says ("vcr_1144_final.json" -> vcr); None when it says neither or both."""
    name = path.name.lower()
    found = [s for s in SUBSETS if s in name]
    return found[0] if len(found) == 1 else None


def subset_of_name(image_name: str) -> str:
    """The subset of an item from its image_name: VCR frames are named "<movie clip>@<n>"."""
    return "vcr" if "@" in image_name else "ego4d"


def listener_of(solution: str) -> str:
    """The addressee: the solution triplet's first element ("(person1, move, sedan)" -> "person1";
    the code's ``solution.split(",")[0][1:]``)."""
    return solution.split(",")[0].strip().lstrip("(").strip()


# ------------------------------------------------------------------------------------------
# One item (both layouts)


def _option(mcq: Mapping, kind: str, bad) -> str:
    for key in OPTION_KEYS[kind]:
        if mcq.get(key) is not None:
            text = mcq[key]
            if not isinstance(text, str) or not text.strip():
                raise bad(f"mcq.{key}", f"empty option text {short(text)}")
            return text  # as released: the authors' prompts show the texts unstripped
    raise bad(f"mcq.{OPTION_KEYS[kind][0]}", f"missing (also accepted: {list(OPTION_KEYS[kind][1:])}); mcq has "
                                            f"keys {sorted(k for k, v in mcq.items() if v is not None)}")


def _text(item: Mapping, key: str, bad, required: bool = True) -> str | None:
    value = item.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise bad(key, f"missing or empty text {short(value)}")
    return value  # as released (the official "indirect" texts can end in spaces the prompts keep)


def _struct(value: Any, key: str, bad) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise bad(key, f"not an object: {short(value)}")
    return value


def item_to_doc(item: Any, index: int, where: str, subset: str, image: dict | None, tags: str = "in image") -> dict:
    """One official item -> a canonical doc, every field checked (errors name ``where`` -- "FILE,
    item K" or "FILE, row K" --, the image_name and the key). ``image``: its reference
    (common.images); ``tags``: "in image" or "drawn"."""
    label = item.get("image_name") if isinstance(item, Mapping) else None

    def bad(key: str, problem: str) -> SourceError:
        return SourceError(f"{where} ({label!r}), key {key!r}: {problem}")

    if not isinstance(item, Mapping):
        raise bad("item", f"not a JSON object: {short(item)}")
    image_name = _text(item, "image_name", bad)
    indirect = _text(item, "indirect", bad)
    solution = _text(item, "solution", bad)
    if not re.fullmatch(r"\s*\(\s*[^,()]+\s*,\s*[^,()]+\s*,\s*[^()]+\)\s*", solution):
        raise bad("solution", f"{solution!r} is not a (subject, action, object) triplet")
    mcq = item.get("mcq")
    if not isinstance(mcq, Mapping):
        raise bad("mcq", f"missing or not an object: {short(mcq)}")
    texts = [_option(mcq, kind, bad) for kind in OPTION_TYPES]
    ordering = mcq.get("ordering")
    if not isinstance(ordering, (list, tuple)) or sorted(map(str, ordering)) != list(LETTERS):
        raise bad("mcq.ordering", f"{short(ordering)} is not a permutation of A, B, C, D")
    if len({t.strip().lower() for t in texts}) != 4:
        raise bad("mcq", f"two options have the same text: {texts}")
    meta = _struct(item.get("meta"), "meta", bad)
    size = _struct(meta.get("img_size"), "meta.img_size", bad)
    width, height = size.get("width"), size.get("height")
    for key, value in (("width", width), ("height", height)):
        if value is not None and (not is_finite_number(value) or value <= 0):
            raise bad(f"meta.img_size.{key}", f"{short(value)} is not a positive size")
    boxes = meta.get("person_bbox") or []
    if not isinstance(boxes, (list, tuple)):
        raise bad("meta.person_bbox", f"{short(boxes)} is not a list of boxes")
    for k, box in enumerate(boxes):
        if not (isinstance(box, (list, tuple)) and len(box) == 4 and all(is_finite_number(v) for v in box)
                and box[0] <= box[2] and box[1] <= box[3]):
            raise bad(f"meta.person_bbox[{k}]", f"{short(box)} is not [x1, y1, x2, y2]")
    if width is not None and height is not None:  # boxes are in the stated size (drawn there, mid-run)
        try:
            check_boxes(boxes, (width, height))
        except ValueError as err:
            raise bad("meta.person_bbox", f"{err} (meta.img_size)") from None
    listener = listener_of(solution)
    tag = re.fullmatch(r"person\s*(\d+)", listener, flags=re.IGNORECASE)
    if tag and meta.get("person_bbox") is not None and not 1 <= int(tag.group(1)) <= len(boxes):
        raise bad("solution", f"the listener {listener!r} has no person tag: the item has {len(boxes)} person "
                              "box(es) (meta.person_bbox), tagged 1.." + str(len(boxes)))
    rating = _struct(meta.get("rating"), "meta.rating", bad)
    for key in ("direct", "indirect"):
        value = rating.get(key)
        if value is not None and not (is_finite_number(value) and 1 <= value <= 5):
            raise bad(f"meta.rating.{key}", f"{short(value)} is not a rating 1-5")
    for key in ("caption", "fake_caption"):
        if meta.get(key) is not None and not isinstance(meta.get(key), str):
            raise bad(f"meta.{key}", f"{short(meta.get(key))} is not text")
    caption = meta.get("caption")
    entities = meta.get("ram_entity") or []
    if not isinstance(entities, (list, tuple)) or not all(isinstance(e, str) for e in entities):
        raise bad("meta.ram_entity", f"{short(entities)} is not a list of names")
    by_letter = sorted(zip(map(str, ordering), texts, OPTION_TYPES))
    return {
        "benchmark": BENCHMARK, "item_id": f"{subset}-{index:05d}", "subset": subset, "index": index,
        "image_name": image_name, "image": image, "tags": tags,
        "direct": _text(item, "direct", bad, required=False) or "", "indirect": indirect, "solution": solution,
        "listener": listener,
        "letters": [b[0] for b in by_letter], "option_texts": [b[1] for b in by_letter],
        "option_types": [b[2] for b in by_letter], "answer": str(ordering[0]), "correct_intention": texts[0].strip(),
        "caption": caption if isinstance(caption, str) and caption.strip() else None,
        "fake_caption": meta.get("fake_caption") if isinstance(meta.get("fake_caption"), str) else None,
        "entities": list(entities), "person_boxes": [[float(v) for v in b] for b in boxes],
        "width": None if width is None else float(width), "height": None if height is None else float(height),
        "rating_direct": rating.get("direct"), "rating_indirect": rating.get("indirect"),
    }


def check_ids(docs: list[dict], where: str) -> None:
    ids = {}
    for doc in docs:
        key = (doc["subset"], doc["image_name"], doc["indirect"])
        if key in ids:
            raise SourceError(f"{where}: item {doc['item_id']} repeats item {ids[key]} (same image and utterance)")
        ids[key] = doc["item_id"]


# ------------------------------------------------------------------------------------------
# Person tags


def has_person_tags(rgb: np.ndarray, boxes: list[list[float]]) -> bool:
    """Whether an image shows person tags (white digits on a black rectangle at each box centre):
    at most of the centres, the patch around it is at least a third near-black and has some
    near-white pixels. An image with no person has nothing to tag."""
    if not boxes:
        return True
    h, w = rgb.shape[:2]
    half = max(4, round(0.012 * max(h, w)))  # half a tag: 40 px font on a 1,000 px frame
    value = rgb.max(axis=-1)
    spread = value - rgb.min(axis=-1)
    found = 0
    for x1, y1, x2, y2 in boxes:
        cx, cy = round((x1 + x2) / 2), round((y1 + y2) / 2)
        patch = (slice(max(0, cy - half), min(h, cy + half + 1)), slice(max(0, cx - half), min(w, cx + half + 1)))
        v, s = value[patch], spread[patch]
        if v.size == 0:
            continue
        black = ((v < 0.15) & (s < 0.12)).mean()
        white = ((v > 0.8) & (s < 0.15)).mean()
        found += black >= 0.3 and white >= 0.03
    return found * 2 > len(boxes)


def _look_at_image(doc: dict, data: bytes, image_where: str, where: str) -> None:
    """Check an item's image (strict decode), its size against meta.img_size (the person boxes are
    in that size), and whether it shows the person tags (``doc["tags"]``)."""
    image = images.open_image(data, image_where)
    stated = (doc["width"], doc["height"])
    if None not in stated and tuple(round(v) for v in stated) != image.size:
        raise SourceError(f"{where} ({doc['image_name']!r}), key 'meta.img_size': {stated[0]:g} x {stated[1]:g} but the "
                          f"image is {image.size[0]} x {image.size[1]} (person boxes are in the stated size)")
    try:  # without a stated size, the boxes are checked against the image itself
        check_boxes(doc["person_boxes"], image.size)
    except ValueError as err:
        raise SourceError(f"{where} ({doc['image_name']!r}), key 'meta.person_bbox': {err}") from None
    rgb = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    doc["tags"] = "in image" if has_person_tags(rgb, doc["person_boxes"]) else "drawn"


# ------------------------------------------------------------------------------------------
# Layout 1: the Hub release's table


def docs_from_table(dataset: datasets.Dataset, origin: Origin | None = None, *, check_images: bool = True) -> list[dict]:
    """Every row of a table in the Hub release's layout, as canonical docs (module docstring)."""
    origin = origin or in_memory("vague")
    if len(dataset) == 0:
        raise SourceError(f"{origin.where}: the dataset has no rows")
    missing = [c for c in TABLE_COLUMNS if c not in dataset.column_names]
    if missing:
        raise SourceError(f"{origin.where}: not the VAGUE release's layout: missing column(s) {missing}; found "
                          f"{sorted(dataset.column_names)}{INSPECT_HINT}")
    feature = dataset.features["image"]
    if not isinstance(feature, datasets.Image) and getattr(feature, "dtype", None) not in ("binary", "large_binary"):
        raise SourceError(f"{origin.where}: column 'image' holds {type(feature).__name__} values; the release "
                          f"embeds each image{INSPECT_HINT}")
    table = images.ImageTable(dataset, "image", origin)
    meta = columns(dataset, [c for c in dataset.column_names if c != "image"])
    docs = []
    for row in images.progress(range(len(dataset)), "VAGUE: checking items and images"):
        item = {name: values[row] for name, values in meta.items()}
        where = origin.locate(row)
        name = item.get("image_name")
        subset = subset_of_name(name) if isinstance(name, str) else "vcr"
        doc = item_to_doc(item, row, where, subset, table.ref(row))
        if check_images:
            _look_at_image(doc, table.encoded(row), table.where(row), where)
        docs.append(doc)
    check_ids(docs, origin.where)
    report_subsets(docs, origin.where, len(dataset))
    return [{k: doc[k] for k in DOC_FIELDS} for doc in docs]


def subset_counts(docs: Iterable[dict]) -> dict[str, int]:
    found = Counter(d["subset"] for d in docs)
    return {s: found.get(s, 0) for s in SUBSETS}


def report_subsets(docs: list[dict], where: str, rows: int) -> None:
    """Log the subset counts (and the drawn tags); on a table the size of the release, warn when the
    '@' rule does not give the release's 1,144 / 533."""
    counts = subset_counts(docs)
    drawn = sum(1 for d in docs if d["tags"] == "drawn")
    tags = f"; person tags drawn by spatial-tasks on {drawn} image(s) that had none" if drawn else ""
    log.info(f"{where}: VAGUE items: {counts['vcr']} VCR + {counts['ego4d']} Ego4D{tags}")
    if rows == sum(OFFICIAL_COUNTS.values()) and counts != OFFICIAL_COUNTS:
        log.warning(f"{where}: {rows} rows like the official release, but the subsets are {counts}, not "
                    f"{OFFICIAL_COUNTS}: the '@' rule for VCR names does not fit this copy; per-subset figures may "
                    "be off")


# ------------------------------------------------------------------------------------------
# Layout 2: the GitHub item files and image folder


def image_index(root: Path) -> dict[str, Path]:
    """``image_name`` -> its ``<image_name>_annot.jpg`` anywhere under ``root`` (one walk)."""
    found: dict[str, Path] = {}
    for path in sorted(Path(root).rglob(f"*{IMAGE_SUFFIX}")):
        found.setdefault(path.name[: -len(IMAGE_SUFFIX)], path)
    return found


def read_json(file: Path) -> Any:
    try:
        return json.loads(Path(file).read_text(encoding="utf-8"))
    except RecursionError:
        raise SourceError(f"{file}: JSON nested too deeply to read") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise SourceError(f"{file}: not a readable JSON file ({type(err).__name__}: {str(err)[:160]})") from None


ITEM_KEYS = frozenset({"image_name", "indirect", "solution", "mcq"})  # any one marks a VAGUE item


def _has_items(value: Any) -> bool:
    return isinstance(value, list) and any(isinstance(v, Mapping) and ITEM_KEYS & set(v) for v in value)


def item_files(root: Path) -> tuple[list[tuple[Path, list]], list[Path]]:
    """(item files with their items, JSON files that hold no VAGUE items) under ``root``.

    A file is an item file when any of its elements looks like an item (has one of ``ITEM_KEYS``):
    then every element is read and checked, so one bad item names itself instead of hiding its
    file. Items wrapped in an object ({"items": [...]}) are refused: the release's files are lists.
    Folders named ``_*`` (the generator's scratch) or ``.*`` are not read."""
    items, other = [], []
    for path in sorted(Path(root).rglob("*.json")):
        if any(part.startswith(("_", ".")) for part in path.relative_to(root).parts[:-1]):
            continue  # scratch (the generator's _work) and hidden folders hold no release files
        value = read_json(path)
        if _has_items(value):
            items.append((path, value))
            continue
        if isinstance(value, Mapping):
            wrapped = [key for key, inner in value.items() if _has_items(inner)]
            if wrapped:
                raise SourceError(f"{path}: the VAGUE items are inside an object (key {wrapped[0]!r}); the release's "
                                  "item files are a JSON list of items: write that list on its own")
        other.append(path)
    return items, other


def is_item_folder(root: Path) -> bool:
    """Whether a folder holds the GitHub layout (JSON item lists) rather than the Hub's parquet."""
    root = Path(root)
    return root.is_dir() and not any(root.rglob("*.parquet")) and any(root.rglob("*.json"))


def docs_from_folder(root: Path, *, check_images: bool = True, require_images: bool = True) -> list[dict]:
    """Every item of a folder in the GitHub layout, as canonical docs (see the module docstring)."""
    root = Path(root)
    if not root.is_dir():
        raise SourceError(f"{root}: not a folder")
    files, other = item_files(root)
    if not files:
        found = sorted(p.name for p in root.rglob("*.json"))[:10]
        raise SourceError(f"{root}: no VAGUE item files (JSON lists of items, named like vcr_1144_final.json or "
                          f"ego4d_533_final.json); JSON files found: {found or 'none'}{INSPECT_HINT}")
    if other:
        log.warning(f"{root}: not read (not lists of VAGUE items): {', '.join(str(p.relative_to(root)) for p in other)}")
    index = image_index(root)
    docs = []
    first_of_id: dict[str, str] = {}  # item id -> "FILE, item K" that gave it
    for file, items in files:
        named = subset_of_file(file)
        if named is None:
            log.info(f"{file}: its name says neither or both subsets; each item's subset comes from its image_name "
                     "('@': VCR)")
        for k, item in enumerate(items):
            name = item.get("image_name") if isinstance(item, Mapping) else None
            path = index.get(name) if isinstance(name, str) else None
            if path is None and require_images and isinstance(name, str):
                raise SourceError(f"{file}, item {k} ({name!r}): image {name}{IMAGE_SUFFIX} not found under {root} "
                                  "(the person-tagged VCR / Ego4D frames: tasks/vague/README.md, Images)")
            subset = named or (subset_of_name(name) if isinstance(name, str) else "vcr")
            image = None if path is None else images.ref_of_file(path, f"{path} (item {subset}-{k:05d})")
            doc = item_to_doc(item, k, f"{file}, item {k}", subset, image)
            if doc["item_id"] in first_of_id:  # ids are positions in a subset's file: two files would clash
                raise SourceError(f"{file}, item {k}: its id {doc['item_id']} is also {first_of_id[doc['item_id']]}: "
                                  f"the {SUBSETS[subset]} items must come from one file (an item's id is its "
                                  "position in it)")
            first_of_id[doc["item_id"]] = f"{file}, item {k}"
            docs.append(doc)
    check_ids(docs, str(root))
    if check_images:
        for doc in images.progress(docs, "VAGUE: checking images"):
            if doc["image"] is not None:
                _look_at_image(doc, images.ref_bytes(doc["image"]), doc["image"]["where"], first_of_id[doc["item_id"]])
    report_subsets(docs, str(root), len(docs))
    return [{k: doc[k] for k in DOC_FIELDS} for doc in docs]


def check_folder(root: Path, subset: str | None = None) -> str:
    """Which layout a local folder holds ("hub" or "items"), checked without reading images: the
    Hub layout's parquet has the release's columns and a train split; the GitHub layout has item
    files (of ``subset``, when given). Else a one-line SourceError saying what is there."""

    root = Path(root)
    if not root.is_dir():
        raise SourceError(f"{root}: not a folder")
    tables = sorted(root.rglob("*.parquet"))
    if tables:
        names = parquet_columns(tables[0])
        missing = [c for c in TABLE_COLUMNS if c not in names]
        if missing:
            raise SourceError(f"{tables[0]}: not the VAGUE release's layout: missing column(s) {missing}; found "
                              f"{names}{INSPECT_HINT}")
        splits = datasets.get_dataset_split_names(str(root))
        if "train" not in splits:
            raise SourceError(f"{root}: the VAGUE release's layout has a split 'train'; this folder has {splits}")
        return "hub"
    files, _ = item_files(root)
    if not files:
        found = sorted(p.name for p in root.rglob("*.json"))[:10]
        raise SourceError(f"{root}: holds neither the Hub release's parquet nor item files (JSON lists of VAGUE "
                          f"items); JSON files found: {found or 'none'}{INSPECT_HINT}")
    if subset is not None:
        subsets = {subset_of_file(f) or subset_of_name(str(i.get("image_name", ""))) for f, items in files
                   for i in items if isinstance(i, Mapping)}
        if subset not in subsets:
            raise SourceError(f"{root}: no {SUBSETS[subset]} items (found {sorted(subsets)})")
    return "items"


def select(docs: Iterable[dict], subset: str | None) -> list[dict]:
    return [d for d in docs if subset is None or d["subset"] == subset]
