"""Generate DORI datasets in our layout (schema.GENERATED_FEATURES): one config per task.

    spatial-tasks generate dori --task single_axis_rotation|compound_rotation|inter_object_direction|
        viewer_scene_direction|all --out DIR [--count 200] [--resolution 256] [--samples 16] [--seed 0]
        [--shard K/N] [--workers W] [--overwrite]
    spatial-tasks generate dori --task canonical_orientation --images FOLDER --out DIR [--seed 0]

Rendered tasks (scene.py, sampling.py): each item's views are rendered by long-lived Blender
workers into ``DIR/_work/<task>/<image_id>.png`` + ``.json`` (the view and what the render
measured: boxes, front-marker pixels, world matrices), both atomic, JSON last; a rerun skips
finished images whose JSON matches the planned view and render settings. Then
``DIR/<task>/test-KKKKK-of-NNNNN.parquet`` (one file per shard) gets both granularities of every
item, and ``DIR/README.md`` is rendered for every config present.

canonical_orientation transforms every image of a folder (PIL: rotations and flips, in order;
a quarter of the images are left as they are) and asks whether it is canonical and which
operations, in order, restore it.

Folders are guarded like SpatialTunnel's (generators/common/folder.py): one run at a time, other
image-defining flags refused unless --overwrite, killed renders' scratch removed.
"""

from __future__ import annotations

import io
import json
import logging
import shlex
import time
from pathlib import Path
from typing import Any

import datasets
from PIL import Image

from spatial_tasks.common.images import open_image
from spatial_tasks.dori.schema import GENERATED_FEATURES
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.folder import OutputFolder
from spatial_tasks.generators.common.jobs import (
    Shard,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    git_commit,
    run_jobs,
    threads_per_worker,
)
from spatial_tasks.generators.dori import sampling, scene

log = logging.getLogger(__name__)

WORK_DIR = "_work"
SPLIT = "test"
GENERATOR = "spatial_tasks.generators.dori"
CARD_TEMPLATE = Path(__file__).with_name("card.md.jinja")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


