"""SpatialTunnel generator logic without Blender: which images, their seeds and random values,
sharding, flag errors, and the dataset-building step (parquet + card) on fake work files."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from collections import Counter

import pytest
import yaml
from PIL import Image
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.jobs import Shard, derive_seed
from spatial_tasks.generators.common.png import chunks, strip_text_chunks
from spatial_tasks.generators.spatialtunnel import generate as gen
from spatial_tasks.generators.spatialtunnel import sampling

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.schema import COLORS, IMAGE_FEATURES, SHAPES

from .fake_renders import load_fresh, write_fake_renders

# ------------------------------------------------------------------------------- the plan


def test_default_plans_have_the_papers_sizes():
    phase = sampling.plan("phase")
    size = sampling.plan("size")
    assert len(phase) == 16 * 16 * 12 == 3072
    assert len(size) == 11 * 100 == 1100
    assert len({s.image_id for s in phase}) == len(phase)
    assert len({s.image_id for s in size}) == len(size)
    assert Counter((s.theta1_index, s.theta2_index) for s in phase) == {
        (r, c): 12 for r in range(16) for c in range(16)}


def test_image_ids_are_stable_and_readable():
    phase = sampling.plan("phase", grid=16, per_cell=12)
    assert phase[0].image_id == "phase-r00-c00-k00"
    assert phase[(3 * 16 + 11) * 12 + 7].image_id == "phase-r03-c11-k07"
    size = sampling.plan("size", per_cell=100)
    assert size[0].image_id == "size-s010-k00"
    assert size[-1].image_id == "size-s030-k99"
    # more replicates only add ids; existing ids (and so their seeds) do not change
    few = {s.image_id: s.seed for s in sampling.plan("phase", grid=3, per_cell=12)}
    more = {s.image_id: s.seed for s in sampling.plan("phase", grid=3, per_cell=150)}
    assert "phase-r02-c01-k149" in more
    assert {k: more[k] for k in few} == few


def test_seeds_come_from_sha256_of_run_seed_and_image_id():
    spec = sampling.plan("phase", grid=4, per_cell=1, seed=7)[5]
    assert spec.seed == derive_seed(7, spec.image_id, "spatialtunnel")
    assert 0 <= spec.seed < 2**63
    assert sampling.plan("phase", grid=4, per_cell=1, seed=8)[5].seed != spec.seed
    # pinned: the same on every machine and Python version
    assert derive_seed(0, "phase-r00-c00-k00", "spatialtunnel") == 6050481069721014544


def test_seeds_do_not_depend_on_python_hash_randomisation():
    code = ("from spatial_tasks.generators.spatialtunnel import sampling;"
            "print([s.seed for s in sampling.plan('size', per_cell=2, seed=3)][:5])")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": h}).stdout for h in ("0", "1", "12345")}
    assert len(outs) == 1


def test_same_seed_same_plan_and_metadata():
    a = [s.metadata() for s in sampling.plan("phase", grid=4, per_cell=3, seed=11)]
    b = [s.metadata() for s in sampling.plan("phase", grid=4, per_cell=3, seed=11)]
    assert a == b


def test_phase_sampling_ranges_and_distinct_objects():
    specs = sampling.plan("phase", grid=8, per_cell=4, seed=0)
    for s in specs:
        assert (s.color1, s.shape1) != (s.color2, s.shape2)
        assert s.color1 in COLORS and s.color2 in COLORS and s.shape1 in SHAPES and s.shape2 in SHAPES
        assert 0.05 <= s.roughness1 <= 1.0 and 0.05 <= s.roughness2 <= 1.0
        assert 0.2 <= s.size1 <= 0.3 and 0.1 <= s.size2 <= 0.15
        assert (s.size1_nominal, s.size2_nominal) == (0.2, 0.1)
        assert 1.25 * math.pi <= s.sun_rotation <= 1.75 * math.pi
        assert s.depth1 == geometry.DEPTH_FAR > s.depth2 == geometry.DEPTH_NEAR
        assert s.theta1 == geometry.theta_degrees(s.theta1_index, 8)
        assert s.position1 == geometry.object_center(s.theta1, s.depth1, s.size1)
        assert s.position2 == geometry.object_center(s.theta2, s.depth2, s.size2)
        assert s.obj1 == f"{s.color1} {s.shape1}"
        assert [q["answer"] for q in s.metadata()["questions"]] == ["No", "Yes", "No", "Yes"]
    # every colour and shape shows up for both objects
    assert {s.color1 for s in specs} == set(COLORS) == {s.color2 for s in specs}
    assert {s.shape1 for s in specs} == set(SHAPES) == {s.shape2 for s in specs}


def test_size_sweep():
    specs = sampling.plan("size", grid=16, per_cell=5, seed=0)
    assert sampling.SIZE_SWEEP == (0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.24, 0.26, 0.28, 0.3)
    assert Counter(s.size1 for s in specs) == {s1: 5 for s1 in sampling.SIZE_SWEEP}
    for s in specs:
        assert s.size1 == s.size1_nominal and s.size2 == s.size2_nominal
        assert s.size1 + s.size2 == pytest.approx(0.4, abs=1e-12)
        assert 0 <= s.theta1_index < 16 and 0 <= s.theta2_index < 16
        assert (s.depth1, s.depth2) == (geometry.DEPTH_FAR, geometry.DEPTH_NEAR)
    assert len({(s.theta1_index, s.theta2_index) for s in specs}) > 20  # angles drawn at random


def test_no_image_can_hide_one_object_behind_the_other():
    # a big near object at the same angle hides a small far one: the size sweep redraws angles
    big_near = geometry.object_center(90.0, geometry.DEPTH_NEAR, 0.3)
    small_far = geometry.object_center(90.0, geometry.DEPTH_FAR, 0.1)
    assert sampling.may_overlap(small_far, 0.1, big_near, 0.3)
    for spec in sampling.plan("size", per_cell=100) + sampling.plan("phase"):
        assert not sampling.may_overlap(spec.position1, spec.size1, spec.position2, spec.size2), spec.image_id
    for grid in (2, 3, 4, 8, 32):  # every phase cell is free of overlap, whatever the grid
        sampling.plan("phase", grid=grid, per_cell=2)


def test_metadata_has_every_row_field_except_the_camera_ones():
    row = sampling.plan("phase", grid=2, per_cell=1)[0].metadata()
    camera_fields = {"pixel1", "pixel2", "radius1_px", "radius2_px", "width", "height"}
    assert set(row) == set(IMAGE_FEATURES) - {"image"} - camera_fields
    json.dumps(row)


# ------------------------------------------------------------------------------- sharding


def test_shards_partition_the_plan():
    specs = sampling.plan("phase", grid=4, per_cell=3)
    parts = [Shard(k, 5).select(specs) for k in range(1, 6)]
    assert sorted(s.image_id for p in parts for s in p) == sorted(s.image_id for s in specs)
    assert all(s.position_in_variant % 5 == 2 for s in parts[2])
    assert [len(p) for p in parts] == [Shard(k, 5).size_of(len(specs)) for k in range(1, 6)]


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "x", "1-4", "2/"])
def test_bad_shard_names_the_flag(text):
    with pytest.raises(ValueError, match="--shard"):
        Shard.parse(text)


@pytest.mark.parametrize("kwargs, flag", [
    ({"grid": 1}, "--grid"),
    ({"resolution": 8}, "--resolution"),
    ({"shard": "3/2"}, "--shard"),
    ({"variant": "tilt"}, "--variant"),
    ({"per_cell": 0}, "--per-cell"),
    ({"samples": 0}, "--samples"),
    ({"workers": 0}, "--workers"),
])
def test_bad_parameters_fail_before_rendering(tmp_path, kwargs, flag):
    args = {"variant": "phase", "out": tmp_path / "out", **kwargs}
    with pytest.raises(ValueError, match=flag):
        gen.generate(**args)
    assert not (tmp_path / "out").exists()


def test_file_layout_numbers_files_over_all_shards():
    assert ds.file_layout([10], 500) == [[10]]
    assert ds.file_layout([1100], 500) == [[367, 367, 366]]
    assert ds.file_layout([3, 3, 2], 500) == [[3], [3], [2]]
    assert ds.parquet_name("test", 0, 1) == "test-00000-of-00001.parquet"
    with pytest.raises(ValueError):
        ds.parquet_name("test", 2, 2)


# ----------------------------------------------------------------- build, card, load back


def test_build_writes_loadable_parquet_and_card(tmp_path):
    specs = write_fake_renders(tmp_path, "phase", grid=3, per_cell=2)
    write_fake_renders(tmp_path, "size", grid=3, per_cell=1)
    gen.build_variant("phase", tmp_path, grid=3, per_cell=2)
    gen.build_variant("size", tmp_path, grid=3, per_cell=1)
    assert (tmp_path / "phase_variation" / "test-00000-of-00001.parquet").is_file()
    assert (tmp_path / "size_variation" / "test-00000-of-00001.parquet").is_file()

    phase = load_fresh(tmp_path, "phase_variation")
    assert phase.features == IMAGE_FEATURES or set(phase.features) == set(IMAGE_FEATURES)
    assert [r["image_id"] for r in phase] == [s.image_id for s in specs]
    first = phase[0]
    assert first["image"].size == (32, 32)
    assert [q["template_id"] for q in first["questions"]] == [1, 2, 3, 4]
    assert first["seed"] == specs[0].seed
    assert len(load_fresh(tmp_path, "size_variation")) == 11

    card = (tmp_path / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert header["license"] == gen.LICENSE
    assert header["task_categories"] == ["visual-question-answering"]
    assert {c["config_name"]: c["data_files"] for c in header["configs"]} == {
        "phase_variation": [{"split": "test", "path": "phase_variation/test-*.parquet"}],
        "size_variation": [{"split": "test", "path": "size_variation/test-*.parquet"}],
    }
    assert f"spatial-tasks generate spatialtunnel --out {tmp_path.name} --variant phase --grid 3" in card
    assert "fake 0.0" in card and "0" * 40 in card  # Blender version and commit of the run
    assert "arXiv" in card or "2605.30161" in card
    assert "| `pixel1`, `pixel2` |" in card
    assert not any(line != line.rstrip() for line in card.splitlines())
    generation = ds.read_generation(tmp_path / "phase_variation" / "test-00000-of-00001.parquet")
    assert generation["seed"] == 0 and generation["images_total"] == 18


def test_shards_write_disjoint_files_that_merge(tmp_path):
    for k in (1, 2, 3):
        write_fake_renders(tmp_path, "phase", grid=2, per_cell=2, shard=f"{k}/3")
        gen.build_variant("phase", tmp_path, grid=2, per_cell=2, shard=f"{k}/3")
    names = sorted(p.name for p in (tmp_path / "phase_variation").glob("*.parquet"))
    assert names == [f"test-0000{i}-of-00003.parquet" for i in range(3)]
    rows = load_fresh(tmp_path, "phase_variation")
    assert sorted(rows["image_id"]) == sorted(s.image_id for s in sampling.plan("phase", grid=2, per_cell=2))
    # a later unsharded build replaces the 3-file layout
    write_fake_renders(tmp_path, "phase", grid=2, per_cell=2)
    gen.build_variant("phase", tmp_path, grid=2, per_cell=2)
    assert sorted(p.name for p in (tmp_path / "phase_variation").glob("*.parquet")) == [
        "test-00000-of-00001.parquet"]


def test_large_shards_are_split_into_several_files(tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "MAX_ROWS_PER_FILE", 3)
    for k in (1, 2):
        write_fake_renders(tmp_path, "phase", grid=2, per_cell=4, shard=f"{k}/2")  # 16 images, 8 per shard
        gen.build_variant("phase", tmp_path, grid=2, per_cell=4, shard=f"{k}/2")
    names = sorted(p.name for p in (tmp_path / "phase_variation").glob("*.parquet"))
    assert names == [f"test-{i:05d}-of-00006.parquet" for i in range(6)]
    assert ds.count_rows([tmp_path / "phase_variation" / n for n in names]) == 16
    rows = load_fresh(tmp_path, "phase_variation")
    assert sorted(rows["image_id"]) == sorted(s.image_id for s in sampling.plan("phase", grid=2, per_cell=4))


def test_build_refuses_missing_renders(tmp_path):
    specs = write_fake_renders(tmp_path, "phase", grid=2, per_cell=1)
    (tmp_path / "_work" / "phase_variation" / f"{specs[2].image_id}.json").unlink()
    with pytest.raises(FileNotFoundError, match=specs[2].image_id):
        gen.build_variant("phase", tmp_path, grid=2, per_cell=1)
    assert not (tmp_path / "phase_variation").exists()


def test_finished_image_detection_checks_settings_and_values(tmp_path):
    spec = write_fake_renders(tmp_path, "phase", grid=2, per_cell=1, resolution=32)[0]
    work = tmp_path / "_work" / "phase_variation"
    args = (work / f"{spec.image_id}.json", work / f"{spec.image_id}.png", spec)
    assert gen._done(*args, resolution=32, samples=1, renderer_version=1)
    assert not gen._done(*args, resolution=64, samples=1, renderer_version=1)
    assert not gen._done(*args, resolution=32, samples=2, renderer_version=1)
    other_seed = sampling.plan("phase", grid=2, per_cell=1, seed=1)[0]
    assert not gen._done(args[0], args[1], other_seed, resolution=32, samples=1, renderer_version=1)
    args[1].unlink()
    assert not gen._done(*args, resolution=32, samples=1, renderer_version=1)


def test_strict_card_template(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{{ present }} {{ missing }}\n")
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        ds.render_template(template, present=1)


def test_png_text_chunks_are_stripped_and_pixels_kept():
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("cycles.ViewLayer.render_time", "00:01.23")
    buffer = io.BytesIO()
    Image.new("RGB", (5, 4), (10, 200, 30)).save(buffer, "PNG", pnginfo=info)
    data = buffer.getvalue()
    assert b"tEXt" in [k for k, _ in chunks(data)]
    clean = strip_text_chunks(data)
    assert b"tEXt" not in [k for k, _ in chunks(clean)]
    assert Image.open(io.BytesIO(clean)).tobytes() == Image.open(io.BytesIO(data)).tobytes()


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    from spatial_tasks.generators.common.jobs import atomic_write_bytes

    atomic_write_bytes(tmp_path / "a.bin", b"x")
    with pytest.raises(TypeError):
        atomic_write_bytes(tmp_path / "b.bin", 3)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


# ------------------------------------------------------------------------ probing variant


def _query_and_reference(spec):
    row = spec.metadata()
    first = row["query"] == spec.obj1
    return (spec.position1, spec.position2) if first else (spec.position2, spec.position1), row


def test_probing_plan_is_balanced_and_every_answer_is_true():
    from spatial_tasks.spatialtunnel.probe.data import TEMPLATES, question_pair

    specs = sampling.plan("probing", grid=16, per_cell=30, seed=0)
    assert len(sampling.plan("probing")) == 6 * 200  # the official set's size by default
    assert Counter(s.metadata()["answer"] for s in specs) == {a: 30 for a in
                                                               ("left", "right", "above", "below", "far", "close")}
    assert specs[0].image_id == "probing-left-k000" and specs[-1].image_id == "probing-close-k029"
    for spec in specs:
        (query, reference), row = _query_and_reference(spec)
        qx, qy = geometry.project(query, 512, 512)
        rx, ry = geometry.project(reference, 512, 512)
        truth = {"left": qx < rx, "right": qx > rx, "above": qy < ry, "below": qy > ry,
                 "far": query[1] > reference[1], "close": query[1] < reference[1]}
        assert truth[row["answer"]], spec.image_id
        axis, q, r = question_pair(row["question"])
        assert (q, r) == (row["query"], row["reference"]) and row["question"] == TEMPLATES[axis].format(query=q, reference=r)
        assert row["index"] == spec.position_in_variant and "questions" not in row
        assert not sampling.may_overlap(spec.position1, spec.size1, spec.position2, spec.size2)
        if row["answer"] in ("left", "right", "above", "below"):  # only the asked axis differs
            assert spec.depth1 == spec.depth2 == sampling.DEPTH_MID and spec.size1 == spec.size2
            same = 2 if row["answer"] in ("left", "right") else 0  # z for left/right, x for above/below
            assert spec.position1[same] == pytest.approx(spec.position2[same])
        else:  # far/close: equal apparent sizes, as in the phase grid
            assert spec.size1 / spec.depth1 == pytest.approx(spec.size2 / spec.depth2)


def test_probing_distance_pairs_are_not_all_consistent():
    """The tunnel breaks "higher = farther" for probing too: both splits occur among far/close pairs."""
    specs = [s for s in sampling.plan("probing", grid=16, per_cell=40, seed=0) if s.metadata()["answer"] in ("far", "close")]
    relations = Counter(geometry.vertical_relation(geometry.project(s.position1, 512, 512)[1],
                                                   geometry.project(s.position2, 512, 512)[1], 512).two_way
                        for s in specs)
    assert relations["consistent"] >= 20 and relations["counter"] >= 20


def test_all_means_the_benchmark_variants():
    variants, _ = gen.check_flags("all")
    assert variants == ["phase", "size"]
    assert gen.check_flags("probing")[0] == ["probing"]
