"""O3-D generator without rendering much: the cue grammar, the image plan, the scene geometry
(layout.plan, checked with a pinhole projection), flags and errors, and the offline assets
(pybullet's meshes from the registry, a Kubric-layout --assets folder)."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from spatial_tasks.generators.o3d import assets, layout, sampling

from spatial_tasks.cli import with_optional_values
from lmms import SPATIAL_TASKS, run_cli

CATS = {"cube": "blender", "sphere": "blender", "basketball": "blender", "tennis_ball": "blender",
        "oil_drum": "blender", "soda_can": "blender"}
ENVS = {"basic": "basic", "forest": "hdri"}
PAIRS = [("basketball", "tennis_ball"), ("oil_drum", "soda_can")]


def _plan(cues: str, **kw):
    args = dict(objects=["cube", "sphere"], envs=["basic"], fs_pairs=PAIRS, object_cats=CATS, env_cats=ENVS,
                positions=["near", "far", "none"], strengths=[1.0, 2.0], no_lp=False, seed=0)
    args.update(kw)
    return sampling.plan(sampling.parse_cues(cues), **args)


# ------------------------------------------------------------------------------ --cues


def test_cue_grammar():
    assert sampling.parse_cues("none,HP,HP+SA,SAHP,OC") == [(), ("HP",), ("HP", "SA"), ("OC",)]
    assert len(sampling.parse_cues("all-single")) == 8
    pairs = sampling.parse_cues("all-pairs")
    assert len(pairs) == 28 == len(set(pairs)) and all(len(p) == 2 for p in pairs)


@pytest.mark.parametrize("text, message", [
    ("LP", "use --no-lp"), ("XX", "--cues 'XX'"), ("HP+HP", "--cues 'HP+HP'"), ("HP+SA+OC", "HP+SA+OC"), (",", "empty"),
])
def test_bad_cues_say_what_to_write(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        sampling.parse_cues(text)


# ------------------------------------------------------------------------------ the plan


def test_plan_counts_follow_the_authors_loops():
    plan = _plan("none,all-single,all-pairs")
    assert len(plan["kb-0cue"]) == 2 * 3  # objects x positions (none included)
    # 7 cues x 2 objects x 2 positions x 2 strengths + FS alone: 2 pairs x 2 positions, no strength sweep
    assert len(plan["kb-1cue"]) == 7 * 2 * 2 * 2 + 2 * 2
    # 21 pairs without FS on the objects + 7 pairs with FS on the 2 familiar-size pairs, both at 2 strengths
    assert len(plan["kb-2cue"]) == 21 * 2 * 2 * 2 + 7 * 2 * 2 * 2
    fs = [s for s in plan["kb-1cue"] if s.cues == ("FS",)]
    assert {s.cue_strength for s in fs} == {1.0} and {s.obj_id for s in fs} == {"basketball/tennis_ball", "oil_drum/soda_can"}
    names = [s.image_name for specs in plan.values() for s in specs]
    assert len(names) == len(set(names))


def test_the_paper_scale_0cue_count():
    """37 objects x 13 environments x 3 positions = 1,443 0-cue images, as in the release."""
    objects = [f"o{i}" for i in range(37)]
    envs = ["basic"] + [f"h{i}" for i in range(12)]
    plan = sampling.plan([()], objects=objects, envs=envs, fs_pairs=[], object_cats={o: "gso" for o in objects},
                         env_cats={e: "basic" if e == "basic" else "hdri" for e in envs},
                         positions=["near", "far", "none"], strengths=[1.0], no_lp=False, seed=0)
    assert len(plan["kb-0cue"]) == 1443


def test_one_scene_gets_every_cue_and_keeps_its_name():
    plan = _plan("none,all-single")
    by_scene: dict = {}
    for spec in plan["kb-0cue"] + plan["kb-1cue"]:
        if "FS" not in spec.cues:
            by_scene.setdefault((spec.env_id, spec.obj_id, spec.position), set()).add(spec.odd_scaler)
    assert all(len(v) == 1 for v in by_scene.values())  # the same odd_scaler whatever the cue
    assert all(1.1 <= s.odd_scaler <= 2.0 for specs in plan.values() for s in specs)
    alone = _plan("HP")["kb-1cue"]
    within = {s.image_name for s in plan["kb-1cue"]}
    assert {s.image_name for s in alone} <= within  # names do not depend on what else is selected
    assert _plan("HP") == _plan("HP")
    assert _plan("HP", seed=1)["kb-1cue"][0].image_name != alone[0].image_name


def test_no_lp_keeps_hp_sets_in_the_basic_environment():
    plan = _plan("HP,HP+SA,OC", envs=["basic", "forest"], no_lp=True)
    assert list(plan) == ["kb-no-lp"]
    assert {s.cues for s in plan["kb-no-lp"]} == {("HP",), ("HP", "SA")}
    assert {s.env_id for s in plan["kb-no-lp"]} == {"basic"} and all(s.no_lp for s in plan["kb-no-lp"])
    with pytest.raises(ValueError, match="add HP"):
        _plan("OC", no_lp=True)


def test_fs_is_near_or_far_and_the_far_odd_one_is_the_large_object():
    with pytest.raises(ValueError, match="near or far"):
        _plan("FS", positions=["none"])
    specs = _plan("FS")["kb-1cue"]
    far = next(s for s in specs if s.position == "far" and s.obj_id == "basketball/tennis_ball")
    near = next(s for s in specs if s.position == "near" and s.obj_id == "basketball/tennis_ball")
    assert (far.target_asset, far.distractor_asset) == ("basketball", "tennis_ball")
    assert (near.target_asset, near.distractor_asset) == ("tennis_ball", "basketball")


# --------------------------------------------------------------------------- the geometry

CUBE = ("cube", (2.0, 2.0, 2.0))


def _heights(plan: layout.Layout, res: int = 1024) -> list[float]:
    out = []
    for obj in plan.objects:
        top = layout.project(plan, (obj.x, obj.y, obj.current_height), res)[1]
        bottom = layout.project(plan, (obj.x, obj.y, 0.0), res)[1]
        out.append(bottom - top)
    return out


@pytest.mark.parametrize("position", ["near", "far", "none"])
@pytest.mark.parametrize("k", [1.1, 1.5, 2.0])
def test_the_dolly_keeps_every_projected_size(position, k):
    plan = layout.plan(position, [], None, k, target=CUBE)
    heights = _heights(plan)
    assert max(heights) - min(heights) < 1e-3  # pixels at 1024 px (the lift tilts the view by 1/1000)
    bottoms = [layout.project(plan, (o.x, o.y, 0.0), 1024)[1] for o in plan.objects]
    assert max(bottoms) - min(bottoms) < 0.75  # the camera's D/1000 lift: under a pixel at 1024 px
    if position != "none":
        assert plan.depth_ratio == pytest.approx(k)
        odd = [plan.target] if position == "far" else plan.distractors
        assert all((o.y - plan.camera[1]) == pytest.approx(k * -plan.camera[1]) for o in odd)


def test_the_camera_stands_twenty_target_widths_away():
    plan = layout.plan("far", [], None, 1.5, target=("x", (0.3, 0.2, 0.5)))
    assert plan.camera[1] == pytest.approx(-20 * 0.3)


@pytest.mark.parametrize("position", ["near", "far"])
def test_height_in_plane_rule(position):
    k, s = 1.6, 2.0
    plan = layout.plan(position, ["HP"], s, k, target=CUBE)
    height = 2.0 * (k if position == "far" else 1.0)  # the target's height after the dolly
    assert plan.camera[2] - layout.CAMERA_LIFT * 40 == pytest.approx(s * height / k)
    assert plan.look_at == [plan.camera[0], 0.0, 0.0]  # no pan: looks level at the row's x


@pytest.mark.parametrize("position", ["near", "far"])
@pytest.mark.parametrize("k", [1.2, 1.9])
def test_occlusion_starts_where_the_neighbours_touch(position, k):
    """At strength 0 the nearer object's edge meets the farther neighbour's (in the image); each unit
    of strength then covers 1/6 of the object's width."""
    def gap(s: float) -> float:
        plan = layout.plan(position, ["OC"], s, k, target=CUBE)
        near, far = (plan.objects[1], plan.objects[0]) if position == "far" else (plan.objects[0], plan.objects[2])
        cols = lambda o: sorted(layout.project(plan, (o.x + d * o.current_width / 2, o.y, 0.0), 1024)[0] for d in (-1, 1))
        (n0, n1), (f0, f1) = cols(near), cols(far)
        return min(n1, f1) - max(n0, f0), n1 - n0  # overlap, width of the nearer object in pixels
    overlap0, _ = gap(0.0)
    assert overlap0 == pytest.approx(0.0, abs=0.05)
    overlap1, width = gap(1.0)
    assert overlap1 / width == pytest.approx(1 / 6, rel=0.02)


