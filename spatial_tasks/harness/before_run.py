"""(13) Before a run loads its model: lmms-eval's ``evaluator.simple_evaluate`` wrapped with
``spatial_tasks.preflight``'s checks, so that a run of our tasks whose checkpoint or Hub data
cannot be had stops in one line; and before it evaluates, ``evaluator.evaluate`` hands the model's
scoring record to each of our tasks (``hand_over_scoring``)."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from pathlib import Path

from spatial_tasks.common.errors import stop_run
from spatial_tasks.common.hub import ANSWER_WITHIN, hub_unreachable
from spatial_tasks.harness.data import DocsHook, TaskData


def install_preflight() -> None:
    """Wrap ``simple_evaluate`` with ``spatial_tasks.preflight``'s checks (idempotent): a run that
    holds our tasks and whose checkpoint or Hub data cannot be had stops in one line before its model
    loads; and ``evaluate`` with the scoring hand-off. While lmms-eval's evaluator module is still being
    imported (our entry point runs then) there is nothing to wrap yet, so this runs when the task index
    is built."""
    _install_task_name_check()
    _wrap_evaluator("evaluate", _handing_over_scoring)
    _wrap_evaluator("simple_evaluate", _checked_first)


def _wrap_evaluator(name: str, make) -> None:
    """Replace ``lmms_eval.evaluator.<name>`` (idempotent) by ``make(original, signature)``: lmms-eval's
    ``__main__`` calls ``evaluator.simple_evaluate`` and ``simple_evaluate`` calls ``evaluate`` by their
    module names, so the module attribute is the one replaced."""
    evaluator = sys.modules.get("lmms_eval.evaluator")
    original = getattr(evaluator, name, None)
    if original is None or getattr(original, "_spatial_tasks", False):
        return
    wrapper = functools.wraps(original)(make(original, inspect.signature(original)))
    wrapper._spatial_tasks = True
    setattr(evaluator, name, wrapper)


def _checked_first(original, signature):
    """``simple_evaluate`` with the preflight's checks before the model loads."""
    from spatial_tasks import preflight

    def simple_evaluate(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        model, model_args, tasks = bound.get("model"), bound.get("model_args"), bound.get("tasks") or []
        ours = preflight.our_tasks(tasks if isinstance(tasks, list | tuple) else str(tasks).split(","))
        if not ours or not isinstance(model, str):
            return original(*args, **kwargs)
        if not isinstance(model_args, dict):  # a --model_args string, read as lmms-eval reads it
            from lmms_eval.utils import simple_parse_args_string

            model_args = simple_parse_args_string(model_args or "")
        given = preflight.given_checkpoint(model_args)
        line = preflight.local_checkpoint_problem(model, given)  # a path: it exists and holds a checkpoint
        if line:
            stop_run(line)
        checkpoint = given or _default_checkpoint(model)
        # What must come from the Hub (not local, not cached): the checkpoint, our tasks' datasets. The
        # Hub is asked only then (once, and a silent endpoint given ANSWER_WITHIN seconds); the reason
        # goes where WHY stands.
        lines = [preflight.missing_checkpoint(model, checkpoint, WHY)]
        for task in ours:
            data, hook = TaskData.from_yaml(_task_yaml(task))
            if not (data.is_local_builder or data.local_folder is not None):
                lines.append(preflight.missing_dataset(task, data.path, hook.source.env if hook.source else None, WHY))
        lines = [line for line in lines if line]
        if lines and (why := hub_unreachable(answer_within=ANSWER_WITHIN)):
            stop_run(lines[0].replace(WHY, why))
        try:
            return original(*args, **kwargs)
        except OSError as err:
            line = preflight.hub_failure_line(model, checkpoint, err)
            if line is None:
                raise
            stop_run(line)

    return simple_evaluate


def hand_over_scoring(lm, task_dict: dict) -> None:
    """Each of our tasks records how ``lm`` scores (an in-process first-token scorer's ``scoring_record``: its
    path, fallbacks and why) in its config metadata, which lmms-eval writes to the results file. The same
    dict: a path the model drops during the run is updated there (``HFYesNoMixin.drop_path``)."""
    from lmms_eval.evaluator_utils import get_task_list

    from spatial_tasks.common.environment import SCORING_KEY

    record = getattr(lm, "scoring_record", None)
    if not isinstance(record, dict):
        return
    for output in get_task_list(task_dict):
        config = getattr(output.task, "config", None)
        if isinstance(getattr(config, "process_docs", None), DocsHook) and isinstance(config.metadata, dict):
            config.metadata[SCORING_KEY] = record


def _handing_over_scoring(original, signature):
    """``evaluate`` that first hands the model's scoring record to the tasks (``hand_over_scoring``)."""
    def evaluate(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        hand_over_scoring(bound.get("lm"), bound.get("task_dict") or {})
        return original(*args, **kwargs)

    return evaluate


def _install_task_name_check() -> None:
    """Wrap ``TaskManager.match_tasks`` (idempotent): a requested name that matches no task but is a
    close misspelling of one of ours (``o3d_markerz``) ends the run in one line naming ours, before
    lmms-eval's "Tasks not found" traceback and exit 0. Other unknown names are left to lmms-eval."""
    from lmms_eval.tasks import TaskManager

    from spatial_tasks import preflight

    original = TaskManager.match_tasks
    if getattr(original, "_spatial_tasks", False):
        return

    @functools.wraps(original)
    def match_tasks(self, task_list):
        matched = original(self, task_list)
        for name in task_list:
            name = str(name).strip()
            if name in matched or "*" in name or os.path.exists(name):
                continue
            closest = preflight.closest_task(name)
            if closest:
                stop_run(f"spatial-tasks: --tasks {name}: no such task; did you mean {closest}? "
                         "(`spatial-tasks list` lists ours)")
        return matched

    match_tasks._spatial_tasks = True
    TaskManager.match_tasks = match_tasks


WHY = "\x00why\x00"  # where a preflight line says why the Hub cannot be had, filled in once asked


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
