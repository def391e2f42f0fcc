"""What made a generated dataset: one provenance record, the same for every generator.

Each parquet file carries it (``dataset.GENERATION_KEY``), and the card is rendered from it:

    generator         the generator's module (spatial_tasks.generators.<name>)
    command           the ``spatial-tasks generate <name> ...`` line that makes the same rows
    flags             every flag that defines the rows (flags that only change speed -- workers,
                      Ray, device -- are left out, so the same rows give the same bytes)
    seed              the run seed
    renderer_version  our renderer's version (bumped when the same flags would draw other pixels);
                      None where nothing is rendered
    blender_version   "5.2.3 LTS (e13b728c6880)"; None where Blender is not used (PIL transforms)
    blender_untested  only where the Blender is not the one our datasets were checked with
                      (``blender.TESTED_BPY``): which it is
    git_commit        of this checkout ("+dirty" with local changes)
    versions          spatial-tasks, datasets, numpy, pillow and bpy, as installed

A render's own record (``<image_id>.json`` beside ``<image_id>.png`` in the work folder) says
what it was made with; ``is_done`` tells a finished render from one made with other settings.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatial_tasks.common.environment import git_commit, package_version

# Flags that change how fast a run is, never what it makes.
SPEED_ONLY_FLAGS = frozenset({"workers", "threads_per_worker", "backend", "device", "ray", "ray_address", "threads",
                              "progress", "overwrite"})
PACKAGES = ("spatial-tasks", "datasets", "numpy", "pillow", "bpy")
KEYS = ("generator", "command", "flags", "seed", "renderer_version", "blender_version", "git_commit", "versions")
OPTIONAL_KEYS = ("blender_untested",)


def generation(run: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance keys of a render's record, as a dataset's files carry them."""
    return {**{key: run.get(key) for key in KEYS}, **{key: run[key] for key in OPTIONAL_KEYS if key in run}}


def image_flags(flags: Mapping[str, Any]) -> dict[str, Any]:
    """``flags`` without the speed-only ones."""
    return {k: v for k, v in flags.items() if k not in SPEED_ONLY_FLAGS}


def command_line(generator: str, flags: Mapping[str, Any], out: Path) -> str:
    """``spatial-tasks generate GENERATOR --out NAME --flag value ...``: ``--out`` by the folder's
    name only; True is a bare flag, False and None are left out, lists are comma-joined."""
    args = ["spatial-tasks", "generate", generator, "--out", Path(out).name]
    for key, value in image_flags(flags).items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)]
        else:
            args += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return shlex.join(args)


def package_versions() -> dict[str, str | None]:
    """Installed versions of what shapes the rows (None: not installed)."""
    return {name: package_version(name) for name in PACKAGES}


def record(generator: str, flags: Mapping[str, Any], out: Path, *, renderer_version: int | None,
           blender: bool) -> dict[str, Any]:
    """The provenance record of a run of ``spatial-tasks generate <generator>`` (module docstring)."""
    if "seed" not in flags:
        raise ValueError(f"{generator}: a provenance record needs the run's seed among the flags")
    blender_version, untested = None, {}
    if blender:
        from .blender import TESTED_BPY, other_blender, version_string

        blender_version = version_string()
        other = other_blender()
        if other:  # only then: a dataset made with the tested Blender keeps its bytes
            untested = {"blender_untested": f"bpy {other}; the datasets were checked with bpy {TESTED_BPY}"}
    return {
        "generator": f"spatial_tasks.generators.{generator}",
        "command": command_line(generator, flags, out),
        "flags": image_flags(flags),
        "seed": flags["seed"],
        "renderer_version": renderer_version,
        "blender_version": blender_version,
        "git_commit": git_commit(),
        "versions": package_versions(),
        **untested,
    }


def summarise(records: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """What a config's files were made with, for its card: every distinct command, commit,
    Blender and renderer version, and the first file's flags, seed and package versions."""
    found = [r for r in records if r]
    if not found:
        raise ValueError("no provenance record: were these files written by spatial-tasks generate?")

    def distinct(key: str) -> list[str]:
        return sorted({str(r.get(key)) for r in found})

    first = found[0]
    return {"commands": distinct("command"), "git_commits": distinct("git_commit"),
            "blender_versions": sorted({r.get("blender_version") or "none (no Blender)" for r in found}),
            "renderer_versions": sorted({str(r["renderer_version"]) for r in found if r.get("renderer_version") is not None}),
            "flags": first.get("flags", {}),
            "seed": first.get("seed"), "versions": first.get("versions") or {}}


def is_done(record_path: Path, expected: Mapping[str, Any], files: Sequence[Path] = ()) -> bool:
    """A render finished with these settings: ``files`` and the JSON record present, and the record
    holding ``expected`` (nested mappings compared key by key, so a record may say more; values
    JSON-normalised, so tuples equal lists)."""
    if not all(Path(f).is_file() for f in (record_path, *files)):
        return False
    try:
        found = json.loads(Path(record_path).read_text())
    except (OSError, ValueError):
        return False
    return _holds(found, json.loads(json.dumps(expected)))


def _holds(found: object, wanted: object) -> bool:
    if isinstance(wanted, dict):
        return isinstance(found, dict) and all(k in found and _holds(found[k], v) for k, v in wanted.items())
    return found == wanted
