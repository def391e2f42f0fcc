"""Small DORI datasets in the layouts the official release may have (its card declares no configs
or features): every one of the 14 question kinds, 2 questions each, PIL-drawn 48 px images with
the box already drawn (as the release's images are). Used by test_load.py and the CLI tests.

Layouts (``write(layout, folder)``):
* ``per_task_configs``: a README card declaring one config per task x granularity, embedded images,
  options as a list, the answer as a letter;
* ``one_table``: one parquet file with a task column ("VP", "CR", ...), a level column, one column
  per option letter, the answer as option text;
* ``image_paths``: one JSONL file, images as relative paths, options as a JSON string, the answer as
  a 0-based index, a bbox column, the task+granularity in one column;
* ``per_task_folders``: no card; ``<task>/<granularity>.parquet``, the kind read from the path;
* ``image_list``: one parquet file whose ``images`` column lists the question's one or two images,
  task and granularity columns, a ``choices`` list, the answer as "(B)".
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

from spatial_tasks.dori.schema import TASKS, TWO_IMAGE_TASKS

LAYOUTS = ("per_task_configs", "one_table", "image_paths", "per_task_folders", "image_list")

# Options in the paper's wordings (dori.md); the first is the answer of question 0, the second of 1.
OPTIONS: dict[tuple[str, str], list[str]] = {
    ("view_parallelism", "coarse"): ["toward the camera", "away from the camera", "perpendicular to the camera plane"],
    ("view_parallelism", "granular"): ["near-parallel alignment", "between 45 and 90 degrees away",
                                       "between 90 and 135 degrees away", "between 135 and 180 degrees away"],
    ("directional_facing", "coarse"): ["toward", "away", "leftward", "rightward"],
    ("directional_facing", "granular"): ["30 degrees left", "30 degrees right", "90 degrees left", "90 degrees right",
                                         "directly toward the camera"],
    ("single_axis_rotation", "coarse"): ["clockwise", "counterclockwise", "no rotation needed"],
    ("single_axis_rotation", "granular"): ["0", "45", "90", "135", "180"],
    ("compound_rotation", "coarse"): ["horizontal axis rotation", "vertical axis rotation", "no rotation"],
    ("compound_rotation", "granular"): ["90 horizontal then 0 vertical", "90 horizontal then 180 vertical",
                                        "0 horizontal then 90 vertical", "180 horizontal then 180 vertical",
                                        "0 horizontal then 0 vertical", "270 horizontal then 90 vertical"],
    ("inter_object_direction", "coarse"): ["facing each other", "facing the same direction",
                                           "facing opposite directions", "perpendicular",
                                           "Partially facing the same direction"],
    ("inter_object_direction", "granular"): ["0 to 45 degrees clockwise", "46 to 90 degrees clockwise",
                                             "0 to 45 degrees counterclockwise", "46 to 90 degrees counterclockwise"],
    ("viewer_scene_direction", "coarse"): ["yes", "no", "Cannot be determined"],
    ("viewer_scene_direction", "granular"): ["90 clockwise", "180 clockwise", "270 clockwise", "0 clockwise"],
    ("canonical_orientation", "coarse"): ["yes", "no", "Cannot be determined"],
    ("canonical_orientation", "granular"): ["rotate 90 degrees then flip horizontally",
                                            "flip horizontally then rotate 90 degrees", "rotate 180 degrees",
                                            "no change needed"],
}
SOURCES = {"view_parallelism": "KITTI", "directional_facing": "COCO", "single_axis_rotation": "Objectron",
           "compound_rotation": "ShapeNet", "inter_object_direction": "NOCS-REAL", "viewer_scene_direction": "Get3D",
           "canonical_orientation": "COCO"}
CATEGORIES = ("car", "chair")


def png(colour: tuple[int, int, int], size: int = 48) -> bytes:
    image = Image.new("RGB", (size, size), colour)
    ImageDraw.Draw(image).rectangle([8, 8, 30, 30], outline=(255, 0, 0), width=2)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def questions() -> list[dict]:
    """Canonical facts of every fixture question (what the loader must produce)."""
    out = []
    for (task, granularity), options in OPTIONS.items():
        for k in range(2):
            out.append({"id": f"{TASKS[task]}-{granularity[0]}-{k}", "task": task, "granularity": granularity,
                        "options": options, "answer_index": k, "category": CATEGORIES[k], "source": SOURCES[task],
                        "two": task in TWO_IMAGE_TASKS, "colour": (20 * k + 40, 100, 10 * len(out) % 255)})
    return out


def _image(q: dict) -> dict:
    return {"bytes": png(q["colour"]), "path": None}


def _write_kind(qs: list[dict], task: str, granularity: str, second: str, path: Path) -> None:
    """One task x granularity's questions as a parquet file: options a list, the answer a letter."""
    rows = [{"id": q["id"], "image": _image(q), second: _image(q) if q["two"] else None, "question": "?",
             "options": q["options"], "answer": "AB"[q["answer_index"]], "category": q["category"],
             "source": q["source"]}
            for q in qs if (q["task"], q["granularity"]) == (task, granularity)]
    text = datasets.Value("string")
    features = datasets.Features({"id": text, "image": datasets.Image(), second: datasets.Image(), "question": text,
                                  "options": datasets.List(text), "answer": text, "category": text, "source": text})
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))


