"""O3-D schemas: the one place that names every field and normalises every source row.

Two shapes:

* The official Hub release ``liuyiqian/O3-D`` (split ``train`` only): one config per image
  subset (``SUBSET_COLUMNS``) plus ``visual_questions``, which holds no images and points at an
  image by ``(subset_name, image_name)``. Our fixture builder (``fixture.py``) writes the same
  layout.
* ``DOC_FEATURES`` — the canonical per-question doc every task hook, metric and baseline sees.
  ``spatial_tasks.o3d.load.build_docs`` joins ``visual_questions`` to the subsets and maps every
  row onto it; images are never copied into docs (``image_for(doc)`` resolves them lazily).

Facts encoded here (specs/o3d.md and the authors' loader):

* kb-* subsets show column ``image`` for plain questions; their marked images are not on the Hub
  and are drawn from ``targ_seg``/``dist_seg`` (markers.py).
* real-012cue and real-012cue-cropped show ``augmented_image`` (plain) or ``marked_image``;
  real-mcue shows ``image`` (plain) or ``marked_image``.
* ``ques_clarity``: low = 2, medium = 3, high = 3.5, highest = 4 (markers).
* Ground truth is ``odd_position`` (near | far | none); rows with ``none`` (0-cue scenes without
  an odd object) are kept but flagged ``scored = False``.
* real-012cue-cropped names carry ``-t{l,r}{far,near}``: the side of the crop that holds the
  target and the target's depth. The tag is the ground truth for that crop (it overrides
  ``odd_position``, which the authors' metadata copies from the uncropped photo). A question that
  asks about the other side ("Answer a question about the right object." on a ``-tl…`` crop)
  asks about a distractor, so its answer is the opposite depth — this reproduces the ``gt_position``
  of every cropped row in the authors' released result files.
"""

from __future__ import annotations

import ast
import functools
import math
import re
import warnings
from collections.abc import Mapping
from typing import Any

import datasets

from spatial_tasks.benchmark import Source
from spatial_tasks.common.validate import SourceError, finite_number, short

BENCHMARK = "o3d"
SOURCE = Source("liuyiqian/O3-D", env="SPATIAL_TASKS_O3D_SOURCE")  # the release, and its override
SPLIT = "train"
QUESTIONS_CONFIG = "visual_questions"

SYNTHETIC_SUBSETS = ("kb-0cue", "kb-1cue", "kb-2cue", "kb-no-lp")
REAL_SUBSETS = ("real-012cue", "real-012cue-cropped", "real-mcue")
SUBSETS = SYNTHETIC_SUBSETS + REAL_SUBSETS

# Image-valued columns of each official config (datasets.Image features).
SUBSET_IMAGE_COLUMNS: dict[str, tuple[str, ...]] = {
    **{name: ("image", "depth_map", "targ_seg", "dist_seg") for name in SYNTHETIC_SUBSETS},
    "real-012cue": ("image", "augmented_image", "marked_image", "targ_seg", "dist_seg"),
    "real-012cue-cropped": ("augmented_image", "marked_image", "targ_seg", "dist_seg"),
    "real-mcue": ("image", "marked_image", "targ_seg", "dist_seg"),
}
SYNTHETIC_METADATA_COLUMNS = (
    "image_name", "env_cat", "env_id", "obj_cat", "obj_id", "odd_position", "cues", "cue_strength",
    "depth_scale",
)
REAL_012CUE_METADATA_COLUMNS = (
    "image_name", "env_cat", "env_id", "obj_cat", "obj_id", "odd_position", "cues", "cue_strength",
)
REAL_MCUE_METADATA_COLUMNS = (
    "image_name", "num_distractors", "target_type", "orientation", "color", "focus", "shape", "size",
    "location", "pattern", "targ_min_depth", "targ_med_depth", "targ_max_depth", "dist_min_depth",
    "dist_med_depth", "dist_max_depth", "med_depth_diff", "odd_position", "cues",
)
SUBSET_METADATA_COLUMNS: dict[str, tuple[str, ...]] = {
    **{name: SYNTHETIC_METADATA_COLUMNS for name in SYNTHETIC_SUBSETS},
    "real-012cue": REAL_012CUE_METADATA_COLUMNS,
    "real-012cue-cropped": REAL_012CUE_METADATA_COLUMNS,
    "real-mcue": REAL_MCUE_METADATA_COLUMNS,
}
QUESTION_COLUMNS = ("subset_name", "image_name", "is_marked", "question", "ques_clarity")

# Columns without which a subset cannot be joined or scored at all (odd_position may be missing
# only where the -t{l,r}{far,near} crop tag of every image name carries the ground truth).
REQUIRED_SUBSET_COLUMNS = ("image_name", "odd_position")
CROPPED_SUBSETS = ("real-012cue-cropped",)

