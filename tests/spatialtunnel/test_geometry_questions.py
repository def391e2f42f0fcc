import math

import pytest

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.questions import TEMPLATES, questions_for, resolve_template


def test_objects_rest_on_the_walls():
    x, y, z = geometry.object_center(90.0, 8.0, 0.2)  # ceiling centre line
    assert (x, y, z) == pytest.approx((0.0, 8.0, 0.8))
    x, _, z = geometry.object_center(45.0, 4.0, 0.1)  # corner: touches both walls
    assert (x, z) == pytest.approx((0.9, 0.9))
    x, _, z = geometry.object_center(180.0, 4.0, 0.1)  # left wall
    assert (x, z) == pytest.approx((-0.9, 0.0))


def test_far_ceiling_object_projects_lower_than_near_one():
    far = geometry.project(geometry.object_center(90.0, geometry.DEPTH_FAR, 0.2), 128, 128)
    near = geometry.project(geometry.object_center(90.0, geometry.DEPTH_NEAR, 0.1), 128, 128)
    assert far[1] > near[1]  # larger row = lower in the image: the tunnel's counter case
    rel = geometry.vertical_relation(far[1], near[1], 128)
    assert rel.two_way == "counter" and rel.three_way == "counter"


def test_floor_objects_are_consistent_and_side_walls_ambiguous():
    far = geometry.project(geometry.object_center(270.0, geometry.DEPTH_FAR, 0.2), 128, 128)
    near = geometry.project(geometry.object_center(270.0, geometry.DEPTH_NEAR, 0.1), 128, 128)
    assert geometry.vertical_relation(far[1], near[1], 128).two_way == "consistent"
    far = geometry.project(geometry.object_center(0.0, geometry.DEPTH_FAR, 0.2), 128, 128)
    near = geometry.project(geometry.object_center(180.0, geometry.DEPTH_NEAR, 0.1), 128, 128)
    rel = geometry.vertical_relation(far[1], near[1], 128)
    assert rel.dy == pytest.approx(0.0) and rel.three_way == "ambiguous" and rel.two_way == "counter"


def test_sizes_cancel_projected_size_between_the_two_depths():
    assert geometry.projected_radius_px(0.2, geometry.DEPTH_FAR, 512) == pytest.approx(
        geometry.projected_radius_px(0.1, geometry.DEPTH_NEAR, 512))


def test_bad_geometry_is_rejected():
    with pytest.raises(ValueError, match="half-extent"):
        geometry.object_center(0.0, 4.0, 1.5)
    with pytest.raises(ValueError, match="out of range"):
        geometry.theta_degrees(16, 16)
    with pytest.raises(ValueError, match="behind the camera"):
        geometry.project((0.0, -1.0, 0.0), 64, 64)


def test_theta_grid_is_evenly_spaced():
    assert [geometry.theta_degrees(k, 16) for k in (0, 4, 8, 12)] == [0.0, 90.0, 180.0, 270.0]
    assert math.isclose(geometry.theta_degrees(1, 16), 22.5)


GOLDEN = [
    (1, "Is the red cube closer to the camera than the blue sphere?", "No"),
    (2, "Is the blue sphere closer to the camera than the red cube?", "Yes"),
    (3, "Is the blue sphere farther from the camera than the red cube?", "No"),
    (4, "Is the red cube farther from the camera than the blue sphere?", "Yes"),
]


def test_the_four_questions_are_the_papers():
    got = [(q["template_id"], q["question"], q["answer"]) for q in questions_for("red cube", "blue sphere")]
    assert got == GOLDEN
    assert sorted(t.answer for t in TEMPLATES) == ["No", "No", "Yes", "Yes"]  # polarity balanced


@pytest.mark.parametrize(("template_id", "text", "answer"), GOLDEN)
def test_official_wording_resolves_to_template_and_objects(template_id, text, answer):
    assert resolve_template(text, answer) == (template_id, "red cube", "blue sphere")


def test_unknown_wording_does_not_resolve():
    assert resolve_template("Which object is closer?", "Yes") is None
    assert resolve_template(GOLDEN[0][1], "Maybe") is None
