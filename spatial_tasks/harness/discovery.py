"""(1) Task discovery: ``TaskManager.initialize_tasks`` gets our task folders appended to its include
paths (user paths first, so built-in tasks still win a name clash; ours are all prefixed), and
installs the run's preflight (``before_run``) once lmms-eval's evaluator has finished importing."""

from __future__ import annotations

import functools
import os

from spatial_tasks.harness.before_run import install_preflight
from spatial_tasks.paths import tasks_dir

# Set to "0" to keep lmms-eval's index free of our tasks (then use --include_path explicitly).
AUTO_INCLUDE_ENV = "SPATIAL_TASKS_AUTO_INCLUDE"


def our_task_folders() -> list[str]:
    """This package's task folder and those of registered benchmarks that live outside it."""
    from spatial_tasks.registry import benchmarks

    ours = os.path.realpath(tasks_dir())
    folders = [str(tasks_dir())]
    for benchmark in benchmarks().values():
        folder = os.path.realpath(benchmark.tasks_folder())
        if not (folder + os.sep).startswith(ours + os.sep) and folder not in map(os.path.realpath, folders):
            folders.append(folder)
    return folders


def _with_our_tasks(include_path):
    ours = our_task_folders()
    if include_path is None:
        return ours
    paths = [include_path] if isinstance(include_path, str) else list(include_path)
    normalised = {os.path.realpath(p) for p in paths}
    return [*paths, *(p for p in ours if os.path.realpath(p) not in normalised)]


def install_task_discovery() -> None:
    from lmms_eval.tasks import TaskManager

    original = TaskManager.initialize_tasks
    if getattr(original, "_spatial_tasks", False):
        return

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, *args, **kwargs):
        install_preflight()
        if os.environ.get(AUTO_INCLUDE_ENV, "1") == "0":  # read when the index is built, not at import
            return original(self, include_path, *args, **kwargs)
        return original(self, _with_our_tasks(include_path), *args, **kwargs)

    initialize_tasks._spatial_tasks = True
    TaskManager.initialize_tasks = initialize_tasks