@pytest.mark.parametrize("position, expected", [("near", 1 + 0.5 * 2), ("far", 1 / (1 + 0.5 * 2))])
def test_relative_size_is_the_codes_rule(position, expected):
    plan = layout.plan(position, ["RS"], 2.0, 1.5, target=CUBE)
    assert plan.target.scale == pytest.approx(expected)


def test_light_focus_haze_and_stripes_parameters():
    k, s = 1.5, 2.0
    plan = layout.plan("near", ["LS", "FO", "SA", "TG"], s, k, target=CUBE)
    d1 = plan.objects[1]
    assert plan.light["strength"] == pytest.approx(0.5 * s)
    assert plan.light["location"] == pytest.approx([-abs(d1.x) / (k - 1), plan.camera[1], 2.0])
    assert plan.light["look_at"] == pytest.approx([0.0, plan.target.y, 1.5])
    assert plan.dof == pytest.approx({"focus_distance": -plan.camera[1], "fstop": 1.4})
    assert plan.haze_beta == pytest.approx(0.02)
    assert plan.stripes == pytest.approx({"target": 2.5, "distractor": 7.5})  # 5 / width, x (s + 1) farther
    far = layout.plan("far", ["LS"], 1.0, k, target=CUBE)
    assert far.light["location"][0] == pytest.approx(-abs(far.objects[1].x - far.target.x) * k / (k - 1))


