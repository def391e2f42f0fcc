"""Small SpatialTunnel datasets in both official schemas, made without Blender (fast tests).

Images are PIL drawings of the two objects at their analytic projections; the metadata follow
schema.IMAGE_FEATURES exactly, so everything downstream sees what the generator writes.
"""

from __future__ import annotations

import base64
import io
import itertools
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.probe.data import TEMPLATES as PROBE_TEMPLATES
from spatial_tasks.spatialtunnel.questions import questions_for
from spatial_tasks.spatialtunnel.schema import CONFIG_FOR_VARIANT, IMAGE_FEATURES

COLORS = {"red": (220, 30, 30), "blue": (30, 30, 220)}


def _draw(px1, r1, px2, r2, size):
    img = Image.new("RGB", (size, size), (90, 90, 90))
    draw = ImageDraw.Draw(img)
    for (x, y), r, colour in ((px1, r1, COLORS["red"]), (px2, r2, COLORS["blue"])):
        r = max(r, 1.5)
        draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)
    return img


def image_rows(variant: str, grid: int = 4, resolution: int = 64) -> list[dict]:
    rows = []
    cells = itertools.product(range(grid), range(grid)) if variant == "phase" else [
        (k % grid, (3 * k + 1) % grid) for k in range(11)]
    for k, (i1, i2) in enumerate(cells):
        s1 = 0.2 if variant == "phase" else round(0.10 + 0.02 * k, 2)
        s2 = 0.1 if variant == "phase" else round(0.4 - s1, 2)
        t1, t2 = geometry.theta_degrees(i1, grid), geometry.theta_degrees(i2, grid)
        p1 = geometry.object_center(t1, geometry.DEPTH_FAR, s1)
        p2 = geometry.object_center(t2, geometry.DEPTH_NEAR, s2)
        px1, px2 = geometry.project(p1, resolution, resolution), geometry.project(p2, resolution, resolution)
        r1 = geometry.projected_radius_px(s1, geometry.DEPTH_FAR, resolution)
        r2 = geometry.projected_radius_px(s2, geometry.DEPTH_NEAR, resolution)
        image_id = f"{variant}-{i1:02d}-{i2:02d}-00" if variant == "phase" else f"size-{s1:.2f}-{k:03d}"
        rows.append({
            "image": _draw(px1, r1, px2, r2, resolution), "image_id": image_id, "variant": variant,
            "grid": grid, "theta1_index": i1, "theta2_index": i2, "theta1": t1, "theta2": t2,
            "depth1": geometry.DEPTH_FAR, "depth2": geometry.DEPTH_NEAR, "size1": s1, "size2": s2,
            "size1_nominal": s1, "size2_nominal": s2, "color1": "red", "shape1": "sphere",
            "color2": "blue", "shape2": "cube", "obj1": "red sphere", "obj2": "blue cube",
            "roughness1": 0.5, "roughness2": 0.5, "sun_rotation": 4.7, "position1": list(p1),
            "position2": list(p2), "pixel1": list(px1), "pixel2": list(px2), "radius1_px": r1,
            "radius2_px": r2, "width": resolution, "height": resolution, "seed": k,
            "questions": questions_for("red sphere", "blue cube"),
        })
    return rows


def write_generated(root: Path, variants=("phase", "size"), grid: int = 4) -> Path:
    """A dataset directory in our generator's layout (parquet per config + card configs)."""
    configs = []
    for variant in variants:
        config = CONFIG_FOR_VARIANT[variant]
        ds = datasets.Dataset.from_list(image_rows(variant, grid), features=IMAGE_FEATURES)
        (root / config).mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(root / config / "test-00000-of-00001.parquet"))
        configs.append(f"- config_name: {config}\n  data_files:\n  - split: test\n    path: {config}/test-*.parquet\n")
    (root / "README.md").write_text("---\nconfigs:\n" + "".join(configs) + "---\n# fake SpatialTunnel\n")
    return root


def write_official_tsv(path: Path, per_question: bool = True, drop: tuple[str, ...] = ()) -> Path:
    """A TSV in the cubec/spatialtunnel style: base64 PNG images, EmbSpatial-like columns."""
    lines = []
    header = ["index", "image", "question", "answer", "obj1", "obj2", "theta1", "theta2", "category"]
    header = [h for h in header if h not in drop]
    lines.append("\t".join(header))
    for n, row in enumerate(image_rows("phase", grid=4)):
        buf = io.BytesIO()
        row["image"].save(buf, format="PNG")
        b64 = base64.b64encode(buf.getvalue()).decode()
        qs = row["questions"] if per_question else [{"question": "", "answer": ""}]
        for q in qs:
            values = {"index": str(len(lines) - 1), "image": b64, "question": q["question"], "answer": q["answer"],
                      "obj1": row["obj1"], "obj2": row["obj2"], "theta1": str(row["theta1"]),
                      "theta2": str(row["theta2"]), "category": "phase"}
            lines.append("\t".join(values[h] for h in header))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- contrastive-probing pairs (probe.data layouts) ---------------------------------------

PROBE_OBJECTS = ["red cube", "blue sphere", "green cube", "black sphere"]


def png(shade: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (shade % 256, 80, 160)).save(buffer, format="PNG")
    return buffer.getvalue()


def b64(shade: int = 0) -> str:
    return base64.b64encode(png(shade)).decode()


def write_tsv(path: Path, rows: list[dict], columns: list[str]) -> Path:
    lines = ["\t".join(columns)] + ["\t".join(str(row.get(c, "")) for c in columns) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def prompt_rows(n_per_label: int = 2) -> list[dict]:
    rows = []
    for label, axis in [("left", "H"), ("right", "H"), ("above", "V"), ("below", "V"), ("far", "D"), ("close", "D")]:
        for k in range(n_per_label):
            query, reference = PROBE_OBJECTS[k % 4], PROBE_OBJECTS[(k + 1) % 4]
            rows.append({"index": len(rows), "image": {"bytes": png(len(rows)), "path": None},
                         "question": PROBE_TEMPLATES[axis].format(query=query, reference=reference), "answer": label})
    return rows


def write_prompt_parquet(path: Path, rows: list[dict]) -> Path:
    features = datasets.Features({"index": datasets.Value("int64"), "image": datasets.Image(),
                                  "question": datasets.Value("string"), "answer": datasets.Value("string")})
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path



