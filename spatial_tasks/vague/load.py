"""Where VAGUE data enters: the official JSON items (2.0 and 1.0 keys) and their person-tagged
images -> canonical docs (schema.DOC_FIELDS), every field checked.

A source is a local folder or a Hub dataset repo (downloaded with huggingface_hub). Its item files
are the JSON lists in it whose name says the subset (``vcr_1144_final.json``,
``ego4d_533_final.json``, anything with "vcr" / "ego4d" in the name); its images are the
``<image_name>_annot.jpg`` files anywhere under it (VCR and Ego4D frames come under their own
licences: tasks/vague/README.md says how to get them). Errors name the file, the item (index and
image_name) and the key; a missing image names the file it looked for.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from spatial_tasks.common import images
from spatial_tasks.common.validate import DataError, is_finite_number, short
from spatial_tasks.vague.schema import (
    BENCHMARK,
    DOC_FIELDS,
    IMAGE_SUFFIX,
    LETTERS,
    OPTION_KEYS,
    OPTION_TYPES,
    SUBSETS,
)

HUB_ID = "HazelNam/vague-bench"
SOURCE_ENV = "SPATIAL_TASKS_VAGUE_SOURCE"
SOURCE_COLUMN = "vague_source"


class SourceError(DataError):
    """VAGUE data that cannot be read; the message names the file, the item and the key."""


def subset_of(path: Path) -> str | None:
    name = path.name.lower()
    found = [s for s in SUBSETS if s in name]
    return found[0] if len(found) == 1 else None


def listener_of(solution: str) -> str:
    """The addressee: the solution triplet's first element ("(person1, move, sedan)" -> "person1";
    the code's ``solution.split(",")[0][1:]``)."""
    return solution.split(",")[0].strip().lstrip("(").strip()


def _option(mcq: Mapping, kind: str, bad) -> str:
    for key in OPTION_KEYS[kind]:
        if key in mcq:
            text = mcq[key]
            if not isinstance(text, str) or not text.strip():
                raise bad(f"mcq.{key}", f"empty option text {short(text)}")
            return text  # as released: the authors' prompts show the texts unstripped
    raise bad(f"mcq.{OPTION_KEYS[kind][0]}", f"missing (also accepted: {list(OPTION_KEYS[kind][1:])}); mcq has "
                                            f"keys {sorted(mcq)}")


def _text(item: Mapping, key: str, bad, required: bool = True) -> str | None:
    value = item.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise bad(key, f"missing or empty text {short(value)}")
    return value  # as released (the official "indirect" texts can end in spaces the prompts keep)


def item_to_doc(item: Any, index: int, file: Path, subset: str, image_path: Path | None) -> dict:
    """One official item -> a canonical doc, every field checked (errors name file, item, key)."""
    label = item.get("image_name") if isinstance(item, Mapping) else None

    def bad(key: str, problem: str) -> SourceError:
        return SourceError(f"{file}, item {index} ({label!r}), key {key!r}: {problem}")

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
    if not isinstance(ordering, list) or sorted(map(str, ordering)) != list(LETTERS):
        raise bad("mcq.ordering", f"{short(ordering)} is not a permutation of A, B, C, D")
    if len({t.strip().lower() for t in texts}) != 4:
        raise bad("mcq", f"two options have the same text: {texts}")
    meta = item.get("meta") if isinstance(item.get("meta"), Mapping) else {}
    if item.get("meta") is not None and not isinstance(item.get("meta"), Mapping):
        raise bad("meta", f"not an object: {short(item.get('meta'))}")
    size = meta.get("img_size") if isinstance(meta.get("img_size"), Mapping) else {}
    width, height = size.get("width"), size.get("height")
    for key, value in (("width", width), ("height", height)):
        if value is not None and (not is_finite_number(value) or value <= 0):
            raise bad(f"meta.img_size.{key}", f"{short(value)} is not a positive size")
    boxes = meta.get("person_bbox") or []
    if not isinstance(boxes, list):
        raise bad("meta.person_bbox", f"{short(boxes)} is not a list of boxes")
    for k, box in enumerate(boxes):
        if not (isinstance(box, list) and len(box) == 4 and all(is_finite_number(v) for v in box)
                and box[0] <= box[2] and box[1] <= box[3]):
            raise bad(f"meta.person_bbox[{k}]", f"{short(box)} is not [x1, y1, x2, y2]")
    rating = meta.get("rating") if isinstance(meta.get("rating"), Mapping) else {}
    for key in ("direct", "indirect"):
        value = rating.get(key)
        if value is not None and not (is_finite_number(value) and 1 <= value <= 5):
            raise bad(f"meta.rating.{key}", f"{short(value)} is not a rating 1-5")
    caption = meta.get("caption")
    if caption is not None and not isinstance(caption, str):
        raise bad("meta.caption", f"{short(caption)} is not text")
    entities = meta.get("ram_entity") or []
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        raise bad("meta.ram_entity", f"{short(entities)} is not a list of names")
    by_letter = sorted(zip(map(str, ordering), texts, OPTION_TYPES))
    return {
        "benchmark": BENCHMARK, "item_id": f"{subset}-{index:05d}", "subset": subset, "index": index,
        "image_name": image_name, "image_path": None if image_path is None else str(image_path),
        "direct": _text(item, "direct", bad, required=False) or "", "indirect": indirect, "solution": solution,
        "listener": listener_of(solution),
        "letters": [b[0] for b in by_letter], "option_texts": [b[1] for b in by_letter],
        "option_types": [b[2] for b in by_letter], "answer": str(ordering[0]), "correct_intention": texts[0].strip(),
        "caption": caption if isinstance(caption, str) and caption.strip() else None,
        "fake_caption": meta.get("fake_caption") if isinstance(meta.get("fake_caption"), str) else None,
        "entities": list(entities), "person_boxes": [list(map(float, b)) for b in boxes],
        "width": width, "height": height, "rating_direct": rating.get("direct"), "rating_indirect": rating.get("indirect"),
    }