# --------------------------------------------------------------------------- CLI and errors


@pytest.mark.parametrize("args, message", [
    (["--cues", "LP"], "use --no-lp"),
    (["--objects", "teapot"], "--objects 'teapot': unknown object"),
    (["--envs", "moon"], "--envs 'moon': unknown environment"),
    (["--positions", "left"], "--positions 'left'"),
    (["--strengths", "0"], "--strengths '0'"),
    (["--device", "tpu"], "--device must be one of"),
    (["--shard", "3/2"], "--shard"),
    (["--resolution", "8"], "--resolution must be a whole number from 16 to 8,192"),
    (["--cues", "OC", "--no-lp"], "add HP"),
    (["--assets", "/nonexistent/assets"], "not a folder"),
])
def test_bad_flags_are_one_line_and_write_nothing(tmp_path, args, message):
    done = run_cli([SPATIAL_TASKS, "generate", "o3d", "--out", str(tmp_path / "out"), *args],
                   capture_output=True, text=True)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_bare_ray_means_a_local_cluster():
    assert with_optional_values(["generate", "o3d", "--ray"]) == ["generate", "o3d", "--ray", "local"]
    assert with_optional_values(["--ray", "--out", "x"]) == ["--ray", "local", "--out", "x"]
    assert with_optional_values(["--ray", "10.0.0.1:6379"]) == ["--ray", "10.0.0.1:6379"]


def test_asking_for_a_gpu_that_is_not_there_says_so(tmp_path):
    pytest.importorskip("bpy")
    from spatial_tasks.generators.common import blender

    if blender.gpu_devices("CUDA"):
        pytest.skip("this machine has a CUDA GPU")
    done = run_cli([SPATIAL_TASKS, "generate", "o3d", "--out", str(tmp_path / "out"), "--cues", "none",
                    "--objects", "cube", "--envs", "basic", "--resolution", "32", "--samples", "1",
                    "--device", "cuda"], capture_output=True, text=True)
    assert done.returncode == 2 and "no CUDA GPU" in done.stderr and "--device auto" in done.stderr
    assert blender.use_device("auto") == "CPU" and blender.use_device("cpu") == "CPU"


# ------------------------------------------------------------------------------ assets


