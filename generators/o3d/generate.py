"""Generate O3-D datasets in the official Hub layout: render (Blender), then parquet + questions + card.

    spatial-tasks generate o3d --cues none,all-single,all-pairs [--no-lp] [--strengths 1,2]
        [--positions near,far,none] [--objects ...] [--envs ...] [--assets DIR] --out DIR
        [--resolution 1024] [--samples 16] [--seed 0] [--shard K/N] [--workers W]
        [--ray [ADDRESS]] [--device auto|cpu|cuda|optix] [--overwrite]

What lands in DIR (``liuyiqian/O3-D``'s configs and columns, split ``train``)::

    DIR/README.md                                  card: configs, cue table, counts, how to regenerate
    DIR/kb-0cue|kb-1cue|kb-2cue|kb-no-lp/train-KKKKK-of-NNNNN.parquet
        image, depth_map, targ_seg, dist_seg, image_name, env_cat, env_id, obj_cat, obj_id,
        odd_position, cues, cue_strength, depth_scale   (the release's columns)
        + odd_scaler, depth_f32 (lossless float32 depth, .npy bytes), scene (layout JSON)
    DIR/visual_questions/train-KKKKK-of-NNNNN.parquet
        subset_name, image_name, is_marked, question, ques_clarity: per image one question at each
        clarity (low 2, medium 3, high 3.5 unmarked; highest 4 marked), drawn deterministically from
        the 1,026-prompt space (spatial_tasks.o3d.prompts.sample_questions)
    DIR/_work/<config>/                            render work files (never published)

Marked images are not stored (nor are they on the Hub): the O3-D tasks draw them from the masks
(spatial_tasks.o3d.markers), so a generated folder loads in the tasks unchanged.

Steps, as for the other generators: **render** the shard's unfinished images into
``_work/<config>/`` (atomic files, JSON last; a rerun skips finished images), then **build** the
shard's parquet files per config and its ``visual_questions`` file (from every config's rows of
this shard, so configs rendered by separate runs share one questions file), then the card.
Folders are guarded (generators/common/folder.py): one run at a time, and a config keeps the
flags it was made with.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common import provenance
from spatial_tasks.generators.common.blender import check_device, need_bpy
from spatial_tasks.generators.common.folder import OutputFolder
from spatial_tasks.generators.common.jobs import (
    Shard,
    atomic_write_json,
    available_cpus,
    check_flag,
    run_jobs,
    threads_per_worker,
)
from spatial_tasks.generators.o3d import assets, layout, sampling, scene

from spatial_tasks.o3d import prompts, schema

log = logging.getLogger(__name__)

WORK_DIR = "_work"
SPLIT = schema.SPLIT
QUESTIONS = schema.QUESTIONS_CONFIG
MAX_ROWS_PER_FILE = 200
GENERATOR = "spatial_tasks.generators.o3d"
CARD_TEMPLATE = Path(__file__).with_name("card.md.jinja")
LICENSE = "mit"
CLARITIES = (("low", False), ("medium", False), ("high", False), ("highest", True))
EXTRA_FEATURES = {"odd_scaler": datasets.Value("float64"), "depth_f32": datasets.Value("binary"),
                  "scene": datasets.Value("string")}


def image_features(config: str) -> datasets.Features:
    """The release's columns of a kb-* config (schema.subset_features) plus ours."""
    return datasets.Features({**schema.subset_features(config), **EXTRA_FEATURES})


@dataclass
class Selection:
    """The validated flags of one run: what to render and how."""

    cues: str
    objects: list[str]
    envs: list[str]
    positions: list[str]
    strengths: list[float]
    no_lp: bool
    seed: int
    resolution: int
    samples: int
    shard: Shard
    assets_dir: str | None
    specs: dict[str, list[sampling.ImageSpec]]

    def identity(self, config: str) -> dict[str, Any]:
        """What decides a config's images (a folder refuses another identity without --overwrite)."""
        cue_sets = sorted({"+".join(s.cues) or "none" for s in self.specs[config]})
        return {"generator": GENERATOR, "cue_sets": cue_sets, "objects": self.objects, "envs": self.envs,
                "positions": self.positions, "strengths": self.strengths, "no_lp": self.no_lp, "seed": self.seed,
                "resolution": self.resolution, "samples": self.samples, "shards": self.shard.count,
                "renderer_version": scene.RENDERER_VERSION}

    def flags(self) -> dict[str, Any]:
        return {"cues": self.cues, "objects": self.objects, "envs": self.envs, "positions": self.positions,
                "strengths": self.strengths, "no_lp": self.no_lp, "seed": self.seed,
                "resolution": self.resolution, "samples": self.samples, "shard": self.shard.label}


