"""Generate SpatialTunnel datasets: render images (Blender), then build parquet shards + card.

    spatial-tasks generate spatialtunnel --variant phase|size|all|probing --out DIR \\
        [--grid 16] [--per-cell 12 (phase) / 100 (size) / 200 (probing)] [--resolution 512] [--samples 16] \\
        [--seed 0] [--shard K/N] [--workers W] [--overwrite]

    python -m spatial_tasks.generators.spatialtunnel.generate ...   # same flags, plus --step

Two separate steps per variant (``generate`` runs both):

1. **render** (``render_variant``): the images of this shard that are not finished yet are
   rendered by W long-lived Blender workers into ``DIR/_work/<config>/`` as ``<image_id>.png``
   and ``<image_id>.json`` (the row without the image). Both are written atomically, the JSON
   last, so an interrupted run resumes where it stopped; finished images whose JSON records other
   render settings (resolution, samples, renderer version) or other sampled values are redone.
   Each run also writes ``DIR/_work/<config>/<shard>.run.json`` (flags, seed, Blender version,
   git commit, timings) and appends to ``DIR/_work/generate.log``.
2. **build** (``build_variant``): the shard's rows, in plan order, go into
   ``DIR/<config>/test-XXXXX-of-YYYYY.parquet`` (at most MAX_ROWS_PER_FILE rows per file;
   numbered over all shards, so the folders of N machines merge by copying), then
   ``DIR/README.md`` is rendered from ``card.md.jinja`` for every config present.

``--shard K/N`` renders and writes the images at positions i (in sampling.plan order) with
i % N == K - 1. The same flags and seed give the same rows on any machine.

Nothing finished is lost (generators/common/folder.py): one run per folder at a time (a lock),
a folder keeps the flags it was made with (another --seed, --grid, --resolution, --samples or
shard count is refused unless --overwrite), and what killed renders left is removed first.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common import provenance
from spatial_tasks.generators.common.blender import need_bpy
from spatial_tasks.generators.common.folder import FolderBusyError, OutputFolder
from spatial_tasks.generators.common.jobs import (
    Shard,
    atomic_write_json,
    available_cpus,
    check_flag,
    run_jobs,
    threads_per_worker,
)
from spatial_tasks.generators.spatialtunnel import sampling, scene

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.schema import CONFIG_FOR_VARIANT, FEATURES_FOR_VARIANT, SPLIT

log = logging.getLogger(__name__)

WORK_DIR = "_work"
MAX_ROWS_PER_FILE = 500  # ~100-200 MB per parquet file at 512 px
CARD_TEMPLATE = Path(__file__).with_name("card.md.jinja")
LICENSE = "cc-by-4.0"
GENERATOR = "spatial_tasks.generators.spatialtunnel"


# ---------------------------------------------------------------------------------- flags


def check_flags(variant: str, *, grid: int = 16, per_cell: int | None = None, resolution: int = 512,
                samples: int = 16, seed: int = 0, shard: str = "1/1", workers: int = 1) -> tuple[list[str], Shard]:
    """Validate the flags before anything runs; errors name the flag. Returns (variants, shard)."""
    if variant == "all":
        variants = list(sampling.BENCHMARK_VARIANTS)
    else:
        sampling.check_variant(variant)
        variants = [variant]
    for flag, value in (("--grid", grid), ("--resolution", resolution), ("--samples", samples),
                        ("--workers", workers), ("--seed", seed)):
        check_flag(flag, value)
    if per_cell is not None:
        check_flag("--per-cell", per_cell)
    shard_obj = Shard.parse(shard)
    for name in variants:  # a shard with no image would write a table with no rows
        cells = sampling.DEFAULT_PER_CELL[name] if per_cell is None else per_cell
        shard_obj.require_jobs(len(sampling.plan(name, grid=grid, per_cell=cells, seed=seed)),
                               f"--variant {name} --grid {grid} --per-cell {cells}")
    return variants, shard_obj


def image_flags(variant: str, grid: int, per_cell: int, resolution: int, samples: int, seed: int,
                shard: Shard) -> dict[str, Any]:
    """The flags that define a run's images (its provenance record and ``--out``'s identity)."""
    return {"variant": variant, "grid": grid, "per_cell": per_cell, "resolution": resolution, "samples": samples,
            "seed": seed, "shard": shard.label}


# --------------------------------------------------------------------------------- render


def _done(json_path: Path, png_path: Path, spec: sampling.ImageSpec, resolution: int, samples: int,
          renderer_version: int) -> bool:
    """Finished with these settings: PNG and JSON present, JSON matching the planned image."""
    return provenance.is_done(json_path, {"render": {"resolution": resolution, "samples": samples,
                                                     "renderer_version": renderer_version},
                                          "row": spec.metadata()}, [png_path])


def render_variant(variant: str, out: Path, *, grid: int = 16, per_cell: int | None = None,
                   resolution: int = 512, samples: int = 16, seed: int = 0, shard: str = "1/1",
                   workers: int = 1, threads: int | None = None, progress: bool = True,
                   ray_address: str | None = None, device: str = "cpu") -> dict[str, Any]:
    """Render this shard's unfinished images of ``variant`` into ``out/_work/<config>/``.

    ``threads`` (Cycles threads per worker) defaults to the machine's cores split evenly over
    the workers (one per Ray actor). ``ray_address``: render on Ray (jobs.run_jobs). Returns the
    run record also written to ``<shard>.run.json``.
    """
    _, shard_obj = check_flags(variant, grid=grid, per_cell=per_cell, resolution=resolution, samples=samples,
                               seed=seed, shard=shard, workers=workers)
    per_cell = sampling.DEFAULT_PER_CELL[variant] if per_cell is None else per_cell
    planned = sampling.plan(variant, grid=grid, per_cell=per_cell, seed=seed)
    config = CONFIG_FOR_VARIANT[variant]
    work = Path(out) / WORK_DIR / config
    work.mkdir(parents=True, exist_ok=True)
    specs = shard_obj.select(planned)
    todo = [s for s in specs if not _done(work / f"{s.image_id}.json", work / f"{s.image_id}.png", s,
                                          resolution, samples, scene.RENDERER_VERSION)]
    if threads is None:
        threads = threads_per_worker(workers) if ray_address is None else 1
    if threads < 1:
        raise ValueError(f"threads per worker must be >= 1, got {threads}")
    log.info("%s shard %s: %d images, %d finished, %d to render (%d worker(s) x %d thread(s))",
             config, shard_obj.label, len(specs), len(specs) - len(todo), len(todo), workers, threads)
    started = time.time()
    timings: dict[str, float] = {}
    problems = []
    jobs = [(s, str(work)) for s in todo]
    for result in run_jobs(jobs, factory=scene.TunnelRenderer, factory_args=(resolution, samples, threads, False, device),
                           workers=min(workers, max(1, len(jobs))), description=f"{config} {shard_obj.label}",
                           progress=progress, ray_address=ray_address, cpus_per_worker=threads):
        for key, value in result["timings"].items():
            timings[key] = timings.get(key, 0.0) + value
        qa = result["qa"]
        if not (qa["center1_on_object"] and qa["center2_on_object"] and qa["visible_px1"] and qa["visible_px2"]):
            problems.append({"image_id": result["image_id"], **qa})

    run = {
        **provenance.record("spatialtunnel", image_flags(variant, grid, per_cell, resolution, samples, seed, shard_obj),
                            Path(out), renderer_version=scene.RENDERER_VERSION, blender=True),
        "speed": {"workers": workers, "threads_per_worker": threads, "backend": "ray" if ray_address else "local",
                  "device": device},
        "cpus": available_cpus(),
        "images_in_shard": len(specs),
        "images_rendered": len(todo),
        "started_unix": started,
        "seconds": time.time() - started,
        "seconds_by_stage": timings,
        "qa_problems": problems,
    }
    atomic_write_json(work / f"{shard_obj.slug}.run.json", run)
    with open(Path(out) / WORK_DIR / "generate.log", "a") as handle:
        handle.write(json.dumps({k: run[k] for k in ("command", "git_commit", "blender_version",
                                                      "images_rendered", "seconds")}) + "\n")
    if problems:
        log.warning("%d image(s) with an object not visible at its recorded centre: %s", len(problems),
                    [p["image_id"] for p in problems[:5]])
    return run


# ---------------------------------------------------------------------------------- build


def build_variant(variant: str, out: Path, *, grid: int = 16, per_cell: int | None = None,
                  seed: int = 0, shard: str = "1/1") -> list[Path]:
    """Write this shard's parquet files from the finished work files, then refresh the card."""
    _, shard_obj = check_flags(variant, grid=grid, per_cell=per_cell, seed=seed, shard=shard)
    per_cell = sampling.DEFAULT_PER_CELL[variant] if per_cell is None else per_cell
    config = CONFIG_FOR_VARIANT[variant]
    work = Path(out) / WORK_DIR / config
    full = sampling.plan(variant, grid=grid, per_cell=per_cell, seed=seed)
    specs = shard_obj.select(full)
    run_path = work / f"{shard_obj.slug}.run.json"
    if not run_path.is_file():
        raise FileNotFoundError(f"{run_path} is missing: run the render step for {config} shard {shard_obj.label} first")
    run = json.loads(run_path.read_text())
    missing = [s.image_id for s in specs
               if not ((work / f"{s.image_id}.json").is_file() and (work / f"{s.image_id}.png").is_file())]
    if missing:
        raise FileNotFoundError(f"{len(missing)} image(s) of {config} shard {shard_obj.label} not rendered yet "
                                f"(first: {missing[0]} in {work}); rerun the render step")

    layout = ds.file_layout([Shard(k, shard_obj.count).size_of(len(full)) for k in range(1, shard_obj.count + 1)],
                            MAX_ROWS_PER_FILE)
    total_files = sum(len(files) for files in layout)
    first = sum(len(files) for files in layout[: shard_obj.index - 1])
    # the provenance only (no timings or worker counts): the same bytes whichever machine made them
    generation = provenance.generation(run)
    generation["images_total"] = len(full)
    config_dir = Path(out) / config
    config_dir.mkdir(parents=True, exist_ok=True)
    written, start = [], 0
    for j, n in enumerate(layout[shard_obj.index - 1]):  # one file's images in memory at a time
        rows = [_row(work, spec) for spec in specs[start:start + n]]
        path = config_dir / ds.parquet_name(SPLIT, first + j, total_files)
        written.append(ds.write_parquet(rows, FEATURES_FOR_VARIANT[variant], path, generation))
        start += n
    ds.remove_other_layouts(config_dir, SPLIT, total_files)
    write_card(Path(out))
    log.info("%s: wrote %d rows to %s", config, len(specs), ", ".join(p.name for p in written))
    return written