@pytest.mark.slow  # pip downloads pybullet's source archive
def test_pybullet_meshes_come_from_the_registry_upright_and_to_scale(tmp_path, monkeypatch):
    """pip downloads pybullet's source archive (nothing is compiled); the meshes stand on their base,
    longest side at their real size (the duck: 10 cm long, its Y-up file turned Z-up)."""
    pytest.importorskip("bpy")
    monkeypatch.setenv("SPATIAL_TASKS_ASSETS", str(tmp_path / "cache"))
    folder = assets.fetch_pybullet()
    assert set(assets.pybullet_objects()) == {"duck", "bunny", "mug", "soccer_ball", "teddy", "lego", "ring"}
    assert assets.fetch_pybullet() == folder  # cached: no second download
    from spatial_tasks.generators.o3d.generate import generate

    out = generate(tmp_path / "pb", cues="none", objects="duck,mug", envs="basic", positions="none",
                   resolution=48, samples=1, progress=False)
    rows = pq.read_table(out / "kb-0cue" / "train-00000-of-00001.parquet", columns=["obj_id", "obj_cat", "scene"]).to_pylist()
    assert {r["obj_id"] for r in rows} == {"duck", "mug"} and {r["obj_cat"] for r in rows} == {"pybullet"}
    duck = next(json.loads(r["scene"]) for r in rows if r["obj_id"] == "duck")["layout"]["objects"][0]
    assert (duck["width"], duck["height"]) == pytest.approx((0.10, 0.093), abs=0.003)  # upright, not on its side


def _kubric_folder(root: Path) -> Path:
    """A tiny folder in Kubric's layout: a GSO mesh unpacked, one packed as .tar.gz, a KuBasic
    .blend, and an HDRI (one of Blender's own, renamed)."""
    from spatial_tasks.generators.common import blender

    bpy = blender.require_bpy()
    box = "\n".join(f"v {x} {y} {z}" for x in (-0.05, 0.05) for y in (-0.03, 0.03) for z in (0.0, 0.12))
    faces = "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
    for name in ("Fake_Tall_Box", "Fake_Packed_Box"):
        (root / "GSO" / name).mkdir(parents=True)
        (root / "GSO" / name / "visual_geometry.obj").write_text(box + "\n" + faces)
    with tarfile.open(root / "GSO" / "Fake_Packed_Box.tar.gz", "w:gz") as tar:
        tar.add(root / "GSO" / "Fake_Packed_Box", arcname="Fake_Packed_Box")
    shutil.rmtree(root / "GSO" / "Fake_Packed_Box")
    bound = [[-0.05, -0.03, 0.0], [0.05, 0.03, 0.12]]
    (root / "GSO.json").write_text(json.dumps({"assets": {
        n: {"asset_type": "FileBasedObject", "id": n, "kwargs": {"bounds": bound, "render_filename":
            "{asset_dir}/visual_geometry.obj"}} for n in ("Fake_Tall_Box", "Fake_Packed_Box")}}))
    mesh = bpy.data.meshes.new("SpongeMesh")
    mesh.from_pydata([(-1, -1, -1), (1, -1, -1), (1, 1, -1), (-1, 1, -1), (0, 0, 1)], [],
                     [(0, 1, 2, 3), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)])
    obj = bpy.data.objects.new("Sponge", mesh)
    (root / "KuBasic" / "sponge").mkdir(parents=True)
    bpy.data.libraries.write(str(root / "KuBasic" / "sponge" / "visual_geometry.blend"), {obj})
    (root / "KuBasic.json").write_text(json.dumps({"assets": {"sponge": {"asset_type": "FileBasedObject", "id": "sponge",
        "kwargs": {"render_filename": "{asset_dir}/visual_geometry.blend",
                   "render_import_kwargs": {"filename": "Sponge"}}}}}))
    (root / "HDRI_haven" / "fake_sky").mkdir(parents=True)
    shutil.copy(blender.bundled_hdris()["sunset"], root / "HDRI_haven" / "fake_sky" / "environment_4k.exr")
    (root / "HDRI_haven.json").write_text(json.dumps({"assets": {"fake_sky": {"asset_type": "Texture", "id": "fake_sky",
        "kwargs": {"filename": "{asset_dir}/environment_4k.exr"}}}}))
    return root


