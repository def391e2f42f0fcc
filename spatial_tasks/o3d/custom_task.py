"""``spatial-tasks custom-task`` for O3-D tasks: a local folder must be in the official layout
(``visual_questions/`` and one folder per image subset) with the subsets the task reads."""

from __future__ import annotations

from pathlib import Path


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def check_folder(local: Path, base_cfg: dict) -> None:
    """A local O3-D folder must be in the official layout with the subsets the task reads."""
    import datasets

    from spatial_tasks.o3d.slices import Slice

    if not (local / "visual_questions").is_dir() and not (local / "README.md").is_file():
        raise ValueError(f"--data {local}: not an O3-D dataset folder in the official layout (expected "
                         "visual_questions/ and one folder per image subset, or a README.md declaring configs)")
    try:
        configs = set(datasets.get_dataset_config_names(str(local)))
    except Exception as err:  # noqa: BLE001
        from spatial_tasks.common.validate import folder_link_problem

        raise ValueError(f"--data {local}: " + (folder_link_problem(local) or "not a dataset folder datasets can "
                                                f"read ({first_line(err)})")) from None
    if "visual_questions" not in configs:
        raise ValueError(f"--data {local}: lacks the config 'visual_questions' (the questions; it has: {sorted(configs)})")
    wanted = Slice.of(base_cfg.get("metadata") or {}, str(base_cfg.get("task"))).subsets
    present = [c for c in wanted if c in configs]
    if wanted and not present:
        raise ValueError(f"--data {local}: holds none of the image subsets {list(wanted)} this task reads "
                         f"(it has: {sorted(configs)})")
    from spatial_tasks.common.validate import dataset_file_problem

    for config in ["visual_questions", *present]:  # every table the task reads must read: checked now
        if problem := dataset_file_problem(str(local), config):
            raise ValueError(f"--data {local}: {problem}")
    absent = [c for c in wanted if c not in configs]
    if absent:  # a generated folder may hold some cue sets only: the task evaluates those
        from loguru import logger

        logger.warning(f"--data {local}: the task will evaluate the subsets present {present}; absent: {absent}")


def data_spec(request) -> dict | None:
    """``custom-task --data``: the questions config (visual_questions) of a folder in the official
    layout, checked."""
    if request.local is not None:
        check_folder(request.local, request.base_cfg)
    return request.generic(request.config or "visual_questions")
