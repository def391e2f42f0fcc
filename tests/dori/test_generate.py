"""The DORI generators: the question truth before rendering (pure), canonical transforms, and real
tiny renders end to end: resumable, deterministic, guarded folders, a publishable card."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.publish import upload_list
from spatial_tasks.generators.dori import generate as gen
from spatial_tasks.generators.dori import sampling

from spatial_tasks.dori import load, soft


def test_plans_are_deterministic_and_seeded():
    a = sampling.plan("single_axis_rotation", 20, seed=1)
    assert [i.views for i in a] == [i.views for i in sampling.plan("single_axis_rotation", 20, seed=1)]
    assert [i.views for i in a] != [i.views for i in sampling.plan("single_axis_rotation", 20, seed=2)]
    assert [v["image_id"] for v in a[3].views] == ["sa-00003-0"]
    with pytest.raises(ValueError, match="--task 'canonical_orientation'"):
        sampling.plan("canonical_orientation", 1, 0)


FAKE_FACTS = [[{"box": [1.0, 2.0, 30.0, 40.0]}, {"box": [50.0, 2.0, 80.0, 40.0]}]] * 2


@pytest.mark.parametrize("task", sampling.RENDERED_TASKS)
def test_questions_carry_truth_that_the_option_texts_read_back(task):
    for item in sampling.plan(task, 40, seed=0):
        for q in item.questions(FAKE_FACTS):
            assert q["answer"] == q["options"][q["option_values"].index(q["truth"]["value"])]
            assert len(set(q["options"])) == len(q["options"]) >= 3
            if q["granularity"] == "granular":
                assert [soft.option_value(task, o) for o in q["options"]] == q["option_values"]


def test_single_axis_truth_matches_the_yaw():
    for item in sampling.plan("single_axis_rotation", 40, seed=0):
        coarse, granular = item.questions(FAKE_FACTS)
        yaw = item.views[0]["objects"][0]["yaw"]
        needed = granular["truth"]["value"]
        assert (yaw + needed) % 360 == 0  # turning clockwise by the answer brings the front to yaw 0
        expected = {0: "No rotation needed", 180: "Either direction"}.get(needed, "Clockwise" if needed < 180 else
                                                                           "Counterclockwise")
        assert coarse["answer"].startswith(expected)


def test_inter_object_truth_matches_the_yaws():
    for item in sampling.plan("inter_object_direction", 60, seed=0):
        (q,) = item.questions(FAKE_FACTS)
        yaw_b = item.views[0]["objects"][1]["yaw"]
        if q["granularity"] == "granular":
            direction, low, high = q["truth"]["value"]
            turn = (90 - yaw_b) % 360  # B faces A (-x) at yaw 90
            turn_cw = turn if direction == "clockwise" else 360 - turn
            assert low <= turn_cw <= high
        else:
            yaw_a = item.views[0]["objects"][0]["yaw"]
            assert q["answer"] == sampling.IO_COARSE[sampling._facing_relation(yaw_a, yaw_b)]


def test_compound_near_misses_are_among_the_options():
    for item in sampling.plan("compound_rotation", 30, seed=0):
        granular = item.questions(FAKE_FACTS)[1]
        truth = granular["truth"]["value"]
        near = [v for v in granular["option_values"] if soft.soft_credit("compound_rotation", "granular", False, v, truth)]
        assert near, granular["options"]


def test_canonical_operations_and_their_inverse():
    image = Image.fromarray(np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3))
    turned = gen.apply_operations(image, ["rotate 90"])
    assert turned.size == (4, 6) and turned.getpixel((3, 0)) == image.getpixel((0, 0))  # clockwise
    for ops in sampling.TRANSFORMS:
        restored = gen.apply_operations(gen.apply_operations(image, list(ops)), sampling.inverse(ops))
        assert np.array_equal(np.asarray(restored), np.asarray(image)), ops
    plans = sampling.co_plan([f"{k}.png" for k in range(40)], seed=0)
    assert any(not p["ops"] for p in plans) and any(len(p["ops"]) == 2 for p in plans)
    for plan in plans:
        assert plan["restore"] in plan["granular"] and len(plan["granular"]) >= 4
        if len(plan["restore"]) == 2:  # the wrong-order distractor earns soft credit
            assert list(reversed(plan["restore"])) in plan["granular"]


def _photos(folder, count=4):
    """Asymmetric drawn "photos" (a bar off the centre): each has a canonical orientation."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        image = Image.new("RGB", (40, 30), (200, 200, 200))
        image.paste((20 * k, 80, 160), (4 + k, 5, 20 + k, 12))
        image.save(folder / f"photo{k}.png")
    return folder