# The names the authors' result files use for each subset (image_family in tests/o3d/data).
RELEASED_FAMILY = {
    "kb-0cue": "kb-0cue", "kb-1cue": "kb-1cue", "kb-2cue": "kb-2cue", "kb-no-lp": "kb-0lp",
    "real-012cue": "o3d-real", "real-012cue-cropped": "o3dcf-real", "real-mcue": "o3-dorder",
}

CUE_CODES = ("HP", "OC", "RS", "LS", "TG", "FO", "SA", "FS", "LP")
POSITIONS = ("near", "far", "none")
# The short answer that is correct for each ground-truth position (parse.py's labels).
GT_LABEL = {"near": "closer", "far": "farther", "none": "none"}
CLARITY_LEVELS = {2.0: "low", 3.0: "medium", 3.5: "high", 4.0: "highest"}
SYNTHETIC_NUM_DISTRACTORS = 4  # every synthetic scene: 1 target + 4 distractors

_CROP_TAG = re.compile(r"-t([lr])(far|near)(?=[-.]|$)")
_QUESTION_SIDE = re.compile(r"\b(left|right) object\b", re.IGNORECASE)

_str = datasets.Value("string")
_f64 = datasets.Value("float64")
_i64 = datasets.Value("int64")
_bool = datasets.Value("bool")

DOC_FEATURES = datasets.Features(
    {
        "question_id": _str,  # '<subset>/<image_name>/<marked|plain>/<k>', k-th such row in visual_questions
        "source": _str,  # key of the image registry (Hub id, local dir, or 'memory:<hash>')
        "subset_name": _str,  # Hub config holding the image
        "image_name": _str,
        "subset_row": _i64,  # row of image_name in that config (resolved once by the join)
        "image_column": _str,  # column shown to the model: image | augmented_image | marked_image
        "draw_markers": _bool,  # marked question on a subset without marked_image: drawn from masks
        "image_family": _str,  # synthetic | real
        "synthetic": _bool,
        "released_family": _str,  # name in the authors' result files (kb-1cue, o3dcf-real, ...)
        "is_marked": _bool,
        "question": _str,
        "ques_clarity": _f64,  # 2 | 3 | 3.5 | 4
        "clarity_level": _str,  # low | medium | high | highest | unknown
        "odd_position": _str,  # the subset's metadata value: near | far | none
        "gt_position": _str,  # ground truth for this question: near | far | none
        "gt_label": _str,  # correct short answer: closer | farther | none
        "scored": _bool,  # False for gt_position 'none' (excluded from accuracy)
        "cues": datasets.List(_str),  # sorted cue codes; [] for 0-cue
        "cue_key": _str,  # '+'.join(cues) or 'none'
        "num_cues": _i64,
        "cue_strength": _f64,  # None when the source has none (0-cue, real-mcue)
        "env_cat": _str,  # basic | hdri | real | None
        "env_id": _str,
        "obj_cat": _str,  # kubasic | gso | real | None
        "obj_id": _str,  # object class (real-mcue: its target_type)
        "depth_min": _f64,  # depth_scale of the 8-bit depth map (metres); None without depth_map
        "depth_max": _f64,
        "num_distractors": _i64,  # 4 for synthetic, the column for real-mcue, else None
        "crop_side": _str,  # l | r from the -t{l,r}{far,near} tag; None when uncropped
        "crop_depth": _str,  # near | far from the tag
        "question_side": _str,  # l | r when the question names 'the left/right object'
    }
)
DOC_FIELDS = tuple(DOC_FEATURES)
# Fields that come from the image (normalise_image_row) and those set per question (load.build_docs).
IMAGE_FIELDS = (
    "image_family", "synthetic", "released_family", "odd_position", "cues", "cue_key", "num_cues",
    "cue_strength", "env_cat", "env_id", "obj_cat", "obj_id", "depth_min", "depth_max", "num_distractors",
    "crop_side", "crop_depth",
)
QUESTION_FIELDS = (
    "question_id", "subset_row", "image_column", "draw_markers", "is_marked", "ques_clarity",
    "clarity_level", "gt_position", "gt_label", "scored", "question_side",
)


class SchemaError(SourceError):
    """A source row or column that cannot be mapped onto the canonical schema."""


def family_of(subset_name: str, columns: tuple[str, ...] | list[str] = ()) -> str:
    """'synthetic' or 'real' for an official subset; other names by prefix, then by columns."""
    if subset_name in SYNTHETIC_SUBSETS or subset_name.startswith("kb-"):
        return "synthetic"
    if subset_name in REAL_SUBSETS or subset_name.startswith("real-"):
        return "real"
    return "synthetic" if "depth_map" in columns else "real"


def plain_image_column(columns: tuple[str, ...] | list[str]) -> str | None:
    """Column shown for an unmarked question: augmented_image if the subset has one, else image."""
    for name in ("augmented_image", "image"):
        if name in columns:
            return name
    return None


