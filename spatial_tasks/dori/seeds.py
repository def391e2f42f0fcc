"""``spatial-tasks dori-seeds``: DORI's 14 tasks once per option-order seed, each seed a group (the
paper's error bars over seeds 42, 1998 and 107983). Written with the shared ``custom-task`` machinery
(``spatial_tasks.catalog``); CLI level."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from spatial_tasks.catalog import local_folder, write_custom_task, write_yaml


def write_seed_tasks(out: Path, seeds: str | Sequence[int], data: str | None = None, overwrite: bool = False,
                     only: str | Sequence[str] | None = None) -> list[Path]:
    """For each seed S: the 14 DORI tasks (or ``only`` those: "compound_rotation" for both
    granularities, "compound_rotation_granular" for one) as ``dori_<task>_<granularity>_sS`` with that
    option-order seed and a group ``dori_sS`` (acc: the mean of the task accuracies), all in ``out``.
    ``lmms-eval --include_path OUT --tasks dori_s42,dori_s1998,dori_s107983`` then runs the paper's
    three seeds, and ``spatial-tasks rescore dori`` reports mean +- std/sqrt(3). A local ``data``
    must hold every chosen task's questions."""
    from spatial_tasks.dori.tasks import TASK_NAMES

    if isinstance(seeds, str):  # the command line's "42,1998,107983"
        try:
            seeds = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise ValueError(f"--seeds {seeds!r}: comma-separated integers, e.g. 42,1998,107983") from None
    if isinstance(only, str):
        only = [o.strip() for o in only.split(",") if o.strip()]
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {seeds}: give distinct integers >= 0")
    chosen = list(TASK_NAMES)
    if only:
        unknown = [o for o in only if not any(t == o or t.rsplit("_", 1)[0] == o for t in TASK_NAMES)]
        if unknown:
            raise ValueError(f"--only {unknown[0]!r}: not a DORI task (one of {', '.join(TASK_NAMES)}, or a task "
                             "name without its granularity)")
        chosen = [t for t in TASK_NAMES if t in only or t.rsplit("_", 1)[0] in only]
    local = local_folder(data) if data is not None else None
    if local is not None:
        from spatial_tasks.dori.load import check_folder

        check_folder(local, [tuple(t.rsplit("_", 1)) for t in chosen])
    written = []
    for seed in seeds:
        names = []
        for base in chosen:
            task = f"dori_{base}_s{seed}"
            written.append(write_custom_task(f"dori_{base}", data, out, name=task, prompt={"seed": str(seed)},
                                             overwrite=overwrite))
            names.append(task)
        group = {"group": f"dori_s{seed}", "task": names,
                 "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": False}],
                 "metadata": {"version": 0.1, "seed": seed}}
        written.append(write_yaml(Path(out), f"dori_s{seed}", group, overwrite))
    return written
