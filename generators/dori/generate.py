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
operations, in order, restore it. It adds ``--patterns`` images that have no canonical
orientation (a plain ball, symmetric patterns: drawn, the same after every rotation and flip),
whose answer is "Cannot be determined" (the paper's Fig. 24); an image of the folder that is such a
symmetric picture is asked the same way. Transformed images are kept under a name that holds the
source image's content hash, so a replaced source is transformed again; two sources with one name
stem (cat.png, cat.jpg) are refused.

Folders are guarded like SpatialTunnel's (generators/common/folder.py): one run at a time, other
image-defining flags refused unless --overwrite, killed renders' scratch removed.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
from pathlib import Path
from typing import Any

import datasets
from PIL import Image
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common import provenance
from spatial_tasks.generators.common.blender import need_bpy
from spatial_tasks.generators.common.folder import OutputFolder
from spatial_tasks.generators.common.jobs import (
    Shard,
    atomic_write_bytes,
    atomic_write_json,
    check_flag,
    run_jobs,
    threads_per_worker,
)
from spatial_tasks.generators.dori import sampling, scene

from spatial_tasks.common.images import open_image
from spatial_tasks.dori.schema import GENERATED_FEATURES

log = logging.getLogger(__name__)

WORK_DIR = "_work"
SPLIT = "test"
GENERATOR = "spatial_tasks.generators.dori"
CARD_TEMPLATE = Path(__file__).with_name("card.md.jinja")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


def check_flags(task: str, *, count: int = 200, resolution: int = 256, samples: int = 16, seed: int = 0,
                shard: str = "1/1", workers: int = 1, images: Path | None = None,
                patterns: int | None = None, source: str = "transformed images") -> list[str]:
    """The tasks to make, after checking every flag (errors name the flag)."""
    tasks = list(sampling.RENDERED_TASKS) if task == "all" else [task]
    for name in tasks:
        if name not in sampling.TASKS:
            raise ValueError(f"--task {name!r}: choose one of {[*sampling.TASKS, 'all']}")
    for flag, value in (("--count", count), ("--resolution", resolution), ("--samples", samples),
                        ("--workers", workers), ("--seed", seed)):
        check_flag(flag, value)
    if patterns is not None:
        check_flag("--patterns", patterns)
    parsed = Shard.parse(shard)
    if any(name != "canonical_orientation" for name in tasks):  # each rendered task plans ``count`` items
        parsed.require_jobs(count, f"--count {count}")
    if not isinstance(source, str) or not source.strip() or any(c in source for c in "\r\n\t"):
        raise ValueError(f"--source {source!r}: name the source dataset of --images in one line of text (it is "
                         "every canonical_orientation question's 'source' field)")
    if "canonical_orientation" not in tasks:
        given = [flag for flag, value in (("--images", images), ("--patterns", patterns)) if value is not None]
        if given or source != "transformed images":
            raise ValueError(f"{(given or ['--source'])[0]}: only --task canonical_orientation reads it (this run "
                             f"makes {', '.join(tasks)})")
    if "canonical_orientation" in tasks:
        if images is None:
            raise ValueError("--task canonical_orientation transforms a folder of images: pass --images FOLDER")
        if not Path(images).is_dir():
            raise ValueError(f"--images {images}: not a folder")
    return tasks


def _done(work: Path, view: dict, settings: dict) -> bool:
    return provenance.is_done(work / f"{view['image_id']}.json", {"view": view, "render": settings},
                              [work / f"{view['image_id']}.png"])


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


PATTERN_SIDE = 96


def pattern_images(count: int) -> dict[str, Image.Image]:
    """``count`` drawn pictures with no canonical orientation, alternately a plain shaded ball and a
    pattern of concentric squares and rings (each the same after every rotation and flip)."""
    from PIL import ImageDraw

    out = {}
    for k in range(count):
        image = Image.new("RGB", (PATTERN_SIDE, PATTERN_SIDE), (235, 232, 225))
        draw = ImageDraw.Draw(image)
        c = PATTERN_SIDE // 2
        hue = [(200, 60, 50), (50, 120, 200), (60, 160, 80), (180, 150, 40)][k // 2 % 4]
        if k % 2 == 0:  # a ball: discs darkening towards the rim, no light direction
            for r in range(34, 0, -2):
                shade = 1.0 - 0.5 * r / 34
                draw.ellipse([c - r, c - r, c + r - 1, c + r - 1], fill=tuple(int(v * shade) for v in hue))
            out[f"pattern-ball-{k:03d}.png"] = image
        else:  # concentric squares and rings
            for r in range(44, 8, -8):
                draw.rectangle([c - r, c - r, c + r - 1, c + r - 1], outline=hue, width=3)
                draw.ellipse([c - r + 4, c - r + 4, c + r - 5, c + r - 5], outline=(40, 40, 40), width=2)
            out[f"pattern-squares-{k:03d}.png"] = image
    return out


def is_symmetric(image: Image.Image, tolerance: float = 2.0) -> bool:
    """Whether an image looks the same after every rotation and flip (mean absolute difference of at
    most ``tolerance`` grey levels): then it has no canonical orientation to find."""
    import numpy as np

    if image.width != image.height:
        return False
    base = np.asarray(image.convert("L"), dtype=np.float32)
    return all(np.abs(np.asarray(image.transpose(op).convert("L"), dtype=np.float32) - base).mean() <= tolerance
               for op in (*OPERATIONS.values(), Image.Transpose.TRANSPOSE, Image.Transpose.TRANSVERSE))


def canonical_rows(images_dir: Path, out: Path, seed: int, shard: str, source: str,
                   patterns: int | None = None) -> list[dict]:
    """Both questions of every image of ``images_dir`` and of ``patterns`` drawn symmetric pictures
    (default: one per 8 images, at least 2), transformed as sampling.co_plan says."""
    files = sorted(p for p in Path(images_dir).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(f"--images {images_dir}: no {', '.join(IMAGE_SUFFIXES)} files")
    stems: dict[str, Path] = {}
    for path in files:
        if path.stem in stems:
            raise ValueError(f"--images {images_dir}: {stems[path.stem].name} and {path.name} share the name "
                             f"{path.stem!r}, which names the question; rename one of them")
        stems[path.stem] = path
    pictures = {p.name: open_image(p.read_bytes(), str(p)).convert("RGB") for p in files}
    count = max(2, len(files) // 8) if patterns is None else patterns
    if count < 0:
        raise ValueError(f"--patterns must be >= 0, got {count}")
    drawn = pattern_images(count)
    clash = sorted(set(drawn) & set(pictures))
    if clash:
        raise ValueError(f"--images {images_dir}: {clash[0]} is the name of a drawn pattern; rename it")
    pictures.update(drawn)
    symmetric = frozenset(name for name, image in pictures.items() if is_symmetric(image))
    every, parsed = sampling.co_plan(list(pictures), seed, symmetric=symmetric), Shard.parse(shard)
    parsed.require_jobs(len(every), f"--images {images_dir} (with the drawn patterns)")
    plans = parsed.select(every)
    work = Path(out) / WORK_DIR / "canonical_orientation"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for plan in plans:
        image = pictures[plan["name"]]
        digest = hashlib.sha1(image.tobytes()).hexdigest()[:12]
        shown = work / f"co-{Path(plan['name']).stem}-{digest}.png"  # a replaced source is transformed again
        if not shown.is_file():
            buffer = io.BytesIO()
            apply_operations(image, plan["ops"]).save(buffer, format="PNG")
            atomic_write_bytes(shown, buffer.getvalue())
        qid = f"co-{Path(plan['name']).stem}"
        truth = {"applied": plan["ops"], "restore": plan["restore"], "image": plan["name"]}
        coarse_values = [True, False, None]
        granular = plan["granular"]
        category = None if plan["name"] not in drawn else ("ball" if "-ball-" in plan["name"] else "pattern")
        for granularity, options, values, answer in (
                ("coarse", sampling.CO_COARSE, coarse_values, plan["coarse_answer"]),
                ("granular", [sampling.co_option(g) for g in granular], granular, granular.index(plan["restore"]))):
            question = {"question_id": f"{qid}-{granularity}", "task": "canonical_orientation",
                        "granularity": granularity, "boxes": [], "question": "", "options": options,
                        "answer": options[answer], "option_values": values,
                        "truth": {**truth, "value": values[answer]}, "source": source,
                        "category": category}
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
            configs.append({"name": task, "path": f"{task}/{SPLIT}-*.parquet", "rows": ds.count_rows(files),
                            "files": len(files), **provenance.summarise(ds.read_generation(f) for f in files)})
    if not configs:
        raise FileNotFoundError(f"no {SPLIT}-*.parquet files under {out}/<task>/")
    text = ds.render_template(CARD_TEMPLATE, configs=configs, split=SPLIT,
                              total=sum(c["rows"] for c in configs), camera=scene.CAMERA_LOCATION,
                              lens=scene.LENS_MM, kinds=", ".join(scene.KINDS))
    return ds.write_card(Path(out), text)


def generate(task: str, out: Path, *, count: int = 200, resolution: int = 256, samples: int = 16, seed: int = 0,
             shard: str = "1/1", workers: int = 1, images: Path | None = None, source: str = "transformed images",
             patterns: int | None = None,
             overwrite: bool = False, progress: bool = True, ray_address: str | None = None,
             device: str = "cpu") -> Path:
    """Make ``task`` ("all" = the four rendered tasks) in ``out``; resumable (see the module docstring).
    ``ray_address``: render on Ray (jobs.run_jobs); ``device``: Cycles' device."""
    tasks = check_flags(task, count=count, resolution=resolution, samples=samples, seed=seed, shard=shard,
                        workers=workers, images=images, patterns=patterns, source=source)
    if ray_address is None and any(name != "canonical_orientation" for name in tasks):
        need_bpy()  # before anything is made: bpy there (a cluster's workers render: theirs), and which Blender
    with OutputFolder(Path(out), WORK_DIR) as folder:
        for name in tasks:
            identity = {"generator": GENERATOR, "task": name, "seed": seed, "shards": Shard.parse(shard).count}
            if name == "canonical_orientation":
                identity.update(images=str(Path(images).resolve()), source=source, patterns=patterns)
            else:
                identity.update(count=count, resolution=resolution, samples=samples,
                                renderer_version=scene.RENDERER_VERSION)
            folder.claim(name, identity, ds.parquet_files(folder.root / name, SPLIT), overwrite)
            folder.clean_scratch([folder.work / name, folder.root / name])
            started = time.time()
            flags: dict[str, Any] = {"task": name, "seed": seed, "shard": Shard.parse(shard).label}
            if name == "canonical_orientation":
                rows = canonical_rows(Path(images), folder.root, seed, shard, source, patterns)
                flags.update(images=Path(images).name, source=source, patterns=patterns)
            else:
                items = render_task(name, folder.root, count=count, resolution=resolution, samples=samples, seed=seed,
                                    shard=shard, workers=workers, progress=progress, ray_address=ray_address,
                                    device=device)
                rows = _rows_rendered(name, folder.root, items)
                flags.update(count=count, resolution=resolution, samples=samples)
            rendered = name != "canonical_orientation"  # the rest are PIL transforms
            # no timings or worker counts: the same bytes whichever machine or backend made them
            generation = provenance.record("dori", flags, Path(out), blender=rendered,
                                           renderer_version=scene.RENDERER_VERSION if rendered else None)
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
    generation = provenance.record("dori", {"task": "sample", "resolution": resolution, "samples": samples, "seed": seed},
                                   Path(target).parent, renderer_version=scene.RENDERER_VERSION, blender=True)
    generation["command"] = (f"python -c \"from spatial_tasks.generators.dori.generate import write_sample; "
                             f"write_sample(TARGET, WORK, resolution={resolution}, samples={samples}, seed={seed})\"")
    return ds.write_parquet(rows, GENERATED_FEATURES, Path(target), generation)
