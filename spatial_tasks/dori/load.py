"""Where DORI data enters: any supported layout -> canonical docs (schema.DOC_FIELDS), checked.

Two kinds of source:

* **our generator's datasets** (``schema.GENERATED_FEATURES``; the bundled sample): every column
  is required, and the stored option values and truth must agree with the option texts;
* **the official release** ``appledora/DORI-Benchmark`` (or a local copy). Its card declares no
  configs or features, so ``discover`` asks ``datasets`` what is there -- every config, every
  split of each -- and ``map_columns`` maps the columns it finds by name (``ALIASES``). The task
  and granularity of a row come from a column if there is one, else from the config name, the
  split name or the data file's path relative to the source's own folder (e.g.
  ``compound_rotation/granular.parquet``; the folders above it never count). Options may
  be a list, a JSON list, "A. ... B. ..." text or one column per letter; the answer a letter, a
  0-based index or the option text; images embedded, base64 text or paths inside the folder.
  What cannot be mapped is an error listing what was found and what is needed.

Docs never hold pixels: they carry image references (``common.images``) opened when shown. The
option order shown to the model is a seeded permutation (``shuffle``), fixed here so that the
prompt and the scoring see the same order. "Cannot be determined" can be a question's answer (the
paper's Fig. 24): choosing it is then correct, and otherwise a decline (tasks.score).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import datasets
from loguru import logger as log

from spatial_tasks.common import images
from spatial_tasks.common.choice import LETTERS, is_cannot_determine
from spatial_tasks.common.origin import Origin, folder_cache, in_memory, origin_for
from spatial_tasks.common.validate import (
    INSPECT_HINT,
    SourceError,
    check_unique,
    columns,
    dataset_file_problem,
    is_finite_number,
    require_columns,
    short,
)
from spatial_tasks.common.validate import category as feature_category
from spatial_tasks.dori import soft
from spatial_tasks.dori.schema import (
    BENCHMARK,
    DOC_FIELDS,
    GENERATED_FEATURES,
    GRANULARITIES,
    TASKS,
    TWO_IMAGE_TASKS,
    TWO_OBJECT_TASKS,
    broad_classes,
    is_natural,
)

PAPER_SEEDS = (42, 1998, 107983)
DEFAULT_SEED = PAPER_SEEDS[0]
MAX_OPTIONS = 16  # the paper's largest option set


# Column aliases of the official release (lower-cased; the first present wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "image": ("image", "img", "image_1", "image1", "first_image", "image_path", "img_path", "file_name", "path"),
    "image2": ("image2", "image_2", "second_image", "img2", "image_b", "image2_path"),
    "images": ("images", "image_list", "imgs", "frames"),  # one list cell: [first, second]
    "question": ("question", "prompt", "query", "instruction", "text"),
    "options": ("options", "choices", "candidates", "option_list", "answer_choices"),
    "answer": ("answer", "correct_answer", "gt_answer", "ground_truth", "label", "gt", "answer_idx", "answer_index"),
    "task": ("task", "task_name", "question_type", "subtask", "task_type", "dimension"),
    "granularity": ("granularity", "level", "question_level", "granular", "difficulty"),
    "source": ("source", "source_dataset", "dataset", "data_source", "origin"),
    "category": ("category", "object_category", "object_class", "obj_class", "class_name", "object"),
    "boxes": ("boxes", "bboxes", "bbox", "bounding_boxes", "box"),
    "question_id": ("question_id", "qid", "id", "idx", "index", "uid"),
}
LETTER_COLUMNS = tuple((f"option_{c.lower()}", c, f"choice_{c.lower()}") for c in LETTERS[:MAX_OPTIONS])

# Words that name a task in a column value, a config, a split or a file path (normalised: lower
# case, non-alphanumerics as "_"); checked in this order, so "inter_object" wins over "object".
TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("view_parallel", "view_parallelism"), ("parallelism", "view_parallelism"), ("frontal", "view_parallelism"),
    ("directional", "directional_facing"), ("direction_facing", "directional_facing"),
    ("single_axis", "single_axis_rotation"), ("single", "single_axis_rotation"),
    ("compound", "compound_rotation"), ("multi_axis", "compound_rotation"),
    ("inter_object", "inter_object_direction"), ("relative_object", "inter_object_direction"),
    ("viewer_scene", "viewer_scene_direction"), ("viewer", "viewer_scene_direction"),
    ("canonical", "canonical_orientation"),
)
TASK_CODES = {**{code.lower(): task for task, code in TASKS.items()},
              **{f"q{k}": task for k, task in enumerate(TASKS, start=1)}}
GRANULARITY_WORDS = {"coarse": "coarse", "granular": "granular", "fine": "granular", "fine_grained": "granular",
                     "finegrained": "granular", "metric": "granular", "categorical": "coarse"}


# ------------------------------------------------------------------------------------ names


def _tokens(text: object) -> str:
    return "_" + re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_") + "_"


def task_from_text(text: object) -> str | None:
    """The task a name or value refers to ("VP", "Q3", "compound_rotation_granular", ...)."""
    norm = _tokens(text)
    for word, task in TASK_WORDS:
        if f"_{word}" in norm:
            return task
    for code, task in TASK_CODES.items():
        if f"_{code}_" in norm:
            return task
    return None


def granularity_from_text(text: object) -> str | None:
    norm = _tokens(text)
    for word, granularity in GRANULARITY_WORDS.items():
        if f"_{word}_" in norm or norm.strip("_").endswith(word) or norm.strip("_").startswith(word):
            return granularity
    return None


def resolve_columns(names: Iterable[str]) -> dict[str, str]:
    """Canonical field -> the dataset's column, for the columns ``ALIASES`` knows."""
    lower = {c.lower(): c for c in names}
    found = {}
    for field, aliases in ALIASES.items():
        for alias in aliases:
            if alias in lower and lower[alias] not in found.values():
                found[field] = lower[alias]
                break
    return found


