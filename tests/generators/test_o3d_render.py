"""O3-D generator: real Blender renders at tiny sizes (64-256 px, few samples) -- every single cue
and one pair, checked on the rendered masks, depth and pixels, and the generated folder read by the
O3-D tasks through the real lmms-eval CLI (depth oracle = 1.0).

One mini set is made by the real ``generate`` (cube, basic environment, strength 2, near/far/none);
focus and texture density need a known odd_scaler and more pixels, so those scenes are rendered by
the same renderer with a fixed one.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

pytest.importorskip("bpy")

from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common import provenance
from spatial_tasks.generators.o3d import generate as gen
from spatial_tasks.generators.o3d import layout, scene

from spatial_tasks.o3d import load, markers, prompts, schema
from lmms import SPATIAL_TASKS, run_cli

pytestmark = pytest.mark.render

RES = 160


def _image(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB")).astype(np.float64)


def _masks(stem: Path) -> dict[str, np.ndarray]:
    target = np.asarray(Image.open(f"{stem}.targ.png")) > 0
    levels = np.asarray(Image.open(f"{stem}.dist.png"))
    return {"target": target, **{f"distractor{j}": levels == j * 255 // 4 for j in range(1, 5)}}


def _scenes(folder: Path) -> dict[tuple[str, str], dict]:
    """{(cue key, position): {record, image, masks}} from a generated folder's work files."""
    out = {}
    for path in folder.glob("_work/kb-*/*.json"):
        if path.name == "dataset.json":
            continue
        record = json.loads(path.read_text())
        spec = record["spec"]
        stem = path.parent / spec["image_id"]
        key = ("+".join(spec["cues"]) or "none", spec["position"] + ("-nolp" if spec["no_lp"] else ""))
        if "FS" in spec["cues"]:
            key += (spec["obj_id"],)  # one scene per familiar-size pair
        out[key] = {"record": record, "image": _image(Path(f"{stem}.png")), "masks": _masks(stem), "stem": stem}
    return out


@pytest.fixture(scope="module")
def mini(tmp_path_factory) -> Path:
    """0-cue (near/far/none), the 8 single cues and HP+SA at strength 2 (near/far), and HP on a
    textureless ground: 27 images at 160 px through the real generator."""
    out = tmp_path_factory.mktemp("o3d") / "mini"
    common = dict(objects="cube", envs="basic", strengths="2", resolution=RES, samples=4, workers=2, progress=False)
    gen.generate(out, cues="none,all-single,HP+SA", **common)
    gen.generate(out, cues="HP", no_lp=True, positions="near,far", **common)
    return out


@pytest.fixture(scope="module")
def scenes(mini) -> dict:
    return _scenes(mini)


def _box(scene_: dict, name: str) -> list[int]:
    return scene_["record"]["measured"][name]["box"]


def _farther(position: str) -> list[str]:
    return ["target"] if position == "far" else [f"distractor{j}" for j in range(1, 5)]


def _nearer(position: str) -> list[str]:
    return [f"distractor{j}" for j in range(1, 5)] if position == "far" else ["target"]


# ------------------------------------------------------------------------------ the base


@pytest.mark.parametrize("position", ["near", "far", "none"])
def test_the_base_view_is_ambiguous(scenes, position):
    """0 cues: every object projects to the same height and stands on the same image row."""
    s = scenes[("none", position)]
    boxes = {k: _box(s, k) for k in ("target", "distractor1", "distractor2", "distractor3", "distractor4")}
    heights = {k: b[3] - b[1] for k, b in boxes.items()}
    bottoms = {k: b[3] for k, b in boxes.items()}
    assert max(heights.values()) - min(heights.values()) <= 1, heights
    assert max(bottoms.values()) - min(bottoms.values()) <= 1, bottoms
    depth = np.load(io.BytesIO(Path(f"{s['stem']}.depth.npy").read_bytes()))
    target = np.median(depth[s["masks"]["target"]])
    others = np.median(depth[s["masks"]["distractor1"]])
    ratio = target / others
    k = s["record"]["spec"]["odd_scaler"]
    if position == "none":
        assert ratio == pytest.approx(1.0, abs=0.02)
    else:  # the depth planes differ by odd_scaler (medians of front faces: within a few %)
        assert (ratio if position == "far" else 1 / ratio) == pytest.approx(k, rel=0.05)


