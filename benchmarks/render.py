"""SpatialTunnel render benchmark: where the time per image goes, and how workers scale.

    .venv/bin/python benchmarks/render.py            # ~2-4 min on 2 cores
    .venv/bin/python benchmarks/render.py --quick    # fewer images, ~1-2 min
    .venv/bin/python benchmarks/render.py --part throughput   # or: --part split

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer images per measurement")
    parser.add_argument("--part", choices=["all", "split", "throughput"], default="all",
                        help="run only 1) the per-image split or 2) the throughput comparison")
    args = parser.parse_args()
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
