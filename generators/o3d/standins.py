"""A small offline O3-D in the official Hub layout, drawn with PIL: the bundled sample's real-photo
stand-ins, and the tests' and benchmarks' datasets (not a generator of the benchmark).

``build_fixture(out_dir)`` writes what ``liuyiqian/O3-D`` holds, config for config and column for
column (schema.SUBSET_IMAGE_COLUMNS / SUBSET_METADATA_COLUMNS / QUESTION_COLUMNS)::

    out_dir/README.md                                 dataset card; YAML `configs:` header
    out_dir/<config>/train-00000-of-00001.parquet     one parquet per config (datasets Image
                                                      features stored as {bytes, path})

so ``datasets.load_dataset(out_dir, "kb-1cue", split="train")`` works offline, exactly as for the
Hub id. The images are PIL-drawn stand-ins, not renders: five objects of one class on a ground
plane (target in the middle, four distractors in a row), with a few cues drawn crudely (HP moves
objects' bases by depth, RS scales the target, SA hazes by depth, OC overlaps the target with a
neighbour, TG stripes objects by depth; the other cues only set metadata). What is exact is what
the loaders and metrics rely on:

* ``targ_seg``: 255 on the target's visible pixels; ``dist_seg``: each distractor's own grey level
  (id * 255 // max id, as the authors' renderer writes it).
* ``depth_map``: 8-bit PNG, metric depth = min + v / 255 * (max - min) with ``depth_scale``
  "{'min': …, 'max': …}"; the target is nearer/farther than the distractors exactly as
  ``odd_position`` says (equal for 'none'), so ground-truth depth orders every scored row right.
* kb-0cue has 'none' rows; real subsets carry ``marked_image`` (markers drawn with markers.py);
  real-012cue-cropped images show three objects (the target at the tagged side), their names
  carry ``-t{l,r}{far,near}`` and their ``odd_position`` is 'far' for all, as in the authors'
  metadata (copied from the uncropped photo) — the tag holds the truth. The unaugmented real
  ``image`` is 4/3 the size of ``augmented_image``, whose size the masks share.
* ``visual_questions``: per image two unmarked questions (clarity 2 / 3 / 3.5; crops: 3.5) and two
  marked ones (clarity 4; one for crops) — about 4 per image, as on the Hub (~147K / ~37K) —
  taken from the prompt space (spatial_tasks.o3d.prompts: prompt_space() for synthetic subsets,
  real_prompt_space() for the real ones; crops get the authors' "Answer a question about the
  left/right object." questions).

Everything is derived from ``seed`` and each image's index: the same call writes the same data.
"""

from __future__ import annotations

import io
import itertools
import math
import string
from collections.abc import Mapping
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from spatial_tasks.o3d import markers, prompts, schema

DEFAULT_COUNTS = {
    "kb-0cue": 6, "kb-1cue": 8, "kb-2cue": 6, "kb-no-lp": 4,
    "real-012cue": 4, "real-012cue-cropped": 4, "real-mcue": 3,
}
# Images per config at the paper's scale (13,746 single-cue and 21,556 two-cue images; the other
# counts from the authors' metadata files): 37,799 images.
PAPER_COUNTS = {
    "kb-0cue": 1443, "kb-1cue": 13746, "kb-2cue": 21556, "kb-no-lp": 592,
    "real-012cue": 97, "real-012cue-cropped": 194, "real-mcue": 171,
}
SINGLE_CUES = ("HP", "OC", "RS", "LS", "TG", "FO", "SA", "FS")
CUE_PAIRS = tuple(itertools.combinations(SINGLE_CUES, 2))  # 28 pairs
NO_LP_CUES = (("HP",), ("HP", "SA"), ("HP", "LS"), ("HP", "OC"), ("HP", "RS"), ("HP", "TG"), ("HP", "FO"))
KUBASIC = ("cube", "sphere", "sponge", "torus_knot", "suzanne", "spot")
REAL_OBJECTS = ("cube", "cup", "clip")
MCUE_TYPES = ("egg", "tulip", "cassette", "bottle", "apple")

CLARITY_VALUE = {"low": 2.0, "medium": 3.0, "high": 3.5, "highest": 4.0}