def test_the_release_depth_png_decodes_to_the_metric_depth(scenes):
    s = scenes[("none", "far")]
    record = s["record"]
    png = np.asarray(Image.open(f"{s['stem']}.depth.png")).astype(np.float64)
    lo, hi = record["depth_scale"]["min"], record["depth_scale"]["max"]
    decoded = lo + png / 255 * (hi - lo)
    metric = np.load(io.BytesIO(Path(f"{s['stem']}.depth.npy").read_bytes()))
    objects = np.isfinite(metric)
    assert np.abs(decoded[objects] - metric[objects]).max() <= (hi - lo) / 255 / 2 + 1e-3
    assert np.isinf(metric[~objects]).all() and (~objects).any()  # background recorded as +inf


# ------------------------------------------------------------------------------ each cue


@pytest.mark.parametrize("cues", ["HP", "HP+SA"])
@pytest.mark.parametrize("position", ["near", "far"])
def test_height_in_plane_puts_the_nearer_base_lower(scenes, cues, position):
    s = scenes[(cues, position)]
    near_bottom = min(_box(s, k)[3] for k in _nearer(position))
    far_bottom = max(_box(s, k)[3] for k in _farther(position))
    assert near_bottom >= far_bottom + 2  # rows grow downwards


@pytest.mark.parametrize("position", ["near", "far"])
def test_occlusion_hides_part_of_the_farther_neighbour(scenes, position):
    """The camera slides until the nearer object covers s/6 of the farther one (s = 2: a third)."""
    base, oc = scenes[("none", position)], scenes[("OC", position)]
    occluded = "target" if position == "far" else "distractor2"  # the neighbour behind (see layout.py)
    occluder = "distractor1" if position == "far" else "target"
    pixels = lambda s, k: s["record"]["measured"][k]["pixels"]
    assert pixels(oc, occluded) <= 0.85 * pixels(base, occluded)
    assert pixels(oc, occluder) >= 0.9 * pixels(base, occluder)
    a, b = _box(oc, occluded), _box(oc, occluder)
    assert a[0] <= b[2] and b[0] <= a[2], "what is left of the hidden object meets the occluder's edge"


@pytest.mark.parametrize("position", ["near", "far"])
def test_relative_size_makes_the_target_larger_when_near(scenes, position):
    s = scenes[("RS", position)]
    target = _box(s, "target")[3] - _box(s, "target")[1]
    others = _box(s, "distractor1")[3] - _box(s, "distractor1")[1]
    assert (target > others + 1) if position == "near" else (target < others - 1)


@pytest.mark.parametrize("position", ["near", "far"])
def test_light_and_shadow_shade_a_farther_object(scenes, position):
    """The cue light is aimed so a nearer object's shadow falls on a farther one: that object gains
    the least light (near: distractor 1 behind the target; far: the target behind distractor 2)."""
    base, ls = scenes[("none", position)], scenes[("LS", position)]
    gains = {k: ls["image"][m].mean() - base["image"][m].mean() for k, m in ls["masks"].items()}
    receiver = "distractor1" if position == "near" else "target"
    assert min(gains, key=gains.get) == receiver, gains
    assert all(g > 0 for g in gains.values()), "the light brightens every object"


@pytest.mark.parametrize("position", ["near", "far"])
def test_aerial_perspective_hazes_farther_objects_more(scenes, position):
    """Haze pulls a pixel towards A = 230 by 1 - exp(-beta d): the farther, the more."""
    base, sa = scenes[("none", position)], scenes[("SA", position)]
    kept = {k: float((230 - sa["image"][m]).mean() / (230 - base["image"][m]).mean()) for k, m in sa["masks"].items()}
    assert max(kept[k] for k in _farther(position)) < min(kept[k] for k in _nearer(position)) - 0.03, kept
    assert sa["record"]["layout"]["haze_beta"] == pytest.approx(0.02)


