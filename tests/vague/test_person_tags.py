"""Person tags (white digits on black at each box centre), on images with 2, 5 and 10 people: each
tag is where it must be and shows its own number (compared with the number drawn alone)."""

from __future__ import annotations

import numpy as np
import pytest
from lmms import SPATIAL_TASKS, run_cli
from PIL import Image, ImageDraw

from spatial_tasks.vague.person_tags import draw_person_tags, tag_size


def _people(n: int, size=(800, 500)) -> tuple[Image.Image, list[list[float]]]:
    image = Image.new("RGB", size, (150, 170, 190))
    draw = ImageDraw.Draw(image)
    width = size[0] / n
    boxes = []
    for k in range(n):
        box = [k * width + 4, 100.0 + 10 * (k % 3), (k + 1) * width - 4, 460.0]
        draw.rectangle(box, fill=(90 + 15 * k % 150, 60, 80))
        boxes.append(box)
    return image, boxes


def _alone(number: int, size: int) -> np.ndarray:
    """Tag ``number`` drawn by itself (the earlier tags far away on a wide blank canvas): what it
    must look like."""
    image = Image.new("RGB", (200 * number, 200), (255, 255, 255))
    boxes = [[200 * k + 50, 50, 200 * k + 150, 150] for k in range(number)]
    out, tags = draw_person_tags(image, boxes, size)
    x0, y0, x1, y1 = tags[-1].rectangle
    return np.asarray(out)[y0:y1 + 1, x0:x1 + 1]


@pytest.mark.parametrize("people", [2, 5, 10])
def test_tags_are_where_and_what_they_must_be(people):
    image, boxes = _people(people)
    tagged, tags = draw_person_tags(image, boxes)
    pixels = np.asarray(tagged)
    size = tag_size(image)
    assert size == 32  # 40 per 1,000 px of the longer side
    assert [t.number for t in tags] == list(range(1, people + 1))
    for tag, box in zip(tags, boxes):
        x0, y0, x1, y1 = tag.rectangle
        assert abs((x0 + x1) / 2 - (box[0] + box[2]) / 2) <= 1 and abs((y0 + y1) / 2 - (box[1] + box[3]) / 2) <= 1
        patch = pixels[y0:y1 + 1, x0:x1 + 1]
        assert np.array_equal(patch, _alone(tag.number, size)), f"tag {tag.number} does not show its number"
        assert (patch == 255).all(axis=2).any() and (patch == 0).all(axis=2).mean() > 0.4  # white on black
    untouched = np.ones(pixels.shape[:2], bool)
    for tag in tags:
        x0, y0, x1, y1 = tag.rectangle
        untouched[y0:y1 + 1, x0:x1 + 1] = False
    assert np.array_equal(pixels[untouched], np.asarray(image)[untouched])  # nothing else changed


def test_boxes_outside_the_image_are_refused():
    image, _ = _people(2)
    with pytest.raises(ValueError, match=r"box 2: .* not inside the 800 x 500 image"):
        draw_person_tags(image, [[0, 0, 10, 10], [700, 10, 900, 20]])
    with pytest.raises(ValueError, match="box 1: .* not four numbers"):
        draw_person_tags(image, [[0, 0, 10]])


def test_cli(tmp_path):
    image, boxes = _people(5)
    image.save(tmp_path / "frame.jpg")
    done = run_cli([SPATIAL_TASKS, "vague", "tag-persons", str(tmp_path / "frame.jpg"), "--boxes", str(boxes),
                           "--out", str(tmp_path / "frame_annot.png")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected, _ = draw_person_tags(image.convert("RGB"), boxes)
    got = np.asarray(Image.open(tmp_path / "frame_annot.png"))
    assert np.abs(got.astype(int) - np.asarray(Image.open(tmp_path / "frame.jpg").convert("RGB")).astype(int)).max() > 100
    bad = run_cli([SPATIAL_TASKS, "vague", "tag-persons", str(tmp_path / "frame.jpg"), "--boxes", "[[1,2,3]]",
                          "--out", str(tmp_path / "x.png")], capture_output=True, text=True)
    assert bad.returncode == 2 and "box 1" in bad.stderr and not (tmp_path / "x.png").exists()
    assert expected.size == (800, 500)
    again = [SPATIAL_TASKS, "vague", "tag-persons", str(tmp_path / "frame.jpg"), "--boxes", str(boxes), "--out"]
    assert run_cli([*again, str(tmp_path / "frame_annot.png")], capture_output=True).returncode == 0  # its own
    (tmp_path / "mine.png").write_bytes(b"a picture of mine")  # issue 50: never overwritten
    refused = run_cli([*again, str(tmp_path / "mine.png")], capture_output=True, text=True)
    assert refused.returncode == 2 and "holds mine.png, which spatial-tasks did not write" in refused.stderr
    assert (tmp_path / "mine.png").read_bytes() == b"a picture of mine"
