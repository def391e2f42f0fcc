"""A contact sheet of one O3-D scene: the base view and each cue (the paper's Fig. 2c).

    spatial-tasks preview o3d DIR --out sheet.png [--size 256] [--position far] [--strength 1]

DIR is a generated (or downloaded) folder in the release's layout. The sheet shows one scene --
the (environment, object, position) with the most cues rendered -- once without cues and once per
single cue at one strength, each panel titled with the cue, so a person can check by eye that
each cue says what it should (e.g. HP: the far target sits higher). FS changes the objects, so its
panel shows the familiar-size pair in the same environment and position.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
from PIL import Image
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.preview import check_sheet, save_sheet

from spatial_tasks.common.errors import UserError
from spatial_tasks.o3d import schema

CUE_TITLES = {
    "none": "no cue (ambiguous)", "HP": "HP height in plane", "OC": "OC occlusion", "RS": "RS relative size",
    "LS": "LS light & shadow", "TG": "TG texture gradient", "FO": "FO focus", "SA": "SA aerial perspective",
    "FS": "FS familiar size",
}
POSITIONS = ("near", "far")  # where the odd object stands (the rows' odd_position)
ORDER = ("none", "HP", "OC", "RS", "LS", "TG", "FO", "SA", "FS")
META = ["image_name", "env_id", "env_cat", "obj_id", "odd_position", "cues", "cue_strength"]


def _rows(folder: Path) -> list[dict]:
    rows = []
    for config in ("kb-0cue", "kb-1cue"):
        for path in ds.parquet_files(folder / config, schema.SPLIT):
            table = pq.read_table(path, columns=META)
            for i, row in enumerate(table.to_pylist()):
                row.update(path=path, index=i, cue=("+".join(schema.parse_cues(row["cues"])) or "none"))
                rows.append(row)
    return rows


def pick_scene(rows: list[dict], position: str | None, strength: float) -> tuple[tuple, dict[str, dict]]:
    """The (env, object, position) with the most cues at ``strength``; {cue: row} for it."""
    scenes: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        if row["cue"] not in ORDER or (position and row["odd_position"] != position):
            continue
        if row["cue"] != "none" and row["cue"] != "FS" and row["cue_strength"] != strength:
            continue
        key = (row["env_id"] or "basic", row["obj_id"], row["odd_position"])
        scenes[key].setdefault(row["cue"], row)
    if not scenes:
        raise ValueError("no kb-0cue / kb-1cue image matches: render some with "
                         "`spatial-tasks generate o3d --cues none,all-single ...`")
    key = max(sorted(scenes, key=str), key=lambda k: (k[2] != "none", len(scenes[k])))
    chosen = dict(scenes[key])
    if "FS" not in chosen:  # FS scenes use a pair: same environment and position
        for row in rows:
            if row["cue"] == "FS" and (row["env_id"] or "basic") == key[0] and row["odd_position"] == key[2]:
                chosen["FS"] = row
                break
    return key, chosen


def _image(row: dict) -> Image.Image:
    table = pq.read_table(row["path"], columns=["image"])
    cell = table.column("image")[row["index"]].as_py()
    return Image.open(io.BytesIO(cell["bytes"])).convert("RGB")


def contact_sheet(folder: Path, out: Path, *, size: int = 256, position: str | None = None,
                  strength: float = 1.0, columns: int = 3) -> Path:
    """Write the sheet (PNG) to ``out``; returns ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    check_sheet(out, size)
    if position not in (None, *POSITIONS):
        raise UserError(f"--position {position!r}: one of {', '.join(POSITIONS)} (or leave it out: the scene with "
                        "most cues)")
    if not (math.isfinite(strength) and strength > 0):
        raise UserError(f"--strength {strength}: a cue strength is a positive number (1.0: full strength)")
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such dataset folder")
    key, chosen = pick_scene(_rows(folder), position, strength)
    cues = [c for c in ORDER if c in chosen]
    rows_n = -(-len(cues) // columns)
    inch = size / 100
    fig, axes = plt.subplots(rows_n, columns, figsize=(columns * inch, rows_n * (inch + 0.35)), dpi=100,
                             squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, cue in zip(axes.flat, cues):
        row = chosen[cue]
        ax.imshow(_image(row).resize((size, size), Image.Resampling.LANCZOS))
        suffix = "" if cue in ("none", "FS") else f" (s={row['cue_strength']:g})"
        ax.set_title(CUE_TITLES[cue] + suffix, fontsize=8)
    env, obj, pos = key
    fig.suptitle(f"O3-D: {obj} in '{env}', target {pos} — base view and each cue", fontsize=9)
    return save_sheet(fig, out)