def test_haze_formula():
    rgb = np.array([[[0, 100, 255]]], dtype=np.uint8)
    out = scene.haze(rgb, np.array([[50.0]]), beta=0.01)
    t = np.exp(-0.5)
    assert out.tolist() == [[[round(230 * (1 - t)), round(100 * t + 230 * (1 - t)), round(255 * t + 230 * (1 - t))]]]


@pytest.mark.parametrize("position", ["near", "far"])
def test_texture_gradient_stripes_every_object(scenes, position):
    base, tg = scenes[("none", position)], scenes[("TG", position)]

    def vertical_energy(s, m):
        rows = np.abs(np.diff(s["image"].mean(-1), axis=0))
        inside = m[1:] & m[:-1]
        return rows[inside].mean()

    nearer = [vertical_energy(tg, tg["masks"][k]) / vertical_energy(base, base["masks"][k]) for k in _nearer(position)]
    assert min(nearer) > 2, nearer
    stripes = tg["record"]["layout"]["stripes"]
    farther_role = "target" if position == "far" else "distractor"
    nearer_role = "distractor" if position == "far" else "target"
    assert stripes[farther_role] == pytest.approx(3 * stripes[nearer_role])  # x (s + 1), s = 2


@pytest.mark.parametrize("pair", ["basketball/tennis_ball", "oil_drum/soda_can"])
def test_familiar_size_pairs_project_alike(scenes, pair):
    """The odd object is the other member of the pair, moved back by the height ratio: all five
    project to the same height (near: a small target among large ones; far: the reverse)."""
    large, small = pair.split("/")
    near = scenes[("FS", "near", pair)]
    assert (near["record"]["spec"]["target_asset"], near["record"]["spec"]["distractor_asset"]) == (small, large)
    heights = [_box(near, k)[3] - _box(near, k)[1] for k in near["masks"]]
    assert max(heights) - min(heights) <= 1, heights
    far = scenes[("FS", "far", pair)]["record"]
    assert (far["spec"]["target_asset"], far["spec"]["distractor_asset"]) == (large, small)
    objects = far["layout"]["objects"]
    ratio = (objects[0]["y"] - far["layout"]["camera"][1]) / (objects[1]["y"] - far["layout"]["camera"][1])
    assert ratio == pytest.approx(objects[0]["height"] / objects[1]["height"])


@pytest.mark.parametrize("position", ["near", "far"])
def test_no_lp_renders_a_textureless_ground(scenes, position):
    checker, plain = scenes[("HP", position)], scenes[("HP", position + "-nolp")]
    bottom = max(_box(checker, k)[3] for k in ("target", "distractor1"))
    band = slice(bottom + 2, RES)  # the ground in front of the row, down to the image's edge

    def across(s):  # checker edges: brightness changes along each row
        return np.abs(np.diff(s["image"][band].mean(-1), axis=1)).mean()

    assert across(plain) < 0.5 * across(checker)
    assert plain["record"]["spec"]["no_lp"] and plain["record"]["spec"]["config"] == "kb-no-lp"


# -------------------------------------------------------------- fixed odd_scaler scenes


def _spec(cues: list[str], position: str, k: float, obj: str, strength: float = 2.0) -> dict:
    name = f"fixed_{position}_{''.join(cues) or 'none'}_{obj}"
    return {"config": "kb-1cue", "image_name": name + ".png", "image_id": name, "cues": cues,
            "cue_strength": strength if cues else None, "position": position, "odd_scaler": k, "env_cat": "basic",
            "env_id": "basic", "obj_cat": "blender", "obj_id": obj, "target_asset": obj, "distractor_asset": obj,
            "no_lp": False, "seed": 7}