def select(*, cues: str = "none,all-single", objects: str | None = None, envs: str | None = None,
           positions: str = "near,far,none", strengths: str = "1,2", no_lp: bool = False, seed: int = 0,
           resolution: int = 1024, samples: int = 16, shard: str = "1/1", workers: int = 1,
           assets_dir: Path | None = None, device: str = "cpu") -> Selection:
    """Check every flag (errors name the flag) and list the run's images."""
    for flag, value in (("--resolution", resolution), ("--samples", samples), ("--workers", workers), ("--seed", seed)):
        check_flag(flag, value)
    check_device(device)
    shard_obj = Shard.parse(shard)
    cue_sets = sampling.parse_cues(cues)
    catalog = assets.catalog(Path(assets_dir) if assets_dir else None)
    object_ids = catalog.select_objects(sampling.parse_list(objects, "--objects"))
    env_ids = catalog.select_envs(sampling.parse_list(envs, "--envs"))
    position_list = sampling.parse_positions(positions)
    strength_list = sampling.parse_strengths(strengths)
    # FS pairs: the built-in ones, plus those whose members --objects selects (pybullet's, GSO's), so
    # a run's images never depend on what happens to be in the asset cache
    fs_pairs = [pair for pair in catalog.fs_pairs
                if all(catalog.objects[m].cat == "blender" or m in object_ids for m in pair)]
    specs = sampling.plan(cue_sets, objects=object_ids, envs=env_ids, fs_pairs=fs_pairs,
                          object_cats={k: a.cat for k, a in catalog.objects.items()},
                          env_cats={k: e.cat for k, e in catalog.envs.items()}, positions=position_list,
                          strengths=strength_list, no_lp=no_lp, seed=seed)
    return Selection(cues=cues, objects=object_ids, envs=env_ids, positions=position_list, strengths=strength_list,
                     no_lp=no_lp, seed=seed, resolution=resolution, samples=samples, shard=shard_obj,
                     assets_dir=str(assets_dir) if assets_dir else None, specs=specs)


def provenance_record(sel: Selection, out: Path) -> dict[str, Any]:
    """The run's provenance (generators/common/provenance.py); assets named by role, not path."""
    flags = {**sel.flags(), "assets": "ASSETS_DIR" if sel.assets_dir else None}
    return provenance.record("o3d", flags, out, renderer_version=scene.RENDERER_VERSION, blender=True)


# --------------------------------------------------------------------------------- render


def _done(work: Path, spec: sampling.ImageSpec, settings: dict) -> bool:
    files = [work / f"{spec.image_id}{s}" for s in (".png", ".depth.png", ".depth.npy", ".targ.png", ".dist.png")]
    return provenance.is_done(work / f"{spec.image_id}.json", {"render": settings, "spec": spec.to_job()}, files)


def render(sel: Selection, out: Path, *, workers: int = 1, threads: int | None = None, device: str = "cpu",
           ray_address: str | None = None, progress: bool = True) -> dict[str, Any]:
    """Render this shard's unfinished images of every selected config into ``out/_work/<config>/``."""
    settings = scene.render_settings(sel.resolution, sel.samples)
    jobs = []
    counts = {}
    for config, specs in sel.specs.items():
        work = Path(out) / WORK_DIR / config
        work.mkdir(parents=True, exist_ok=True)
        mine = sel.shard.select(specs)
        todo = [s for s in mine if not _done(work, s, settings)]
        counts[config] = {"in_shard": len(mine), "to_render": len(todo)}
        jobs += [(s.to_job(), str(work)) for s in todo]
    if threads is None:
        threads = threads_per_worker(workers) if ray_address is None else 1
    log.info("O3-D shard %s: %s", sel.shard.label, counts)
    started = time.time()
    timings: dict[str, float] = {}
    invisible = []
    for result in run_jobs(jobs, factory=scene.O3DRenderer,
                           factory_args=(sel.resolution, sel.samples, threads, device, sel.assets_dir),
                           workers=min(workers, max(1, len(jobs))), description=f"O3-D {sel.shard.label}",
                           progress=progress, ray_address=ray_address, cpus_per_worker=threads):
        for key, value in result["timings"].items():
            timings[key] = timings.get(key, 0.0) + value
        if result["invisible"]:
            invisible.append({"image_id": result["image_id"], "objects": result["invisible"]})
    run = {"images": counts, "images_rendered": len(jobs), "seconds": time.time() - started,
           "seconds_by_stage": timings, "invisible_objects": invisible, "threads_per_worker": threads,
           "backend": "ray" if ray_address else "local", "cpus": available_cpus()}
    if invisible:
        shown = ", ".join(f"{i['image_id']} ({'+'.join(i['objects'])})" for i in invisible[:3])
        log.warning("%d of %d rendered image(s) have an object out of sight (e.g. %s); all are listed under "
                    "invisible_objects in _work/o3d-<shard>.run.json", len(invisible), len(jobs), shown)
    return run