def _letter_columns(names: Iterable[str]) -> list[str]:
    lower = {c.lower(): c for c in names}
    found = []
    for aliases in LETTER_COLUMNS:
        column = next((lower[a.lower()] for a in aliases if a.lower() in lower), None)
        if column is None:
            break
        found.append(column)
    return found if len(found) >= 2 else []


# ------------------------------------------------------------------------------- shuffling


def shuffle(question_id: str, n: int, seed: int) -> list[int]:
    """The shown option order for a question: ``order[k]`` is the index of the option shown k-th.

    Seeded by (seed, question_id) so every question has its own order, the same in every run, and
    the paper's three seeds (42, 1998, 107983) give three orders."""
    order = list(range(n))
    random.Random(f"dori:{seed}:{question_id}").shuffle(order)
    return order


# ------------------------------------------------------------------------------- one row


def _finish_doc(doc: dict, seed: int) -> dict:
    n = len(doc["options"])
    doc["n_options"] = n
    doc["shown_order"] = shuffle(doc["question_id"], n, seed)
    doc["seed"] = seed
    doc["broad_classes"] = broad_classes(doc["category"])
    doc["natural"] = is_natural(doc["source"])
    return doc


def _check_options(options: object, bad) -> list[str]:
    if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
        raise bad("options", f"must be a list of option texts, got {short(options)}")
    texts = [o.strip() for o in options]
    if not 2 <= len(texts) <= MAX_OPTIONS:
        raise bad("options", f"{len(texts)} options; a question needs 2 to {MAX_OPTIONS}")
    if any(not t for t in texts):
        raise bad("options", f"an empty option text in {short(options)}")
    if len(set(t.lower() for t in texts)) != len(texts):
        raise bad("options", f"the same option twice in {short(options)}")
    return texts


def _answer_index(answer: object, options: Sequence[str], bad) -> int:
    """A letter ("B", "(B)", "B."), a 0-based index, or the option's text."""
    n = len(options)
    if isinstance(answer, bool) or answer is None:
        raise bad("answer", f"{short(answer)} is not an answer")
    if isinstance(answer, float) and answer.is_integer():  # an index column that went through pandas with NaNs
        answer = int(answer)
    if isinstance(answer, int):
        if 0 <= answer < n:
            return answer
        raise bad("answer", f"index {answer} is outside the {n} options (answers are 0-based indices)")
    if isinstance(answer, str):
        text = answer.strip()
        letter = re.fullmatch(r"\(?([A-Z])\)?[.:]?", text)
        if letter and LETTERS.index(letter.group(1)) < n:
            return LETTERS.index(letter.group(1))
        lowered = [o.lower() for o in options]
        if text.lower() in lowered:
            return lowered.index(text.lower())
        if text.isdigit() and int(text) < n:
            return int(text)
    raise bad("answer", f"{short(answer)} is neither a letter, a 0-based index nor the text of one of the "
                        f"{n} options {short(list(options), 160)}")


