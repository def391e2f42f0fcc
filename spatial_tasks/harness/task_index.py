"""(14) lmms-eval's own task index, kept on disk between runs.

Whenever lmms-eval builds a TaskManager it reads every YAML it ships (1,927 in 0.7.3) to index them:
~1.4 s of every run and every ``spatial-tasks prompts`` here, even on libyaml (12). The index is a
function of those files and of lmms-eval's indexing code, so ``TaskManager._get_task_and_group`` of
lmms-eval's own task folder is read back from ``<cache>/task-index/`` when nothing it was made from
changed: the folder's list of YAMLs, each one's size, mtime, ctime and inode, any file they include
from elsewhere, lmms-eval's indexing code, and the lmms-eval, PyYAML and Python versions. What the
indexing logged is logged again on a hit, as from its original place, so a ``--verbosity DEBUG`` run
reads the same. Other folders (ours, a user's ``--include_path``: small, and edited while one works)
are indexed as before. A cache that cannot be read is made anew; one that cannot be written is
left alone (the index is then built each time, as without it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from spatial_tasks.paths import cache_folder

FORMAT = 1  # of the cache file; a file of another format is made anew
# lmms-eval's walk skips these folders (TaskManager._get_task_and_group); ours must list the same files.
IGNORED_FOLDERS = ("__pycache__", ".ipynb_checkpoints")


def _stamp(path: str) -> list[int] | None:
    """What changes when a file is written, replaced or restored with its old mtime."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


def folder_yamls(task_dir: str) -> dict[str, list[int] | None]:
    """The YAMLs lmms-eval indexes under ``task_dir``, each with its stamp."""
    found = {}
    for root, dirs, files in os.walk(task_dir):
        dirs[:] = [d for d in dirs if d not in IGNORED_FOLDERS]
        for name in files:
            if name.endswith(".yaml"):
                path = os.path.join(root, name)
                found[path] = _stamp(path)
    return found


def _made_with(task_dir: str) -> dict:
    """Everything but the YAMLs that the index depends on."""
    import lmms_eval
    import lmms_eval.tasks
    import lmms_eval.utils
    import yaml

    code = {module.__file__: _stamp(module.__file__) for module in (lmms_eval.tasks, lmms_eval.utils)}
    return {"format": FORMAT, "task_dir": task_dir, "lmms_eval": getattr(lmms_eval, "__version__", None),
            "pyyaml": yaml.__version__, "libyaml": bool(getattr(yaml, "__with_libyaml__", False)),
            "python": sys.version, "code": code}


def cache_file(task_dir: str) -> Path:
    return cache_folder() / "task-index" / f"{hashlib.sha256(task_dir.encode()).hexdigest()[:24]}.json"


def _read(task_dir: str, made_with: dict, yamls: dict) -> dict | None:
    """The cached entry for ``task_dir``, or None when there is none or anything it was made from changed."""
    try:
        entry = json.loads(cache_file(task_dir).read_text())
        if entry["made_with"] != made_with or entry["yamls"] != yamls:
            return None
        if any(_stamp(path) != stamp for path, stamp in entry["included"].items()):
            return None
        return entry
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write(task_dir: str, entry: dict) -> None:
    """Written whole or not at all (two runs may build the index at once); a folder we cannot write is no error."""
    path = cache_file(task_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(entry, out)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return
    _forget_gone_folders(path.parent)


def _forget_gone_folders(folder: Path) -> None:
    """Each lmms-eval installation (a virtual environment, a fresh clone's) leaves an entry; drop those
    whose task folder is gone, when an entry is written (rarely: once per installation or change)."""
    for other in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
            if not os.path.isdir(json.loads(other.read_text())["made_with"]["task_dir"]):
                other.unlink()


def _build(manager, task_dir: str, original) -> tuple[dict, list[dict], list[str]]:
    """lmms-eval's own indexing, recording the YAMLs it read and what it logged."""
    import lmms_eval.utils
    from loguru import logger

    read: list[str] = []
    logged: list[dict] = []
    load_yaml_config = lmms_eval.utils.load_yaml_config

    @functools.wraps(load_yaml_config)
    def recording(yaml_path=None, *args, **kwargs):  # includes come back through the module's name too
        if yaml_path is not None:
            read.append(os.path.abspath(yaml_path))
        return load_yaml_config(yaml_path, *args, **kwargs)

    def keep(message) -> None:
        record = message.record
        logged.append({"level": record["level"].name, "message": record["message"],
                       "where": {k: record[k] for k in ("name", "module", "function", "line")}})

    building = threading.get_ident()  # anything logged on this thread while the index is built
    handler = logger.add(keep, level=0, format="{message}", filter=lambda record: record["thread"].id == building)
    lmms_eval.utils.load_yaml_config = recording
    try:
        index = original(manager, task_dir)
    finally:
        lmms_eval.utils.load_yaml_config = load_yaml_config
        logger.remove(handler)
    return index, logged, read


def indexed(manager, task_dir: str, original) -> dict:
    """``original(manager, task_dir)`` (lmms-eval's ``_get_task_and_group``), from the cache when it holds
    the index of these very files."""
    made_with, yamls = _made_with(task_dir), folder_yamls(task_dir)
    entry = _read(task_dir, made_with, yamls)
    if entry is not None:
        for line in entry["logged"]:
            manager.logger.patch(lambda record, where=line["where"]: record.update(where)).log(line["level"], line["message"])
        return entry["index"]
    index, logged, read = _build(manager, task_dir, original)
    # Only an index that JSON keeps as it is (task names that are strings) is kept.
    if json.loads(json.dumps(index)) == index:
        included = {path: _stamp(path) for path in read if path not in yamls}
        _write(task_dir, {"made_with": made_with, "yamls": yamls, "included": included, "index": index, "logged": logged})
    return index


def lmms_eval_task_folder() -> str:
    """The folder string TaskManager.initialize_tasks passes for lmms-eval's own tasks."""
    import lmms_eval.tasks

    return os.path.dirname(os.path.abspath(lmms_eval.tasks.__file__)) + "/"


def install_task_index_cache() -> None:
    """14. ``TaskManager._get_task_and_group`` of lmms-eval's own folder read through the cache (idempotent)."""
    from lmms_eval.tasks import TaskManager

    original = TaskManager._get_task_and_group
    if getattr(original, "_spatial_tasks", False):
        return

    @functools.wraps(original)
    def _get_task_and_group(self, task_dir: str):
        if task_dir != lmms_eval_task_folder():
            return original(self, task_dir)
        return indexed(self, task_dir, original)

    _get_task_and_group._spatial_tasks = True
    TaskManager._get_task_and_group = _get_task_and_group