# ---------------------------------------------------------------------------------- build


def _row(work: Path, spec: sampling.ImageSpec) -> dict[str, Any]:
    record = json.loads((work / f"{spec.image_id}.json").read_text())
    name = spec.image_name

    def cell(suffix: str) -> dict:
        return {"bytes": (work / f"{spec.image_id}{suffix}").read_bytes(), "path": name}

    cues = sorted(spec.cues, key=lambda c: (c == "TG", layout.SINGLE_CUES.index(c)))  # TG last, as applied
    return {
        "image": cell(".png"), "depth_map": cell(".depth.png"), "targ_seg": cell(".targ.png"),
        "dist_seg": cell(".dist.png"), "image_name": name, "env_cat": spec.env_cat,
        "env_id": None if spec.env_cat == "basic" else spec.env_id, "obj_cat": spec.obj_cat, "obj_id": spec.obj_id,
        "odd_position": spec.position, "cues": repr(cues), "cue_strength": spec.cue_strength,
        "depth_scale": repr(record["depth_scale"]), "odd_scaler": spec.odd_scaler,
        "depth_f32": (work / f"{spec.image_id}.depth.npy").read_bytes(),
        "scene": json.dumps({"layout": record["layout"], "measured": record["measured"],
                             "target_asset": spec.target_asset, "distractor_asset": spec.distractor_asset},
                            sort_keys=True),
    }


def build(sel: Selection, out: Path, run: dict[str, Any]) -> list[Path]:
    """Write this shard's parquet files for every selected config, then questions and card."""
    written = []
    generation = provenance.generation(run)
    for config, specs in sel.specs.items():
        work = Path(out) / WORK_DIR / config
        mine = sel.shard.select(specs)
        missing = [s.image_id for s in mine if not (work / f"{s.image_id}.json").is_file()]
        if missing:
            raise FileNotFoundError(f"{len(missing)} image(s) of {config} shard {sel.shard.label} not rendered yet "
                                    f"(first: {missing[0]} in {work}); rerun the same command")
        sizes = [Shard(k, sel.shard.count).size_of(len(specs)) for k in range(1, sel.shard.count + 1)]
        files_by_shard = ds.file_layout(sizes, MAX_ROWS_PER_FILE)
        total = sum(len(f) for f in files_by_shard)
        first = sum(len(f) for f in files_by_shard[: sel.shard.index - 1])
        folder = Path(out) / config
        folder.mkdir(parents=True, exist_ok=True)
        start = 0
        for j, n in enumerate(files_by_shard[sel.shard.index - 1]):  # one file's images in memory at a time
            rows = [_row(work, s) for s in mine[start:start + n]]
            path = folder / ds.parquet_name(SPLIT, first + j, total)
            written.append(ds.write_parquet(rows, image_features(config), path,
                                            {**generation, "images_total": len(specs), "config": config}))
            start += n
        ds.remove_other_layouts(folder, SPLIT, total)
    written.append(write_questions(Path(out), sel.shard, sel.seed, generation))
    write_card(Path(out))
    return written


def question_rows(config: str, image_names: Sequence[str], seed: int) -> list[dict[str, Any]]:
    """One question per clarity level per image (marked only at 'highest'), from the prompt space."""
    rows = []
    for name in image_names:
        for level, marked in CLARITIES:
            prompt = prompts.sample_questions(name, marked, k=1, seed=seed, clarities=[level])[0]
            rows.append({"subset_name": config, "image_name": name, "is_marked": marked, "question": prompt.text,
                         "ques_clarity": prompts.CLARITY_LEVELS[level]})
    return rows


def write_questions(out: Path, shard: Shard, seed: int, generation: dict[str, Any]) -> Path:
    """``visual_questions`` of this shard: the questions of every config's rows of this shard
    (``generation``: the run's provenance record)."""
    rows = []
    for config in sampling.CONFIGS:
        for path in ds.parquet_files(out / config, SPLIT):
            generation = ds.read_generation(path) or {}
            if generation.get("flags", {}).get("shard") != shard.label:
                continue
            names = pq.read_table(path, columns=["image_name"]).column("image_name").to_pylist()
            rows += question_rows(config, names, seed)
    folder = out / QUESTIONS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ds.parquet_name(SPLIT, shard.index - 1, shard.count)
    ds.write_parquet(rows, schema.QUESTION_FEATURES, path, {**generation, "config": QUESTIONS})
    ds.remove_other_layouts(folder, SPLIT, shard.count)
    return path


