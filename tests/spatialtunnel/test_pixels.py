"""The official tables carry no geometry: the split and the cells come from the pixels
(spatial_tasks/spatialtunnel/pixels.py). Checked on every bundled phase and size image (rendered
by our generator, whose recorded projections are the truth), through the official layout's
stand-ins (tests/spatialtunnel/official_tables.py), and on drawn images with known answers."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image, ImageDraw

from spatial_tasks.common.origin import origin_for
from spatial_tasks.spatialtunnel import geometry, load, pixels

from .official_tables import official_rows, write_official

SAMPLE = Path("tasks/spatialtunnel/sample")
MAX_UNKNOWN_SHARE = 0.1  # of the images; only images with a black object may be unknown


def borderline(dy: float, height: int) -> bool:
    """Rows this close to a decision line cannot be told from the pixels (pixels.level_tolerance)."""
    tolerance = 2 * pixels.level_tolerance(height)
    return abs(dy) < tolerance or abs(abs(dy) - geometry.AMBIGUOUS_FRACTION * height) < tolerance


def official_docs(config: str, folder: Path, tsv: bool = False):
    """The bundled sample rewritten in the official layout, loaded as lmms-eval loads the release."""
    generated = datasets.load_dataset("parquet", data_files=str(SAMPLE / config / "test-00000-of-00001.parquet"),
                                      split="train")
    rows, recorded = official_rows(generated)
    path = write_official(folder, config, rows, tsv=tsv)
    kwargs = {"data_files": {"train": path.name}}
    loaded = datasets.load_dataset(str(folder), split="train", cache_dir=str(folder / "hf"), **kwargs)
    grid = recorded[0]["grid"]
    variant = config.split("_")[0]
    docs = load.to_docs(loaded, origin_for(loaded, str(folder), None, "train", kwargs), variant, grid=grid)
    return docs, recorded


@pytest.mark.parametrize("config", ["phase_variation", "size_variation"])
def test_every_bundled_image_is_filed_as_recorded(tmp_path, config, log_messages):
    docs, recorded = official_docs(config, tmp_path / "official")
    assert len(docs) == len(recorded) and {d["geometry"] for d in docs} == {"pixels"}
    unknown_images, checked = set(), 0
    for doc, rec in zip(docs, recorded):
        truth = geometry.vertical_relation(rec["pixel1"][1], rec["pixel2"][1], rec["height"])
        assert (doc["obj1"], doc["obj2"]) == (rec["obj1"], rec["obj2"])  # farther / nearer, from the question
        if doc["relation"] == "unknown":
            assert "black" in (rec["color1"], rec["color2"]), rec["image_id"]
            unknown_images.add(rec["image_id"])
            continue
        for i in ("1", "2"):  # the cell, or None for a black object too close to a cell's edge to tell
            found, truth_cell = doc[f"theta{i}_index"], rec[f"theta{i}_index"]
            assert found == truth_cell or (found is None and rec[f"color{i}"] == "black"), (rec["image_id"], i)
        assert abs(doc["y1"] - rec["pixel1"][1]) < 4 and abs(doc["y2"] - rec["pixel2"][1]) < 4, rec["image_id"]
        if not borderline(truth.dy, rec["height"]):
            assert (doc["relation"], doc["relation_two_way"]) == (truth.three_way, truth.two_way), rec["image_id"]
            checked += 1
    images = {r["image_id"] for r in recorded}
    assert len(unknown_images) <= MAX_UNKNOWN_SHARE * len(images)
    assert checked >= 0.8 * len(docs)
    if unknown_images:  # named, never silently misfiled
        (warning,) = [m for m in log_messages if "could not be placed from the pixels" in m]
        assert f"{4 * len(unknown_images)} of {len(docs)} question(s)" in warning


def test_the_size_variants_s1_is_read_to_about_a_hundredth_and_left_undefined(tmp_path, log_messages):
    """Issue 32, item 8: s1 from the pixels (pixels.far_size) lands near the recorded s1, but not to
    the sweep's 0.02 step, so the loader leaves v(s1) and Δ_s undefined on an official size table
    and says so (benchmarks/pixel_split.py: at 512 px the nearest sweep value is wrong for 1 of 42
    images)."""
    docs, _ = official_docs("size_variation", tmp_path / "official")
    assert {doc["size1_nominal"] for doc in docs} == {None}
    assert any("the pixels give it only to about +-0.006" in m for m in log_messages)
    generated = datasets.load_dataset("parquet", data_files=str(SAMPLE / "size_variation" / "test-00000-of-00001.parquet"),
                                      split="train").cast_column("image", datasets.Image(decode=False))
    rows = list(generated)
    located = pixels.locate_all(lambda k: rows[k]["image"]["bytes"], [(r["obj1"], r["obj2"]) for r in rows])
    errors = [abs(reading[0] - row["size1_nominal"]) for row, loc in zip(rows, located)
              if (reading := pixels.far_size(loc, pixels.shape_of(row["obj1"]), pixels.shape_of(row["obj2"])))]
    assert len(errors) >= 20 and np.median(errors) < 0.01 and max(errors) < 0.05  # at 128 px


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("theta", [0.0, 45.0, 112.5, 270.0])
def test_an_objects_size_follows_from_its_apparent_radius_and_its_place(shape, theta):
    """s = HALF_WIDTH * rho / (rho + r) for any depth and resolution: an object drawn where the
    generator's geometry puts it, with the apparent radius it gives, reads back its own size."""
    for size, depth, width in ((0.1, geometry.DEPTH_FAR, 128), (0.3, geometry.DEPTH_NEAR, 512), (0.22, 6.0, 256)):
        x, y = geometry.project(geometry.object_center(theta, depth, size), width, width)
        rho = geometry.projected_radius_px(size, depth, width)
        disc = np.pi if shape == "sphere" else 4.0
        found = pixels.Found(x, y, disc * pixels.SHAPE_SPREAD[shape] * rho ** 2, "red")
        assert pixels.wall_size(found, shape, width, width) == pytest.approx(size, rel=1e-9)
    assert pixels.nearest_sweep_value(0.1031) == 0.1 and pixels.nearest_sweep_value(0.2999) == 0.3


