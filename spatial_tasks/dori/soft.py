"""Soft accuracy (paper §4, "Soft accuracy"): 0.5 credit for near misses on granular questions.

Each granular option means a structured value (``option_value``: read from the option's text,
so it works on any source; our generator also stores the values and the loader checks they agree
with the text). A task's near-miss rule compares the chosen option's value with the truth's.
The rules, verbatim from the paper, and the reading we implement:

=====  =================================================  ==========================================
task   paper                                              reading (value)
=====  =================================================  ==========================================
VP     "within 45 of the ground truth angle"              |pred - truth| strictly below 45 degrees
                                                          (a range means its midpoint). Options are
                                                          45 degrees or more apart, so soft = hard,
                                                          as the paper finds for every model.
DF     "exclusively for mirror-image confusions between   the pair (30 left, 30 right) and its
       '30 degrees left' and '30 degrees right'"          reverse, nothing else (signed degrees,
                                                          left negative)
SA     "45 for 90 would not qualify, but 135 for 180"     adjacent positions (45 degrees apart,
                                                          circular) inside one major category of
                                                          ``SA_MAJOR``: front {315, 0, 45}, side
                                                          {90}, {270}, back {135, 180, 225}
CR     "0.5 points for either correct component"          exactly one of (horizontal, vertical)
IO     "46 to 90 clockwise" for "0 to 45 clockwise" 0.5,  the same direction and an adjacent
       counterclockwise 0                                 magnitude range
VS     "270 clockwise" for "90 clockwise" 0.5             the opposite direction: (360 - t) % 360
CO     "right operations in the wrong order" 0.5          same operations, other order
=====  =================================================  ==========================================

Coarse questions have no soft rule: their soft score equals the hard one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from spatial_tasks.dori.schema import TASKS

PARTIAL = 0.5

# SA: the major orientation category of each clockwise rotation (degrees) the questions use.
SA_MAJOR: dict[int, str] = {0: "front", 45: "front", 315: "front", 90: "side right", 270: "side left",
                            135: "back", 180: "back", 225: "back"}
# DF: the only mirror confusions that earn credit (signed degrees, left negative).
DF_MIRROR_PAIRS = frozenset({(-30.0, 30.0), (30.0, -30.0)})
VP_TOLERANCE = 45.0  # strictly below


_NUMBER = r"(\d+(?:\.\d+)?)"


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(_NUMBER, text)]


def _vp(text: str) -> float | None:
    """Deviation from parallel to the image plane, in degrees (a range: its midpoint)."""
    low = text.lower()
    numbers = _numbers(low)
    if len(numbers) >= 2:
        return (numbers[0] + numbers[1]) / 2
    if len(numbers) == 1:
        return numbers[0]
    if "parallel" in low:
        return 0.0
    if "perpendicular" in low:
        return 90.0
    return None


def _df(text: str) -> float | None:
    """Facing direction in signed degrees from "toward the camera" (left negative, away = 180)."""
    low = text.lower()
    numbers = _numbers(low)
    left, right = bool(re.search(r"\bleft", low)), bool(re.search(r"\bright", low))
    if left == right:
        if "away" in low or "back" in low:
            return 180.0
        if "toward" in low or "front" in low or "directly" in low:
            return 0.0
        return None
    magnitude = numbers[0] if numbers else 90.0
    return -magnitude if left else magnitude


def _degrees(text: str) -> int | None:
    """One clockwise rotation in whole degrees ("no rotation" = 0); counterclockwise x = 360 - x."""
    low = text.lower()
    numbers = _numbers(low)
    if not numbers:
        return 0 if re.search(r"\bno rotation|\bnot rotated|\bnone\b|already", low) else None
    value = int(round(numbers[0])) % 360
    if "counterclockwise" in low or "counter-clockwise" in low or "anticlockwise" in low:
        value = (360 - value) % 360
    return value


# A number is read only from its first digit: starting inside a run of digits would make a long
# run quadratic (20,000 digits took 52 s) and never finds a match the run's start does not.
_ANGLE = r"(?<!\d)" + _NUMBER + r"\s*(?:degrees?\s*|°\s*)?(?:about the\s+|around the\s+)?"
_HORIZONTAL_ANGLE = re.compile(_ANGLE + "horizontal")
_VERTICAL_ANGLE = re.compile(_ANGLE + "vertical")


def _cr(text: str) -> list[int] | None:
    """[horizontal, vertical] angles of a compound rotation ("90 horizontal then 180 vertical")."""
    low = text.lower()
    h = _HORIZONTAL_ANGLE.search(low)
    v = _VERTICAL_ANGLE.search(low)
    if not (h and v):
        return None
    return [int(round(float(h.group(1)))) % 360, int(round(float(v.group(1)))) % 360]


def _io(text: str) -> list | None:
    """[direction, low, high] of "46 to 90 degrees clockwise"; ["none", 0, 0] for no rotation."""
    low = text.lower()
    numbers = _numbers(low)
    if "counterclockwise" in low or "counter-clockwise" in low or "anticlockwise" in low:
        direction = "counterclockwise"
    elif "clockwise" in low:
        direction = "clockwise"
    else:
        direction = "none"
    if direction == "none":
        return ["none", 0, 0] if re.search(r"\bno rotation|already|\bnone\b", low) or numbers == [0.0] else None
    if len(numbers) >= 2:
        return [direction, int(numbers[0]), int(numbers[1])]
    if len(numbers) == 1:
        return [direction, int(numbers[0]), int(numbers[0])]
    return None


# An operation's words run to the next punctuation or to the next operation of its kind, and a
# keyword's suffix is taken whole (possessive): without both, "rotate rotate ..." or "flipppp..."
# with no number or axis scanned the rest of the text from every start (quadratic). Neither bound
# loses a match: the next "rotate"/"flip" starts the same match again.
_OPERATION = re.compile(r"(rotat[a-z]*+(?:(?!rotat)[^,;.])*?(\d+)(?:\s*degrees?|°)?(\s*counter-?clockwise|\s*anticlockwise)?)"
                        r"|(flip[a-z]*+(?:(?!flip)[^,;.])*?\b(horizontal\w*|vertical\w*))|((horizontal|vertical)\w*\s+flip)")


def _co(text: str) -> list[str] | None:
    """The operation sequence of a restoring option: ["rotate 90", "flip horizontal"], in order
    ("rotate X counterclockwise" is "rotate 360-X"); [] for "no change needed"."""
    low = text.lower()
    ops = []
    for match in _OPERATION.finditer(low):
        if match.group(1):
            degrees = int(match.group(2)) % 360
            if match.group(3):
                degrees = (360 - degrees) % 360
            ops.append(f"rotate {degrees}")
        else:
            axis = match.group(5) or match.group(7)
            ops.append(f"flip {'horizontal' if axis.startswith('horizontal') else 'vertical'}")
    if ops:
        return ops
    if re.search(r"\bno (change|transformation|operation)|already|\bnone\b|canonical", low):
        return []
    return None


OPTION_READERS: dict[str, Callable[[str], Any]] = {
    "view_parallelism": _vp,
    "directional_facing": _df,
    "single_axis_rotation": _degrees,
    "compound_rotation": _cr,
    "inter_object_direction": _io,
    "viewer_scene_direction": _degrees,
    "canonical_orientation": _co,
}
assert OPTION_READERS.keys() == TASKS.keys()


def option_value(task: str, text: str) -> Any:
    """The structured value a granular option's text means (None when it cannot be read)."""
    if not isinstance(text, str):
        return None
    try:
        return OPTION_READERS[task](text)
    except (ValueError, TypeError, IndexError, OverflowError):  # e.g. "1e999 degrees"
        return None