def test_pictures_without_a_canonical_orientation_are_answered_cannot_be_determined(tmp_path):
    """The paper's Fig. 24: a plain ball or a symmetric pattern looks the same however it is turned, so
    both questions' answer is "Cannot be determined" -- drawn by the generator (--patterns), and found
    in the user's folder too."""
    images = _photos(tmp_path / "images")
    gen.pattern_images(1)["pattern-ball-000.png"].save(images / "my_ball.png")  # a symmetric picture of the user
    rows = gen.canonical_rows(images, tmp_path / "out", seed=0, shard="1/1", source="test", patterns=2)
    by_image = {}
    for row in rows:
        by_image.setdefault(json.loads(row["truth"])["image"], []).append(row)
    assert set(by_image) == {"photo0.png", "photo1.png", "photo2.png", "photo3.png", "my_ball.png",
                             "pattern-ball-000.png", "pattern-squares-001.png"}
    for name in ("my_ball.png", "pattern-ball-000.png", "pattern-squares-001.png"):
        for row in by_image[name]:
            assert row["answer"] == "Cannot be determined" and "Cannot be determined" in row["options"]
            assert json.loads(row["truth"])["value"] is None
    assert {r["category"] for r in by_image["pattern-squares-001.png"]} == {"pattern"}
    for name in ("photo0.png", "photo1.png"):
        assert all(r["answer"] != "Cannot be determined" for r in by_image[name])
    assert all(gen.is_symmetric(im) for im in gen.pattern_images(6).values())
    assert not gen.is_symmetric(Image.open(images / "photo0.png"))