def clarity_level(value: float | None) -> str:
    if value is None:
        return "unknown"
    return CLARITY_LEVELS.get(float(value), "unknown")


MAX_LITERAL = 2000  # characters: the release's cue lists and depth scales are a few dozen


def literal(text: str, what: str) -> Any:
    """A Python literal stored as text (the release writes lists and dicts with repr()), read
    safely: too long, malformed or too deeply nested text is a SchemaError, never a crash."""
    if len(text) > MAX_LITERAL:
        raise SchemaError(f"{what} {short(text)} is {len(text)} characters long, not a short literal")
    try:
        with warnings.catch_warnings():  # malformed text can make the parser warn before it fails
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise SchemaError(f"{what} {short(text)} is not a Python literal") from None


def parse_cues(value: Any) -> list[str]:
    """Sorted cue codes from the release's string reprs: "['HP', 'SA']", "('OC',)", "()", "[]".

    Already-decoded lists/tuples and None/'' (no cue) are accepted too; anything else is a
    SchemaError (codes are checked against CUE_CODES where the row is normalised).
    """
    if value is None:
        return []
    if isinstance(value, str):
        return list(_cues_from_text(value))
    if not isinstance(value, (list, tuple)):
        raise SchemaError(f"cues {short(value)} is not a list")
    return _codes(value, value)


def _codes(items: list | tuple, shown: Any) -> list[str]:
    if not all(isinstance(c, str) for c in items):
        raise SchemaError(f"cues {short(shown)} is not a list of cue codes")
    return sorted(c.strip().upper() for c in items)


@functools.lru_cache(maxsize=4096)
def _cues_from_text(text: str) -> tuple[str, ...]:
    stripped = text.strip()
    if stripped in ("", "None", "none"):
        return ()
    try:
        value = literal(stripped, "cues")
    except SchemaError:
        raise SchemaError(f"cues {short(text)} is not a list/tuple literal") from None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise SchemaError(f"cues {short(text)} is not a list")
    return tuple(_codes(value, text))


def parse_depth_scale(value: Any) -> tuple[float | None, float | None]:
    """(min, max) metres from "{'min': 0.59, 'max': 67.2}" (or a dict); (None, None) when absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, str):
        return _depth_scale_from_text(value)
    return _min_max(value, value)


def _min_max(value: Any, shown: Any) -> tuple[float, float]:
    if not isinstance(value, Mapping) or "min" not in value or "max" not in value:
        raise SchemaError(f"depth_scale {short(shown)} lacks 'min'/'max'")
    try:
        return float(value["min"]), float(value["max"])
    except (TypeError, ValueError, OverflowError):
        raise SchemaError(f"depth_scale {short(shown)}: 'min' and 'max' must be numbers") from None


@functools.lru_cache(maxsize=65536)
def _depth_scale_from_text(text: str) -> tuple[float, float]:
    try:
        value = literal(text, "depth_scale")
    except SchemaError:
        raise SchemaError(f"depth_scale {short(text)} is not a dict literal") from None
    return _min_max(value, text)


def crop_tag(image_name: str) -> tuple[str, str] | None:
    """('l'|'r', 'near'|'far') from a real-012cue-cropped name such as 'img_0606-tlfar.jpg'."""
    m = _CROP_TAG.search(image_name)
    return (m.group(1), m.group(2)) if m else None


def question_side(question: str) -> str | None:
    """'l' or 'r' when the question names 'the left object' / 'the right object'."""
    m = _QUESTION_SIDE.search(question)
    return m.group(1)[0].lower() if m else None


def as_bool(value: Any) -> bool:
    """is_marked as stored (bool, 0/1, or 'True'/'False' text) -> bool."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no", ""):
            return False
        raise SchemaError(f"is_marked {short(value)} is not a boolean")
    return bool(value)