def _row(work: Path, spec: sampling.ImageSpec) -> dict[str, Any]:
    record = json.loads((work / f"{spec.image_id}.json").read_text())
    row = {name: record["row"][name] for name in FEATURES_FOR_VARIANT[spec.variant] if name != "image"}
    row["image"] = {"bytes": (work / f"{spec.image_id}.png").read_bytes(), "path": f"{spec.image_id}.png"}
    return row


def write_card(out: Path) -> Path:
    """Render ``out/README.md`` for every config with parquet files under ``out``."""
    configs = []
    for variant in sampling.VARIANTS:
        config = CONFIG_FOR_VARIANT[variant]
        files = ds.parquet_files(Path(out) / config, SPLIT)
        if not files:
            continue
        generations = [ds.read_generation(p) for p in files]
        configs.append({"name": config, "variant": variant, "path": f"{config}/{SPLIT}-*.parquet",
                        "files": len(files), "rows": ds.count_rows(files),
                        "images_total": next(g for g in generations if g)["images_total"],
                        **provenance.summarise(generations)})
    if not configs:
        raise FileNotFoundError(f"no {SPLIT}-*.parquet files under {out}/<config>/")
    total = sum(c["rows"] for c in configs)
    scene_facts = {
        "tunnel_start": geometry.TUNNEL_START, "tunnel_end": geometry.TUNNEL_END,
        "depth_far": geometry.DEPTH_FAR, "depth_near": geometry.DEPTH_NEAR,
        "lens_mm": geometry.FOCAL_LENGTH_MM, "sensor_mm": geometry.SENSOR_WIDTH_MM,
        "wall_albedo": scene.WALL_COLOR[0], "wall_roughness": scene.WALL_ROUGHNESS,
        "sky_strength": scene.SKY_STRENGTH, "sun_intensity": scene.SUN_INTENSITY,
        "sun_elevation": scene.SUN_ELEVATION, "max_bounces": scene.MAX_BOUNCES,
        "diffuse_bounces": scene.DIFFUSE_BOUNCES, "exposure": f"{scene.EXPOSURE:+g}",
        "view_transform": scene.VIEW_TRANSFORM,
    }
    text = ds.render_template(CARD_TEMPLATE, configs=configs, license=LICENSE, split=SPLIT, total_rows=total,
                              size_category=ds.size_category(total), scene=scene_facts)
    return ds.write_card(Path(out), text)


