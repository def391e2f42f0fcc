"""Render benchmarks: where the time per image goes, and how workers and Ray nodes scale.

    .venv/bin/python benchmarks/render.py            # SpatialTunnel, ~2-4 min on 2 cores
    .venv/bin/python benchmarks/render.py --quick    # fewer images, ~1-2 min
    .venv/bin/python benchmarks/render.py --part throughput   # or: --part split
    .venv/bin/python benchmarks/render.py --suite o3d [--quick]   # O3-D, ~3-5 min on 2 cores

O3-D (``--suite o3d``): seconds per image at 256 x 256 and 512 x 512 (16 samples) over a mix of
cues (none, HP, OC, LS, TG, FO, SA, FS), split into the render itself and the rest the generator
does per image (scene update, EXR write, PNG and passes, haze / masks / depth maps, files) plus
the dataset step (parquet) per image -- the share outside the render (target < 10 %); then
throughput of one vs two Ray nodes (ray.cluster_utils on this machine, one CPU per node, one
actor each, 128 px): images/s once every actor has finished its first image (target >= 1.8x on
a quiet machine with at least 2 free cores).

SpatialTunnel (the default suite):

1. Seconds per image at 128 x 128 and 512 x 512 (16 samples, the generator's default), split
   into the render itself (``bpy.ops.render.render`` up to Cycles' render_post: path tracing and
   denoising) and everything else the generator does per image (scene update, camera
   projection, multilayer-EXR write, PNG encoding, object-index pass extraction, writing
   PNG + JSON). One long-lived worker with every core, after one warm-up image.
   The dataset-building step (PNG bytes -> parquet) runs once after rendering; its cost per
   image is printed on its own line.
2. Throughput (images/s) of the real worker pool (``run_jobs`` + ``TunnelRenderer``, spawn
   processes) with 1 and 2 workers at one Cycles thread each (how the pool scales), and with
   the generator's default threads (cores split over workers: 1 x all cores vs 2 x half).
   "wall" counts from launching the pool (worker start-up and scene build included);
   "steady" counts from the moment every worker has finished its first image.

Timings on a shared machine vary with its load; the load average is printed with the results,
and so is "cores busy" = process CPU seconds / wall seconds (below the thread count when other
processes take turns on the same cores).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from spatial_tasks.generators.common import blender
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.jobs import available_cpus, run_jobs, threads_per_worker
from spatial_tasks.generators.spatialtunnel import sampling, scene

from spatial_tasks.spatialtunnel.schema import IMAGE_FEATURES

SAMPLES = 16
OVERHEAD_STAGES = ("scene_update", "exr_write", "png_encode", "pass_extraction", "write")
# (process CPU seconds per image are printed too: on a shared machine wall time also measures
# the other processes, CPU time mostly does not)


def _specs(n: int, offset: int = 0) -> list[sampling.ImageSpec]:
    """n images spread over the 16 x 16 grid (different cells, objects and sun angles)."""
    plan = sampling.plan("phase", grid=16, per_cell=1, seed=0)
    return [plan[(offset + 37 * i) % len(plan)] for i in range(n)]


def per_image_split(resolution: int, n: int, threads: int, work: Path) -> dict[str, float]:
    renderer = scene.TunnelRenderer(resolution, SAMPLES, threads)
    specs = _specs(n + 1, offset=resolution)
    renderer((specs[0], str(work)))  # warm-up: kernels, BVH, denoiser start-up
    stages: dict[str, list[float]] = {}
    for spec in specs[1:]:
        for key, value in renderer((spec, str(work)))["timings"].items():
            stages.setdefault(key, []).append(value)
    return {key: statistics.mean(values) for key, values in stages.items()}


def build_seconds_per_image(work: Path) -> float:
    """The dataset step on the rendered work files: read JSON + PNG, encode, write parquet."""
    import json

    start = time.perf_counter()
    rows = []
    for path in sorted(work.glob("*.json")):
        row = {k: v for k, v in json.loads(path.read_text())["row"].items()}
        row["image"] = {"bytes": path.with_suffix(".png").read_bytes(), "path": path.with_suffix(".png").name}
        rows.append(row)
    ds.write_parquet(rows, IMAGE_FEATURES, work / "bench.parquet")
    return (time.perf_counter() - start) / len(rows)


def throughput(resolution: int, n: int, workers: int, threads: int, work: Path) -> dict[str, float]:
    jobs = [(spec, str(work)) for spec in _specs(n, offset=workers * 1000 + threads)]
    start = time.perf_counter()
    arrivals, cpu = [], 0.0
    for result in run_jobs(jobs, factory=scene.TunnelRenderer, factory_args=(resolution, SAMPLES, threads),
                           workers=workers, progress=False):
        arrivals.append(time.perf_counter() - start)
        cpu += result["timings"]["cpu"]
    wall = arrivals[-1]
    steady = (len(arrivals) - workers) / (arrivals[-1] - arrivals[workers - 1])
    return {"wall": wall, "wall_ips": len(arrivals) / wall, "steady_ips": steady, "cpu_per_image": cpu / len(jobs),
            "cores_busy": cpu / wall}


O3D_CUES = ([], ["HP"], ["OC"], ["LS"], ["TG"], ["FO"], ["SA"], ["FS"])
O3D_STAGES_OUTSIDE = ("scene_update", "exr_write", "png_encode", "pass_extraction", "post", "write")


def _o3d_specs(n: int, offset: int = 0) -> list[dict]:
    from spatial_tasks.generators.o3d import assets, sampling

    catalog = assets.catalog()
    specs = []
    for i in range(n):
        cues = O3D_CUES[(i + offset) % len(O3D_CUES)]
        plan = sampling.plan([tuple(cues)], objects=["cube", "suzanne", "cylinder"][i % 3:i % 3 + 1],
                             envs=["basic", "forest"][i % 2:i % 2 + 1], fs_pairs=catalog.fs_pairs[:1],
                             object_cats={k: a.cat for k, a in catalog.objects.items()},
                             env_cats={k: e.cat for k, e in catalog.envs.items()}, positions=["near", "far"],
                             strengths=[1.0], no_lp=False, seed=i + offset)
        config = next(iter(plan.values()))
        job = config[i % len(config)].to_job()
        job["image_id"] = f"bench{offset}-{i}"
        specs.append(job)
    return specs


def o3d_split(resolution: int, n: int, threads: int, work: Path) -> tuple[dict[str, float], float]:
    """Mean seconds per stage over n images (after a warm-up), and the parquet step per image."""
    from spatial_tasks.generators.o3d import generate as o3d_generate
    from spatial_tasks.generators.o3d import sampling
    from spatial_tasks.generators.o3d.scene import O3DRenderer

    renderer = O3DRenderer(resolution, SAMPLES, threads)
    specs = _o3d_specs(n + 1, offset=resolution)
    work.mkdir(parents=True, exist_ok=True)
    renderer((specs[0], str(work)))
    stages: dict[str, list[float]] = {}
    for spec in specs[1:]:
        for key, value in renderer((spec, str(work)))["timings"].items():
            stages.setdefault(key, []).append(value)
    start = time.perf_counter()
    rows = [o3d_generate._row(work, sampling.ImageSpec(**{**s, "cues": tuple(s["cues"])})) for s in specs[1:]]
    ds.write_parquet(rows, o3d_generate.image_features("kb-1cue"), work / "bench.parquet")
    build = (time.perf_counter() - start) / len(rows)
    return {key: statistics.mean(values) for key, values in stages.items()}, build


def o3d_split_section(tmp: Path, cpus: int, quick: bool) -> None:
    threads = threads_per_worker(1, cpus)
    print(f"\n1) O3-D seconds per image, 1 worker x {threads} thread(s), {SAMPLES} samples, cues "
          f"{'/'.join('+'.join(c) or 'none' for c in O3D_CUES)} in turn (mean of N after 1 warm-up image)")
    print(f"{'size':>9} {'N':>2} {'render':>8} {'update':>7} {'exr':>6} {'png':>6} {'passes':>6} {'post':>6} {'write':>6} "
          f"{'parquet':>8} {'outside':>8} {'outside share':>13}")
    for resolution, n in ((256, 4 if quick else 8), (512, 2 if quick else 8)):
        split, build = o3d_split(resolution, n, threads, tmp / f"o3d{resolution}")
        outside = sum(split[k] for k in O3D_STAGES_OUTSIDE) + build
        print(f"{resolution:>4}x{resolution:<4} {n:>2} {split['render']:>8.3f} {split['scene_update']:>7.4f} "
              f"{split['exr_write']:>6.3f} {split['png_encode']:>6.3f} {split['pass_extraction']:>6.3f} {split['post']:>6.3f} "
              f"{split['write']:>6.4f} {build:>8.4f} {outside:>8.3f} {100 * outside / (outside + split['render']):>12.1f}%")
        sys.stdout.flush()


def o3d_ray_section(tmp: Path, quick: bool) -> None:
    import ray
    from ray.cluster_utils import Cluster
    from spatial_tasks.generators.o3d.scene import O3DRenderer

    n = 8 if quick else 16
    print(f"\n2) O3-D throughput on Ray, 128x128, {SAMPLES} samples, {n} images; one CPU per node, one actor "
          "per node (node start-up and scene build not counted: images/s from the moment every actor "
          "has finished its first image)")
    print(f"{'nodes':>5} {'wall s':>7} {'images/s steady':>16}")
    results = {}
    for nodes in (1, 2):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                                "object_store_memory": 100 * 2**20})
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1, object_store_memory=100 * 2**20)
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
        cluster.wait_for_nodes()
        try:
            jobs = [(s, str(tmp / f"ray{nodes}")) for s in _o3d_specs(n + nodes, offset=nodes * 100)]
            (tmp / f"ray{nodes}").mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            arrivals = []
            for _ in run_jobs(jobs, factory=O3DRenderer, factory_args=(128, SAMPLES, 1), workers=nodes,
                              progress=False, ray_address=cluster.address, cpus_per_worker=1):
                arrivals.append(time.perf_counter() - start)
        finally:
            ray.shutdown()
            cluster.shutdown()
        steady = (len(arrivals) - nodes) / (arrivals[-1] - arrivals[nodes - 1])
        results[nodes] = steady
        print(f"{nodes:>5} {arrivals[-1]:>7.1f} {steady:>16.3f}")
        sys.stdout.flush()
    print(f"2 nodes vs 1 node: {results[2] / results[1]:.2f}x (target >= 1.8x on a quiet machine)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer images per measurement")
    parser.add_argument("--suite", choices=["spatialtunnel", "o3d"], default="spatialtunnel")
    parser.add_argument("--part", choices=["all", "split", "throughput"], default="all",
                        help="run only 1) the per-image split or 2) the throughput comparison")
    args = parser.parse_args()
    if args.suite == "o3d":
        cpus = available_cpus()
        print(f"O3-D render benchmark: Blender {blender.version_string()}, Cycles CPU, {cpus} CPU(s)")
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        with tempfile.TemporaryDirectory(prefix="o3d-bench-") as tmp:
            if args.part in ("all", "split"):
                o3d_split_section(Path(tmp), cpus, args.quick)
            if args.part in ("all", "throughput"):
                o3d_ray_section(Path(tmp), args.quick)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    n128, n512, n_tp = (3, 1, 6) if args.quick else (6, 3, 12)
    cpus = available_cpus()
    print(f"SpatialTunnel render benchmark: Blender {blender.version_string()}, Cycles CPU, {cpus} CPU(s), "
          f"{SAMPLES} samples, OIDN denoiser ({scene.DENOISING_QUALITY}), bounces {scene.MAX_BOUNCES}/"
          f"diffuse {scene.DIFFUSE_BOUNCES}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          "(the machine is shared; figures move with its load)")
    sys.stdout.flush()

    with tempfile.TemporaryDirectory(prefix="spatialtunnel-bench-") as tmp:
        tmp = Path(tmp)
        if args.part in ("all", "split"):
            split_section(tmp, cpus, n128, n512)
        if args.part in ("all", "throughput"):
            throughput_section(tmp, cpus, n_tp)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def split_section(tmp: Path, cpus: int, n128: int, n512: int) -> None:
    threads = threads_per_worker(1, cpus)
    print(f"\n1) seconds per image, 1 worker x {threads} thread(s) (mean of N after 1 warm-up image)")
    header = (f"{'size':>9} {'N':>2} {'render':>8} {'update':>7} {'exr':>6} {'png':>6} {'passes':>7} "
              f"{'write':>6} {'other':>7} {'other/render':>12} {'cpu s':>7} {'cores busy':>10}")
    print(header)
    builds = {}
    for resolution, n in ((128, n128), (512, n512)):
        work = tmp / f"split{resolution}"
        split = per_image_split(resolution, n, threads, work)
        other = sum(split[k] for k in OVERHEAD_STAGES)
        print(f"{resolution:>4}x{resolution:<4} {n:>2} {split['render']:>8.3f} {split['scene_update']:>7.4f} "
              f"{split['exr_write']:>6.3f} {split['png_encode']:>6.3f} {split['pass_extraction']:>7.4f} "
              f"{split['write']:>6.4f} {other:>7.3f} {100 * other / split['render']:>11.1f}% "
              f"{split['cpu']:>7.2f} {split['cpu'] / (split['render'] + other):>10.2f}")
        sys.stdout.flush()
        builds[resolution] = build_seconds_per_image(work)
    print("dataset build step (JSON + PNG -> parquet, run once after rendering): "
          + ", ".join(f"{builds[r]:.4f} s/image at {r}x{r}" for r in builds))


def throughput_section(tmp: Path, cpus: int, n_tp: int) -> None:
    print(f"\n2) throughput at 128x128, {SAMPLES} samples, {n_tp} images per run (spawned worker processes)")
    print(f"{'workers x threads':>18} {'wall s':>7} {'images/s wall':>14} {'images/s steady':>16} "
          f"{'cpu s/image':>12} {'cores busy':>10}")
    results = {}
    for workers, threads_each, note in ((1, 1, ""), (2, 1, ""),
                                         (1, threads_per_worker(1, cpus), "  <- default for --workers 1"),
                                         (2, threads_per_worker(2, cpus), "  <- default for --workers 2")):
        if (workers, threads_each) in results:
            print(f"{workers:>8} x {threads_each:<7} (same as above){note}")
            continue
        r = throughput(128, n_tp, workers, threads_each, tmp / f"tp{workers}x{threads_each}")
        results[(workers, threads_each)] = r
        print(f"{workers:>8} x {threads_each:<7} {r['wall']:>7.1f} {r['wall_ips']:>14.3f} {r['steady_ips']:>16.3f} "
              f"{r['cpu_per_image']:>12.2f} {r['cores_busy']:>10.2f}{note}")
        sys.stdout.flush()
    one, two = results[(1, 1)], results[(2, 1)]
    print(f"2 workers vs 1 worker, 1 thread each: {two['steady_ips'] / one['steady_ips']:.2f}x steady, "
          f"{two['wall_ips'] / one['wall_ips']:.2f}x wall")
    default1 = results[(1, threads_per_worker(1, cpus))]
    default2 = results[(2, threads_per_worker(2, cpus))]
    print(f"defaults (2 x {threads_per_worker(2, cpus)} vs 1 x {threads_per_worker(1, cpus)} threads): "
          f"{default2['steady_ips'] / default1['steady_ips']:.2f}x steady, "
          f"{default2['wall_ips'] / default1['wall_ips']:.2f}x wall")
    print(f"threads per worker chosen by the generator: max(1, cores // workers) with {cpus} core(s): "
          + ", ".join(f"{w} worker(s) -> {threads_per_worker(w, cpus)}" for w in (1, 2)))


if __name__ == "__main__":
    main()