def _clean(value: Any) -> Any:
    """None for missing values (NaN floats included); everything else unchanged."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _opt_str(value: Any) -> str | None:
    value = _clean(value)
    return None if value is None else str(value)


def normalise_image_row(subset_name: str, row: Mapping[str, Any], columns: tuple[str, ...],
                        where: str | None = None) -> dict:
    """Image-level canonical fields for one subset row (metadata columns only; no image decoding).

    ``row`` maps column -> value for the non-image columns; ``columns`` lists every column of the
    subset (so the family and the columns to show can be decided). Every value is checked: an
    unknown odd_position or cue code, a cue strength or depth scale that is not a finite number
    (or a depth scale with min >= max), fewer than one distractor. Raises SchemaError starting
    with ``where`` (default: the subset and image name) and naming the field.
    """
    name = row.get("image_name")
    where = where or f"subset {subset_name!r}, image_name {name!r}"

    def bad(field: str, problem: str) -> SchemaError:
        return SchemaError(f"{where}, field {field!r}: {problem}")

    if not isinstance(name, str) or not name.strip():
        raise bad("image_name", f"empty image name {name!r}")
    odd = _opt_str(row.get("odd_position"))
    odd = odd.strip().lower() if odd is not None else None
    tag = crop_tag(name)
    if odd is None and tag is not None:
        odd = tag[1]  # a crop without odd_position: its tag says where the target is
    if odd not in POSITIONS:
        raise bad("odd_position", f"{row.get('odd_position')!r} is not one of {list(POSITIONS)}")
    try:
        cues = parse_cues(_clean(row.get("cues")))
    except SchemaError as exc:
        raise bad("cues", str(exc)) from None
    unknown = [c for c in cues if c not in CUE_CODES]
    if unknown:
        raise bad("cues", f"unknown cue code(s) {unknown}; the codes are {list(CUE_CODES)}")
    if len(set(cues)) != len(cues):
        raise bad("cues", f"a cue listed twice: {cues}")
    try:
        depth_min, depth_max = parse_depth_scale(_clean(row.get("depth_scale")))
    except (SchemaError, TypeError, ValueError) as exc:
        raise bad("depth_scale", str(exc)) from None
    if depth_min is not None and not (math.isfinite(depth_min) and math.isfinite(depth_max)
                                      and 0 <= depth_min < depth_max):
        raise bad("depth_scale", f"min {depth_min} and max {depth_max} must be finite with 0 <= min < max")
    strength = _number(row.get("cue_strength"), "cue_strength", bad)
    if strength is not None and strength < 0:
        raise bad("cue_strength", f"{strength} is negative")
    family = family_of(subset_name, columns)
    num_distractors = _number(row.get("num_distractors"), "num_distractors", bad)
    if num_distractors is None and family == "synthetic":
        num_distractors = SYNTHETIC_NUM_DISTRACTORS
    if num_distractors is not None and (num_distractors < 1 or num_distractors != int(num_distractors)):
        raise bad("num_distractors", f"{num_distractors} is not a positive whole number")
    obj_id = _opt_str(row.get("obj_id"))
    if obj_id is None:
        obj_id = _opt_str(row.get("target_type"))
    return {
        "image_family": family,
        "synthetic": family == "synthetic",
        "released_family": RELEASED_FAMILY.get(subset_name, subset_name),
        "odd_position": odd,
        "cues": cues,
        "cue_key": "+".join(cues) if cues else "none",
        "num_cues": len(cues),
        "cue_strength": strength,
        "env_cat": _opt_str(row.get("env_cat")),
        "env_id": _opt_str(row.get("env_id")),
        "obj_cat": _opt_str(row.get("obj_cat")) or ("real" if subset_name == "real-mcue" else None),
        "obj_id": obj_id,
        "depth_min": depth_min,
        "depth_max": depth_max,
        "num_distractors": None if num_distractors is None else int(num_distractors),
        "crop_side": tag[0] if tag else None,
        "crop_depth": tag[1] if tag else None,
    }


def _number(value: Any, field: str, bad) -> float | None:
    """A numeric cell: None when empty (null / NaN / ""), else a finite float or an error."""
    value = _clean(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return finite_number(value, field, bad)


def ground_truth_position(odd_position: str, crop_side: str | None, crop_depth: str | None,
                          asked_side: str | None) -> str:
    """near | far | none for one question (see the module docstring for the crop rule)."""
    if crop_depth is None:
        return odd_position
    if asked_side is None or asked_side == crop_side:
        return crop_depth
    return "near" if crop_depth == "far" else "far"


def question_id(subset_name: str, image_name: str, is_marked: bool, k: int) -> str:
    return f"{subset_name}/{image_name}/{'marked' if is_marked else 'plain'}/{k}"


# The datasets Features of the release's configs (what the generator writes and the loader reads).


def subset_features(subset: str) -> datasets.Features:
    """The datasets Features of one official config."""
    feats: dict[str, object] = {}
    for c in SUBSET_IMAGE_COLUMNS[subset]:
        feats[c] = datasets.Image()
    numeric_int = {"num_distractors", "orientation", "color", "focus", "shape", "size", "location", "pattern"}
    for c in SUBSET_METADATA_COLUMNS[subset]:
        if c in numeric_int:
            feats[c] = datasets.Value("int64")
        elif c == "cue_strength" or c.endswith("_depth") or c == "med_depth_diff":
            feats[c] = datasets.Value("float64")
        else:
            feats[c] = datasets.Value("string")
    return datasets.Features(feats)


QUESTION_FEATURES = datasets.Features({
    "subset_name": datasets.Value("string"), "image_name": datasets.Value("string"),
    "is_marked": datasets.Value("bool"), "question": datasets.Value("string"),
    "ques_clarity": datasets.Value("float64"),
})