def _is_number(value: object) -> bool:
    """A number, finite or not (a box of four numbers with a NaN is still a box, refused as such)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_boxes(boxes: object, task: str, bad) -> list[dict]:
    """[{"label": "A", "box": [x0, y0, x1, y1]}] from our list, a {label: box} dict, one box or a
    list of boxes (labelled A, B, ... in order)."""
    if boxes is None:
        return []
    if isinstance(boxes, str):
        try:
            boxes = json.loads(boxes)
        except (ValueError, RecursionError):
            raise bad("boxes", f"{short(boxes)} is not a JSON box list") from None
    if isinstance(boxes, (list, tuple)) and any(isinstance(b, str) for b in boxes):
        try:  # datasets' Json feature stores mixed-shape JSON values element by element, as text
            boxes = [json.loads(b) if isinstance(b, str) else b for b in boxes]
        except (ValueError, RecursionError):
            raise bad("boxes", f"{short(boxes)} is not a list of boxes") from None
    if isinstance(boxes, Mapping) and "label" not in boxes:
        boxes = [{"label": str(k), "box": v} for k, v in boxes.items()]
    elif isinstance(boxes, (list, tuple)) and len(boxes) == 4 and all(_is_number(v) for v in boxes):
        boxes = [{"label": "A", "box": list(boxes)}]  # one box (a NaN in it is the box's fault, below)
    elif isinstance(boxes, (list, tuple)) and all(isinstance(b, (list, tuple)) for b in boxes):
        boxes = [{"label": LETTERS[k], "box": list(b)} for k, b in enumerate(boxes)]
    if not isinstance(boxes, (list, tuple)):
        raise bad("boxes", f"{short(boxes)} is not a list of boxes")
    out = []
    for k, item in enumerate(boxes):
        if not isinstance(item, Mapping):
            raise bad(f"boxes[{k}]", f"{short(item)} is neither a box [x0, y0, x1, y1] nor {{label, box}}")
        box = item.get("box") if isinstance(item, Mapping) else None
        label = item.get("label") if isinstance(item, Mapping) else None
        if not isinstance(label, str) or not label.strip():
            raise bad(f"boxes[{k}].label", f"{short(label)} is not a label")
        if not (isinstance(box, (list, tuple)) and len(box) == 4 and all(is_finite_number(v) for v in box)):
            raise bad(f"boxes[{k}].box", f"{short(box)} is not four finite numbers [x0, y0, x1, y1]")
        x0, y0, x1, y1 = (float(v) for v in box)
        if not (x0 < x1 and y0 < y1 and min(x0, y0) >= 0):
            raise bad(f"boxes[{k}].box", f"{[x0, y0, x1, y1]} is not a box with x0 < x1, y0 < y1 inside the image")
        out.append({"label": label.strip(), "box": [x0, y0, x1, y1]})
    labels = [b["label"] for b in out]
    if len(set(labels)) != len(labels):
        raise bad("boxes", f"a label twice in {labels}")
    if task in TWO_OBJECT_TASKS and out and not {"A", "B"} <= set(labels):
        raise bad("boxes", f"{task} asks about objects A and B; boxes are labelled {labels}")
    return out


def _has_images(dataset: datasets.Dataset, column: str) -> list[bool]:
    """Which rows of an optional image column hold an image, read from Arrow without the bytes
    (an Image cell is a struct {bytes, path}; a null one has neither; a text cell may be empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = dataset.data.column(column)
    if pa.types.is_struct(cells.type):
        present = pc.and_(pc.is_valid(cells), pc.or_(pc.is_valid(pc.struct_field(cells, "bytes")),
                                                       pc.is_valid(pc.struct_field(cells, "path"))))
    elif pa.types.is_string(cells.type) or pa.types.is_large_string(cells.type):
        present = pc.and_(pc.is_valid(cells), pc.greater(pc.utf8_length(cells), 0))
    else:
        present = pc.is_valid(cells)
    return [bool(v) for v in pc.fill_null(present, False).to_pylist()]


def _json_cell(value: Mapping[str, Any], field: str, bad) -> Any:
    try:
        return json.loads(value[field])
    except (TypeError, ValueError, RecursionError):
        raise bad(field, f"{short(value[field])} is not JSON text") from None


def _values(task: str, options: Sequence[str]) -> list:
    return [soft.option_value(task, o) for o in options]


# ------------------------------------------------------------------------- our generator


def _generated_docs(dataset: datasets.Dataset, origin: Origin, seed: int, check: bool) -> list[dict]:
    require_columns(dataset, {name: feature_category(f) for name, f in GENERATED_FEATURES.items()}, origin,
                    "a spatial-tasks generated DORI dataset", SourceError)
    first = images.ImageTable(dataset, "image", origin)
    second = images.ImageTable(dataset, "image2", origin)
    meta = columns(dataset, [c for c in GENERATED_FEATURES if c not in ("image", "image2")])
    has_second = _has_images(dataset, "image2")
    check_unique(meta["question_id"], origin, "question_id", SourceError)
    docs = []
    rows = range(len(dataset))
    for row in images.progress(rows, "DORI: checking rows and images") if check else rows:
        def bad(field: str, problem: str, row=row) -> SourceError:
            return SourceError(f"{origin.locate(row)}, field {field!r}: {problem}")

        value = {name: values[row] for name, values in meta.items()}
        task, granularity = value["task"], value["granularity"]
        if task not in TASKS:
            raise bad("task", f"{short(task)} is not one of {list(TASKS)}")
        if granularity not in GRANULARITIES:
            raise bad("granularity", f"{short(granularity)} is not coarse or granular")
        if not isinstance(value["question_id"], str) or not value["question_id"].strip():
            raise bad("question_id", f"empty question id {short(value['question_id'])}")
        if (task in TWO_IMAGE_TASKS) != has_second[row]:
            raise bad("image2", f"{task} questions show {'two images' if task in TWO_IMAGE_TASKS else 'one image'}; "
                                f"image2 is {'missing' if task in TWO_IMAGE_TASKS else 'set'}")
        options = _check_options(value["options"], bad)
        answer = _answer_index(value["answer"], options, bad)
        if options[answer] != value["answer"]:
            raise bad("answer", f"{short(value['answer'])} must be the text of the correct option")
        option_values, truth = _json_cell(value, "option_values", bad), _json_cell(value, "truth", bad)
        if not isinstance(option_values, list) or len(option_values) != len(options):
            raise bad("option_values", f"needs one value per option ({len(options)}), got {short(option_values)}")
        if not isinstance(truth, dict) or "value" not in truth:
            raise bad("truth", f"must be a JSON object with the answer's 'value', got {short(truth)}")
        if option_values[answer] != truth["value"]:
            raise bad("truth", f"value {short(truth['value'])} is not the correct option's value "
                               f"{short(option_values[answer])}")
        if granularity == "granular":
            read = _values(task, options)
            for k, (stored, text_value) in enumerate(zip(option_values, read)):
                if stored != text_value:
                    raise bad(f"option_values[{k}]", f"{short(stored)} but the option text {options[k]!r} reads "
                                                     f"as {short(text_value)}")
        boxes = _check_boxes(value["boxes"], task, bad)
        if not boxes and task != "canonical_orientation":  # transformed images of a folder carry no boxes
            raise bad("boxes", "generated questions carry the boxes of the objects they ask about")
        if check:
            size = images.check_image(first.encoded(row), first.where(row))[1]
            if has_second[row]:
                images.check_image(second.encoded(row), second.where(row))
            for b in boxes:
                if b["box"][2] > size[0] + 0.5 or b["box"][3] > size[1] + 0.5:
                    raise bad("boxes", f"box {b['label']} {b['box']} reaches outside the {size[0]} x {size[1]} image")
        if not isinstance(value["source"], str) or not value["source"].strip():
            raise bad("source", f"empty source {short(value['source'])}")
        docs.append({
            "benchmark": BENCHMARK, "question_id": value["question_id"], "task": task, "granularity": granularity,
            "image": first.ref(row), "image2": second.ref(row) if has_second[row] else None,
            "boxes": boxes, "boxes_drawn": False,
            "question": value["question"] or "", "options": options, "answer_index": answer,
            "option_values": json.dumps(option_values), "truth": json.dumps(truth),
            "source": value["source"], "category": value["category"] or None,
            "object_a": value["category"] or None, "object_b": truth.get("object_b"),
        })
    for doc in docs:
        _finish_doc(doc, seed)
    return docs


# ------------------------------------------------------------------------ official layouts


def _image_table(dataset: datasets.Dataset, column: str, origin: Origin) -> images.ImageTable:
    feature = dataset.features[column]
    if isinstance(feature, datasets.Image):
        return images.ImageTable(dataset, column, origin)
    if getattr(feature, "dtype", None) in ("string", "large_string"):
        sample = next((v for v in columns(dataset.select(range(min(5, len(dataset)))), [column])[column] if v), "")
        if re.fullmatch(r"[A-Za-z0-9+/=\s]{200,}", sample or ""):
            return images.ImageTable(dataset, column, origin, encoding="base64")
        return images.ImageTable(dataset, column, origin, encoding="path")
    if getattr(feature, "dtype", None) in ("binary", "large_binary"):
        return images.ImageTable(dataset, column, origin)
    raise SourceError(f"{origin.where}: column {column!r} holds {type(feature).__name__} values; an image column "
                      f"holds images, bytes, base64 text or a path inside the dataset folder{INSPECT_HINT}")


def _options_of(get: Mapping[str, Any], letter_cols: Sequence[str], bad) -> list[str]:
    if letter_cols:
        return _check_options([get[c] for c in letter_cols if get[c] not in (None, "")], bad)
    options = get.get("options")
    if isinstance(options, str):
        text = options.strip()
        if text.startswith("["):
            try:
                options = json.loads(text)
            except (ValueError, RecursionError):
                raise bad("options", f"{short(text)} is not a JSON list") from None
        else:  # "A. first B. second" or one option per line
            parts = re.split(r"(?:^|\n|\s)\(?[A-P][\).:]\s+", "\n" + text)
            options = [p.strip() for p in parts if p.strip()]
    return _check_options(options, bad)


def map_columns(dataset: datasets.Dataset, origin: Origin, hint: str) -> dict[str, str]:
    """The official columns this split maps to, or an error saying what was found and needed."""
    names = dataset.column_names
    cols = resolve_columns(names)
    letters = _letter_columns(names)
    missing = []
    if "image" not in cols and "images" not in cols:
        missing.append(f"an image column ({', '.join(ALIASES['image'][:4])}, ... or a list column images)")
    if "options" not in cols and not letters:
        missing.append(f"options ({', '.join(ALIASES['options'][:3])}, ... or columns A, B, C ...)")
    if "answer" not in cols:
        missing.append(f"the answer ({', '.join(ALIASES['answer'][:4])}, ...)")
    if "task" not in cols and task_from_text(hint) is None and not origin.files:
        missing.append("the task (a task column, or a config / split / file name naming it)")
    if missing:
        raise SourceError(f"{origin.where}: cannot read this split as DORI questions: missing {'; '.join(missing)}. "
                          f"Found columns {sorted(names)}{INSPECT_HINT}")
    return cols


def _official_docs(dataset: datasets.Dataset, origin: Origin, hint: str, seed: int, check: bool) -> list[dict]:
    cols = map_columns(dataset, origin, hint)
    letter_cols = [] if "options" in cols else _letter_columns(dataset.column_names)
    if "image" in cols:
        first = _image_table(dataset, cols["image"], origin)
        second = _image_table(dataset, cols["image2"], origin) if "image2" in cols else None
        second_present = _has_images(dataset, cols["image2"]) if second is not None else None
    else:  # one list column holds the question's images
        first = images.ImageTable(dataset, cols["images"], origin, item=0)
        second = images.ImageTable(dataset, cols["images"], origin, item=1)
        second_present = [n >= 2 for n in first.lengths()]
    plain = [c for f, c in cols.items() if f not in ("image", "image2", "images")] + letter_cols
    meta = columns(dataset, plain)
    docs, undeterminable = [], []
    for row in range(len(dataset)):
        def bad(field: str, problem: str, row=row) -> SourceError:
            return SourceError(f"{origin.locate(row)}, field {field!r}: {problem}")

        get = {f: meta[c][row] for f, c in cols.items() if c in meta}
        get.update({c: meta[c][row] for c in letter_cols})
        names = [get.get("task"), hint, _relative_file(origin, row)]
        task = next((t for t in map(task_from_text, [n for n in names if n]) if t), None)
        if task is None:
            raise bad(cols.get("task", "task"), f"cannot tell the task from {short(get.get('task'))}, the name "
                                               f"{hint!r} or the file {names[2]}; use one of {list(TASKS)} (or "
                                               f"VP..CO, Q1..Q7){INSPECT_HINT}")
        granularity = next((g for g in map(granularity_from_text, [get.get("granularity"), *names]) if g), None)
        if granularity is None:
            raise bad(cols.get("granularity", "granularity"), f"cannot tell coarse from granular from "
                                                             f"{short(get.get('granularity'))}, {hint!r} or "
                                                             f"{names[2]}{INSPECT_HINT}")
        options = _options_of(get, letter_cols, bad)
        answer = _answer_index(get["answer"], options, bad)
        if is_cannot_determine(options[answer]):
            undeterminable.append(row)
        two = second is not None and second_present[row]
        if task in TWO_IMAGE_TASKS and not two:
            raise bad(cols.get("image2", "image2"), f"{task} questions show two images; no second image column "
                                                    f"({', '.join(ALIASES['image2'][:3])}) or an empty cell")
        question_id = get.get("question_id")
        question_id = f"{hint}:{row}" if question_id in (None, "") else str(question_id)
        values = _values(task, options)
        source = get.get("source")
        docs.append({
            "benchmark": BENCHMARK, "question_id": question_id, "task": task, "granularity": granularity,
            "image": first.ref(row), "image2": second.ref(row) if two else None,
            "boxes": _check_boxes(get.get("boxes"), task, bad), "boxes_drawn": True,
            "question": get.get("question") if isinstance(get.get("question"), str) else "",
            "options": options, "answer_index": answer, "option_values": json.dumps(values),
            "truth": json.dumps({"value": values[answer]}),
            "source": str(source) if source not in (None, "") else None,
            "category": str(get["category"]) if get.get("category") not in (None, "") else None,
            "object_a": str(get["category"]) if get.get("category") not in (None, "") else None, "object_b": None,
        })
    check_unique([d["question_id"] for d in docs], origin, cols.get("question_id", "question_id"), SourceError)
    if undeterminable:
        log.info(f"{origin.where}: {len(undeterminable)} question(s) have 'Cannot be determined' as their answer "
                 f"(first: {origin.locate(undeterminable[0])}); choosing it is correct there "
                 "(tasks/dori/README.md, Parsing answers)")
    if check:
        first.check(description="DORI: checking images")
        if second is not None:
            second.check([row for row in range(len(dataset)) if second_present[row]], "DORI: checking images")
    for doc in docs:
        _finish_doc(doc, seed)
    return docs


def _relative_file(origin: Origin, row: int) -> str | None:
    """The data file of ``row`` relative to the source's own folder (so that the folders a user
    keeps the copy in never name a task or granularity), or its name alone."""
    file = origin.file_of(row)
    if file is None:
        return None
    root = origin.root
    try:
        return str(file.resolve().relative_to(root.resolve())) if root is not None else file.name
    except ValueError:
        return file.name


# ------------------------------------------------------------------------------ entry points


def is_generated(dataset: datasets.Dataset) -> bool:
    """Our generator's layout: its own columns (truth, option_values, granularity, image2)."""
    return {"truth", "option_values", "granularity", "image2"} <= set(dataset.column_names)


def to_docs(dataset: datasets.Dataset, origin: Origin | None = None, *, hint: str = "", seed: int = DEFAULT_SEED,
            check_images: bool = True) -> list[dict]:
    """Canonical docs (dicts with ``DOC_FIELDS``) of one loaded split, any supported layout."""
    origin = origin or in_memory(hint or "dori")
    if len(dataset) == 0:
        return []
    if is_generated(dataset):
        docs = _generated_docs(dataset, origin, seed, check_images)
    else:
        docs = _official_docs(dataset, origin, hint or origin.label, seed, check_images)
    return [{name: doc.get(name) for name in DOC_FIELDS} for doc in docs]


def discover(path: str, load_kwargs: Mapping[str, Any] | None = None) -> list[tuple[str, str, datasets.Dataset, Origin]]:
    """Every (config, split) of a Hub id or local folder, loaded: what ``datasets`` finds there."""
    load_kwargs = dict(load_kwargs or {})
    try:
        configs = datasets.get_dataset_config_names(path, **load_kwargs)
    except Exception as err:  # noqa: BLE001 - reported with the path
        raise SourceError(f"{path}: cannot list the dataset's configs ({type(err).__name__}: {str(err)[:200]})") from None
    parts = []
    for config in configs:
        try:
            splits = datasets.get_dataset_split_names(path, config, **load_kwargs)
        except Exception as err:  # noqa: BLE001
            problem = dataset_file_problem(path, config, **load_kwargs)
            raise SourceError(f"{path} [{config}]: " + (problem or f"cannot list its splits ({type(err).__name__}: "
                                                                   f"{str(err)[:200]}); configs found: {configs}")) from None
        for split in splits:
            try:
                data = datasets.load_dataset(path, config, split=split, **folder_cache(path, load_kwargs))
            except Exception as err:  # noqa: BLE001
                problem = dataset_file_problem(path, config, **load_kwargs)
                if problem:
                    raise SourceError(f"{path} [{config}] split {split}: {problem}") from None
                raise SourceError(f"{path} [{config}] split {split}: cannot load ({type(err).__name__}: "
                                  f"{str(err)[:200]}); configs found: {configs}, splits: {splits}") from None
            parts.append((config, split, data, origin_for(data, path, config, split, load_kwargs)))
    if not parts:
        raise SourceError(f"{path}: no configs or splits found")
    return parts


def load_source(path: str, *, seed: int = DEFAULT_SEED, load_kwargs: Mapping[str, Any] | None = None,
                check_images: bool = True) -> list[dict]:
    """Every question of a source (Hub id or folder, any supported layout), as canonical docs."""
    docs = []
    found = []
    for config, split, data, origin in discover(path, load_kwargs):
        found.append(f"{config}/{split} ({len(data)} rows, columns {sorted(data.column_names)})")
        hint = config if config != "default" else split
        docs += to_docs(data, origin, hint=f"{hint} {split}" if hint != split else hint, seed=seed,
                        check_images=check_images)
    if not docs:
        raise SourceError(f"{path}: no DORI questions found in {found}")
    check_unique([(d["task"], d["granularity"], d["question_id"]) for d in docs], in_memory(path),
                 "question_id", SourceError)
    return docs


def check_folder(root, wanted: Sequence[tuple[str, str]] = ()) -> set[tuple[str, str]]:
    """The (task, granularity) pairs a local folder holds, read without the images; a SourceError
    when it holds no DORI question or lacks one of ``wanted`` (naming what it has)."""
    found = _pairs_in(str(root))
    missing = [f"{t}_{g}" for t, g in wanted if (t, g) not in found]
    if missing:
        raise SourceError(f"{root}: no {', '.join(missing)} questions (it has: "
                          f"{', '.join(sorted(f'{t}_{g}' for t, g in found))})")
    return found


@cache
def _pairs_in(root: str) -> frozenset[tuple[str, str]]:
    return frozenset((d["task"], d["granularity"]) for d in load_source(root, check_images=False))


@cache
def _cached_source(path: str, seed: int, load_kwargs: str) -> tuple[dict, ...]:
    return tuple(load_source(path, seed=seed, load_kwargs=json.loads(load_kwargs)))


def source_docs(path: str, seed: int, load_kwargs: Mapping[str, Any] | None = None) -> list[dict]:
    """``load_source`` once per process and source (14 tasks read the same release)."""
    return list(_cached_source(path, seed, json.dumps(dict(load_kwargs or {}), sort_keys=True, default=str)))


def select(docs: Iterable[dict], task: str | None, granularity: str | None) -> list[dict]:
    return [d for d in docs if (task is None or d["task"] == task)
            and (granularity is None or d["granularity"] == granularity)]
