"""Test helpers: work files as the Blender renderer writes them, made without Blender (for fast
tests), and ``load_fresh`` (``datasets.load_dataset`` with a cache of its own).

``write_fake_renders`` puts ``<image_id>.png`` + ``<image_id>.json`` and the shard's run record
into ``OUT/_work/<config>/`` exactly in the renderer's format, with pixel centres from the
analytic projection and a flat grey PNG, so the dataset-building step can be tested alone.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import datasets
from PIL import Image
from spatial_tasks.generators.common import provenance
from spatial_tasks.generators.common.folder import OutputFolder
from spatial_tasks.generators.common.jobs import Shard, atomic_write_json
from spatial_tasks.generators.spatialtunnel import generate as gen
from spatial_tasks.generators.spatialtunnel import sampling

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.schema import CONFIG_FOR_VARIANT


def fake_row(spec: sampling.ImageSpec, resolution: int) -> dict:
    row = spec.metadata()
    for slot, (position, size) in {1: (spec.position1, spec.size1), 2: (spec.position2, spec.size2)}.items():
        row[f"pixel{slot}"] = list(geometry.project(position, resolution, resolution))
        row[f"radius{slot}_px"] = geometry.projected_radius_px(size, position[1], resolution)
    row["width"] = row["height"] = resolution
    return row


def write_fake_renders(out: Path, variant: str, *, grid: int, per_cell: int, seed: int = 0,
                       shard: str = "1/1", resolution: int = 32) -> list[sampling.ImageSpec]:
    shard_obj = Shard.parse(shard)
    with OutputFolder(Path(out), gen.WORK_DIR):  # as the render step: the folder's _work is the generator's
        pass
    work = Path(out) / gen.WORK_DIR / CONFIG_FOR_VARIANT[variant]
    specs = shard_obj.select(sampling.plan(variant, grid=grid, per_cell=per_cell, seed=seed))
    for spec in specs:
        buffer = io.BytesIO()
        Image.new("RGB", (resolution, resolution), (spec.seed % 256, 90, 90)).save(buffer, "PNG")
        work.mkdir(parents=True, exist_ok=True)
        (work / f"{spec.image_id}.png").write_bytes(buffer.getvalue())
        atomic_write_json(work / f"{spec.image_id}.json", {
            "row": fake_row(spec, resolution), "qa": {},
            "render": {"resolution": resolution, "samples": 1, "renderer_version": 1, "blender": "fake"}})
    flags = gen.image_flags(variant, grid, per_cell, resolution, 1, seed, shard_obj)
    atomic_write_json(work / f"{shard_obj.slug}.run.json", {  # provenance.record without Blender
        "generator": gen.GENERATOR, "command": provenance.command_line("spatialtunnel", flags, Path(out)),
        "flags": flags, "seed": seed, "blender_version": "fake 0.0", "renderer_version": 1, "git_commit": "0" * 40,
        "versions": provenance.package_versions(), "speed": {"workers": 1, "threads_per_worker": 1},
    })
    return specs


def load_fresh(path: Path, config: str) -> datasets.Dataset:
    """``load_dataset(path, config, split="test")`` with a new cache folder.

    datasets caches a local folder by its path only: a folder rewritten at a reused temporary
    path would come back with the old rows (and features), even with force_redownload.
    """
    cache = tempfile.mkdtemp(dir=Path(path).parent, prefix=".hf-cache-")
    return datasets.load_dataset(str(path), config, split="test", cache_dir=cache)