def check_flags(task: str, *, count: int = 200, resolution: int = 256, samples: int = 16, seed: int = 0,
                shard: str = "1/1", workers: int = 1, images: Path | None = None) -> list[str]:
    """The tasks to make, after checking every flag (errors name the flag)."""
    tasks = list(sampling.RENDERED_TASKS) if task == "all" else [task]
    for name in tasks:
        if name not in sampling.TASKS:
            raise ValueError(f"--task {name!r}: choose one of {[*sampling.TASKS, 'all']}")
    for flag, value, low in (("--count", count, 1), ("--resolution", resolution, 16), ("--samples", samples, 1),
                             ("--workers", workers, 1), ("--seed", seed, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{flag} must be an integer >= {low}, got {value!r}")
    Shard.parse(shard)
    if "canonical_orientation" in tasks:
        if images is None:
            raise ValueError("--task canonical_orientation transforms a folder of images: pass --images FOLDER")
        if not Path(images).is_dir():
            raise ValueError(f"--images {images}: not a folder")
    return tasks


def _done(work: Path, view: dict, settings: dict) -> bool:
    try:
        record = json.loads((work / f"{view['image_id']}.json").read_text())
    except (OSError, ValueError):
        return False
    return (work / f"{view['image_id']}.png").is_file() and record.get("view") == view and \
        record.get("render") == settings


class _Worker:
    """Renders a view and writes its JSON record (in the worker process)."""

    def __init__(self, resolution: int, samples: int, threads: int, settings: dict, device: str = "cpu") -> None:
        self.renderer = scene.DoriRenderer(resolution, samples, threads, device)
        self.settings = settings

    def __call__(self, job: tuple[dict, str]) -> dict:
        view, work = job
        result = self.renderer(job)
        atomic_write_json(Path(work) / f"{view['image_id']}.json",
                          {"view": view, "render": self.settings, "facts": result["facts"]})
        return result


def render_task(task: str, out: Path, *, count: int, resolution: int, samples: int, seed: int, shard: str,
                workers: int, progress: bool = True, ray_address: str | None = None,
                device: str = "cpu") -> list[sampling.Item]:
    shard_obj = Shard.parse(shard)
    items = shard_obj.select(sampling.plan(task, count, seed))
    work = Path(out) / WORK_DIR / task
    work.mkdir(parents=True, exist_ok=True)
    settings = {"resolution": resolution, "samples": samples, "renderer_version": scene.RENDERER_VERSION}
    views = [json.loads(json.dumps(v)) for item in items for v in item.views]
    todo = [v for v in views if not _done(work, v, settings)]
    log.info("%s shard %s: %d images, %d to render", task, shard_obj.label, len(views), len(todo))
    threads = threads_per_worker(workers) if ray_address is None else 1
    for _ in run_jobs([(v, str(work)) for v in todo], factory=_Worker,
                      factory_args=(resolution, samples, threads, settings, device),
                      workers=min(workers, max(1, len(todo))), description=f"DORI {task}", progress=progress,
                      ray_address=ray_address, cpus_per_worker=threads):
        pass
    return items


def _rows_rendered(task: str, out: Path, items: list[sampling.Item]) -> list[dict]:
    work = Path(out) / WORK_DIR / task
    rows = []
    for item in items:
        facts, pngs = [], []
        for view in item.views:
            record = json.loads((work / f"{view['image_id']}.json").read_text())
            facts.append(record["facts"])
            pngs.append(work / f"{view['image_id']}.png")
        for question in item.questions(facts):
            rows.append(_row(question, pngs[0], pngs[1] if len(pngs) > 1 else None))
    return rows


def _row(question: dict, first: Path, second: Path | None) -> dict:
    return {**question, "option_values": json.dumps(question["option_values"]),
            "truth": json.dumps(question["truth"]),
            "image": {"bytes": first.read_bytes(), "path": first.name},
            "image2": None if second is None else {"bytes": second.read_bytes(), "path": second.name}}


# ------------------------------------------------------------------------ canonical


OPERATIONS = {"rotate 90": Image.Transpose.ROTATE_270,  # PIL's ROTATE_270 turns 90 degrees clockwise
              "rotate 180": Image.Transpose.ROTATE_180, "rotate 270": Image.Transpose.ROTATE_90,
              "flip horizontal": Image.Transpose.FLIP_LEFT_RIGHT, "flip vertical": Image.Transpose.FLIP_TOP_BOTTOM}


def apply_operations(image: Image.Image, ops: list[str]) -> Image.Image:
    """``ops`` in order ("rotate 90" is 90 degrees clockwise as seen on the screen)."""
    for op in ops:
        image = image.transpose(OPERATIONS[op])
    return image


def canonical_rows(images_dir: Path, out: Path, seed: int, shard: str, source: str) -> list[dict]:
    files = sorted(p for p in Path(images_dir).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(f"--images {images_dir}: no {', '.join(IMAGE_SUFFIXES)} files")
    by_name = {p.name: p for p in files}
    plans = Shard.parse(shard).select(sampling.co_plan(list(by_name), seed))
    work = Path(out) / WORK_DIR / "canonical_orientation"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, plan in enumerate(plans):
        path = by_name[plan["name"]]
        image = open_image(path.read_bytes(), str(path)).convert("RGB")
        shown = work / f"co-{Path(plan['name']).stem}.png"
        if not shown.is_file():
            buffer = io.BytesIO()
            apply_operations(image, plan["ops"]).save(buffer, format="PNG")
            atomic_write_bytes(shown, buffer.getvalue())
        qid = f"co-{Path(plan['name']).stem}"
        truth = {"applied": plan["ops"], "restore": plan["restore"], "image": plan["name"]}
        coarse_values = [True, False, None]
        granular = plan["granular"]
        for granularity, options, values, answer in (
                ("coarse", sampling.CO_COARSE, coarse_values, plan["coarse_answer"]),
                ("granular", [sampling.co_option(g) for g in granular], granular, granular.index(plan["restore"]))):
            question = {"question_id": f"{qid}-{granularity}", "task": "canonical_orientation",
                        "granularity": granularity, "boxes": [], "question": "", "options": options,
                        "answer": options[answer], "option_values": values,
                        "truth": {**truth, "value": values[answer]}, "source": source,
                        "category": None}
            rows.append(_row(question, shown, None))
    return rows


# --------------------------------------------------------------------------- build


def write_config(task: str, out: Path, rows: list[dict], shard: str, generation: dict) -> Path:
    shard_obj = Shard.parse(shard)
    folder = Path(out) / task
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ds.parquet_name(SPLIT, shard_obj.index - 1, shard_obj.count)
    ds.write_parquet(rows, GENERATED_FEATURES, path, generation)
    ds.remove_other_layouts(folder, SPLIT, shard_obj.count)
    return path


def write_card(out: Path) -> Path:
    configs = []
    for task in sampling.TASKS:
        files = ds.parquet_files(Path(out) / task, SPLIT)
        if files:
            generation = ds.read_generation(files[0]) or {}
            configs.append({"name": task, "path": f"{task}/{SPLIT}-*.parquet", "rows": ds.count_rows(files),
                            "files": len(files), "command": generation.get("command", "?"),
                            "blender_version": generation.get("blender_version", "none (PIL transforms)")})
    if not configs:
        raise FileNotFoundError(f"no {SPLIT}-*.parquet files under {out}/<task>/")
    text = ds.render_template(CARD_TEMPLATE, configs=configs, split=SPLIT,
                              total=sum(c["rows"] for c in configs), camera=scene.CAMERA_LOCATION,
                              lens=scene.LENS_MM, kinds=", ".join(scene.KINDS))
    atomic_write_text(Path(out) / "README.md", text)
    return Path(out) / "README.md"


def generate(task: str, out: Path, *, count: int = 200, resolution: int = 256, samples: int = 16, seed: int = 0,
             shard: str = "1/1", workers: int = 1, images: Path | None = None, source: str = "transformed images",
             overwrite: bool = False, progress: bool = True, ray_address: str | None = None,
             device: str = "cpu") -> Path:
    """Make ``task`` ("all" = the four rendered tasks) in ``out``; resumable (see the module docstring).
    ``ray_address``: render on Ray (jobs.run_jobs); ``device``: Cycles' device."""
    tasks = check_flags(task, count=count, resolution=resolution, samples=samples, seed=seed, shard=shard,
                        workers=workers, images=images)
    with OutputFolder(Path(out), WORK_DIR) as folder:
        for name in tasks:
            identity = {"generator": GENERATOR, "task": name, "seed": seed, "shards": Shard.parse(shard).count}
            if name == "canonical_orientation":
                identity.update(images=str(Path(images).resolve()), source=source)
            else:
                identity.update(count=count, resolution=resolution, samples=samples,
                                renderer_version=scene.RENDERER_VERSION)
            folder.claim(name, identity, ds.parquet_files(folder.root / name, SPLIT), overwrite)
            folder.clean_scratch([folder.work / name, folder.root / name])
            started = time.time()
            command = ["spatial-tasks", "generate", "dori", "--task", name, "--out", Path(out).name, "--seed", str(seed),
                       "--shard", Shard.parse(shard).label]
            if name == "canonical_orientation":
                rows = canonical_rows(Path(images), folder.root, seed, shard, source)
                command += ["--images", Path(images).name]
                blender = None
            else:
                items = render_task(name, folder.root, count=count, resolution=resolution, samples=samples, seed=seed,
                                    shard=shard, workers=workers, progress=progress, ray_address=ray_address,
                                    device=device)
                rows = _rows_rendered(name, folder.root, items)
                command += ["--count", str(count), "--resolution", str(resolution), "--samples", str(samples)]
                from spatial_tasks.generators.common.blender import version_string

                blender = version_string()
            # no timings or worker counts: the same bytes whichever machine or backend made them
            generation = {"generator": GENERATOR, "command": shlex.join(command), "seed": seed,
                          "blender_version": blender, "git_commit": git_commit()}
            path = write_config(name, folder.root, rows, shard, generation)
            log.info("%s: %d questions -> %s in %.1f s", name, len(rows), path, time.time() - started)
        write_card(folder.root)
    return Path(out)


def summary(out: Path) -> dict[str, Any]:
    """Questions per config of a generated folder (for the CLI's last line)."""
    return {task: ds.count_rows(ds.parquet_files(Path(out) / task, SPLIT)) for task in sampling.TASKS
            if ds.parquet_files(Path(out) / task, SPLIT)}


SAMPLE_COUNTS = {"single_axis_rotation": 6, "compound_rotation": 4, "inter_object_direction": 8,
                 "viewer_scene_direction": 4}


def write_sample(target: Path, work: Path, *, resolution: int = 96, samples: int = 8, seed: int = 0) -> Path:
    """The bundled sample (tasks/dori/sample): a few items of every task our generators make, in
    ONE parquet file; canonical_orientation transforms the sample's own viewer-scene renders."""
    rows = []
    for task, count in SAMPLE_COUNTS.items():
        generate(task, work, count=count, resolution=resolution, samples=samples, seed=seed, progress=False)
    generate("canonical_orientation", work, images=Path(work) / WORK_DIR / "viewer_scene_direction", seed=seed,
             source="spatial-tasks-render", progress=False)
    for task in sampling.TASKS:
        for path in ds.parquet_files(Path(work) / task, SPLIT):
            rows += list(datasets.Dataset.from_parquet(str(path), features=GENERATED_FEATURES))
    generation = {"generator": GENERATOR, "command": f"write_sample(resolution={resolution}, samples={samples}, "
                                                     f"seed={seed})", "seed": seed, "git_commit": git_commit()}
    return ds.write_parquet(rows, GENERATED_FEATURES, Path(target), generation)