def write_card(out: Path) -> Path:
    """``out/README.md`` for every config with parquet files (plus visual_questions)."""
    configs = []
    for config in sampling.CONFIGS:
        files = ds.parquet_files(out / config, SPLIT)
        if not files:
            continue
        generations = [ds.read_generation(p) for p in files]
        cue_counts: dict[str, int] = {}
        for path in files:
            for cues in pq.read_table(path, columns=["cues"]).column("cues").to_pylist():
                key = "+".join(schema.parse_cues(cues)) or "none"
                cue_counts[key] = cue_counts.get(key, 0) + 1
        configs.append({"name": config, "path": f"{config}/{SPLIT}-*.parquet", "files": len(files),
                        "rows": ds.count_rows(files), "cue_counts": sorted(cue_counts.items()),
                        "images_total": next((g["images_total"] for g in generations if g), None),
                        **provenance.summarise(generations)})
    if not configs:
        raise FileNotFoundError(f"no {SPLIT}-*.parquet files under {out}/kb-*/")
    questions = ds.parquet_files(out / QUESTIONS, SPLIT)
    extra = [{"name": c, "rows": ds.count_rows(ds.parquet_files(out / c, SPLIT))}
             for c in ("real-012cue", "real-012cue-cropped", "real-mcue") if ds.parquet_files(out / c, SPLIT)]
    total = sum(c["rows"] for c in configs)
    text = ds.render_template(
        CARD_TEMPLATE, configs=configs, split=SPLIT, license=LICENSE, total_rows=total,
        questions_rows=ds.count_rows(questions), extra_configs=extra,
        size_category=ds.size_category(total),
        scene_facts={"lens_mm": layout.LENS_MM, "sensor_mm": layout.SENSOR_MM,
                     "camera_widths": layout.CAMERA_DISTANCE_WIDTHS, "airlight": layout.HAZE_AIRLIGHT,
                     "fstop": layout.FO_FSTOP, "odd_range": layout.ODD_SCALER_RANGE,
                     "background_depth": scene.BACKGROUND_DEPTH_FACTOR},
        fs_pairs=[{"large": a, "small": b, "large_note": assets.BLENDER_OBJECTS[a].note if a in assets.BLENDER_OBJECTS else "",
                   "small_note": assets.BLENDER_OBJECTS[b].note if b in assets.BLENDER_OBJECTS else ""}
                  for a, b in assets.BUILTIN_FS_PAIRS])
    return ds.write_card(out, text)


# ------------------------------------------------------------------------------- generate


def generate(out: Path, *, cues: str = "none,all-single", objects: str | None = None, envs: str | None = None,
             positions: str = "near,far,none", strengths: str = "1,2", no_lp: bool = False, seed: int = 0,
             resolution: int = 1024, samples: int = 16, shard: str = "1/1", workers: int = 1,
             assets_dir: Path | None = None, device: str = "cpu", ray_address: str | None = None,
             overwrite: bool = False, progress: bool = True) -> Path:
    """Render and build into ``out`` (resumable; see the module docstring); returns ``out``."""
    sel = select(cues=cues, objects=objects, envs=envs, positions=positions, strengths=strengths, no_lp=no_lp,
                 seed=seed, resolution=resolution, samples=samples, shard=shard, workers=workers,
                 assets_dir=assets_dir, device=device)
    check_device(device, here=ray_address is None)
    if ray_address is None:  # a cluster's workers render: bpy is theirs to have
        need_bpy()
    with OutputFolder(Path(out), WORK_DIR) as folder:
        for config in sel.specs:
            folder.claim(config, sel.identity(config), ds.parquet_files(folder.root / config, SPLIT), overwrite)
            removed = folder.clean_scratch([folder.work / config, folder.root / config])
            if removed:
                log.info("%s: removed %d file(s) left by an interrupted run", config, removed)
        folder.claim(QUESTIONS, {"generator": GENERATOR, "seed": seed, "shards": sel.shard.count},
                     ds.parquet_files(folder.root / QUESTIONS, SPLIT), overwrite)
        run = render(sel, folder.root, workers=workers, device=device, ray_address=ray_address, progress=progress)
        run.update(provenance_record(sel, folder.root))
        atomic_write_json(folder.work / f"o3d-{sel.shard.slug}.run.json", run)
        with open(folder.work / "generate.log", "a") as handle:
            handle.write(json.dumps({k: run[k] for k in ("command", "git_commit", "images_rendered", "seconds")}) + "\n")
        build(sel, folder.root, run)
    return Path(out)