def test_the_tsv_layout_gives_the_same_docs(tmp_path):
    parquet, _ = official_docs("size_variation", tmp_path / "p")
    tsv, _ = official_docs("size_variation", tmp_path / "t", tsv=True)
    keys = ("question_id", "relation", "relation_two_way", "theta1_index", "theta2_index", "dy")
    assert [{k: d[k] for k in keys} for d in parquet] == [{k: d[k] for k in keys} for d in tsv]


def test_an_official_parquet_is_never_taken_for_our_layout(tmp_path):
    docs, _ = official_docs("size_variation", tmp_path / "o")
    assert {d["source"].split(" (")[0] for d in docs} == {load.OFFICIAL}


# ------------------------------------------------------------------------------------------
# Drawn images with known answers

BACKGROUND = (200, 180, 150)  # a warm tunnel wall
RGB = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (40, 60, 210), "yellow": (235, 210, 20),
       "cyan": (30, 200, 210), "magenta": (210, 40, 200), "black": (25, 25, 25)}


def drawn(objects: list[tuple[str, float, float, float]], size: int = 128) -> np.ndarray:
    """A plain wall with discs (colour, x, y, radius)."""
    image = Image.new("RGB", (size, size), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for colour, x, y, r in objects:
        draw.ellipse([x - r, y - r, x + r, y + r], fill=RGB[colour])
    return np.asarray(image, dtype=np.float32) / 255.0


@pytest.mark.parametrize("far, near", [("red", "blue"), ("yellow", "magenta"), ("green", "cyan"), ("black", "red")])
def test_objects_are_found_by_colour(far, near):
    located = pixels.locate(drawn([(far, 76, 50, 4), (near, 30, 100, 5)]), f"{far} cube", f"{near} sphere")
    assert located.ok, located.problem
    assert (round(located.far.x), round(located.far.y), round(located.near.x), round(located.near.y)) == (76, 50, 30, 100)


def test_two_objects_of_one_colour_the_farther_is_nearer_the_vanishing_point():
    located = pixels.locate(drawn([("red", 30, 100, 5), ("red", 76, 64, 4)]), "red cube", "red sphere")
    assert located.ok and (round(located.far.x), round(located.near.x)) == (76, 30)


@pytest.mark.parametrize("objects, far, near, problem", [
    ([("red", 76, 50, 4)], "red cube", "blue sphere", "no blue object found"),
    ([("red", 76, 50, 4), ("red", 30, 100, 5), ("red", 100, 30, 5), ("blue", 40, 40, 4)], "red cube", "blue sphere",
     "3 red regions of similar size"),
    ([("red", 76, 50, 4)], "red cube", "red sphere", "one red region where two objects are red"),
    ([("red", 76, 50, 4)], "crimson cube", "red sphere", "does not start with one of the colours"),
])
def test_what_cannot_be_found_is_said(objects, far, near, problem):
    located = pixels.locate(drawn(objects), far, near)
    assert not located.ok and problem in located.problem
    assert pixels.split_of(located).three_way == "unknown"


@pytest.mark.parametrize("dy, expected", [(0.0, ("ambiguous", "counter")), (0.6, ("ambiguous", "counter")),
                                          (3.0, ("ambiguous", "consistent")), (-3.0, ("ambiguous", "counter")),
                                          (10.0, ("consistent", "consistent")), (-10.0, ("counter", "counter"))])
def test_the_split_of_measured_rows(dy, expected):
    """Rows within a pixel (at 128 px) are level: not higher, so counter; the 5 % line is 6.4 px."""
    far = pixels.Found(70.0, 50.0 - dy / 2, 20, "red")
    near = pixels.Found(30.0, 50.0 + dy / 2, 20, "blue")
    split = pixels.split_of(pixels.Located(far=far, near=near, width=128, height=128))
    assert (split.three_way, split.two_way) == expected


def test_a_black_object_near_a_line_is_unknown_not_guessed():
    far = pixels.Found(70.0, 50.0, 20, "black")
    near = pixels.Found(30.0, 51.5, 20, "blue")
    split = pixels.split_of(pixels.Located(far=far, near=near, width=128, height=128))
    assert split.three_way == "unknown" and "black object's row is known to +-3.0 px" in split.problem


@pytest.mark.parametrize(("theta", "index"), [(0, 0), (22.5, 1), (90, 4), (180, 8), (270, 12), (337.5, 15)])
def test_cells_come_from_the_direction_from_the_vanishing_point(theta, index):
    x = 64 + 30 * np.cos(np.radians(theta))
    y = 64 - 30 * np.sin(np.radians(theta))
    assert pixels.cell_index(pixels.Found(float(x), float(y), 10, "red"), 128, 128, 16) == index
