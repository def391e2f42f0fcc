"""Real Blender renders at tiny sizes: the DORI scene's recorded angles against the pictures.

Select with ``-m render``; skipped where bpy is not installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("bpy")

from spatial_tasks.generators.dori import sampling
from spatial_tasks.generators.dori.scene import STAND_HEIGHT, DoriRenderer

pytestmark = pytest.mark.render
RES = 96


@pytest.fixture(scope="module")
def renderer():
    return DoriRenderer(RES, 4, 2)


def _view(image_id, objects):
    return {"image_id": image_id, "objects": objects}


def _upright(kind, yaw, x=0.0):
    return {"kind": kind, "x": x, "y": 0.0, "z": STAND_HEIGHT[kind], "yaw": yaw, "tilt": 0.0, "scale": 1.0}


def _red_centroid(path) -> tuple[float, float] | None:
    pixels = np.asarray(Image.open(path).convert("RGB")).astype(int)
    red = (pixels[..., 0] > 120) & (pixels[..., 1] < 70) & (pixels[..., 2] < 70)
    if red.sum() < 3:
        return None
    rows, cols = np.nonzero(red)
    return float(cols.mean()) + 0.5, float(rows.mean()) + 0.5


def _rotation(matrix) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)[:3, :3]
    return m / np.linalg.norm(m, axis=0)  # remove the object's scale


def _rz(degrees):
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _rx(degrees):
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


@pytest.mark.parametrize("kind", ["suzanne", "chair", "car"])
def test_a_quarter_turn_moves_the_front_marker_where_it_must(renderer, tmp_path, kind):
    """Yaw 0 faces the camera (marker at the object's centre column); a 90 degree clockwise turn seen
    from above points the front to the image's left, 270 to its right."""
    facts = {}
    for yaw in (0, 90, 270):
        result = renderer((_view(f"{kind}-{yaw}", [_upright(kind, yaw)]), str(tmp_path)))
        fact = result["facts"][0]
        centroid = _red_centroid(tmp_path / f"{kind}-{yaw}.png")
        assert centroid is not None, f"{kind} yaw {yaw}: the front marker is not visible"
        assert math.dist(centroid, fact["marker_px"]) < 3.0, (centroid, fact["marker_px"])
        facts[yaw] = (fact, centroid)
    centre = lambda fact: (fact["box"][0] + fact["box"][2]) / 2
    front, left, right = facts[0], facts[90], facts[270]
    assert abs(front[1][0] - centre(front[0])) < 0.12 * (front[0]["box"][2] - front[0]["box"][0])
    assert left[1][0] < centre(left[0]) - 2 and right[1][0] > centre(right[0]) + 2
    assert front[0]["marker_toward_camera"] and not renderer(
        (_view(f"{kind}-180", [_upright(kind, 180)]), str(tmp_path)))["facts"][0]["marker_toward_camera"]


def test_compound_rotation_images_differ_by_exactly_the_recorded_rotation(renderer, tmp_path):
    for item in sampling.plan("compound_rotation", 6, seed=3):
        facts = [renderer((view, str(tmp_path)))["facts"] for view in item.views]
        truth = item.questions(facts)[1]["truth"]
        first, second = _rotation(facts[0][0]["matrix_world"]), _rotation(facts[1][0]["matrix_world"])
        # in the object's own frame: tilt h about the horizontal (x) axis, then v clockwise about the vertical
        expected = _rz(-truth["vertical"]) @ _rx(truth["horizontal"])
        assert np.allclose(first.T @ second, expected, atol=1e-5), (item.item_id, truth)
        assert np.allclose(first, _rz(-truth["base_yaw"]), atol=1e-5)


def test_viewer_scene_rotation_is_about_the_vertical_axis(renderer, tmp_path):
    for item in sampling.plan("viewer_scene_direction", 4, seed=5):
        facts = [renderer((view, str(tmp_path)))["facts"] for view in item.views]
        truth = item.questions(facts)[1]["truth"]
        first, second = _rotation(facts[0][0]["matrix_world"]), _rotation(facts[1][0]["matrix_world"])
        assert np.allclose(first.T @ second, _rz(-truth["turn_clockwise"]), atol=1e-5)


def test_facing_each_other_is_what_the_picture_shows(renderer, tmp_path):
    """A at the left with yaw 270 and B at the right with yaw 90: each front marker is on the side
    of its object that faces the other object."""
    view = _view("io", [{**_upright("chair", 270, x=-1.4), "scale": 0.8}, {**_upright("car", 90, x=1.4), "scale": 0.8}])
    facts = renderer((view, str(tmp_path)))["facts"]
    assert sampling._facing_relation(270, 90) == sampling.IO_COARSE.index("Facing each other")
    a, b = facts
    assert a["marker_px"][0] > (a["box"][0] + a["box"][2]) / 2 and b["marker_px"][0] < (b["box"][0] + b["box"][2]) / 2
    assert a["box"][2] <= b["box"][0] + 1  # A is left of B
