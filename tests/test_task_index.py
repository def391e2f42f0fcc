"""(14) lmms-eval's own task index, kept on disk (spatial_tasks/harness/task_index.py): read back only
while nothing it was made from changed, equal to lmms-eval's own indexing, logging what it logged."""

from __future__ import annotations

import textwrap

import pytest
from loguru import logger

from spatial_tasks.harness import task_index
from spatial_tasks.harness.contracts import unpatched_task_and_group


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIAL_TASKS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "task-index"


@pytest.fixture
def logged():
    """What lmms-eval's loggers write while the test runs: (level, name, function, line, message)."""
    lines: list[tuple] = []
    handler = logger.add(lambda m: lines.append(tuple(m.record[k] for k in ("name", "function", "line", "message"))
                                                + (m.record["level"].name,)), level=0)
    yield lines
    logger.remove(handler)


def bare_manager():
    """A TaskManager that has indexed nothing yet (its __init__ indexes every folder at once)."""
    from lmms_eval.tasks import TaskManager

    manager = object.__new__(TaskManager)
    manager.logger = logger
    return manager


def counting_reads(monkeypatch) -> list[str]:
    """The YAMLs lmms-eval reads from now on (each call of utils.load_yaml_config)."""
    import lmms_eval.utils

    reads: list[str] = []
    load = lmms_eval.utils.load_yaml_config

    def counted(yaml_path=None, *args, **kwargs):
        reads.append(yaml_path)
        return load(yaml_path, *args, **kwargs)

    monkeypatch.setattr(lmms_eval.utils, "load_yaml_config", counted)
    return reads


def test_lmms_evals_own_index_comes_back_equal_with_its_log_and_without_reading_a_yaml(cache, logged, monkeypatch):
    from lmms_eval.tasks import TaskManager

    from spatial_tasks import harness

    harness.install()  # as lmms-eval's CLI does, through our models' entry point
    folder = task_index.lmms_eval_task_folder()
    built = TaskManager(include_defaults=True)
    first_log = list(logged)
    assert list(cache.glob("*.json")) == [task_index.cache_file(folder)]
    logged.clear()
    reads = counting_reads(monkeypatch)
    again = TaskManager(include_defaults=True)
    ours = [p for p in reads if not p.startswith(folder)]
    assert reads and len(ours) == len(reads)  # our folders are read as before; lmms-eval's not at all
    assert again.task_index == built.task_index and len(built.task_index) > 2000
    assert logged == first_log and any("could not be loaded as a task or group" in line[3] for line in logged)
    assert unpatched_task_and_group()(bare_manager(), folder) == task_index.indexed(
        bare_manager(), folder, unpatched_task_and_group())


def write_tasks(folder, outside):
    (folder / "sub").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "ignored.yaml").write_text("task: never_indexed\n")
    (folder / "a.yaml").write_text("task: task_a\ntag: [shared]\ndataset_path: x\n")
    (folder / "sub" / "b.yaml").write_text(f"include: {outside}\ntask: task_b\n")
    (folder / "sub" / "group.yaml").write_text("group: the_group\ntask: [task_a, task_b]\n")
    (folder / "sub" / "template.yaml").write_text("dataset_path: only_a_template\n")
    outside.write_text("tag: [shared, from_outside]\n")


CHANGES = {
    "a YAML rewritten (same size)": lambda folder, outside: (folder / "a.yaml").write_text(
        "task: task_z\ntag: [shared]\ndataset_path: x\n"),
    "a YAML added": lambda folder, outside: (folder / "sub" / "c.yaml").write_text("task: task_c\n"),
    "a YAML removed": lambda folder, outside: (folder / "sub" / "group.yaml").unlink(),
    "a folder renamed": lambda folder, outside: (folder / "sub").rename(folder / "moved"),
    "a file included from elsewhere changed": lambda folder, outside: outside.write_text("tag: [other_tag]\n"),
    "a file included from elsewhere removed": lambda folder, outside: outside.unlink(),
    "the cache file cut short": lambda folder, outside: [
        path.write_text(path.read_text()[:100]) for path in (folder.parent / "cache" / "task-index").glob("*.json")],
    "the cache file not JSON of ours": lambda folder, outside: [
        path.write_text('{"made_with": 1}') for path in (folder.parent / "cache" / "task-index").glob("*.json")],
}


@pytest.mark.parametrize("change", CHANGES)
def test_anything_the_index_was_made_from_changes_and_it_is_made_anew(change, cache, tmp_path, logged):
    folder, outside = tmp_path / "tasks", tmp_path / "elsewhere" / "base.yaml"
    outside.parent.mkdir()
    write_tasks(folder, outside)
    task_dir = str(folder) + "/"
    original = unpatched_task_and_group()
    first = task_index.indexed(bare_manager(), task_dir, original)
    assert first == original(bare_manager(), task_dir) and "task_b" in first and "never_indexed" not in first
    assert first["from_outside"]["task"] == ["task_b"]
    assert task_index.cache_file(task_dir).exists()
    CHANGES[change](folder, outside)
    logged.clear()
    try:
        fresh = original(bare_manager(), task_dir)
    except Exception as error:  # noqa: BLE001 - the included file is gone: lmms-eval's own error, from the cache's reader too
        with pytest.raises(type(error)):
            task_index.indexed(bare_manager(), task_dir, original)
        return
    expected_log = list(logged)
    logged.clear()
    assert task_index.indexed(bare_manager(), task_dir, original) == fresh
    assert logged == expected_log
    if change.startswith("the cache file"):
        assert fresh == first
    else:
        assert fresh != first
    assert task_index.indexed(bare_manager(), task_dir, original) == fresh  # and kept: from the cache now


def test_a_cache_folder_that_cannot_be_written_leaves_the_index_as_lmms_eval_makes_it(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPATIAL_TASKS_CACHE", str(blocker))
    folder = tmp_path / "tasks"
    outside = tmp_path / "base.yaml"
    write_tasks(folder, outside)
    task_dir = str(folder) + "/"
    original = unpatched_task_and_group()
    assert task_index.indexed(bare_manager(), task_dir, original) == original(bare_manager(), task_dir)
    assert blocker.read_text() == "not a folder"


def test_an_index_json_cannot_keep_is_not_cached(cache, tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "numbered.yaml").write_text(textwrap.dedent("""\
        task: numbered
        tag: [2024]
    """))
    task_dir = str(folder) + "/"
    original = unpatched_task_and_group()
    index = task_index.indexed(bare_manager(), task_dir, original)
    assert index == original(bare_manager(), task_dir) and index[2024]["task"] == ["numbered"]
    assert not task_index.cache_file(task_dir).exists()


def test_the_entry_of_a_folder_that_is_gone_is_dropped_when_another_is_written(cache, tmp_path):
    original = unpatched_task_and_group()
    dirs = []
    for name in ("first", "second", "third"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "a.yaml").write_text(f"task: {name}\n")
        dirs.append(str(folder) + "/")
    task_index.indexed(bare_manager(), dirs[0], original)
    task_index.indexed(bare_manager(), dirs[1], original)
    (tmp_path / "first" / "a.yaml").unlink()
    (tmp_path / "first").rmdir()
    (cache / "unreadable.json").write_text("{")
    task_index.indexed(bare_manager(), dirs[2], original)
    assert sorted(cache.glob("*.json")) == sorted([task_index.cache_file(dirs[1]), task_index.cache_file(dirs[2]),
                                                   cache / "unreadable.json"])
