"""What to render and what to ask, for each generated DORI task (pure Python, deterministic).

``plan(task, count, seed)`` returns ``Item``s: one or two views to render (scene.py's view spec)
and a function of the rendered facts that writes the item's coarse and granular questions. The
true angles are chosen here, before rendering, and recorded with every question (``truth``);
options are listed in a fixed order (the harness shuffles them per seed), with values that the
option texts read back as (``spatial_tasks.dori.soft.option_value``; the loader checks it).
Angles follow scene.py: yaw clockwise seen from above, tilt about the horizontal axis first.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from spatial_tasks.generators.common.jobs import derive_seed
from spatial_tasks.generators.dori.scene import CATEGORY, KINDS, STAND_HEIGHT

from spatial_tasks.dori.schema import GENERATED_SOURCE

RENDERED_TASKS = ("single_axis_rotation", "compound_rotation", "inter_object_direction", "viewer_scene_direction")
TASKS = (*RENDERED_TASKS, "canonical_orientation")
FLOAT_HEIGHT = 1.35  # compound rotations turn objects over: they float above the ground
PREFIX = {"single_axis_rotation": "sa", "compound_rotation": "cr", "inter_object_direction": "io",
          "viewer_scene_direction": "vs", "canonical_orientation": "co"}


@dataclass
class Item:
    item_id: str
    task: str
    views: list[dict]
    questions: Callable[[list[list[dict]]], list[dict]] = field(repr=False)


def _object(kind: str, yaw: float, *, x: float = 0.0, tilt: float = 0.0, floating: bool = False,
            scale: float = 1.0) -> dict:
    z = FLOAT_HEIGHT if floating else STAND_HEIGHT[kind] * scale
    return {"kind": kind, "x": x, "y": 0.0, "z": z, "yaw": float(yaw), "tilt": float(tilt), "scale": scale}


def _question(item: Item, granularity: str, options: list[str], values: list, answer: int, truth: dict,
              boxes: list[dict], question: str, kind: str, object_b: str | None = None) -> dict:
    return {
        "question_id": f"{item.item_id}-{granularity}", "task": item.task, "granularity": granularity,
        "boxes": boxes, "question": question, "options": options, "answer": options[answer],
        "option_values": values, "truth": {**truth, "value": values[answer], "object_b": object_b},
        "source": GENERATED_SOURCE, "category": CATEGORY[kind] if kind in CATEGORY else kind,
    }


def _box(facts: dict, label: str) -> dict:
    return {"label": label, "box": [round(v, 2) for v in facts["box"]]}


# ------------------------------------------------------------------------- single axis


SA_ANGLES = (0, 45, 90, 135, 180, 225, 270, 315)
SA_COARSE = ["Clockwise", "Counterclockwise", "No rotation needed: it already faces the camera",
             "Either direction: it faces directly away"]


def sa_option(angle: int) -> str:
    return "0 degrees (it already faces the camera)" if angle == 0 else f"{angle} degrees clockwise"


def _single_axis(item_id: str, rng: random.Random) -> Item:
    kind = rng.choice(KINDS)
    needed = rng.choice(SA_ANGLES)  # clockwise turn that brings the front to the camera
    yaw = (360 - needed) % 360
    coarse = 2 if needed == 0 else 3 if needed == 180 else 0 if needed < 180 else 1

    def questions(facts: list[list[dict]]) -> list[dict]:
        boxes = [_box(facts[0][0], "A")]
        truth = {"yaw": yaw, "needed_clockwise": needed}
        return [
            _question(item, "coarse", SA_COARSE, ["clockwise", "counterclockwise", "none", "either"], coarse, truth,
                      boxes, "Shortest rotation for Object A to face the camera", kind),
            _question(item, "granular", [sa_option(a) for a in SA_ANGLES], list(SA_ANGLES),
                      SA_ANGLES.index(needed), truth, boxes, "Closest clockwise rotation to face the camera", kind),
        ]

    item = Item(item_id, "single_axis_rotation", [{"objects": [_object(kind, yaw)]}], questions)
    return item


# ----------------------------------------------------------------------- compound


CR_ANGLES = (0, 90, 180, 270)
CR_COARSE = ["No rotation", "Horizontal axis rotation only", "Vertical axis rotation only",
             "Horizontal then vertical axis rotation"]


def cr_option(h: int, v: int) -> str:
    return f"{h} degrees horizontal then {v} degrees vertical"


def _compound(item_id: str, rng: random.Random) -> Item:
    kind = rng.choice(KINDS)
    base = rng.choice((0, 30, 330))
    h, v = rng.choice(CR_ANGLES), rng.choice(CR_ANGLES)
    coarse = (1 if h else 0) + (2 if v else 0)  # index into CR_COARSE
    # Distractors: the two single-component near misses first, then others, up to 6 options.
    near = [(a, v) for a in CR_ANGLES if a != h][:2] + [(h, b) for b in CR_ANGLES if b != v][:2]
    far = [(a, b) for a in CR_ANGLES for b in CR_ANGLES if a != h and b != v]
    rng.shuffle(near)
    rng.shuffle(far)
    pairs = sorted({(h, v), *near[:3], *far[:2]})

    def questions(facts: list[list[dict]]) -> list[dict]:
        boxes = [_box(facts[0][0], "A")]
        truth = {"base_yaw": base, "horizontal": h, "vertical": v}
        return [
            _question(item, "coarse", CR_COARSE, ["none", "horizontal", "vertical", "both"], coarse, truth, boxes,
                      "Type of rotation between the two images", kind),
            _question(item, "granular", [cr_option(a, b) for a, b in pairs], [[a, b] for a, b in pairs],
                      pairs.index((h, v)), truth, boxes, "Exact rotation angles between the two images", kind),
        ]

    views = [{"objects": [_object(kind, base, floating=True)]},
             {"objects": [_object(kind, (base + v) % 360, tilt=h, floating=True)]}]
    item = Item(item_id, "compound_rotation", views, questions)
    return item


# ------------------------------------------------------------------ inter-object


IO_COARSE = ["Facing each other", "Facing the same direction", "Facing opposite directions",
             "Perpendicular to each other"]
IO_RANGES = ((0, 45), (46, 90), (91, 135), (136, 180))


def io_option(direction: str, low: int, high: int) -> str:
    return f"{low} to {high} degrees {direction}"


def _facing_relation(yaw_a: int, yaw_b: int) -> int:
    """IO_COARSE index for A (left) and B (right) with yaws that are multiples of 90 (yaw 270
    points to +x, toward B; yaw 90 points to -x, toward A)."""
    gap = (yaw_a - yaw_b) % 360
    if gap == 0:
        return 1
    if gap == 180:
        return 0 if (yaw_a, yaw_b) == (270, 90) else 2
    return 3


def _inter_object(item_id: str, rng: random.Random) -> Item:
    kind_a, kind_b = rng.choice(KINDS), rng.choice(KINDS)
    granular = rng.random() < 0.5  # coarse views use right angles, granular ones free angles
    relation = rng.randrange(4)
    right_angles = [(a, b) for a in (0, 90, 180, 270) for b in (0, 90, 180, 270) if _facing_relation(a, b) == relation]
    yaw_a, yaw_b = rng.choice(right_angles)
    needed = rng.choice((20, 35, 60, 75, 110, 125, 150, 165))
    direction = rng.choice(("clockwise", "counterclockwise"))
    if granular:  # B's turn to face A (direction -x, yaw 90): clockwise needed -> yaw_b = 90 - needed
        yaw_b = (90 - needed) % 360 if direction == "clockwise" else (90 + needed) % 360
    band = next(k for k, (lo, hi) in enumerate(IO_RANGES) if lo <= needed <= hi)
    pairs = [(d, lo, hi) for d in ("clockwise", "counterclockwise") for lo, hi in IO_RANGES]

    def questions(facts: list[list[dict]]) -> list[dict]:
        boxes = [_box(facts[0][0], "A"), _box(facts[0][1], "B")]
        truth = {"yaw_a": yaw_a, "yaw_b": yaw_b}
        if not granular:
            return [_question(item, "coarse", IO_COARSE, ["each_other", "same", "opposite", "perpendicular"],
                              relation, truth, boxes, "Are objects A and B facing each other", kind_a,
                              CATEGORY[kind_b])]
        answer = pairs.index((direction, *IO_RANGES[band]))
        return [_question(item, "granular", [io_option(*p) for p in pairs], [list(p) for p in pairs], answer,
                          {**truth, "b_turn": needed, "b_direction": direction}, boxes,
                          "How much must Object B rotate to face Object A", kind_a, CATEGORY[kind_b])]

    views = [{"objects": [_object(kind_a, yaw_a, x=-1.4, scale=0.8), _object(kind_b, yaw_b, x=1.4, scale=0.8)]}]
    item = Item(item_id, "inter_object_direction", views, questions)
    return item


# ---------------------------------------------------------------------- viewer-scene


VS_ANGLES = (0, 90, 180, 270)
VS_COARSE = ["Yes, it has rotated", "No, it has not rotated", "Cannot be determined"]


def vs_option(angle: int) -> str:
    return "No rotation (0 degrees)" if angle == 0 else f"{angle} degrees clockwise"


def _viewer_scene(item_id: str, rng: random.Random) -> Item:
    kind = rng.choice(KINDS)
    base = rng.choice((0, 45, 90, 135, 180, 225, 270, 315))
    turn = rng.choice(VS_ANGLES)

    def questions(facts: list[list[dict]]) -> list[dict]:
        boxes = [_box(facts[0][0], "A")]
        truth = {"base_yaw": base, "turn_clockwise": turn}
        return [
            _question(item, "coarse", VS_COARSE, ["yes", "no", None], 0 if turn else 1, truth, boxes,
                      "Has the object rotated between the two images", kind),
            _question(item, "granular", [vs_option(a) for a in VS_ANGLES], list(VS_ANGLES), VS_ANGLES.index(turn),
                      truth, boxes, "Degrees clockwise rotated between the two images", kind),
        ]

    views = [{"objects": [_object(kind, base)]}, {"objects": [_object(kind, (base + turn) % 360)]}]
    item = Item(item_id, "viewer_scene_direction", views, questions)
    return item


SAMPLERS: dict[str, Callable[[str, random.Random], Item]] = {
    "single_axis_rotation": _single_axis, "compound_rotation": _compound,
    "inter_object_direction": _inter_object, "viewer_scene_direction": _viewer_scene,
}


def plan(task: str, count: int, seed: int) -> list[Item]:
    """``count`` items of a rendered task; item k depends only on (seed, task, k)."""
    if task not in SAMPLERS:
        raise ValueError(f"--task {task!r}: rendered tasks are {list(SAMPLERS)} (canonical_orientation "
                         "transforms a folder of images: --images DIR)")
    items = []
    for k in range(count):
        item_id = f"{PREFIX[task]}-{k:05d}"
        item = SAMPLERS[task](item_id, random.Random(derive_seed(seed, item_id, task)))
        for j, view in enumerate(item.views):
            view["image_id"] = f"{item_id}-{j}"
        items.append(item)
    return items


# ------------------------------------------------------------------ canonical orientation

# Transformations of an image, and the operation that undoes each.
TRANSFORMS = (("rotate 90",), ("rotate 180",), ("rotate 270",), ("flip horizontal",), ("flip vertical",),
              ("rotate 90", "flip horizontal"), ("flip horizontal", "rotate 90"), ("rotate 270", "flip horizontal"),
              ("flip horizontal", "rotate 270"))
CO_COARSE = ["Yes, it is in its canonical orientation", "No, it is not in its canonical orientation",
             "Cannot be determined"]
CANNOT_DETERMINE = "Cannot be determined"


def inverse(ops: tuple[str, ...]) -> list[str]:
    """The operations that restore an image transformed by ``ops`` (in order)."""
    undo = []
    for op in reversed(ops):
        if op.startswith("rotate"):
            undo.append(f"rotate {(360 - int(op.split()[1])) % 360}")
        else:
            undo.append(op)
    return undo


def co_option(ops: list[str] | None) -> str:
    if ops is None:
        return CANNOT_DETERMINE
    if not ops:
        return "No change needed (already canonical)"
    words = [f"rotate {op.split()[1]} degrees clockwise" if op.startswith("rotate") else
             f"flip {op.split()[1]}ly" for op in ops]
    return (", then ".join(words)).capitalize()


def co_plan(names: list[str], seed: int, untransformed_share: float = 0.25,
            symmetric: frozenset[str] = frozenset()) -> list[dict]:
    """For each image name (sorted): its transformation (possibly none) and both questions' options.

    An image in ``symmetric`` looks the same after every rotation and flip (a plain ball, a
    symmetric pattern): it has no canonical orientation to find, so both questions' answer is
    "Cannot be determined" (the paper's Fig. 24); it is still transformed, and the granular
    options are four restoring sequences and "Cannot be determined"."""
    out = []
    for name in sorted(names):
        rng = random.Random(derive_seed(seed, name, "canonical_orientation"))
        if name in symmetric:
            ops = rng.choice(TRANSFORMS)
            candidates = [inverse(t) for t in TRANSFORMS]
            rng.shuffle(candidates)
            out.append({"name": name, "ops": list(ops), "restore": None, "coarse_answer": 2,
                        "granular": sorted(candidates[:4], key=lambda c: (len(c), c)) + [None]})
            continue
        ops = () if rng.random() < untransformed_share else rng.choice(TRANSFORMS)
        restore = inverse(ops)
        candidates = [inverse(t) for t in TRANSFORMS if inverse(t) != restore]
        rng.shuffle(candidates)
        # Keep the wrong-order variant of a two-step answer among the distractors (soft credit).
        swapped = [list(reversed(restore))] if len(restore) == 2 else []
        granular = [restore, *swapped] + [c for c in candidates if c not in swapped][: 5 - len(swapped)]
        if restore:
            granular.append([])
        out.append({"name": name, "ops": list(ops), "restore": restore, "coarse_answer": 1 if ops else 0,
                    "granular": sorted(granular, key=lambda c: (len(c), c))})
    return out