def write(layout: str, folder: Path) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    qs = questions()
    if layout == "per_task_configs":
        card = ["---", "configs:"]
        for (task, granularity) in OPTIONS:
            name = f"{task}_{granularity}"
            _write_kind(qs, task, granularity, "image_2", folder / name / "test-00000-of-00001.parquet")
            card += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {name}/test-*.parquet"]
        (folder / "README.md").write_text("\n".join([*card, "---", "", "fixture"]) + "\n")
    elif layout == "one_table":
        rows = []
        for q in qs:
            letters = {c: (q["options"][i] if i < len(q["options"]) else None) for i, c in enumerate("ABCDEF")}
            rows.append({"qid": q["id"], "image": _image(q), "image2": _image(q) if q["two"] else None,
                         "question_type": TASKS[q["task"]], "level": q["granularity"], "question": "?", **letters,
                         "answer": q["options"][q["answer_index"]], "object_category": q["category"],
                         "dataset": q["source"]})
        features = datasets.Features({"qid": datasets.Value("string"), "image": datasets.Image(),
                                      "image2": datasets.Image(), "question_type": datasets.Value("string"),
                                      "level": datasets.Value("string"), "question": datasets.Value("string"),
                                      **{c: datasets.Value("string") for c in "ABCDEF"},
                                      "answer": datasets.Value("string"), "object_category": datasets.Value("string"),
                                      "dataset": datasets.Value("string")})
        (folder / "data").mkdir(exist_ok=True)
        datasets.Dataset.from_list(rows, features=features).to_parquet(str(folder / "data" / "test-00000-of-00001.parquet"))
    elif layout == "image_paths":
        (folder / "images").mkdir(exist_ok=True)
        lines = []
        for q in qs:
            (folder / "images" / f"{q['id']}.png").write_bytes(png(q["colour"]))
            if q["two"]:
                (folder / "images" / f"{q['id']}-2.png").write_bytes(png(q["colour"]))
            lines.append(json.dumps({
                "id": q["id"], "image_path": f"images/{q['id']}.png",
                "image2_path": f"images/{q['id']}-2.png" if q["two"] else None,
                "task": f"{q['task']}_{q['granularity']}", "choices": json.dumps(q["options"]),
                "answer": q["answer_index"], "category": q["category"], "source": q["source"],
                "bbox": [[8, 8, 30, 30], [32, 8, 46, 30]] if q["task"] == "inter_object_direction" else [8, 8, 30, 30]}))
        (folder / "test.jsonl").write_text("\n".join(lines) + "\n")
    elif layout == "per_task_folders":
        for (task, granularity) in OPTIONS:
            _write_kind(qs, task, granularity, "image2", folder / task / f"{granularity}.parquet")
    elif layout == "image_list":
        text = datasets.Value("string")
        rows = [{"id": q["id"], "images": [_image(q)] * (2 if q["two"] else 1), "task": q["task"],
                 "granularity": q["granularity"], "choices": q["options"], "answer": f"({'AB'[q['answer_index']]})",
                 "category": q["category"], "source": q["source"]} for q in qs]
        features = datasets.Features({"id": text, "images": datasets.List(datasets.Image()), "task": text,
                                      "granularity": text, "choices": datasets.List(text), "answer": text,
                                      "category": text, "source": text})
        (folder / "data").mkdir(exist_ok=True)
        datasets.Dataset.from_list(rows, features=features).to_parquet(str(folder / "data" / "test-00000-of-00001.parquet"))
    else:
        raise ValueError(layout)
    return folder
