"""A metric is one entry in its benchmark's table (``Benchmark.metrics``) plus one YAML line: every
task names its aggregations as strings (``o3d_acc``) that lmms-eval resolves through the registry our
entry point fills, in any process that imports lmms-eval's models -- as each process of a
multi-process run does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from spatial_tasks.catalog import task_catalog, task_config
from spatial_tasks.paths import tasks_dir
from spatial_tasks.registry import benchmarks

FOUR = ("o3d", "dori", "vague", "spatialtunnel")


@pytest.fixture(scope="module")
def registry():
    import lmms_eval.models  # noqa: F401 -- the entry point runs here

    from lmms_eval.api.registry import AGGREGATION_REGISTRY

    return AGGREGATION_REGISTRY


def test_every_task_metric_is_aggregated_by_its_registered_table_name(registry):
    tables = {prefix: later.load() for b in benchmarks().values() for prefix, later in b.metrics.items()}
    assert set(FOUR) <= set(tables) and "spatialtunnel_resplit" in tables
    seen = 0
    for entry in task_catalog():
        if entry.kind != "task" or entry.benchmark not in FOUR:
            continue
        _, config = task_config(entry.name)
        own = {p: t for p, t in tables.items() if p == entry.benchmark or p.startswith(f"{entry.benchmark}_")}
        for line in config["metric_list"]:
            name, metric = line["aggregation"], line["metric"]
            assert isinstance(name, str), f"{entry.name}: {metric} is aggregated by a function, not a table name"
            prefix = name[: -len(metric) - 1]
            assert name == f"{prefix}_{metric}" and prefix in own, f"{entry.name}: {name!r} for {metric!r}"
            assert registry[name].metric_function is own[prefix][metric], name
            seen += 1
    assert seen > 150  # every line of every task, not a handful


def test_a_fresh_process_that_builds_tasks_resolves_the_names():
    """What a worker of an accelerate (multi-process) run does: import lmms-eval's evaluator, nothing
    of ours by hand, and build one of our tasks."""
    code = ("from lmms_eval.evaluator import TaskManager, get_task_dict\n"
            f"tm = TaskManager(include_path={str(tasks_dir() / 'o3d')!r}, include_defaults=False)\n"
            "task = get_task_dict(['o3d_sample_markers'], tm)['o3d_sample_markers']\n"
            "agg = task.aggregation()\n"
            "print(sorted(k for k, f in agg.items() if f is None or getattr(f, 'metric_function', None) is None))\n"
            "print(len(agg))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    unresolved, count = out.stdout.strip().splitlines()[-2:]
    assert unresolved == "[]" and int(count) >= 20, out.stdout