def image_index(root: Path) -> dict[str, Path]:
    """``image_name`` -> its ``<image_name>_annot.jpg`` anywhere under ``root`` (one walk)."""
    found: dict[str, Path] = {}
    for path in sorted(Path(root).rglob(f"*{IMAGE_SUFFIX}")):
        found.setdefault(path.name[: -len(IMAGE_SUFFIX)], path)
    return found


def read_items(file: Path) -> list:
    try:
        items = json.loads(Path(file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise SourceError(f"{file}: not a readable JSON file ({type(err).__name__}: {str(err)[:160]})") from None
    if not isinstance(items, list):
        raise SourceError(f"{file}: expected a JSON list of VAGUE items, found {type(items).__name__}")
    return items


def item_files(root: Path) -> dict[str, list[Path]]:
    """The item files under ``root`` by subset (JSON lists whose name says vcr or ego4d)."""
    out: dict[str, list[Path]] = {}
    for path in sorted(Path(root).rglob("*.json")):
        subset = subset_of(path)
        if subset is not None:
            out.setdefault(subset, []).append(path)
    return out


def docs_from_folder(root: Path, *, check_images: bool = True, require_images: bool = True) -> list[dict]:
    """Every item of a local folder, as canonical docs (see the module docstring)."""
    root = Path(root)
    if not root.is_dir():
        raise SourceError(f"{root}: not a folder")
    files = item_files(root)
    if not files:
        found = sorted(p.name for p in root.rglob("*.json"))[:10]
        raise SourceError(f"{root}: no VAGUE item files (JSON lists named like vcr_1144_final.json or "
                          f"ego4d_533_final.json); JSON files found: {found or 'none'}")
    index = image_index(root)
    docs = []
    for subset, paths in files.items():
        for file in paths:
            for k, item in enumerate(read_items(file)):
                name = item.get("image_name") if isinstance(item, Mapping) else None
                path = index.get(name) if isinstance(name, str) else None
                if path is None and require_images and isinstance(name, str):
                    raise SourceError(f"{file}, item {k} ({name!r}): image {name}{IMAGE_SUFFIX} not found under {root} "
                                      "(the person-tagged VCR / Ego4D frames: tasks/vague/README.md, Images)")
                docs.append(item_to_doc(item, k, file, subset, path))
    ids = {}
    for doc in docs:
        key = (doc["subset"], doc["image_name"], doc["indirect"])
        if key in ids:
            raise SourceError(f"{root}: item {doc['item_id']} repeats item {ids[key]} (same image and utterance)")
        ids[key] = doc["item_id"]
    if check_images:
        for doc in images.progress(docs, "VAGUE: checking images"):
            if doc["image_path"] is None:
                continue
            _, size = images.check_image(Path(doc["image_path"]).read_bytes(), f"{doc['image_path']} (item {doc['item_id']})")
            stated = (doc["width"], doc["height"])
            if None not in stated and tuple(round(v) for v in stated) != tuple(size):
                raise SourceError(f"item {doc['item_id']} ({doc['image_name']!r}), key 'meta.img_size': {stated[0]} x "
                                  f"{stated[1]} but {doc['image_path']} is {size[0]} x {size[1]} (person boxes are in "
                                  "the stated size)")
    return [{k: doc[k] for k in DOC_FIELDS} for doc in docs]


def resolve_source(source: str, relative_to: Path | None = None) -> Path:
    """A local folder (absolute, or relative to the manifest that names it) or a Hub dataset id,
    downloaded once into the Hugging Face cache."""
    candidate = Path(source).expanduser()
    if not candidate.is_absolute() and relative_to is not None:
        candidate = (relative_to / candidate)
    if candidate.is_dir():
        return candidate.resolve()
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", source) and not candidate.exists():
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(source, repo_type="dataset"))
        except Exception as err:  # noqa: BLE001 - any Hub failure: say what to do instead
            raise SourceError(f"{source}: cannot download the Hub dataset ({type(err).__name__}: {str(err)[:160]}); "
                              f"point ${SOURCE_ENV} at a local folder with the item JSON files and images") from None
    raise SourceError(f"{source}: no such folder (a Hub dataset is given as ORG/NAME)")


@cache
def _cached(root: str, check_images: bool) -> tuple[dict, ...]:
    return tuple(docs_from_folder(Path(root), check_images=check_images))


def source_docs(source: str, relative_to: Path | None = None, check_images: bool = True) -> list[dict]:
    """``docs_from_folder`` once per process and source (16 tasks read the same release)."""
    root = resolve_source(os.environ.get(SOURCE_ENV) or source, relative_to)
    return list(_cached(str(root), check_images))


def select(docs: Iterable[dict], subset: str | None) -> list[dict]:
    return [d for d in docs if subset is None or d["subset"] == subset]