def test_a_kubric_asset_folder_is_used_when_given(tmp_path, monkeypatch):
    pytest.importorskip("bpy")
    monkeypatch.setenv("SPATIAL_TASKS_ASSETS", str(tmp_path / "cache"))
    kubric = _kubric_folder(tmp_path / "kubric")
    found = assets.KubricAssets.load(kubric)
    assert {k: a.cat for k, a in found.objects.items()} == {"Fake_Tall_Box": "gso", "Fake_Packed_Box": "gso",
                                                           "sponge": "kubasic"}
    assert list(found.envs) == ["fake_sky"]
    from spatial_tasks.generators.o3d.generate import generate

    out = generate(tmp_path / "k", cues="none", objects="gso,sponge", envs="fake_sky", positions="near",
                   assets_dir=kubric, resolution=48, samples=1, progress=False)
    rows = pq.read_table(out / "kb-0cue" / "train-00000-of-00001.parquet").drop_columns(
        ["image", "depth_map", "targ_seg", "dist_seg", "depth_f32"]).to_pylist()
    assert {(r["obj_id"], r["obj_cat"]) for r in rows} == {("Fake_Tall_Box", "gso"), ("Fake_Packed_Box", "gso"),
                                                           ("sponge", "kubasic")}
    assert {(r["env_cat"], r["env_id"]) for r in rows} == {("hdri", "fake_sky")}
    box = json.loads(next(r["scene"] for r in rows if r["obj_id"] == "Fake_Tall_Box"))["layout"]["objects"][0]
    assert (box["width"], box["height"]) == pytest.approx((0.10, 0.12))  # GSO keeps its real size
    sponge = json.loads(next(r["scene"] for r in rows if r["obj_id"] == "sponge"))["layout"]["objects"][0]
    assert max(sponge["width"], sponge["height"]) == pytest.approx(2.0)  # KuBasic's scale
    assert all(json.loads(r["scene"])["measured"]["target"]["pixels"] > 0 for r in rows)


def test_a_folder_without_manifests_is_refused(tmp_path):
    with pytest.raises(ValueError, match="none of Kubric's manifests"):
        assets.KubricAssets.load(tmp_path)


@pytest.mark.parametrize(("manifest", "match"), [
    ({"assets": {"../../escape": {"kwargs": {"render_filename": "{asset_dir}/x.obj"}}}},
     r"GSO\.json: asset id '\.\./\.\./escape': not usable as a file name"),
    ({"assets": {"/abs": {"kwargs": {"render_filename": "{asset_dir}/x.obj"}}}}, r"asset id '/abs'"),
    ("[" * 100_000 + "]" * 100_000, r"GSO\.json: not a readable JSON manifest \(RecursionError"),
    ({"assets": {"box": "a string"}}, r"GSO\.json: asset 'box': expected an object with a 'kwargs' object"),
    ({"assets": {"box": {"kwargs": [1]}}}, r"GSO\.json: asset 'box': expected an object with a 'kwargs' object"),
])
def test_a_manifest_whose_ids_would_leave_the_folder_or_that_nests_too_deep(tmp_path, manifest, match):
    (tmp_path / "GSO.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    with pytest.raises(ValueError, match=match):
        assets.KubricAssets.load(tmp_path)


@pytest.mark.parametrize("damage", ["random bytes", "cut short"])
def test_a_damaged_archive_is_named_and_leaves_nothing_behind(tmp_path, monkeypatch, damage):
    """Issue 32, item 4: a packed Kubric asset (``<id>.tar.gz``) or a pybullet source archive that is
    not a tar archive, or is cut short, is named (not an internal error), and no half-unpacked
    folder is left in the cache."""
    import io
    import random
    import tarfile

    monkeypatch.setenv("SPATIAL_TASKS_ASSETS", str(tmp_path / "cache"))
    good = io.BytesIO()
    with tarfile.open(fileobj=good, mode="w:gz") as tar:
        data = random.Random(0).randbytes(200_000)
        info = tarfile.TarInfo("box/visual_geometry.obj")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    payload = random.Random(1).randbytes(500) if damage == "random bytes" else good.getvalue()[:100_000]
    (tmp_path / "GSO").mkdir()
    (tmp_path / "GSO" / "box.tar.gz").write_bytes(payload)
    (tmp_path / "GSO.json").write_text(json.dumps({"assets": {"box": {"kwargs": {
        "render_filename": "{asset_dir}/visual_geometry.obj"}}}}))
    with pytest.raises(ValueError, match=r"GSO/box\.tar\.gz: not a readable \.tar\.gz archive"):
        assets.KubricAssets.load(tmp_path)
    assert not (tmp_path / "cache" / "kubric" / "GSO" / "box").exists()
    (tmp_path / "pybullet.tar.gz").write_bytes(payload)
    with pytest.raises(ValueError, match=r"pybullet\.tar\.gz: not a readable \.tar\.gz archive"):
        assets.fetch_pybullet(tmp_path / "pb", archive=tmp_path / "pybullet.tar.gz")
    assert not (tmp_path / "pb").exists() or not any((tmp_path / "pb").iterdir())