def test_transformed_images_follow_their_source_and_names_never_collide(tmp_path):
    images = _photos(tmp_path / "images", 2)
    first = gen.canonical_rows(images, tmp_path / "out", seed=0, shard="1/1", source="test", patterns=0)
    Image.new("RGB", (40, 30), (10, 200, 10)).save(images / "photo0.png")  # replaced: a new picture
    again = gen.canonical_rows(images, tmp_path / "out", seed=0, shard="1/1", source="test", patterns=0)
    old = {json.loads(r["truth"])["image"]: r["image"]["bytes"] for r in first}
    new = {json.loads(r["truth"])["image"]: r["image"]["bytes"] for r in again}
    assert new["photo1.png"] == old["photo1.png"] and new["photo0.png"] != old["photo0.png"]
    shown = Image.open(__import__("io").BytesIO(new["photo0.png"])).convert("RGB")
    assert shown.getpixel((shown.width // 2, shown.height // 2)) == (10, 200, 10)
    Image.new("RGB", (40, 30)).save(images / "photo1.jpg")
    with pytest.raises(ValueError, match=r"photo1.jpg and photo1.png share the name 'photo1'"):
        gen.canonical_rows(images, tmp_path / "out", seed=0, shard="1/1", source="test", patterns=0)


def test_flags_are_checked(tmp_path):
    for kwargs, match in (({"count": 0}, "--count"), ({"resolution": 8}, "--resolution"),
                          ({"shard": "3/2"}, "shard"), ({"task": "spin"}, "--task 'spin'")):
        with pytest.raises(ValueError, match=match):
            gen.check_flags(**{"task": "all", **kwargs})
    with pytest.raises(ValueError, match="--images"):
        gen.check_flags("canonical_orientation")


@pytest.mark.render
def test_generate_end_to_end(tmp_path):
    pytest.importorskip("bpy")
    out = tmp_path / "dori"
    gen.generate("viewer_scene_direction", out, count=3, resolution=64, samples=2, seed=4, progress=False)
    work = out / "_work" / "viewer_scene_direction"
    stamps = {p.name: p.stat().st_mtime_ns for p in work.glob("*.png")}
    assert len(stamps) == 6
    gen.generate("viewer_scene_direction", out, count=3, resolution=64, samples=2, seed=4, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in work.glob("*.png")} == stamps  # resumed: nothing re-rendered
    (work / "vs-00001-1.png").unlink()  # an interrupted run: one image missing
    gen.generate("viewer_scene_direction", out, count=3, resolution=64, samples=2, seed=4, progress=False)
    assert (work / "vs-00001-1.png").is_file()
    with pytest.raises(FileExistsError, match="--resolution 64"):
        gen.generate("viewer_scene_direction", out, count=3, resolution=96, samples=2, seed=4, progress=False)

    again = tmp_path / "again"
    gen.generate("viewer_scene_direction", again, count=3, resolution=64, samples=2, seed=4, progress=False)
    gen.generate("canonical_orientation", again, images=work, seed=4, progress=False)
    first = pq.read_table(out / "viewer_scene_direction" / "test-00000-of-00001.parquet").to_pylist()
    second = pq.read_table(again / "viewer_scene_direction" / "test-00000-of-00001.parquet").to_pylist()
    assert [{k: v for k, v in r.items() if k not in ("image", "image2")} for r in first] == \
        [{k: v for k, v in r.items() if k not in ("image", "image2")} for r in second]
    assert [r["image"]["bytes"] for r in first] == [r["image"]["bytes"] for r in second]  # same pixels

    docs = load.load_source(str(again))
    assert {(d["task"], d["granularity"]) for d in docs} == {
        ("viewer_scene_direction", "coarse"), ("viewer_scene_direction", "granular"),
        ("canonical_orientation", "coarse"), ("canonical_orientation", "granular")}
    card = (again / "README.md").read_text()
    assert "config_name: viewer_scene_direction" in card and "config_name: canonical_orientation" in card
    record = ds.read_generation(again / "viewer_scene_direction" / "test-00000-of-00001.parquet")
    assert record["flags"] == {"task": "viewer_scene_direction", "seed": 4, "shard": "1/1", "count": 3,
                               "resolution": 64, "samples": 2}
    assert record["blender_version"][:2] in ("4.", "5.") and record["command"] in card
    assert sorted(upload_list(again)) == ["README.md", "canonical_orientation/test-00000-of-00001.parquet",
                                          "viewer_scene_direction/test-00000-of-00001.parquet"]
    co = [d for d in docs if d["task"] == "canonical_orientation" and d["granularity"] == "granular"]
    restorable = 0
    for doc in co:  # the shown image, restored by the answer, is the source render
        truth = json.loads(doc["truth"])
        from spatial_tasks.common.images import open_ref

        shown = open_ref(doc["image"])
        if truth["restore"] is None:  # a drawn symmetric pattern: nothing to restore (the paper's Fig. 24)
            assert truth["image"].startswith("pattern-") and gen.is_symmetric(shown), truth
            continue
        restorable += 1
        restored = gen.apply_operations(shown, truth["restore"])
        source = Image.open(work / truth["image"]).convert("RGB")
        assert np.array_equal(np.asarray(restored), np.asarray(source))
    assert restorable == 6  # every render of the work folder (the 2 drawn patterns have no orientation)


def test_cli_flag_errors_are_one_line(tmp_path):
    from lmms import SPATIAL_TASKS, run_cli

    for args, words in ((["--count", "0"], "--count must be a whole number from 1 to 10,000,000"),
                        (["--task", "canonical_orientation"], "pass --images FOLDER"),
                        (["--task", "spin"], "--task 'spin'")):
        done = run_cli([SPATIAL_TASKS, "generate", "dori", "--out", str(tmp_path / "x"), *args], capture_output=True,
                              text=True)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "x").exists()  # nothing written for a bad flag


@pytest.mark.render
def test_shards_split_the_items_and_merge_by_copying(tmp_path):
    pytest.importorskip("bpy")
    parts = []
    for k in (1, 2):
        out = tmp_path / f"machine{k}"
        gen.generate("single_axis_rotation", out, count=3, resolution=64, samples=2, seed=1, shard=f"{k}/2",
                     progress=False)
        (path,) = sorted((out / "single_axis_rotation").glob("*.parquet"))
        assert path.name == f"test-0000{k - 1}-of-00002.parquet"
        parts.append(pq.read_table(path).to_pylist())
    ids = [{r["question_id"].rsplit("-", 1)[0] for r in rows} for rows in parts]
    assert not ids[0] & ids[1] and ids[0] | ids[1] == {"sa-00000", "sa-00001", "sa-00002"}
    merged = tmp_path / "merged" / "single_axis_rotation"
    merged.mkdir(parents=True)
    for k in (1, 2):
        for path in (tmp_path / f"machine{k}" / "single_axis_rotation").glob("*.parquet"):
            shutil.copy(path, merged / path.name)
    gen.write_card(tmp_path / "merged")
    assert len(load.load_source(str(tmp_path / "merged"))) == 6
