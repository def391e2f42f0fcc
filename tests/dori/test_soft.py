"""Soft accuracy (paper §4): every example the paper gives, its findings, and the option readers."""

from __future__ import annotations

import itertools

import pytest

from spatial_tasks.dori import soft
from spatial_tasks.dori.schema import TASKS


def credit(task: str, predicted_text: str, truth_text: str) -> float:
    predicted, truth = soft.option_value(task, predicted_text), soft.option_value(task, truth_text)
    assert predicted is not None and truth is not None, (predicted_text, truth_text)
    return soft.soft_credit(task, "granular", predicted == truth, predicted, truth)


# (task, prediction, ground truth, credit): the paper's own examples, verbatim where it gives text.
PAPER_EXAMPLES = [
    # SA: "predicting 45 when the correct answer is 90 would not qualify, but 135 prediction for 180"
    ("single_axis_rotation", "45 degrees clockwise", "90 degrees clockwise", 0.0),
    ("single_axis_rotation", "135 degrees clockwise", "180 degrees clockwise", 0.5),
    # CR: "'90 horizontal then 0 vertical' ... 0.5 ... ground truth '90 horizontal then 180 vertical'"
    ("compound_rotation", "90 horizontal then 0 vertical", "90 horizontal then 180 vertical", 0.5),
    # IO: GT "0 to 45 degrees clockwise": "46 to 90 degrees clockwise" 0.5, counterclockwise 0
    ("inter_object_direction", "46 to 90 degrees clockwise", "0 to 45 degrees clockwise", 0.5),
    ("inter_object_direction", "46 to 90 degrees counterclockwise", "0 to 45 degrees clockwise", 0.0),
    # VS: "rotated 90 clockwise ... reports 270 clockwise ... receives 0.5"
    ("viewer_scene_direction", "270 degrees clockwise", "90 degrees clockwise", 0.5),
    # CO: "rotation followed by flipping ... flipping followed by rotation, it receives 0.5"
    ("canonical_orientation", "Rotate 90 degrees clockwise, then flip horizontally",
     "Flip horizontally, then rotate 90 degrees clockwise", 0.5),
    # DF: "exclusively for mirror-image confusions between '30 degrees left' and '30 degrees right'"
    ("directional_facing", "30 degrees left", "30 degrees right", 0.5),
    ("directional_facing", "30 degrees right", "30 degrees left", 0.5),
    # VP: "Predictions within 45 of the ground truth angle receive partial credit."
    ("view_parallelism", "30 degrees", "0 degrees", 0.5),
]


@pytest.mark.parametrize(("task", "predicted", "truth", "expected"), PAPER_EXAMPLES)
def test_paper_examples(task, predicted, truth, expected):
    assert credit(task, predicted, truth) == expected


def test_right_answers_earn_one_and_coarse_questions_have_no_partial_credit():
    assert soft.soft_credit("compound_rotation", "granular", True, [90, 0], [90, 0]) == 1.0
    assert soft.soft_credit("compound_rotation", "coarse", False, [90, 0], [90, 180]) == 0.0
    assert soft.soft_credit("viewer_scene_direction", "granular", False, None, 90) == 0.0


def test_single_axis_reading_keeps_major_categories_apart():
    """Adjacent positions earn 0.5 only inside front {315, 0, 45} or back {135, 180, 225}."""
    angles = sorted(soft.SA_MAJOR)
    for pred, truth in itertools.permutations(angles, 2):
        gap = min(abs(pred - truth), 360 - abs(pred - truth))
        same = soft.SA_MAJOR[pred] == soft.SA_MAJOR[truth]
        expected = 0.5 if gap == 45 and same else 0.0
        assert soft.soft_credit("single_axis_rotation", "granular", False, pred, truth) == expected, (pred, truth)
    assert soft.soft_credit("single_axis_rotation", "granular", False, 0, 315) == 0.5
    assert soft.soft_credit("single_axis_rotation", "granular", False, 90, 135) == 0.0