# ------------------------------------------------------------------------------- generate


def claim_variant(folder: OutputFolder, variant: str, *, grid: int, per_cell: int | None, resolution: int,
                  samples: int, seed: int, shard: str, overwrite: bool) -> None:
    """Check that ``folder`` may hold this variant with these flags (generators/common/folder.py)
    and remove what killed renders left there."""
    config = CONFIG_FOR_VARIANT[variant]
    identity = {"generator": GENERATOR, "variant": variant, "grid": grid,
                "per_cell": sampling.DEFAULT_PER_CELL[variant] if per_cell is None else per_cell,
                "resolution": resolution, "samples": samples, "seed": seed, "shards": Shard.parse(shard).count,
                "renderer_version": scene.RENDERER_VERSION}
    folder.claim(config, identity, ds.parquet_files(folder.root / config, SPLIT), overwrite)
    removed = folder.clean_scratch([folder.work / config, folder.root / config])
    if removed:
        log.info("%s: removed %d file(s) left by an interrupted run", config, removed)


def generate(variant: str, out: Path, grid: int = 16, per_cell: int | None = None, resolution: int = 512,
             samples: int = 16, seed: int = 0, shard: str = "1/1", workers: int = 1,
             overwrite: bool = False, steps: Sequence[str] = ("render", "build"), ray_address: str | None = None,
             device: str = "cpu") -> Path:
    """Render and build ``variant`` ("phase", "size" or "all") into ``out``; returns ``out``.

    Resumable: rerunning the same command skips finished images. One run per folder at a time;
    other image-defining flags on a finished folder need ``overwrite``. See the module docstring.
    """
    variants, _ = check_flags(variant, grid=grid, per_cell=per_cell, resolution=resolution, samples=samples,
                              seed=seed, shard=shard, workers=workers)
    if "render" in steps and ray_address is None:  # a cluster's workers render: bpy is theirs to have
        need_bpy()
    with OutputFolder(Path(out), WORK_DIR) as folder:
        for name in variants:
            claim_variant(folder, name, grid=grid, per_cell=per_cell, resolution=resolution, samples=samples,
                          seed=seed, shard=shard, overwrite=overwrite)
            if "render" in steps:
                render_variant(name, folder.root, grid=grid, per_cell=per_cell, resolution=resolution,
                               samples=samples, seed=seed, shard=shard, workers=workers, ray_address=ray_address,
                               device=device)
            if "build" in steps:
                build_variant(name, folder.root, grid=grid, per_cell=per_cell, seed=seed, shard=shard)
    return Path(out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m spatial_tasks.generators.spatialtunnel.generate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", required=True, choices=[*sampling.VARIANTS, "all"],
                        help="phase: the 16 x 16 theta grid; size: the s1 sweep; all: both; "
                             "probing: contrastive-probing pairs (--per-cell per answer)")
    parser.add_argument("--out", required=True, type=Path, help="dataset folder (created)")
    parser.add_argument("--grid", type=int, default=16, help="angular positions per object (>= 2)")
    parser.add_argument("--per-cell", type=int, default=None,
                        help="images per (theta1, theta2) cell (phase, default 12), per s1 value (size, default 100) "
                             "or per answer (probing, default 200)")
    parser.add_argument("--resolution", type=int, default=512, help="image width = height in pixels (>= 16)")
    parser.add_argument("--samples", type=int, default=16, help="Cycles samples per pixel")
    parser.add_argument("--seed", type=int, default=0, help="run seed; per-image seeds derive from it")
    parser.add_argument("--shard", default="1/1", help="K/N: render images i with i %% N == K-1")
    parser.add_argument("--workers", type=int, default=1, help="Blender worker processes (Ray: actors)")
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                        help="render on a Ray cluster (no ADDRESS: start a local one)")
    parser.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda", "optix", "hip", "metal", "oneapi"],
                        help="Cycles device")
    parser.add_argument("--step", choices=["all", "render", "build"], default="all",
                        help="run only the render or only the dataset-building step")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a dataset made with other image-defining flags in --out")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        check_flags(args.variant, grid=args.grid, per_cell=args.per_cell, resolution=args.resolution,
                    samples=args.samples, seed=args.seed, shard=args.shard, workers=args.workers)
    except ValueError as err:
        parser.error(str(err))
    steps = ("render", "build") if args.step == "all" else (args.step,)
    try:
        generate(args.variant, args.out, grid=args.grid, per_cell=args.per_cell, resolution=args.resolution,
                 samples=args.samples, seed=args.seed, shard=args.shard, workers=args.workers,
                 overwrite=args.overwrite, steps=steps, ray_address=args.ray, device=args.device)
    except (FolderBusyError, FileExistsError, ValueError) as err:
        parser.exit(2, f"error: {err}\n")


if __name__ == "__main__":
    main()
