"""(3) Load failures are final and end in one line: ``TaskDataFailed`` (a SystemExit, exit status
2) carrying ``failure_line``; a Hub source whose host does not resolve fails at once."""

from __future__ import annotations

import os
from pathlib import Path

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.hub import hub_unreachable
from spatial_tasks.harness.data import TaskData


class TaskDataFailed(SystemExit):
    """One of our tasks could not load its data: final (no retries), one line, exit status 2.

    A SystemExit so that lmms-eval's CLI, which catches every Exception and exits 0, lets it end
    the run; Python prints the message as the terminal's last line."""

    def __init__(self, data: TaskData, error: BaseException):
        self.data = data
        self.error = error
        super().__init__(2)
        self.message = failure_line(data, error)

    def __str__(self) -> str:
        return self.message


def failure_line(data: TaskData, error: BaseException) -> str:
    """What failed and what to do, in one line."""
    reason = " ".join(str(error).split()) or type(error).__name__
    if len(reason) > 900:
        reason = reason[:899] + "…"
    if isinstance(error, UserError):  # bad data or a bad setting: its message says what and where
        return f"spatial-tasks: task {data.task}: {reason}"
    from spatial_tasks.common.validate import dataset_file_problem

    problem = dataset_file_problem(data.path, data.name, **data.load_kwargs())
    if problem:  # datasets says only "DatasetGenerationError": name the file that stopped it
        return f"spatial-tasks: task {data.task} cannot load {data.label}: {problem}"
    hint = (f"point ${data.override} at a local copy" if data.override else
            "check the path, or run `spatial-tasks inspect " + data.path + "` to see what it holds")
    if any(word in reason.lower() for word in ("offline", "connect", "resolve", "reach")):
        hint = ("the Hugging Face Hub is unreachable or HF_HUB_OFFLINE is set: download the dataset once online "
                "(HF_HUB_OFFLINE=1 then uses the cached copy), or point the task at a local copy "
                "(`spatial-tasks custom-task`)")
    return f"spatial-tasks: task {data.task} cannot load {data.label}: {type(error).__name__}: {reason} ({hint})"


class HubUnreachable(ConnectionError):
    pass


def check_hub_reachable(data: TaskData) -> None:
    """Fail at once when ``data`` is on the Hub and the Hub's host does not resolve (no proxy set):
    huggingface_hub would otherwise retry for ~30 s before datasets gives up."""
    if data.is_local_builder or data.local_folder is not None or Path(data.path).expanduser().exists():
        return
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return
    why = hub_unreachable()
    if why:
        raise HubUnreachable(f"Couldn't reach {data.path!r} on the Hub: {why}")