def _edge_sharpness(image: np.ndarray, mask: np.ndarray) -> float:
    """Mean of the 10 strongest gradients in a 2-px band around the mask's outline."""
    gy, gx = np.gradient(image.mean(-1))
    magnitude = np.hypot(gx, gy)
    grown, shrunk = mask.copy(), mask.copy()
    for _ in range(2):
        grown = grown | np.roll(grown, 1, 0) | np.roll(grown, -1, 0) | np.roll(grown, 1, 1) | np.roll(grown, -1, 1)
        shrunk = shrunk & np.roll(shrunk, 1, 0) & np.roll(shrunk, -1, 0) & np.roll(shrunk, 1, 1) & np.roll(shrunk, -1, 1)
    return float(np.sort(magnitude[grown & ~shrunk])[-10:].mean())


@pytest.fixture(scope="module")
def fixed(tmp_path_factory) -> dict:
    """Focus on soda cans (small objects: visible depth of field) and stripes at 1024 px (the
    release's size; smaller images alias the farther objects' stripes), with odd_scaler fixed."""
    work = tmp_path_factory.mktemp("o3d_fixed")
    out = {}
    renderer = scene.O3DRenderer(256, 8, 2)
    for position in ("near", "far"):
        for cues in ([], ["FO"]):
            spec = _spec(cues, position, 1.8, "soda_can")
            renderer((spec, str(work)))
            out[("FO" if cues else "none", position)] = (_image(work / f"{spec['image_id']}.png"),
                                                        _masks(work / spec["image_id"]))
    big = scene.O3DRenderer(1024, 1, 2)
    spec = _spec(["TG"], "near", 1.1, "cube", strength=1.0)
    big((spec, str(work)))
    out[("TG", "near")] = (_image(work / f"{spec['image_id']}.png"), _masks(work / spec["image_id"]))
    return out


@pytest.mark.parametrize("position", ["near", "far"])
def test_focus_keeps_the_target_sharp_and_blurs_the_others(fixed, position):
    image, masks = fixed[("FO", position)]
    base, _ = fixed[("none", position)]
    kept = {k: _edge_sharpness(image, m) / _edge_sharpness(base, m) for k, m in masks.items()}
    assert kept["target"] > max(v for k, v in kept.items() if k != "target") + 0.1, kept


def test_texture_is_denser_on_the_farther_objects(fixed):
    """Stripes along the central column of each object: the farther distractors carry (s + 1) x k
    = 2.2 times as many per pixel of height as the nearer target."""
    image, masks = fixed[("TG", "near")]
    grey = image.mean(-1)

    def transitions(mask):
        rows, cols = np.nonzero(mask)
        column = int(np.median(cols))
        top, bottom = rows.min() + 2, rows.max() - 1
        profile = grey[top:bottom, column - 1:column + 2].mean(1)
        binary = profile > np.median(profile)
        return np.count_nonzero(binary[1:] != binary[:-1]) / (bottom - top)

    near = transitions(masks["target"])
    far = float(np.mean([transitions(masks[f"distractor{j}"]) for j in range(1, 5)]))
    assert far > 1.5 * near, (near, far)


# ------------------------------------------------------------------- the dataset folder