PARQUET_NAME = "train-00000-of-00001.parquet"


# --------------------------------------------------------------------------------------------
# Questions


def prompt_pools() -> dict[str, dict[str, list[str]]]:
    """Question texts from the prompt space (spatial_tasks.o3d.prompts), by pool and clarity level.

    Pools: "synthetic" (the 1,026 prompts), "real" (the real subsets' preamble questions) and
    "crop-l" / "crop-r" (the crops' "Answer a question about the left/right object." questions).
    """
    pools: dict[str, dict[str, list[str]]] = {"synthetic": {}, "real": {}, "crop-l": {}, "crop-r": {}}
    for prompt in prompts.prompt_space():
        pools["synthetic"].setdefault(prompt.tags.clarity_level, []).append(prompt.text)
    for prompt in prompts.real_prompt_space():
        side = schema.question_side(prompt.text)
        pool = pools[f"crop-{side}"] if side else pools["real"]
        pool.setdefault(prompt.tags.clarity_level, []).append(prompt.text)
    return pools


def _crop_question(side: str, rng: np.random.Generator, pools: dict[str, dict[str, list[str]]]) -> str:
    texts = [t for level in sorted(pools[f"crop-{side}"]) for t in pools[f"crop-{side}"][level]]
    return texts[int(rng.integers(len(texts)))]


