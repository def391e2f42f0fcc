"""The official tables carry no geometry: the split and the cells come from the pixels
(spatial_tasks/spatialtunnel/pixels.py). Checked on every bundled phase and size image (rendered
by our generator, whose recorded projections are the truth), through the official layout's
stand-ins (tests/spatialtunnel/official_tables.py), and on drawn images with known answers."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image, ImageDraw

from spatial_tasks.common.origin import origin_for
from spatial_tasks.spatialtunnel import geometry, load, pixels

from .official_tables import official_rows, write_official

SAMPLE = Path("tasks/spatialtunnel/sample")
# Questions the bundled 128 px samples may leave partly unknown (benchmarks/pixel_split.py): the size
# variant has pairs less than a pixel from level (sizes vary continuously), and one near the 5 % line.
MAX_PARTLY_UNKNOWN = {"phase_variation": 0, "size_variation": 12}


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
    """Issue 32, item 8: every object of every bundled image is found, and every label the pixels
    give equals the recorded one. A label is left unknown only where the rows are within their
    measurement tolerance of its decision line, and then the recorded rows are too."""
    docs, recorded = official_docs(config, tmp_path / "official")
    assert len(docs) == len(recorded) and {d["geometry"] for d in docs} == {"pixels"}
    partly_unknown = 0
    for doc, rec in zip(docs, recorded):
        truth = geometry.vertical_relation(rec["pixel1"][1], rec["pixel2"][1], rec["height"])
        assert (doc["obj1"], doc["obj2"]) == (rec["obj1"], rec["obj2"])  # farther / nearer, from the question
        for i in ("1", "2"):  # the cell, or None for a black object too close to a cell's edge to tell
            found, truth_cell = doc[f"theta{i}_index"], rec[f"theta{i}_index"]
            assert found == truth_cell or (found is None and rec[f"color{i}"] == "black"), (rec["image_id"], i)
        assert abs(doc["y1"] - rec["pixel1"][1]) < 2 and abs(doc["y2"] - rec["pixel2"][1]) < 2, rec["image_id"]
        tolerance = 2 * pixels.level_tolerance(rec["height"], black=True)
        if doc["relation_two_way"] == "unknown":  # within a pixel of level, off the midline: ambiguous
            assert doc["relation"] == truth.three_way == "ambiguous" and abs(truth.dy) < tolerance, rec["image_id"]
            partly_unknown += 1
        else:
            assert doc["relation_two_way"] == truth.two_way, rec["image_id"]
        if doc["relation"] == "unknown":  # that close to the 5 % line
            line = geometry.AMBIGUOUS_FRACTION * rec["height"]
            assert abs(abs(truth.dy) - line) < tolerance, rec["image_id"]
            partly_unknown += 1
        else:
            assert doc["relation"] == truth.three_way, rec["image_id"]
    assert partly_unknown <= MAX_PARTLY_UNKNOWN[config]
    assert not [m for m in log_messages if "could not be placed from the pixels" in m]


def test_the_size_variants_s1_is_read_to_about_a_hundredth_and_left_undefined(tmp_path, log_messages):
    """Issue 32, item 8: s1 from the pixels (pixels.far_size) lands near the recorded s1, but not to
    the sweep's 0.02 step, so the loader leaves v(s1) and Δ_s undefined on an official size table
    and says so (benchmarks/pixel_split.py: at 512 px the nearest sweep value is wrong for 2 of the 43
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


def test_a_table_of_two_image_sizes_is_read_as_one(tmp_path, log_messages):
    """Every other image of the bundled phase sample at twice its size (256 px): the walls are
    measured as shares of the width and a black object's empty tunnel comes from images of its own
    size, so every label and cell still equals the recorded one, none unknown."""
    generated = datasets.load_dataset("parquet", data_files=str(SAMPLE / "phase_variation" / "test-00000-of-00001.parquet"),
                                      split="train")
    rows, recorded = official_rows(generated)
    doubled = {}
    for k, row in enumerate(rows):
        if (k // 4) % 2:
            if k // 4 not in doubled:
                image = Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB")
                buffer = io.BytesIO()
                image.resize((256, 256), Image.LANCZOS).save(buffer, "PNG")
                doubled[k // 4] = buffer.getvalue()
            row["image"] = {"bytes": doubled[k // 4], "path": None}
    path = write_official(tmp_path, "phase_variation", rows)
    kwargs = {"data_files": {"train": path.name}}
    loaded = datasets.load_dataset(str(tmp_path), split="train", cache_dir=str(tmp_path / "hf"), **kwargs)
    docs = load.to_docs(loaded, origin_for(loaded, str(tmp_path), None, "train", kwargs), "phase", grid=8)
    for doc, source in zip(docs, recorded):
        truth = geometry.vertical_relation(source["pixel1"][1], source["pixel2"][1], source["height"])
        assert (doc["relation_two_way"], doc["relation"]) == (truth.two_way, truth.three_way), doc["question_id"]
        assert (doc["theta1_index"], doc["theta2_index"]) == (source["theta1_index"], source["theta2_index"])
    assert not [m for m in log_messages if "unknown" in m or "decided no label" in m], log_messages


@pytest.mark.parametrize("encoding", ["jpeg75", "jpeg30"])
def test_grey_and_lossy_images_are_never_misread(tmp_path, log_messages, encoding):
    """Issue 44's kit: a grey table and a JPEG quality-10 table had objects placed 15-39 px off under a
    claim of 1.4 px. Now a grey image and a JPEG below quality 30 are not read (unknown, the reason
    named); a JPEG above it is read to JPEG_LEVEL_PX, so its labels are the recorded ones or unknown,
    never wrong; the lossless images keep every label."""
    generated = datasets.load_dataset("parquet", data_files=str(SAMPLE / "phase_variation" / "test-00000-of-00001.parquet"),
                                      split="train")
    rows, recorded = official_rows(generated)
    kinds = []
    for k, row in enumerate(rows):
        kind = ("png", "grey", encoding, "jpeg10")[(k // 4) % 4]
        kinds.append(kind)
        if kind != "png":
            image = Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB")
            buffer = io.BytesIO()
            if kind == "grey":
                image.convert("L").save(buffer, "PNG")
            else:
                image.save(buffer, "JPEG", quality=int(kind[4:]))
            row["image"] = {"bytes": buffer.getvalue(), "path": None}
    path = write_official(tmp_path, "phase_variation", rows)
    kwargs = {"data_files": {"train": path.name}}
    loaded = datasets.load_dataset(str(tmp_path), split="train", cache_dir=str(tmp_path / "hf"), **kwargs)
    docs = load.to_docs(loaded, origin_for(loaded, str(tmp_path), None, "train", kwargs), "phase", grid=8)
    read = {"png": 0, encoding: 0}
    for doc, source, kind in zip(docs, recorded, kinds, strict=True):
        truth = geometry.vertical_relation(source["pixel1"][1], source["pixel2"][1], source["height"])
        if kind in ("grey", "jpeg10"):
            assert doc["relation_two_way"] == "unknown", (kind, doc["question_id"])
        elif doc["relation_two_way"] != "unknown":
            assert doc["relation_two_way"] == truth.two_way, (kind, doc["question_id"])
            read[kind] += 1
        if kind == "png":
            assert doc["relation_two_way"] == truth.two_way
    assert read["png"] == kinds.count("png") and read[encoding] >= kinds.count(encoding) // 2, read
    warned = " ".join(m for m in log_messages if "could not be placed" in m)
    assert "a grey image: its objects are told apart by colour" in warned
    assert "a JPEG of quality about 1" in warned and "below 30" in warned
    assert pixels.jpeg_quality({}) is None


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


@pytest.mark.parametrize("row, dy, expected", [
    (64.0, 0.0, ("ambiguous", "counter")), (64.0, 0.6, ("ambiguous", "counter")),  # on the midline: level
    (50.0, 0.0, ("ambiguous", "unknown")), (50.0, -0.6, ("ambiguous", "unknown")),  # off it: higher or not?
    (50.0, 3.0, ("ambiguous", "consistent")), (50.0, -3.0, ("ambiguous", "counter")),
    (50.0, 6.0, ("unknown", "consistent")), (50.0, -7.0, ("unknown", "counter")),  # the 5 % line is 6.4 px
    (50.0, 10.0, ("consistent", "consistent")), (50.0, -10.0, ("counter", "counter"))])
def test_the_split_of_measured_rows(row, dy, expected):
    """Rows within their measurement tolerance (1.4 px at 128 px) cannot be told apart: on the
    midline the pair is level (not higher, so counter), off it which one is higher is unknown;
    that close to the 5 % line, whether ambiguous is unknown. The other label stays known."""
    far = pixels.Found(70.0, row - dy / 2, 20, "red")
    near = pixels.Found(30.0, row + dy / 2, 20, "blue")
    split = pixels.split_of(pixels.Located(far=far, near=near, width=128, height=128))
    assert (split.three_way, split.two_way) == expected
    assert (split.problem is None) == ("unknown" not in expected)


def test_a_black_objects_tolerance_is_wider():
    far = pixels.Found(70.0, 50.0, 20, "black")
    near = pixels.Found(30.0, 51.8, 20, "blue")  # 1.8 px: beyond a coloured pair's 1.4, within a black one's 4.1
    split = pixels.split_of(pixels.Located(far=far, near=near, width=128, height=128))
    assert (split.three_way, split.two_way) == ("ambiguous", "unknown")
    assert "known to +-4.1 px (a black object)" in split.problem
    assert pixels.split_of(pixels.Located(far=pixels.Found(70.0, 50.0, 20, "red"), near=near, width=128,
                                          height=128)).two_way == "consistent"
    near = pixels.Found(30.0, 50.0 + 6.4 + 1.8, 20, "blue")
    split = pixels.split_of(pixels.Located(far=far, near=near, width=128, height=128))
    assert (split.three_way, split.two_way) == ("unknown", "consistent") and "5% line" in split.problem


@pytest.mark.parametrize(("theta", "index"), [(0, 0), (22.5, 1), (90, 4), (180, 8), (270, 12), (337.5, 15)])
def test_cells_come_from_the_direction_from_the_vanishing_point(theta, index):
    x = 64 + 30 * np.cos(np.radians(theta))
    y = 64 - 30 * np.sin(np.radians(theta))
    assert pixels.cell_index(pixels.Found(float(x), float(y), 10, "red"), 128, 128, 16) == index


def tunnel_gradient(size: int = 128) -> np.ndarray:
    """An empty tunnel's brightness: dark at its far end (the vanishing point), light outwards."""
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    radius = np.maximum(np.abs(xx - size / 2), np.abs(yy - size / 2)) / (size / 2)
    return np.clip(0.04 + 1.2 * radius, 0.0, 0.9).astype(np.float32)


@pytest.mark.parametrize("cx, cy", [(84.0, 64.0), (64.0, 44.0), (64.0, 84.0), (44.0, 62.0)])
def test_a_black_object_by_the_dark_far_end_is_completed(cx, cy):
    """A black cube keeps one brightness while the tunnel behind it darkens towards its far end, so
    only its outer part is darker than the empty tunnel there; its centre still comes out right
    (pixels._completed), on each side of the vanishing point."""
    empty = tunnel_gradient()
    value = empty.copy()
    half = 8
    value[int(cy) - half:int(cy) + half, int(cx) - half:int(cx) + half] = 0.2  # 16 px square
    rgb = np.repeat(value[..., None], 3, axis=2)
    dark_part = value < pixels.DARK_RATIO * empty
    assert dark_part.sum() < 0.8 * (2 * half) ** 2  # the plain dark test keeps only part of it
    (found,) = pixels.black_regions(rgb, np.zeros(value.shape, bool), empty)
    assert (found.x, found.y) == pytest.approx((cx, cy), abs=0.6)
    assert found.area >= 0.9 * (2 * half) ** 2


FAR_WALL = 35 / 36 / 8  # the far wall's reach over the width (focal length 35/36 of it, depth 8 m)
FAR_WALL_128 = FAR_WALL * 128
FAR_RING_128 = {"far": (10.9 / 128, 12.4 / 128)}  # the far objects' square radii (sizes 0.2 to 0.3)


def with_red_near_object(value: np.ndarray) -> np.ndarray:
    rgb = np.repeat(value[..., None], 3, axis=2)
    rgb[95:105, 25:35] = (220 / 255, 30 / 255, 30 / 255)
    return rgb


def test_a_black_object_joined_to_a_darker_patch_of_tunnel_is_parted_from_it():
    """The tunnel by its far end can be darker than the estimate of it (``Background``): a black
    sphere on the far wall then joins that patch in one region, centred off the far objects' ring.
    The stricter test parts the sphere (darker still) from the patch."""
    empty = tunnel_gradient()
    value = empty.copy()
    value[66:75, 55:66] *= 0.5  # darker than estimated, not black: between the two tests
    yy, xx = np.mgrid[0:128, 0:128] + 0.5
    cx, cy, r = 64 - (FAR_WALL_128 - 3.5), 70.0, 3.5  # a 0.22 m sphere resting on the left wall
    value[(xx - cx) ** 2 + (yy - cy) ** 2 <= r ** 2] = 0.06
    rgb = with_red_near_object(value)
    joined = [f for f in pixels.black_regions(rgb, np.zeros(value.shape, bool), empty)]
    assert len(joined) == 1 and joined[0].x > cx + 2  # one region, pulled towards the vanishing point
    located = pixels.locate(rgb, "black sphere", "red cube", empty, FAR_RING_128, pixels.WALL_SIZES["phase"],
                            {"far": FAR_WALL})
    assert located.ok, located.problem
    assert (located.far.x, located.far.y) == pytest.approx((cx, cy), abs=0.8)


def test_a_dark_spot_that_does_not_reach_the_wall_is_not_the_black_object():
    """A dark spot on the far objects' ring, of a size they draw, but whose outer edge stops short of
    the wall (reach 0.74 of it, ``BLACK_REACH``): an object rests on the wall, so the spot is not
    the black object, and none is reported rather than that spot."""
    empty = tunnel_gradient()
    value = empty.copy()
    yy, xx = np.mgrid[0:128, 0:128] + 0.5
    value[(xx - 64) ** 2 + (yy - (64 - 9.5)) ** 2 <= 2.0 ** 2] *= 0.3  # square radius 9.5 px, 2 px across
    rgb = with_red_near_object(value)
    args = (rgb, "black sphere", "red cube", empty, FAR_RING_128, pixels.WALL_SIZES["phase"])
    assert pixels.locate(*args).ok  # on its ring and of its size: without the wall, taken
    located = pixels.locate(*args, {"far": FAR_WALL})
    assert not located.ok and "no black object found where the dataset's far objects lie" in located.problem


def test_a_turned_hue_is_taken_only_when_no_object_has_it():
    """A warm light can turn a cyan cube green: with no cyan region, the green one is the cyan cube
    unless an object is named green."""
    image = drawn([("green", 76, 50, 4), ("red", 30, 100, 5)])
    located = pixels.locate(image, "cyan cube", "red sphere")
    assert located.ok and (round(located.far.x), round(located.far.y)) == (76, 50)
    located = pixels.locate(image, "cyan cube", "green sphere")
    assert not located.ok and "no cyan object found" in located.problem


def test_a_hue_turned_into_the_other_objects_is_told_apart_by_its_mean_hue():
    """A magenta cube turned red (hue 350) beside a red sphere (hue 0): two red regions and no
    magenta one; the region nearer magenta's hue is the magenta cube, whichever is farther."""
    image = Image.new("RGB", (128, 128), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.ellipse([72, 46, 80, 54], fill=(220, 30, 62))  # hue 350: read red
    draw.ellipse([25, 95, 35, 105], fill=(220, 30, 30))  # hue 0
    rgb = np.asarray(image, dtype=np.float32) / 255.0
    located = pixels.locate(rgb, "magenta cube", "red sphere")
    assert located.ok and (round(located.far.x), round(located.near.x)) == (76, 30)
    located = pixels.locate(rgb, "red sphere", "magenta cube")
    assert located.ok and (round(located.far.x), round(located.near.x)) == (30, 76)


def test_stray_coloured_pixels_do_not_hide_a_black_object():
    image = drawn([("black", 76, 50, 3), ("red", 30, 100, 5)])
    image[48, 75] = image[50, 78] = image[52, 75] = (0.2, 0.05, 0.0)  # three brown pixels (the walls' hue, saturated)
    located = pixels.locate(image, "black cube", "red sphere")
    assert located.ok and (round(located.far.x), round(located.far.y)) == (76, 50)


def test_a_cells_agreeing_images_file_its_near_level_one(tmp_path, log_messages):
    """The paper files whole cells (Fig. 4). An image whose rows are within a pixel of level, off
    the midline, takes its cell's split when the cell's other images agree on it; where they do not,
    it stays unknown. Drawn official rows: a red far object on the ceiling's centre line (cell 4),
    a blue near one 22.5 deg above the right (cell 1) or the left (cell 7) midline."""
    def image(near_row: float, left: bool) -> bytes:
        reach = (64 - near_row) / np.sin(np.radians(22.5))
        x = 64 - reach * np.cos(np.radians(22.5)) if left else 64 + reach * np.cos(np.radians(22.5))
        buffer = io.BytesIO()
        Image.fromarray((drawn([("red", 64, 40, 3), ("blue", x, near_row, 3)]) * 255).astype(np.uint8)).save(buffer, "PNG")
        return buffer.getvalue()

    near_rows = [(43.0, False), (44.0, False), (40.0, False),  # cell (4, 1): consistent, consistent, level
                 (43.0, True), (37.0, True), (40.0, True)]      # cell (4, 7): consistent, counter, level
    rows = [{"index": i, "image": {"bytes": image(row, left), "path": None}, "answer": "No",
             "question": "Is the red sphere closer to the camera than the blue sphere? Answer with yes or no."}
            for i, (row, left) in enumerate(near_rows)]
    path = write_official(tmp_path, "phase_variation", rows)
    kwargs = {"data_files": {"train": path.name}}
    loaded = datasets.load_dataset(str(tmp_path), split="train", cache_dir=str(tmp_path / "hf"), **kwargs)
    docs = load.to_docs(loaded, origin_for(loaded, str(tmp_path), None, "train", kwargs), "phase", grid=16)
    assert [(d["theta1_index"], d["theta2_index"]) for d in docs] == [(4, 1)] * 3 + [(4, 7)] * 3
    assert [d["relation_two_way"] for d in docs] == ["consistent"] * 3 + ["consistent", "counter", "unknown"]
    assert [d["relation"] for d in docs] == ["ambiguous"] * 6
    assert any("1 question(s) too close to level to tell took their cell's split" in m for m in log_messages)
    (warning,) = [m for m in log_messages if "which object is higher cannot be told" in m]
    assert "1 of 6 question(s)" in warning and "row 5" in warning


def test_a_cell_split_needs_agreeing_images():
    known = pixels.Split("ambiguous", "counter", -2.0)
    other = pixels.Split("ambiguous", "consistent", 2.0)
    near = pixels.Split("ambiguous", "unknown", 0.3, "near level")
    cells = [(4, 1), (4, 1), (4, 1), (4, 7), (4, 7), (4, 9), (4, 9), None]
    splits = [known, known, near, known, other, known, near, known]
    assert pixels.cell_splits(cells, splits) == {(4, 1): "counter"}  # (4, 7) disagrees; (4, 9) has one image


@pytest.mark.parametrize("config", ["phase_variation", "size_variation"])
def test_every_bundled_images_recorded_rows_lie_in_its_cells_geometry(config):
    """The cell's geometry (pixels.cell_dy) holds on real renders: the walls measured on the
    sample's spheres are within their stated uncertainty of focal length / depth, and every image's
    recorded dy lies within the range its recorded cell and its sizes allow."""
    generated = datasets.load_dataset("parquet", data_files=str(SAMPLE / config / "test-00000-of-00001.parquet"),
                                      split="train").cast_column("image", datasets.Image(decode=False))
    rows = list(generated)
    names = [(r["obj1"], r["obj2"]) for r in rows]
    variant = config.split("_")[0]
    located = pixels.locate_all(lambda k: rows[k]["image"]["bytes"], names, variant=variant)
    width = rows[0]["width"]
    walls = pixels.in_pixels(pixels.wall_scales(located, names), width, variant)
    for role, depth in (("far", geometry.DEPTH_FAR), ("near", geometry.DEPTH_NEAR)):
        scale, off = walls[role]
        assert abs(scale / (geometry.focal_length_px(width) / depth) - 1) < off, role
    for row, loc, pair in zip(rows, located, names):
        low, high = pixels.cell_dy(row["theta1"], row["theta2"], walls, pixels.sizes_of(loc, pair, variant), row["height"])
        assert low - 1e-3 <= row["pixel2"][1] - row["pixel1"][1] <= high + 1e-3, row["image_id"]  # float32 rows


def sphere(theta: float, depth: float, size: float, width: int = 512) -> pixels.Found:
    """A sphere's region as the generator's geometry puts it (an exact disc of its apparent radius)."""
    x, y = geometry.project(geometry.object_center(theta, depth, size), width, width)
    rho = geometry.projected_radius_px(size, depth, width)
    return pixels.Found(x, y, round(np.pi * pixels.SHAPE_SPREAD["sphere"] * rho ** 2), "red")


def test_a_near_level_image_is_decided_by_its_cells_geometry():
    """In 20 of the 256 cells (a far object on the ceiling or floor, the near one 22.5 deg off the
    midline) the rows differ by less than they are known to, but every size the paper draws keeps
    the far object nearer the vanishing point: the cell's geometry decides (counter above the
    midline, consistent below). Not when one image's rows lie outside what its cell allows: then
    the geometry does not fit the table, and the reason names the image."""
    far, near = geometry.DEPTH_FAR, geometry.DEPTH_NEAR
    cells = [(0, 4), (4, 8), (8, 12), (12, 0), (2, 6), (6, 10)]  # objects well apart: splits known
    located = [pixels.Located(far=sphere(22.5 * a, far, 0.25), near=sphere(22.5 * b, near, 0.12), width=512, height=512)
               for a, b in cells]
    level = [pixels.Located(far=sphere(90.0, far, 0.2), near=sphere(22.5, near, 0.1), width=512, height=512),
             pixels.Located(far=sphere(270.0, far, 0.2), near=sphere(202.5, near, 0.1), width=512, height=512)]
    names = [("red sphere", "blue sphere")] * (len(cells) + 2)
    assert [pixels.split_of(loc).two_way for loc in level] == ["unknown", "unknown"]
    readings, unused = pixels.read_all(located + level, names, 16, "phase")
    assert unused is None
    assert [(r.split.two_way, r.split.three_way, r.filed_by) for r in readings[-2:]] == [
        ("counter", "ambiguous", "geometry"), ("consistent", "ambiguous", "geometry")]
    assert all(r.filed_by is None for r in readings[:-2])
    # the far object on the ceiling's centre line (cell 4) 20 px higher: off its depth's wall, same cell
    moved = pixels.Located(far=replace(located[1].far, y=located[1].far.y - 20), near=located[1].near, width=512, height=512)
    readings, unused = pixels.read_all(located[:1] + [moved] + located[2:] + level, names, 16, "phase")
    assert readings[1].cells == (4, 8)
    assert unused is not None and unused.image == 1 and unused.reason.startswith("its rows differ by"), unused
    assert [r.split.two_way for r in readings[-2:]] == ["unknown", "unknown"]


def test_the_loader_files_near_level_rows_by_their_cells_geometry(tmp_path, log_messages):
    """Drawn official rows at 512 px, spheres where the generator's geometry puts them: the two
    near-level images are filed by their cells' geometry and the log says how many."""
    def image(theta1: float, theta2: float, size1: float, size2: float) -> bytes:
        discs = []
        for colour, theta, depth, size in (("red", theta1, geometry.DEPTH_FAR, size1),
                                           ("blue", theta2, geometry.DEPTH_NEAR, size2)):
            x, y = geometry.project(geometry.object_center(theta, depth, size), 512, 512)
            discs.append((colour, x, y, geometry.projected_radius_px(size, depth, 512) * pixels.SHAPE_SPREAD["sphere"] ** 0.5))
        buffer = io.BytesIO()
        Image.fromarray((drawn(discs, size=512) * 255).astype(np.uint8)).save(buffer, "PNG")
        return buffer.getvalue()

    scenes = [(0, 90, 0.25, 0.12), (90, 180, 0.22, 0.11), (180, 270, 0.28, 0.14), (270, 0, 0.21, 0.13),
              (45, 135, 0.26, 0.1), (135, 225, 0.24, 0.15), (90, 22.5, 0.2, 0.1), (270, 202.5, 0.2, 0.1)]
    rows = [{"index": i, "image": {"bytes": image(*scene), "path": None}, "answer": "No",
             "question": "Is the red sphere closer to the camera than the blue sphere? Answer with yes or no."}
            for i, scene in enumerate(scenes)]
    path = write_official(tmp_path, "phase_variation", rows)
    kwargs = {"data_files": {"train": path.name}}
    loaded = datasets.load_dataset(str(tmp_path), split="train", cache_dir=str(tmp_path / "hf"), **kwargs)
    docs = load.to_docs(loaded, origin_for(loaded, str(tmp_path), None, "train", kwargs), "phase", grid=16)
    level = [docs[6], docs[7]]
    assert [(d["theta1_index"], d["theta2_index"]) for d in level] == [(4, 1), (12, 9)]
    assert [(d["relation_two_way"], d["relation"]) for d in level] == [("counter", "ambiguous"), ("consistent", "ambiguous")]
    assert any("2 question(s) whose rows are too close to a line to tell were decided by their cell's geometry" in m
               for m in log_messages)
    assert not [m for m in log_messages if "cannot be told" in m]


@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_the_cell_is_the_wall_point_not_the_centre(shape):
    """An object is pulled off the wall by its half-extent, which turns its centre's direction by up
    to 8 deg (0.3 m at 22.5 deg, the size variant's largest); pushed back out by its apparent radius
    it gives its own cell at every position, size, depth and resolution."""
    turned = 0
    for index in range(16):
        theta = geometry.theta_degrees(index, 16)
        for size, depth, width in ((0.1, 8.0, 128), (0.3, 4.0, 512), (0.3, 8.0, 128), (0.15, 4.0, 256)):
            x, y = geometry.project(geometry.object_center(theta, depth, size), width, width)
            rho = geometry.projected_radius_px(size, depth, width)
            disc = np.pi if shape == "sphere" else 4.0
            found = pixels.Found(x, y, disc * pixels.SHAPE_SPREAD[shape] * rho ** 2, "red")
            assert pixels.cell_index(found, width, width, 16, shape) == index, (theta, size, depth, width)
            angle = pixels.wall_angle(found, width, width, shape)
            assert min(abs(angle - theta), 360 - abs(angle - theta)) < 1.0, (theta, size, depth, width)
            centre = np.degrees(np.arctan2(width / 2 - y, x - width / 2)) % 360
            turned += min(abs(centre - theta), 360 - abs(centre - theta)) > 5.0
    assert turned > 0  # the centre's own direction is off by more than 5 deg somewhere


def test_touching_objects_are_split_by_colour_but_a_two_tone_object_is_not():
    """One connected coloured region with two hues is two objects when the hues sit side by side
    (two objects touching), one object when they overlap (faces the light turns two hues)."""
    touching = drawn([("red", 60, 50, 5), ("blue", 70, 50, 5)])
    located = pixels.locate(touching, "red cube", "blue sphere")
    assert located.ok and (round(located.far.x), round(located.near.x)) == (60, 70)
    image = Image.new("RGB", (128, 128), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle([84, 46, 95, 57], fill=(210, 40, 200))  # a magenta cube's lit face ...
    draw.rectangle([86, 48, 93, 55], fill=(220, 30, 62))    # ... and a face inside it the light turns red
    draw.ellipse([25, 95, 35, 105], fill=(220, 30, 30))
    rgb = np.asarray(image, dtype=np.float32) / 255.0
    located = pixels.locate(rgb, "magenta cube", "red sphere")
    assert located.ok and located.far.area == 144 and (round(located.far.x), round(located.near.x)) == (90, 30)