def test_compound_needs_exactly_one_component():
    assert soft.soft_credit("compound_rotation", "granular", False, [0, 180], [90, 180]) == 0.5
    assert soft.soft_credit("compound_rotation", "granular", False, [0, 90], [90, 180]) == 0.0


def test_viewer_scene_opposite_direction_only():
    assert soft.soft_credit("viewer_scene_direction", "granular", False, 180, 90) == 0.0
    assert soft.soft_credit("viewer_scene_direction", "granular", False, 90, 270) == 0.5
    assert not soft.NEAR_MISS["viewer_scene_direction"](180, 180)  # 180 is its own opposite: no partial credit


def test_canonical_same_operations_other_order_only():
    assert soft.soft_credit("canonical_orientation", "granular", False, ["rotate 90"], ["rotate 270"]) == 0.0
    assert soft.soft_credit("canonical_orientation", "granular", False,
                            ["rotate 90", "flip vertical"], ["flip horizontal", "rotate 90"]) == 0.0


# The paper's finding (§5): soft = hard for view parallelism and directional facing in every
# model. With options 45 degrees apart (VP ranges) and DF option sets, no wrong choice earns credit
# except the one mirror pair the rule names.
VP_LADDER = ["near-parallel alignment", "between 45 and 90 degrees away", "between 90 and 135 degrees away",
             "between 135 and 180 degrees away"]
VP_RANGES = ["between 0 and 45 degrees", "between 45 and 90 degrees", "between 90 and 135 degrees",
             "between 135 and 180 degrees"]
DF_OPTIONS = ["toward the camera", "away from the camera", "90 degrees left", "90 degrees right", "60 degrees left",
              "60 degrees right", "30 degrees left", "45 degrees right"]


@pytest.mark.parametrize("options", [VP_RANGES, ["0 degrees", "90 degrees", "180 degrees"]])
def test_view_parallelism_soft_equals_hard(options):
    for pred, truth in itertools.permutations(options, 2):
        assert credit("view_parallelism", pred, truth) == 0.0, (pred, truth)


def test_directional_facing_soft_equals_hard_without_the_mirror_pair():
    for pred, truth in itertools.permutations(DF_OPTIONS, 2):
        assert credit("directional_facing", pred, truth) == 0.0, (pred, truth)


# Option texts in the wordings the paper shows (and ours) read back as the right values.
READINGS = [
    ("view_parallelism", "between 135 and 180 degrees away", 157.5),
    ("view_parallelism", "near-parallel alignment", 0.0),
    ("directional_facing", "30 degrees left", -30.0),
    ("directional_facing", "Facing toward the camera", 0.0),
    ("single_axis_rotation", "0 degrees (it already faces the camera)", 0),
    ("single_axis_rotation", "90 degrees counterclockwise", 270),
    ("compound_rotation", "90 horizontal then 0 vertical", [90, 0]),
    ("compound_rotation", "180 degrees horizontal then 270 degrees vertical", [180, 270]),
    ("inter_object_direction", "46 to 90 degrees counterclockwise", ["counterclockwise", 46, 90]),
    ("inter_object_direction", "0 to 45 degrees clockwise", ["clockwise", 0, 45]),
    ("viewer_scene_direction", "270 clockwise", 270),
    ("viewer_scene_direction", "No rotation (0 degrees)", 0),
    ("canonical_orientation", "Rotate 270 degrees clockwise, then flip horizontally", ["rotate 270", "flip horizontal"]),
    ("canonical_orientation", "Flip vertically", ["flip vertical"]),
    ("canonical_orientation", "No change needed (already canonical)", []),
]


@pytest.mark.parametrize(("task", "text", "value"), READINGS)
def test_option_readers(task, text, value):
    assert soft.option_value(task, text) == value


def test_every_task_has_a_reader_and_a_rule():
    assert soft.OPTION_READERS.keys() == TASKS.keys() == soft.NEAR_MISS.keys()
    for task in TASKS:
        assert soft.option_value(task, "something else entirely") is None, task
        assert soft.option_value(task, None) is None
