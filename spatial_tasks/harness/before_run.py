"""(13) Before a run loads its model: lmms-eval's ``evaluator.simple_evaluate`` wrapped with
``spatial_tasks.preflight``'s checks, so that a run of our tasks whose checkpoint or Hub data
cannot be had stops in one line."""

from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path

from spatial_tasks.common.errors import stop_run
from spatial_tasks.common.hub import hub_unreachable
from spatial_tasks.harness.data import TaskData


def install_preflight() -> None:
    """Wrap ``simple_evaluate`` with ``spatial_tasks.preflight``'s checks (idempotent): a run that
    holds our tasks and whose checkpoint or Hub data cannot be had stops in one line before its model
    loads. ``lmms_eval.__main__`` calls ``evaluator.simple_evaluate``, so the module attribute is the
    one replaced; while that module is still being imported (our entry point runs then) there is
    nothing to wrap yet, so this runs when the task index is built."""
    from spatial_tasks import preflight

    evaluator = sys.modules.get("lmms_eval.evaluator")
    original = getattr(evaluator, "simple_evaluate", None)
    if original is None or getattr(original, "_spatial_tasks", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        model, model_args, tasks = bound.get("model"), bound.get("model_args"), bound.get("tasks") or []
        ours = preflight.our_tasks(tasks if isinstance(tasks, list | tuple) else str(tasks).split(","))
        if not ours or not isinstance(model, str):
            return original(*args, **kwargs)
        if not isinstance(model_args, dict):  # a --model_args string, read as lmms-eval reads it
            from lmms_eval.utils import simple_parse_args_string

            model_args = simple_parse_args_string(model_args or "")
        checkpoint = preflight.given_checkpoint(model_args) or _default_checkpoint(model)
        why = hub_unreachable()
        if why:
            line = preflight.missing_checkpoint(model, checkpoint, why)
            for task in ours if line is None else ():
                data, hook = TaskData.from_yaml(_task_yaml(task))
                if not (data.is_local_builder or data.local_folder is not None):
                    line = preflight.missing_dataset(task, data.path, hook.source_env, why)
                if line:
                    break
            if line:
                stop_run(line)
        try:
            return original(*args, **kwargs)
        except OSError as err:
            line = preflight.hub_failure_line(model, checkpoint, err)
            if line is None:
                raise
            stop_run(line)

    simple_evaluate._spatial_tasks = True
    evaluator.simple_evaluate = simple_evaluate


def _default_checkpoint(model: str) -> str | None:
    """The default of a model class's ``pretrained`` parameter (lmms-eval's qwen2_5_vl: Qwen2.5-VL-3B)."""
    from lmms_eval.models import get_model

    try:
        parameter = inspect.signature(get_model(model).__init__).parameters.get("pretrained")
    except Exception:  # noqa: BLE001 - an unknown model: lmms-eval says so itself
        return None
    default = getattr(parameter, "default", None)
    return default if isinstance(default, str) and default else None


def _task_yaml(task: str) -> Path:
    from spatial_tasks.catalog import find_task

    return find_task(task).path
