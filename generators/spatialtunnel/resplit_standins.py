"""Stand-in depth questions in the schemas lmms-eval's EmbSpatial-Bench and CV-Bench 3D tasks read,
for tests and the bundled sample (``tasks/spatialtunnel/sample/{embspatial,cv_bench_3d}_depth``).

Real photos cannot be shipped or drawn, so each scene is a PIL drawing: a floor, a back wall and
one coloured box per object at the box the row records. The questions cover every split --
consistent, counter, ambiguous -- plus a question without the boxes to place it and a question of
another kind that the re-split leaves out.

    python -m spatial_tasks.generators.spatialtunnel.resplit_standins tasks/spatialtunnel/sample
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

EMBSPATIAL_FEATURES = datasets.Features({
    "question_id": datasets.Value("string"), "question": datasets.Value("string"),
    "answer_options": datasets.List(datasets.Value("string")), "answer": datasets.Value("int64"),
    "relation": datasets.Value("string"), "data_source": datasets.Value("string"), "image": datasets.Image(),
    "objects": {"name": datasets.List(datasets.Value("string")),
                "bbox": datasets.List(datasets.List(datasets.Value("float64")))},
})
CV_BENCH_FEATURES = datasets.Features({
    "idx": datasets.Value("int64"), "type": datasets.Value("string"), "task": datasets.Value("string"),
    "image": datasets.Image(), "prompt": datasets.Value("string"), "choices": datasets.List(datasets.Value("string")),
    "answer": datasets.Value("string"), "source": datasets.Value("string"),
    "bbox": datasets.List(datasets.List(datasets.Value("float64"))),
})
COLOURS = ((200, 60, 50), (60, 120, 200), (70, 160, 80), (220, 180, 40))


def scene(size: tuple[int, int], boxes: list[tuple[float, float, float, float]]) -> dict:
    """A drawn room with one filled box per (x1, y1, x2, y2), as a datasets Image cell (PNG)."""
    width, height = size
    image = Image.new("RGB", size, (205, 200, 190))
    draw = ImageDraw.Draw(image)
    draw.polygon([(0, height), (width, height), (int(0.7 * width), height // 2), (int(0.3 * width), height // 2)],
                 fill=(150, 130, 110))
    for k, box in enumerate(boxes):
        draw.rectangle([round(v) for v in box], fill=COLOURS[k % len(COLOURS)], outline=(20, 20, 20))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def embspatial_row(qid: str, relation: str, answer: int, centre_rows: dict[str, float | None],
                   size: tuple[int, int] = (100, 80)) -> dict:
    """An EmbSpatial-Bench row whose options are ``centre_rows``' names: boxes 10 x 6 px (xywh)
    centred on the given rows; None: no box for that option."""
    boxed = [(n, [10.0 + 20 * i, r - 3.0, 10.0, 6.0]) for i, (n, r) in enumerate(centre_rows.items()) if r is not None]
    word = {"far": "farthest from", "close": "closest to"}.get(relation, "left of")
    return {"question_id": qid, "question": f"Which object is the {word} you?",
            "answer_options": list(centre_rows), "answer": answer, "relation": relation, "data_source": "mp3d",
            "image": scene(size, [(x, y, x + w, y + h) for _, (x, y, w, h) in boxed]),
            "objects": {"name": [n for n, _ in boxed], "bbox": [b for _, b in boxed]}}


def cv_bench_row(idx: int, task: str, closer: str, rows: tuple[float, float], size: tuple[int, int] = (120, 100)) -> dict:
    """A CV-Bench 3D row: choices lamp (A) and chair (B), ``closer`` "(A)" / "(B)", boxes
    [x1, y1, x2, y2] centred on ``rows``."""
    boxes = [[10.0, rows[0] - 5, 30.0, rows[0] + 5], [60.0, rows[1] - 5, 80.0, rows[1] + 5]]
    return {"idx": idx, "type": "3D", "task": task, "image": scene(size, [tuple(b) for b in boxes]),
            "prompt": "Which object is closer to the camera taking this photo, the lamp (highlighted by a red box) or "
                      "the chair (highlighted by a blue box)?\n(A) lamp\n(B) chair",
            "choices": ["lamp", "chair"], "answer": closer, "source": "Omni3D", "bbox": boxes}


# Every split, in order: 2 consistent, 2 counter, 1 ambiguous, 1 unknown, then a non-depth row.
EMBSPATIAL_ROWS = [
    embspatial_row("e0", "far", 0, {"lamp": 10, "sofa": 40, "table": 60, "chair": 50}),  # farthest is highest
    embspatial_row("e1", "far", 0, {"lamp": 60, "sofa": 20, "table": 40, "chair": 50}),  # farthest is low
    embspatial_row("e2", "close", 3, {"lamp": 10, "sofa": 40, "table": 30, "chair": 70}),  # closest is lowest
    embspatial_row("e3", "close", 3, {"lamp": 10, "sofa": 60, "table": 30, "chair": 20}),  # closest is high
    embspatial_row("e4", "far", 1, {"lamp": 32, "sofa": 30, "table": 60, "chair": 50}),  # 2 px from the highest other
    embspatial_row("e5", "far", 2, {"lamp": 32, "sofa": 30, "table": None, "chair": 50}),  # the answer has no box
    embspatial_row("e6", "left", 0, {"lamp": 10, "sofa": 40}),  # not a depth question
]
EMBSPATIAL_RELATIONS = ["consistent", "counter", "consistent", "counter", "ambiguous", "unknown"]
CV_BENCH_ROWS = [
    cv_bench_row(0, "Depth", "(A)", (80, 20)),  # closer lamp low, farther chair high: consistent
    cv_bench_row(1, "Depth", "(B)", (80, 20)),  # closer chair high, farther lamp low: counter
    cv_bench_row(2, "Depth", "(A)", (50, 52)),  # 2 px apart (< 5 % of 100): ambiguous
    cv_bench_row(3, "Distance", "(A)", (50, 20)),  # not a depth-order question
]
CV_BENCH_RELATIONS = ["consistent", "counter", "ambiguous"]
SAMPLE_CONFIGS = {"embspatial_depth": (EMBSPATIAL_ROWS, EMBSPATIAL_FEATURES),
                  "cv_bench_3d_depth": (CV_BENCH_ROWS, CV_BENCH_FEATURES)}


def write_rows(path: Path, rows: list[dict], features: datasets.Features) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path


def build_sample(folder: Path) -> list[Path]:
    """The bundled stand-ins: ``folder/<config>/test-00000-of-00001.parquet`` per schema."""
    return [write_rows(Path(folder) / config / "test-00000-of-00001.parquet", rows, features)
            for config, (rows, features) in SAMPLE_CONFIGS.items()]


if __name__ == "__main__":
    for path in build_sample(Path(sys.argv[1] if len(sys.argv) > 1 else "tasks/spatialtunnel/sample")):
        print(path)
