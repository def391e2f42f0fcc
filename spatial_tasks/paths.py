"""Where the package's own files live, identically for a wheel install and an editable checkout.

pyproject.toml maps the top-level ``tasks/`` and ``generators/`` folders onto the
``spatial_tasks.tasks`` and ``spatial_tasks.generators`` packages, so resolving through the
import system finds the installed copy in a wheel and the checkout in editable mode.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

CACHE_ENV = "SPATIAL_TASKS_CACHE"


def cache_folder() -> Path:
    """Where spatial-tasks keeps what it can make again (evaluate modules, lmms-eval's task index):
    ``$SPATIAL_TASKS_CACHE``, else ``$XDG_CACHE_HOME/spatial-tasks``, else ``~/.cache/spatial-tasks``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "spatial-tasks"


def tasks_dir() -> Path:
    """The folder lmms-eval indexes for our task YAMLs (one sub-folder per benchmark)."""
    return Path(str(resources.files("spatial_tasks.tasks")))


def benchmark_tasks_dir(benchmark: str) -> Path:
    path = tasks_dir() / benchmark
    if not path.is_dir():
        raise FileNotFoundError(f"no task folder for benchmark {benchmark!r} under {tasks_dir()}")
    return path


def output_folder(path: Path, flag: str = "--out") -> Path:
    """``path`` as a folder to write into (created with its parents); a file there is an error
    naming the flag, not a confusing "already exists"."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{flag} {path}: is a file, expected a folder")
    path.mkdir(parents=True, exist_ok=True)
    return path
