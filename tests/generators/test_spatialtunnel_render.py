"""Real Blender renders at tiny sizes (64-96 px, 2 samples): the geometry in the pictures, the
recorded ground truth against the rendered object-index pass, determinism, resume and sharding.

Select with ``-m render``; skipped where bpy is not installed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("bpy")

from spatial_tasks.generators.common import blender, provenance
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.spatialtunnel import generate as gen
from spatial_tasks.generators.spatialtunnel import sampling
from spatial_tasks.generators.spatialtunnel.scene import OBJECT_PASS_INDEX, TunnelRenderer

from spatial_tasks.spatialtunnel import geometry

from .fake_renders import load_fresh

pytestmark = pytest.mark.render

RES = 96
GRID = 4  # theta indices: 0 -> 0 deg (+X wall), 1 -> 90 (ceiling), 2 -> 180, 3 -> 270 (floor)


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> dict[str, dict]:
    """Every cell of a 4 x 4 grid rendered once, with its object-index pass kept."""
    out = tmp_path_factory.mktemp("renders")
    renderer = TunnelRenderer(RES, 2, 2, keep_passes=True)
    results = {}
    for spec in sampling.plan("phase", grid=GRID, per_cell=1, seed=0):
        qa = renderer((spec, str(out)))["qa"]
        record = json.loads((out / f"{spec.image_id}.json").read_text())
        ids = np.rint(blender.read_exr_passes(out / f"{spec.image_id}.exr")["Object Index"][..., 0])
        results[spec.image_id] = {"spec": spec, "row": record["row"], "qa": qa, "ids": ids,
                                  "png": out / f"{spec.image_id}.png"}
    return results


def _mask_centroid(ids: np.ndarray, value: int) -> tuple[float, float]:
    rows, cols = np.nonzero(ids == value)
    return float(cols.mean()) + 0.5, float(rows.mean()) + 0.5


def test_far_object_on_the_ceiling_appears_lower(renders):
    r = renders["phase-r01-c01-k00"]  # both objects on the ceiling (theta 90)
    assert r["spec"].theta1 == r["spec"].theta2 == 90.0
    (_, row1), (_, row2) = _mask_centroid(r["ids"], 1), _mask_centroid(r["ids"], 2)
    assert row1 > row2 + 5, "the far obj1 must project lower (larger row) than the near obj2"
    assert r["row"]["pixel1"][1] > r["row"]["pixel2"][1]


def test_far_object_on_the_floor_appears_higher(renders):
    r = renders["phase-r03-c03-k00"]  # both on the floor (theta 270): the usual "far is up"
    (_, row1), (_, row2) = _mask_centroid(r["ids"], 1), _mask_centroid(r["ids"], 2)
    assert row1 < row2 - 5


def test_recorded_centres_lie_on_their_objects(renders):
    for image_id, r in renders.items():
        for slot, value in OBJECT_PASS_INDEX.items():
            col, row = r["row"][f"pixel{slot}"]
            assert r["ids"][int(row), int(col)] == value, (image_id, slot)
            assert r["qa"][f"center{slot}_on_object"] and r["qa"][f"visible_px{slot}"] > 0
            centroid = _mask_centroid(r["ids"], value)
            assert math.dist(centroid, (col, row)) < 1.5, (image_id, slot, centroid, (col, row))


def test_analytic_projection_matches_blender_camera(renders):
    for r in renders.values():
        spec = r["spec"]
        for slot, position in ((1, spec.position1), (2, spec.position2)):
            col, row = geometry.project(position, RES, RES)
            assert r["row"][f"pixel{slot}"] == pytest.approx([col, row], abs=1.0)
            assert r["row"][f"radius{slot}_px"] == pytest.approx(
                geometry.projected_radius_px(getattr(spec, f"size{slot}"), position[1], RES), rel=1e-3)


def test_apparent_radius_matches_the_mask(renders):
    for image_id, r in renders.items():
        spec = r["spec"]
        for slot in (1, 2):
            area = float((r["ids"] == slot).sum())
            shape, radius = getattr(spec, f"shape{slot}"), r["row"][f"radius{slot}_px"]
            measured = math.sqrt(area / math.pi) if shape == "sphere" else math.sqrt(area) / 2
            assert measured == pytest.approx(radius, rel=0.35), (image_id, slot)


def test_objects_are_visible_against_the_walls(renders):
    """Each object differs from the wall pixels around it (not lost in the dark)."""
    from PIL import Image

    for image_id, r in renders.items():
        rgb = np.asarray(Image.open(r["png"]).convert("RGB"), dtype=float)
        assert rgb.shape == (RES, RES, 3)
        for slot in (1, 2):
            inside = rgb[r["ids"] == slot].mean(axis=0)
            ring = _ring(r["ids"] == slot) & (r["ids"] == 0)
            around = rgb[ring].mean(axis=0)
            assert np.abs(inside - around).max() > 12, (image_id, slot, inside, around)


def _ring(mask: np.ndarray, width: int = 2) -> np.ndarray:
    grown = mask.copy()
    for _ in range(width):
        grown = grown | np.roll(grown, 1, 0) | np.roll(grown, -1, 0) | np.roll(grown, 1, 1) | np.roll(grown, -1, 1)
    return grown & ~mask


# --------------------------------------------------------- the generate() pipeline


def _rows(out: Path, config: str = "phase_variation") -> list[dict]:
    data = load_fresh(out, config)
    return [{k: v for k, v in row.items() if k != "image"} for row in data]


TINY = {"grid": 2, "per_cell": 1, "resolution": 64, "samples": 2, "seed": 5}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "tunnel"
    gen.generate("phase", out, **TINY)
    return out


def test_generate_writes_a_loadable_dataset(generated):
    data = load_fresh(generated, "phase_variation")
    assert len(data) == 4
    assert data[0]["image"].size == (64, 64)
    assert (generated / "README.md").is_file()
    assert sorted(p.name for p in (generated / "phase_variation").iterdir()) == ["test-00000-of-00001.parquet"]
    run = json.loads((generated / "_work" / "phase_variation" / "shard-00001-of-00001.run.json").read_text())
    assert run["seed"] == 5 and run["blender_version"][:2] in ("4.", "5.")
    record = ds.read_generation(generated / "phase_variation" / "test-00000-of-00001.parquet")
    assert set(provenance.KEYS) <= set(record) and record["blender_version"] == run["blender_version"]
    assert record["flags"] == {"variant": "phase", "grid": 2, "per_cell": 1, "resolution": 64, "samples": 2,
                               "seed": 5, "shard": "1/1"}  # no speed flags: same rows, same bytes
    assert run["images_rendered"] == 4 and run["qa_problems"] == []
    assert not list((generated / "_work" / "phase_variation").glob(".*.tmp"))


def test_same_seed_gives_identical_metadata_and_images(generated, tmp_path):
    again = tmp_path / "tunnel"
    gen.generate("phase", again, **TINY)
    assert _rows(again) == _rows(generated)
    a = load_fresh(generated, "phase_variation")
    b = load_fresh(again, "phase_variation")
    assert [np.asarray(x).tobytes() for x in a["image"]] == [np.asarray(x).tobytes() for x in b["image"]]


def test_resume_rerenders_only_missing_images(generated):
    work = generated / "_work" / "phase_variation"
    victim = "phase-r01-c00-k00"
    before = {p.name: p.stat().st_mtime_ns for p in work.glob("phase-*")}
    rows_before = _rows(generated)
    (work / f"{victim}.png").unlink()
    (work / f"{victim}.json").unlink()
    gen.generate("phase", generated, **TINY)
    run = json.loads((work / "shard-00001-of-00001.run.json").read_text())
    assert run["images_rendered"] == 1
    after = {p.name: p.stat().st_mtime_ns for p in work.glob("phase-*")}
    changed = sorted(n for n in after if before.get(n) != after[n])
    assert changed == [f"{victim}.json", f"{victim}.png"]
    assert _rows(generated) == rows_before


def test_two_workers_and_two_shards_give_the_same_rows(generated, tmp_path):
    out = tmp_path / "sharded"
    gen.generate("phase", out, **TINY, shard="1/2", workers=2)
    gen.generate("phase", out, **TINY, shard="2/2", workers=1)
    assert sorted(p.name for p in (out / "phase_variation").iterdir()) == [
        "test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    key = lambda r: r["image_id"]
    assert sorted(_rows(out), key=key) == sorted(_rows(generated), key=key)


def test_size_variant_renders(tmp_path):
    out = gen.generate("size", tmp_path / "size", grid=4, per_cell=1, resolution=64, samples=2)
    rows = _rows(out, "size_variation")
    assert [r["size1"] for r in rows] == list(sampling.SIZE_SWEEP)
    run = json.loads((out / "_work" / "size_variation" / "shard-00001-of-00001.run.json").read_text())
    assert run["qa_problems"] == []  # both objects visible at their recorded centres in every image
    assert all(r["size1"] + r["size2"] == pytest.approx(0.4) for r in rows)


def test_probing_variant_renders_pairs_that_probe_reads(tmp_path):
    """Blender renders the probing pairs; the dataset loads through probe.data, and the recorded
    pixel centres agree with every answer."""
    from spatial_tasks.spatialtunnel.probe.data import load_probe_pairs

    out = gen.generate("probing", tmp_path / "probing", grid=16, per_cell=1, resolution=64, samples=2)
    run = json.loads((out / "_work" / "contrastive_probing" / "shard-00001-of-00001.run.json").read_text())
    assert run["qa_problems"] == []  # both objects visible at their recorded centres
    rows = _rows(out, "contrastive_probing")
    assert [r["answer"] for r in rows] == ["left", "right", "above", "below", "far", "close"]
    for row in rows:
        query, reference = ("1", "2") if row["query"] == row["obj1"] else ("2", "1")
        (qx, qy), (rx, ry) = row[f"pixel{query}"], row[f"pixel{reference}"]
        truth = {"left": qx < rx, "right": qx > rx, "above": qy < ry, "below": qy > ry,
                 "far": row[f"depth{query}"] > row[f"depth{reference}"], "close": row[f"depth{query}"] < row[f"depth{reference}"]}
        assert truth[row["answer"]], row["image_id"]
    data = load_probe_pairs(out / "contrastive_probing")
    assert data.layout == "prompts" and [p.label for p in data.pairs] == [r["answer"] for r in rows]
    assert "contrastive_probing" in (out / "README.md").read_text()


def test_a_fresh_128px_phase_set_is_split_from_its_pixels_as_recorded(tmp_path):
    """A fresh render (the paper's 16-position grid, one shard of 8: 32 images at 128 px) rewritten
    in the official layout (no geometry columns): the pixel-derived split and cells equal the
    recorded ones wherever they are known; what cannot be told is unknown, never misfiled."""
    import datasets
    from spatialtunnel.official_tables import official_rows, write_official  # tests/ is on sys.path

    from spatial_tasks.common.origin import origin_for
    from spatial_tasks.spatialtunnel import load

    out = gen.generate("phase", tmp_path / "st", grid=16, per_cell=1, resolution=128, samples=4, seed=11,
                       shard="3/8", workers=2)
    generated = datasets.load_dataset("parquet", data_files=[str(p) for p in (out / "phase_variation").glob("*.parquet")],
                                      split="train")
    rows, recorded = official_rows(generated)
    path = write_official(tmp_path / "official", "phase_variation", rows)
    kwargs = {"data_files": {"train": path.name}}
    loaded = datasets.load_dataset(str(path.parent), split="train", **kwargs)
    docs = load.to_docs(loaded, origin_for(loaded, str(path.parent), None, "train", kwargs), "phase", grid=16)
    unplaced = 0
    for doc, rec in zip(docs, recorded):
        truth = geometry.vertical_relation(rec["pixel1"][1], rec["pixel2"][1], rec["height"])
        if doc["theta1_index"] is None and doc["relation"] == doc["relation_two_way"] == "unknown":
            unplaced += 1
            continue
        for found, recorded_label in ((doc["relation_two_way"], truth.two_way), (doc["relation"], truth.three_way)):
            assert found in ("unknown", recorded_label), rec["image_id"]
        for i in ("1", "2"):
            assert doc[f"theta{i}_index"] in (None, rec[f"theta{i}_index"]), rec["image_id"]
    assert len(docs) == 4 * 32 and unplaced <= 4  # at most one image's objects not found
