"""lmms-eval integration: our models, and discovery of our tasks without any extra flag.

lmms-eval 0.7.3 has no entry point for tasks, and its ``LMMS_EVAL_PLUGINS`` task path is added
after the TaskManager is built, so it never takes effect. It does load the ``lmms_eval.models``
entry-point group while importing ``lmms_eval.models`` — which every evaluation path imports
before it builds a TaskManager. Loading that entry point (``model_manifests`` below) therefore
runs this module first, and we add our task folder to every TaskManager's include paths there.

Why this is the least fragile hook: it rides on a documented, public plugin mechanism (the
entry-point group), touches one public method (``TaskManager.initialize_tasks``) through a
signature-agnostic wrapper, is idempotent, never removes or reorders user paths (built-in tasks
still win name clashes, as lmms-eval intends; ours are all prefixed), and is covered by a test
that runs the real ``lmms-eval`` console script from an installed wheel. If lmms-eval renames
the method, the patch is skipped with a warning and ``--include_path "$(spatial-tasks tasks-dir)"``
still works.
"""

from __future__ import annotations

import functools
import os
import warnings

from spatial_tasks.paths import tasks_dir

# Set to "0" to keep lmms-eval's index free of our tasks (then use --include_path explicitly).
AUTO_INCLUDE_ENV = "SPATIAL_TASKS_AUTO_INCLUDE"

MODELS = {
    "spatial_baseline": "spatial_tasks.models.baseline.SpatialBaseline",
    "qwen2_5_vl_yesno": "spatial_tasks.models.hf_yesno.Qwen2_5_VLYesNo",
}


def _with_our_tasks(include_path):
    ours = str(tasks_dir())
    if include_path is None:
        return [ours]
    paths = [include_path] if isinstance(include_path, str) else list(include_path)
    normalised = {os.path.realpath(p) for p in paths}
    return paths if os.path.realpath(ours) in normalised else [*paths, ours]


def install_task_discovery() -> bool:
    """Make every lmms-eval TaskManager index our tasks folder. Returns True if installed."""
    if os.environ.get(AUTO_INCLUDE_ENV, "1") == "0":
        return False
    try:
        from lmms_eval.tasks import TaskManager
    except ImportError:  # lmms-eval not importable: nothing to patch
        return False
    original = getattr(TaskManager, "initialize_tasks", None)
    if original is None:
        warnings.warn(
            "spatial-tasks: lmms-eval's TaskManager.initialize_tasks is gone; "
            'use --include_path "$(spatial-tasks tasks-dir)" to find our tasks.',
            stacklevel=2,
        )
        return False
    if getattr(original, "_spatial_tasks", False):
        return True

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, *args, **kwargs):
        return original(self, _with_our_tasks(include_path), *args, **kwargs)

    initialize_tasks._spatial_tasks = True
    TaskManager.initialize_tasks = initialize_tasks
    return True


def model_manifests():
    """Entry point ``lmms_eval.models``: our model ids (and, as a side effect, task discovery)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    install_task_discovery()
    return [ModelManifest(model_id=name, simple_class_path=path) for name, path in MODELS.items()]