# ------------------------------------------------------------------------------ near misses


def _vp_near(pred: float, truth: float) -> bool:
    return abs(pred - truth) < VP_TOLERANCE


def _df_near(pred: float, truth: float) -> bool:
    return (float(pred), float(truth)) in DF_MIRROR_PAIRS


def _sa_near(pred: int, truth: int) -> bool:
    gap = abs(pred - truth) % 360
    adjacent = min(gap, 360 - gap) == 45
    return adjacent and SA_MAJOR.get(pred % 360) is not None and SA_MAJOR.get(pred % 360) == SA_MAJOR.get(truth % 360)


def _cr_near(pred: list, truth: list) -> bool:
    return (pred[0] == truth[0]) != (pred[1] == truth[1])


def _io_near(pred: list, truth: list) -> bool:
    if pred[0] != truth[0] or truth[0] == "none":
        return False
    return abs(pred[1] - truth[2]) <= 1 or abs(truth[1] - pred[2]) <= 1


def _vs_near(pred: int, truth: int) -> bool:
    return pred != truth and pred == (360 - truth) % 360


def _co_near(pred: list, truth: list) -> bool:
    return len(truth) > 1 and pred != truth and sorted(pred) == sorted(truth)


NEAR_MISS: dict[str, Callable[[Any, Any], bool]] = {
    "view_parallelism": _vp_near,
    "directional_facing": _df_near,
    "single_axis_rotation": _sa_near,
    "compound_rotation": _cr_near,
    "inter_object_direction": _io_near,
    "viewer_scene_direction": _vs_near,
    "canonical_orientation": _co_near,
}


def soft_credit(task: str, granularity: str, correct: bool, predicted: Any, truth: Any) -> float:
    """Soft accuracy of one answer (paper §4): 1 if right, 0.5 for the task's near miss (granular
    questions only, see the module table), else 0. ``predicted`` / ``truth`` are option values;
    an unreadable value (None) earns no partial credit."""
    if correct:
        return 1.0
    if granularity != "granular" or predicted is None or truth is None:
        return 0.0
    try:
        return PARTIAL if NEAR_MISS[task](predicted, truth) else 0.0
    except (TypeError, IndexError, KeyError):
        return 0.0
