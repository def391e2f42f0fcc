"""Markers drawn from masks: positions, sizes, colours, the 1024 rescale, and the cache."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from spatial_tasks.o3d import load, markers

RED = markers.TARGET_COLOR
BLUE = markers.DISTRACTOR_COLOR


def _scene(w=400, h=300):
    """Grey image; target: a filled L-shaped region (centre of mass off its bounding-box centre);
    three distractors as grey levels 85/170/255 (one per object)."""
    image = Image.new("RGB", (w, h), (128, 128, 128))
    targ = np.zeros((h, w), np.uint8)
    targ[100:160, 180:200] = 255
    targ[140:160, 200:240] = 255
    dist = np.zeros((h, w), np.uint8)
    dist[40:80, 30:70] = 85
    dist[200:260, 60:90] = 170
    dist[120:150, 320:380] = 255
    return image, targ, dist


def _bbox(mask):
    rows, cols = np.nonzero(mask)
    return cols.min(), rows.min(), cols.max(), rows.max()


def _colour_mask(arr, colour):
    return (arr == colour).all(axis=-1)


def _blobs(mask):
    parts = markers.instance_masks(mask.astype(np.uint8))
    return sorted(parts, key=lambda m: markers.centre_of_mass(m))


def test_red_circle_sits_on_the_target_centre_of_mass():
    image, targ, dist = _scene()
    out = np.asarray(markers.draw_markers(image, targ, dist))
    cx, cy = markers.centre_of_mass(targ != 0)
    x, y = round(cx), round(cy)
    red = _colour_mask(out, RED)
    assert _bbox(red) == (x - 10, y - 10, x + 10, y + 10)  # 20 px marker: +-10 around the centre
    rx, ry = markers.centre_of_mass(red)
    assert abs(rx - x) < 0.01 and abs(ry - y) < 0.01
    # a disc, not a square: corners of the bounding box stay unpainted
    assert not red[y - 10, x - 10] and not red[y + 10, x + 10]


def test_blue_squares_sit_on_each_distractor_centre_of_mass():
    image, targ, dist = _scene()
    out = np.asarray(markers.draw_markers(image, targ, dist))
    blue = _colour_mask(out, BLUE)
    squares = _blobs(blue)
    assert len(squares) == 3
    expected = sorted(markers.centre_of_mass(dist == v) for v in (85, 170, 255))
    for square, (cx, cy) in zip(squares, expected):
        x, y = round(cx), round(cy)
        assert _bbox(square) == (x - 10, y - 10, x + 10, y + 10)
        assert square.sum() == 21 * 21  # filled


def test_binary_distractor_mask_is_split_into_objects():
    image, targ, dist = _scene()
    binary = (dist != 0).astype(np.uint8) * 255
    a = np.asarray(markers.draw_markers(image, targ, dist))
    b = np.asarray(markers.draw_markers(image, targ, binary))
    assert np.array_equal(a, b)


def test_tiny_fragments_of_a_binary_mask_are_ignored():
    mask = np.zeros((100, 100), np.uint8)
    mask[10:40, 10:40] = 1
    mask[60:90, 60:90] = 1
    mask[0, 99] = 1  # a stray pixel
    assert len(markers.instance_masks(mask)) == 2


def test_rescale_to_max_side_1024():
    image, targ, dist = _scene()
    big = image.resize((2048, 1536))
    targ_big = np.asarray(Image.fromarray(targ).resize((2048, 1536), Image.Resampling.NEAREST))
    dist_big = np.asarray(Image.fromarray(dist).resize((2048, 1536), Image.Resampling.NEAREST))
    out = markers.draw_markers(big, targ_big, dist_big)
    assert out.size == (1024, 768)
    red = _colour_mask(np.asarray(out), RED)
    cx, cy = markers.centre_of_mass(targ_big != 0)
    rx, ry = markers.centre_of_mass(red)
    assert abs(rx - cx / 2) < 1.0 and abs(ry - cy / 2) < 1.0


def test_small_images_are_not_enlarged():
    image, targ, dist = _scene()
    assert markers.draw_markers(image, targ, dist).size == image.size
    assert markers.shrink_to_max_side(Image.new("RGB", (1024, 10))).size == (1024, 10)
    assert markers.shrink_to_max_side(Image.new("RGB", (10, 3000))).size == (3, 1024)


def test_masks_of_another_size_are_scaled_to_the_image():
    image, targ, dist = _scene()
    half_t = np.asarray(Image.fromarray(targ).resize((200, 150), Image.Resampling.NEAREST))
    half_d = np.asarray(Image.fromarray(dist).resize((200, 150), Image.Resampling.NEAREST))
    out = np.asarray(markers.draw_markers(image, half_t, half_d))
    cx, cy = markers.centre_of_mass(half_t != 0)
    x, y = round(cx * 2), round(cy * 2)
    assert _bbox(_colour_mask(out, RED)) == (x - 10, y - 10, x + 10, y + 10)


def test_draw_markers_does_not_touch_its_input():
    image, targ, dist = _scene()
    before = np.asarray(image).copy()
    markers.draw_markers(image, targ, dist)
    assert np.array_equal(np.asarray(image), before)


def test_empty_target_mask_draws_no_circle():
    image, _, dist = _scene()
    out = np.asarray(markers.draw_markers(image, np.zeros((300, 400), np.uint8), dist))
    assert not _colour_mask(out, RED).any()
    with pytest.raises(ValueError, match="empty mask"):
        markers.centre_of_mass(np.zeros((3, 3), bool))


def test_fixture_markers_match_the_masks(o3d_docs):
    # no OC: there a neighbour's blue square may cover part of the circle (squares are drawn last)
    doc = next(d for d in o3d_docs if d["subset_name"] == "kb-2cue" and d["is_marked"] and "OC" not in d["cues"])
    target, distractors = load.masks_for(doc)
    out = np.asarray(load.image_for(doc))
    red = _colour_mask(out, RED)
    x, y = (round(v) for v in markers.centre_of_mass(target))
    assert red[y, x] and _bbox(red) == (x - 10, y - 10, x + 10, y + 10)
    blue = _colour_mask(out, BLUE)
    for m in distractors:
        bx, by = (round(v) for v in markers.centre_of_mass(m))
        assert blue[by, bx]


def test_drawn_images_are_cached(o3d_docs):
    markers.MARKER_CACHE.clear()
    doc = next(d for d in o3d_docs if d["subset_name"] == "kb-1cue" and d["is_marked"])
    twin = next(d for d in o3d_docs if d["image_name"] == doc["image_name"] and d["is_marked"]
                and d["question_id"] != doc["question_id"])
    first = load.image_for(doc)
    assert markers.MARKER_CACHE.draws == 1
    first.paste((0, 0, 0), (0, 0, 20, 20))  # callers get a copy: this must not reach the cache
    second = load.image_for(doc)
    third = load.image_for(twin)  # another question on the same image shares the drawing
    assert markers.MARKER_CACHE.draws == 1 and markers.MARKER_CACHE.hits == 2
    assert np.array_equal(np.asarray(second), np.asarray(third))
    assert not np.array_equal(np.asarray(first), np.asarray(second))
    other = next(d for d in o3d_docs if d["subset_name"] == "kb-1cue" and d["is_marked"]
                 and d["image_name"] != doc["image_name"])
    load.image_for(other)
    assert markers.MARKER_CACHE.draws == 2


def test_cache_evicts_least_recently_used():
    cache = markers.MarkerCache(maxsize=2)
    made = []

    def maker(k):
        def make():
            made.append(k)
            return Image.new("RGB", (2, 2))
        return make

    for k in ("a", "b", "a", "c", "b"):
        cache.get(k, maker(k))
    assert made == ["a", "b", "c", "b"] and len(cache) == 2