def test_the_folder_has_the_release_layout(mini):
    card = (mini / "README.md").read_text()
    for config in ("kb-0cue", "kb-1cue", "kb-2cue", "kb-no-lp", "visual_questions"):
        assert f"config_name: {config}" in card
    record = ds.read_generation(next((mini / "kb-1cue").glob("train-*.parquet")))
    assert set(provenance.KEYS) <= set(record) and record["blender_version"][:2] in ("4.", "5.")
    assert record["flags"]["objects"] == ["cube"] and record["flags"]["resolution"] == RES and "workers" not in record["flags"]
    assert record["command"] in card and record["git_commit"] in card
    table = pq.read_table(next((mini / "kb-1cue").glob("train-*.parquet")))
    assert set(schema.SUBSET_IMAGE_COLUMNS["kb-1cue"]) | set(schema.SYNTHETIC_METADATA_COLUMNS) <= set(table.column_names)
    rows = table.drop_columns(["image", "depth_map", "targ_seg", "dist_seg", "depth_f32"]).to_pylist()
    assert {r["cues"] for r in rows} == {repr([c]) for c in layout.SINGLE_CUES}
    assert all(r["odd_position"] in ("near", "far") and r["cue_strength"] in (1.0, 2.0) for r in rows)
    assert {r["env_cat"] for r in rows} == {"basic"} and {r["env_id"] for r in rows} == {None}
    questions = pq.read_table(mini / "visual_questions" / "train-00000-of-00001.parquet").to_pylist()
    names = {r["image_name"] for r in rows}
    mine = [q for q in questions if q["subset_name"] == "kb-1cue"]
    assert {q["image_name"] for q in mine} == names and len(mine) == 4 * len(names)
    for q in mine:  # one per clarity, from the prompt space, marked only at 'highest'
        tags = prompts.parse_prompt(q["question"])
        assert tags is not None and tags.ques_clarity == q["ques_clarity"]
        assert q["is_marked"] == (q["ques_clarity"] == 4.0)
    assert {q["subset_name"] for q in questions} == {"kb-0cue", "kb-1cue", "kb-2cue", "kb-no-lp"}


def test_the_tasks_load_it_and_draw_markers_from_its_masks(mini):
    docs = load.load_o3d(str(mini))
    marked = [d for d in docs if d["is_marked"] and d["subset_name"] == "kb-1cue"]
    plain = [d for d in docs if not d["is_marked"] and d["subset_name"] == "kb-1cue"]
    assert marked and plain and all(d["draw_markers"] for d in marked)
    target, distractors = load.masks_for(marked[0])
    assert target.any() and len(distractors) == 4  # one grey level per distractor

    def count(image, colour):
        return int(np.all(np.asarray(image.convert("RGB")) == colour, axis=-1).sum())

    shown = load.image_for(marked[0])
    assert count(shown, markers.TARGET_COLOR) > 0 and count(shown, markers.DISTRACTOR_COLOR) > 0
    assert count(load.image_for(plain[0]), markers.DISTRACTOR_COLOR) == 0


def test_depth_oracle_scores_one_through_lmms_eval(mini, tmp_path):
    from lmms import run_lmms_eval

    made = run_cli([SPATIAL_TASKS, "custom-task", "o3d_markers", "--data", str(mini), "--out",
                    str(tmp_path / "tasks"), "--name", "o3d_generated"], capture_output=True, text=True, check=True)
    assert Path(made.stdout.strip()).name == "o3d_generated.yaml"
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=depth_oracle", "o3d_generated",
                        "--include_path", str(tmp_path / "tasks"))
    metrics = run.metrics("o3d_generated")
    assert metrics["acc"] == pytest.approx(1.0) and metrics["unparseable"] == 0.0
    n = run.results["n-samples"]["o3d_generated"]["effective"]
    marked = [d for d in load.load_o3d(str(mini)) if d["is_marked"] and d["subset_name"] != "kb-no-lp"]
    assert n == len(run.samples["o3d_generated"]) == len(marked) > 0


def test_the_contact_sheet_shows_the_base_view_and_every_cue(mini, tmp_path):
    from spatial_tasks.generators.o3d import preview

    key, chosen = preview.pick_scene(preview._rows(mini), position="far", strength=2.0)
    assert key == ("basic", "cube", "far") and set(chosen) == {"none", *layout.SINGLE_CUES}
    done = run_cli([SPATIAL_TASKS, "preview", "o3d", str(mini), "--out", str(tmp_path / "sheet.png"),
                    "--position", "far", "--strength", "2", "--size", "128"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sheet = Image.open(tmp_path / "sheet.png")
    assert sheet.size[0] == 3 * 128 and sheet.size[1] > 3 * 128  # 3 x 3 panels with titles
    empty = run_cli([SPATIAL_TASKS, "preview", "o3d", str(tmp_path), "--out", str(tmp_path / "x.png")],
                    capture_output=True, text=True)
    assert empty.returncode == 2 and "generate o3d" in empty.stderr
