"""Our task catalogue, read from the task YAMLs themselves (lmms-eval's own YAML loader)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from spatial_tasks.paths import tasks_dir


@dataclass(frozen=True)
class TaskEntry:
    name: str
    kind: str  # task | group
    source: str  # default data: Hub id [config] or the bundled sample
    path: Path


def _config(path: Path) -> dict:
    from lmms_eval.utils import load_yaml_config  # resolves include: exactly as lmms-eval does

    return load_yaml_config(str(path), mode="simple")


def _source(cfg: dict) -> str:
    if cfg.get("dataset_path") == "parquet":
        return "bundled sample (offline)"
    name = cfg.get("dataset_name")
    return f"{cfg.get('dataset_path')}" + (f" [{name}]" if name else "") + f" split={cfg.get('test_split')}"


def task_catalog() -> list[TaskEntry]:
    entries = []
    for path in sorted(tasks_dir().rglob("*.yaml")):
        cfg = _config(path)
        if "group" in cfg:
            subtasks = cfg.get("task", [])
            entries.append(TaskEntry(cfg["group"], "group", "= " + " + ".join(map(str, subtasks)), path))
        elif "task" in cfg:
            entries.append(TaskEntry(cfg["task"], "task", _source(cfg), path))
    return entries


def find_task(name: str) -> TaskEntry:
    for entry in task_catalog():
        if entry.name == name and entry.kind == "task":
            return entry
    raise KeyError(f"no spatial-tasks task named {name!r}; see `spatial-tasks list`")


def write_custom_task(base_task: str, data: str, out: Path, name: str | None = None,
                      config: str | None = None, split: str | None = None) -> Path:
    """Write ``<out>/<name>.yaml`` that includes ``base_task`` and points it at ``data``.

    ``data`` is a Hub dataset id or a local dataset directory (e.g. one written by
    ``spatial-tasks generate``). Run it with ``lmms-eval --include_path OUT --tasks NAME``.
    """
    entry = find_task(base_task)
    base_cfg = _config(entry.path)
    name = name or f"{base_task}_custom"
    local = Path(data).expanduser()
    if local.exists() and not local.is_dir():
        raise ValueError(f"--data {data}: a local dataset must be a directory")
    note = ""
    if entry.path.parent.name == "o3d":
        note = _o3d_check(local if local.exists() else None, data)
    dataset_path = str(local.resolve()) if local.exists() else data
    dataset_name = config or (base_cfg.get("dataset_name") if base_cfg.get("dataset_path") != "parquet"
                              else _config_for_sample(base_cfg))
    split = _choose_split(split, local if local.exists() else None, dataset_name, base_cfg)
    spec = {"include": str(entry.path), "task": name, "dataset_path": dataset_path,
            "test_split": split, "dataset_kwargs": {}}
    if dataset_name:
        spec["dataset_name"] = dataset_name
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.yaml"
    path.write_text(f"# Runs {base_task} on {data}. Made by `spatial-tasks custom-task`.\n" + note
                    + yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _choose_split(split: str | None, local: Path | None, dataset_name: str | None, base_cfg: dict) -> str:
    """The split to evaluate: the one asked for, checked against what a local dataset declares;
    by default the local dataset's own split (our generators write "test" for SpatialTunnel and
    the official layout's "train" for O3-D), else the base task's split (a Hub id)."""
    if local is None:
        return split or str(base_cfg.get("test_split"))
    import datasets

    try:
        names = datasets.get_dataset_split_names(str(local), dataset_name)
    except Exception as err:  # noqa: BLE001 - datasets raises many kinds here; report them all alike
        raise ValueError(f"--data {local}: cannot read its splits for config {dataset_name!r} ({err})") from err
    if split is not None:
        if split not in names:
            raise ValueError(f"--split {split}: {local} [{dataset_name}] declares only the split(s) {names}")
        return split
    return str(base_cfg.get("test_split")) if base_cfg.get("test_split") in names else names[0]


def _o3d_check(local: Path | None, data: str) -> str:
    """A local O3-D folder must be in the official layout; the tasks find its image subsets there."""
    if local is not None and not (local / "visual_questions").is_dir() and not (local / "README.md").is_file():
        raise ValueError(f"--data {data}: not an O3-D dataset folder in the official layout (expected "
                         "visual_questions/ and one folder per image subset, or a README.md declaring configs)")
    return ("# O3-D: the task reads visual_questions from this source and joins its image subsets from\n"
            "# the same place (spatial_tasks/o3d/tasks.py: infer_source).\n")


def _config_for_sample(cfg: dict) -> str | None:
    """Sample tasks read one parquet file; the equivalent dataset config is its folder name."""
    files = (cfg.get("dataset_kwargs") or {}).get("data_files") or {}
    for file in files.values():
        return Path(str(file)).parent.name or None
    return None