# --------------------------------------------------------------------------------------------
# Scenes


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _jpg(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _cell(data: bytes, name: str) -> dict:
    return {"bytes": data, "path": name}


def _scene(rng: np.random.Generator, size: tuple[int, int], position: str, cues: tuple[str, ...],
           strength: float, *, n_objects: int = 5, target_slot: int | None = None,
           obj_id: str = "cube", sky=(70, 110, 200), ground=(120, 120, 110)):
    """(rgb, label map [0 bg, 1 target, 2.. distractors], metric depth) for one stand-in scene."""
    w, h = size
    horizon = h // 2
    target_slot = n_objects // 2 if target_slot is None else target_slot
    odd = float(rng.uniform(1.1, 2.0))
    d0 = 10.0
    t_depth = {"near": d0 / odd, "far": d0 * odd, "none": d0}[position]
    base = 1 + (odd - 1) * max(strength, 1.0)
    r = max(2, w // 14)
    objects = []  # (depth, label, x, y_bottom, radius)
    did = 2
    for k in range(n_objects):
        x = w * (k + 1) / (n_objects + 1)
        depth = t_depth if k == target_slot else d0
        radius = r
        y = horizon + 0.2 * h
        if "HP" in cues:
            y = horizon + 0.2 * h * (d0 / depth)
        if k == target_slot:
            label = 1
            if "RS" in cues and position != "none":
                radius = r * (base if position == "near" else 1 / base)
            if "OC" in cues and position != "none":
                x += r * 1.2  # overlap the right-hand neighbour
        else:
            label = did
            did += 1
        objects.append((depth, label, x, min(y, h - 1), radius))

    img = Image.new("RGB", (w, h), sky)
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, horizon, w, h), fill=ground)
    if ground == (120, 120, 110):  # the 'basic' environment's checker ground
        step = max(2, w // 16)
        for gx in range(0, w, step):
            for gy in range(horizon, h, step):
                if ((gx + gy) // step) % 2:
                    draw.rectangle((gx, gy, gx + step - 1, gy + step - 1), fill=(150, 150, 140))
    labels = Image.new("L", (w, h), 0)
    ldraw = ImageDraw.Draw(labels)
    depth = np.full((h, w), 60.0, dtype=np.float64)
    rows = np.arange(h, dtype=np.float64)[:, None]
    ground_depth = 60.0 - (rows - horizon) / max(1, h - 1 - horizon) * 58.0
    depth[horizon:, :] = np.broadcast_to(ground_depth[horizon:], (h - horizon, w))
    colour = tuple(int(c) for c in rng.integers(40, 220, size=3))
    shape = KUBASIC.index(obj_id) % 3 if obj_id in KUBASIC else int(rng.integers(3))
    for obj_depth, label, x, y, radius in sorted(objects, key=lambda o: -o[0]):  # far to near
        box = (x - radius, y - 2 * radius, x + radius, y)
        fill = colour
        if "SA" in cues:
            haze = 1 - math.exp(-obj_depth * 0.05 * max(strength, 1.0))
            fill = tuple(int(c * (1 - haze) + 230 * haze) for c in colour)
        for d in (draw, ldraw):
            value = fill if d is draw else label
            if shape == 0:
                d.rectangle(box, fill=value)
            elif shape == 1:
                d.ellipse(box, fill=value)
            else:
                d.polygon([(box[0], box[3]), (box[2], box[3]), (x, box[1])], fill=value)
        if "TG" in cues:
            gap = max(1, round(3 * obj_depth / 10.0))
            for yy in range(int(box[1]), int(box[3]), gap + 1):
                draw.line((box[0], yy, box[2], yy), fill=(30, 30, 30))
        lab = np.asarray(labels) == label
        depth[lab] = obj_depth
    return img, np.asarray(labels).copy(), depth


def _masks(label_map: np.ndarray) -> tuple[Image.Image, Image.Image]:
    targ = np.where(label_map == 1, 255, 0).astype(np.uint8)
    ids = np.where(label_map >= 2, label_map, 0).astype(np.int64)
    dist = (ids * 255 // max(1, ids.max())).astype(np.uint8)
    return Image.fromarray(targ, mode="L"), Image.fromarray(dist, mode="L")


def _depth_png(depth: np.ndarray) -> tuple[Image.Image, str]:
    dmin, dmax = float(depth.min()), float(depth.max())
    v = np.round((depth - dmin) / (dmax - dmin) * 255).astype(np.uint8)
    return Image.fromarray(v, mode="L"), str({"min": dmin, "max": dmax})


# --------------------------------------------------------------------------------------------
# Subsets


def synthetic_rows(subset: str, count: int, seed: int, size: tuple[int, int]) -> dict[str, list]:
    sidx = schema.SUBSETS.index(subset)
    cols: dict[str, list] = {c: [] for c in ("image", "depth_map", "targ_seg", "dist_seg",
                                             *schema.SYNTHETIC_METADATA_COLUMNS)}
    for i in range(count):
        rng = np.random.default_rng([seed, sidx, i])
        if subset == "kb-0cue":
            position, cues, strength = ("near", "far", "none")[i % 3], (), None
        else:
            position = ("near", "far")[i % 2]
            # each scene: near and far, each at strength 1 ("regular") and 2 ("doubled")
            options = {"kb-1cue": [(c,) for c in SINGLE_CUES], "kb-2cue": CUE_PAIRS}.get(subset, NO_LP_CUES)
            cues = tuple(options[(i // 4) % len(options)])
            strength = 1.0 if "FS" in cues else float(1 + (i % 4) // 2)
        basic = i % 4 == 0
        kubasic = i % 3 != 2
        obj_id = KUBASIC[i % len(KUBASIC)] if kubasic else f"gso_object_{i % 31:02d}"
        env_id = None if basic else f"hdri_{i % 12:02d}"
        sky = (70, 110, 200) if basic else tuple(int(c) for c in rng.integers(60, 200, size=3))
        ground = (120, 120, 110) if basic else tuple(int(c) for c in rng.integers(40, 160, size=3))
        img, label_map, depth = _scene(rng, size, position, cues, strength or 1.0, obj_id=obj_id,
                                       sky=sky, ground=ground)
        targ, dist = _masks(label_map)
        depth_img, depth_scale = _depth_png(depth)
        name = f"{260100000000 + sidx * 10**8 + i:012d}_{position}_{''.join(cues)}.png"
        cols["image"].append(_cell(_png(img), name))
        cols["depth_map"].append(_cell(_png(depth_img), name))
        cols["targ_seg"].append(_cell(_png(targ), name))
        cols["dist_seg"].append(_cell(_png(dist), name))
        cols["image_name"].append(name)
        cols["env_cat"].append("basic" if basic else "hdri")
        cols["env_id"].append(env_id)
        cols["obj_cat"].append("kubasic" if kubasic else "gso")
        cols["obj_id"].append(obj_id)
        cols["odd_position"].append(position)
        cols["cues"].append(repr(list(cues)))  # "['HP', 'SA']", as on the Hub
        cols["cue_strength"].append(strength)
        cols["depth_scale"].append(depth_scale)
    return cols


def _real_scene(rng, size, position, cues, *, n_objects=5, target_slot=None):
    """A 'photo': the stand-in scene with sensor noise, plus masks; sizes as given."""
    img, label_map, _ = _scene(rng, size, position, cues, 1.0, n_objects=n_objects,
                               target_slot=target_slot, obj_id=REAL_OBJECTS[int(rng.integers(3))],
                               sky=(200, 196, 188), ground=(150, 130, 110))
    arr = np.asarray(img).astype(np.int16) + rng.integers(-6, 7, size=(size[1], size[0], 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)), label_map


def real_rows(subset: str, count: int, seed: int, size: tuple[int, int]) -> dict[str, list]:
    sidx = schema.SUBSETS.index(subset)
    image_cols = schema.SUBSET_IMAGE_COLUMNS[subset]
    cols: dict[str, list] = {c: [] for c in (*image_cols, *schema.SUBSET_METADATA_COLUMNS[subset])}
    big = (size[0] * 4 // 3, size[1] * 4 // 3)  # the unaugmented photo is larger
    for i in range(count):
        rng = np.random.default_rng([seed, sidx, i])
        n_cues = i % 3
        cues = tuple(rng.choice(SINGLE_CUES, size=n_cues, replace=False).tolist()) if n_cues else ()
        if subset == "real-012cue-cropped":
            side, tag_depth = ("l", "r")[i % 2], ("far", "near")[(i // 2) % 2]
            position = tag_depth
            n_objects, target_slot = 3, (0 if side == "l" else 2)
            name = f"img_{600 + i // 2:04d}-t{side}{tag_depth}.jpg"
        else:
            position = ("near", "far")[i % 2]
            n_objects, target_slot = 5, None
            name = (f"img_{600 + i:04d}.jpg" if subset == "real-012cue" else
                    "".join(rng.choice(list(string.ascii_letters + string.digits), size=13)) + ".jpg")
        photo, label_map = _real_scene(rng, big, position, cues, n_objects=n_objects, target_slot=target_slot)
        augmented = photo.resize(size, Image.Resampling.BILINEAR)
        label_img = Image.fromarray(label_map.astype(np.uint8), mode="L").resize(size, Image.Resampling.NEAREST)
        targ, dist = _masks(np.asarray(label_img))
        marked = markers.draw_markers(augmented, targ, dist)
        images = {"image": photo, "augmented_image": augmented, "marked_image": marked}
        if subset == "real-mcue":  # no augmented column: 'image' is the shown photo, masks match it
            images["image"] = augmented
        for c in image_cols:
            if c in images:
                cols[c].append(_cell(_jpg(images[c]), name))
        cols["targ_seg"].append(_cell(_png(targ), name.rsplit(".", 1)[0] + ".png"))
        cols["dist_seg"].append(_cell(_png(dist), name.rsplit(".", 1)[0] + ".png"))
        cols["image_name"].append(name)
        if subset == "real-mcue":
            n_dist = int(rng.integers(2, 9))
            t_med, d_med = (0.9, 1.2) if position == "near" else (1.4, 1.0)
            meta = {"num_distractors": n_dist, "target_type": MCUE_TYPES[i % len(MCUE_TYPES)],
                    "targ_min_depth": t_med - 0.05, "targ_med_depth": t_med, "targ_max_depth": t_med + 0.1,
                    "dist_min_depth": d_med - 0.1, "dist_med_depth": d_med, "dist_max_depth": d_med + 0.4,
                    "med_depth_diff": t_med - d_med, "odd_position": position,
                    "cues": repr(list(cues[::-1] if i % 2 else cues)) if cues else "['HP', 'OC']"}
            for flag in ("orientation", "color", "focus", "shape", "size", "location", "pattern"):
                meta[flag] = int(rng.integers(2))
        else:
            strength = 0.0 if not cues else float(rng.choice([0.5, 1.0, 2.0]))
            meta = {"env_cat": "real", "env_id": "lab", "obj_cat": "real",
                    "obj_id": REAL_OBJECTS[i % len(REAL_OBJECTS)],
                    # crops copy the uncropped photo's odd_position; their tag holds the truth
                    "odd_position": "far" if subset == "real-012cue-cropped" else position,
                    "cues": repr(tuple(cues)), "cue_strength": strength}
        for c in schema.SUBSET_METADATA_COLUMNS[subset]:
            if c != "image_name":
                cols[c].append(meta[c])
    return cols


def question_rows(subset: str, names: list[str], seed: int, all_pools: dict[str, dict[str, list[str]]]) -> list[dict]:
    sidx = schema.SUBSETS.index(subset)
    pools = all_pools[schema.family_of(subset)]
    out = []
    for i, name in enumerate(names):
        rng = np.random.default_rng([seed, sidx, i, 7])
        if subset == "real-012cue-cropped":
            for side in ("l", "r"):
                out.append({"subset_name": subset, "image_name": name, "is_marked": False,
                            "question": _crop_question(side, rng, all_pools), "ques_clarity": 3.5})
            n_marked = 1
        else:
            for level in rng.choice(["low", "medium", "high"], size=2, replace=False):
                pool = pools[str(level)]
                out.append({"subset_name": subset, "image_name": name, "is_marked": False,
                            "question": pool[int(rng.integers(len(pool)))],
                            "ques_clarity": CLARITY_VALUE[str(level)]})
            n_marked = 2
        pool = pools["highest"]
        for _ in range(n_marked):
            out.append({"subset_name": subset, "image_name": name, "is_marked": True,
                        "question": pool[int(rng.integers(len(pool)))], "ques_clarity": 4.0})
    return out


def _write(out_dir: Path, config: str, columns: Mapping[str, list], features: datasets.Features) -> None:
    path = out_dir / config / PARQUET_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pydict({c: columns[c] for c in features}, schema=features.arrow_schema)
    pq.write_table(table, path, row_group_size=1000)


def card(configs: list[str], seed: int, counts: Mapping[str, int]) -> str:
    lines = ["---", "license: mit", "task_categories:", "- visual-question-answering", "configs:"]
    for c in configs:
        lines += [f"- config_name: {c}", "  data_files:", "  - split: train", f"    path: {c}/{PARQUET_NAME}"]
    lines += ["---", "", "# O3-D fixture (synthetic stand-in)", "",
              "Written by `spatial_tasks.generators.o3d.standins.build_fixture` in the layout of the Hub dataset",
              "`liuyiqian/O3-D` (configs, columns, split `train`). PIL-drawn stand-in images, not the",
              "authors' renders or photos; for offline tests and benchmarks only.", "",
              f"Seed: {seed}. Images per config: "
              + ", ".join(f"{k} {v}" for k, v in counts.items()) + ".", ""]
    return "\n".join(lines)


def build_fixture(out_dir: str | Path, *, seed: int = 0, counts: Mapping[str, int] | None = None,
                  image_size: tuple[int, int] = (128, 96)) -> Path:
    """Write the fixture dataset into ``out_dir`` (created) and return its path.

    ``counts``: images per config (default DEFAULT_COUNTS; PAPER_COUNTS for full scale; a config
    with 0 or missing is not written). ``image_size``: (width, height) of the shown images.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = dict(DEFAULT_COUNTS if counts is None else counts)
    pools = prompt_pools()
    questions: list[dict] = []
    written = []
    for subset in schema.SUBSETS:
        n = int(counts.get(subset, 0))
        if n <= 0:
            continue
        if subset in schema.SYNTHETIC_SUBSETS:
            cols = synthetic_rows(subset, n, seed, image_size)
        else:
            cols = real_rows(subset, n, seed, image_size)
        _write(out, subset, cols, schema.subset_features(subset))
        questions += question_rows(subset, cols["image_name"], seed, pools)
        written.append(subset)
    qcols = {c: [q[c] for q in questions] for c in schema.QUESTION_FEATURES}
    _write(out, schema.QUESTIONS_CONFIG, qcols, schema.QUESTION_FEATURES)
    written.append(schema.QUESTIONS_CONFIG)
    (out / "README.md").write_text(card(written, seed, {k: counts[k] for k in written if k in counts}))
    return out
