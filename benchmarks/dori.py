"""DORI at the release's scale: loading (discovery + mapping + image checks), the per-question hooks,
memory, and the Blender render time per image.

    python benchmarks/dori.py [--questions 33656] [--images 13652] [--side 128] [--renders 6]

Builds a synthetic release in the one-table layout (tests/dori/official_layouts.py's shapes) with
the paper's counts -- 33,656 questions on 13,652 images -- then prints:
* load: seconds for ``load.load_source`` (datasets discovery, column mapping, every row checked,
  every image decoded strictly), with and without the image checks, and the Python heap peak;
* hooks: mean microseconds per question for doc_to_visual (decode + draw boxes), doc_to_text and
  scoring an answer (parse + soft credit);
* render: seconds per 256 px DORI image (Cycles, 16 samples) on this machine, if bpy is installed.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "dori"))
import official_layouts  # noqa: E402

from spatial_tasks.dori import load, tasks  # noqa: E402


def build(folder: Path, questions: int, images: int, side: int) -> Path:
    rng = random.Random(0)
    kinds = list(official_layouts.OPTIONS)
    encoded = []
    for k in range(images):
        image = Image.new("RGB", (side, side), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        ImageDraw.Draw(image).rectangle([side // 6, side // 6, side // 2, side // 2], outline=(255, 0, 0), width=2)
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=85)
        encoded.append(buffer.getvalue())
    rows = []
    for q in range(questions):
        task, granularity = kinds[q % len(kinds)]
        options = official_layouts.OPTIONS[(task, granularity)]
        two = task in ("compound_rotation", "viewer_scene_direction")
        letters = {c: (options[i] if i < len(options) else None) for i, c in enumerate("ABCDEF")}
        rows.append({"qid": f"q{q}", "image": {"bytes": encoded[q % images], "path": None},
                     "image2": {"bytes": encoded[(q + 1) % images], "path": None} if two else None,
                     "question_type": official_layouts.TASKS[task], "level": granularity, "question": "?", **letters,
                     "answer": options[q % len(options)], "object_category": "car", "dataset": "KITTI"})
    features = datasets.Features({"qid": datasets.Value("string"), "image": datasets.Image(), "image2": datasets.Image(),
                                  "question_type": datasets.Value("string"), "level": datasets.Value("string"),
                                  "question": datasets.Value("string"),
                                  **{c: datasets.Value("string") for c in "ABCDEF"},
                                  "answer": datasets.Value("string"), "object_category": datasets.Value("string"),
                                  "dataset": datasets.Value("string")})
    (folder / "data").mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(folder / "data" / "test-00000-of-00001.parquet"))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=33_656)
    parser.add_argument("--images", type=int, default=13_652)
    parser.add_argument("--side", type=int, default=128)
    parser.add_argument("--renders", type=int, default=6)
    args = parser.parse_args()
    datasets.disable_progress_bars()
    from loguru import logger

    logger.remove()  # the loader's warnings are about the synthetic data, not the figures
    with tempfile.TemporaryDirectory() as tmp:
        folder = build(Path(tmp) / "release", args.questions, args.images, args.side)
        load.load_source(str(folder), check_images=False)  # warm the datasets cache (the first load converts)
        start = time.perf_counter()
        docs = load.load_source(str(folder), check_images=False)
        mapped = time.perf_counter() - start
        start = time.perf_counter()
        load.load_source(str(folder), check_images=True)
        checked = time.perf_counter() - start
        tracemalloc.start()
        load.load_source(str(folder), check_images=False)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"load: {len(docs)} questions, {args.images} images of {args.side} px")
        print(f"  discovery + mapping + row checks: {mapped:.2f} s; with every image decoded: {checked:.2f} s")
        print(f"  Python heap peak while mapping: {peak / 2**20:.0f} MiB ({peak / len(docs):.0f} B per question)")
        sample = docs[:: max(1, len(docs) // 2000)]
        for name, fn in (("doc_to_visual (decode + boxes)", tasks.doc_to_visual),
                         ("doc_to_text", tasks.doc_to_text),
                         ("score (parse + soft credit)", lambda d: tasks.score(d, "B. Its front points left."))):
            start = time.perf_counter()
            for doc in sample:
                fn(doc)
            print(f"  {name}: {(time.perf_counter() - start) / len(sample) * 1e6:.0f} us per question")
    if args.renders:
        try:
            from spatial_tasks.generators.dori import sampling
            from spatial_tasks.generators.dori.scene import DoriRenderer
        except ImportError:
            print("render: bpy not installed")
            return
        renderer = DoriRenderer(256, 16, 2)
        views = [v for item in sampling.plan("compound_rotation", args.renders, 0) for v in item.views][: args.renders]
        with tempfile.TemporaryDirectory() as tmp:
            renderer((views[0], tmp))  # first render syncs the scene
            start = time.perf_counter()
            for view in views:
                renderer((view, tmp))
            print(f"render: {(time.perf_counter() - start) / len(views):.2f} s per 256 px image (16 samples, 2 threads)")


if __name__ == "__main__":
    main()
