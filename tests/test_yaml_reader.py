"""Our task YAMLs read without lmms_eval.utils (harness.yaml_reader.load_task_yaml) equal what
lmms-eval's own load_yaml_config reads, in both modes, for every YAML of every registered benchmark."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from spatial_tasks.harness.yaml_reader import load_task_yaml
from spatial_tasks.registry import benchmarks

YAMLS = sorted({p for b in benchmarks().values() for p in b.tasks_folder().rglob("*.yaml")})


def comparable(value):
    """Functions by what they are (lmms-eval loads each utils.py as a module of its own), YAML nodes
    (simple mode) by tag and value."""
    if callable(value) and hasattr(value, "__code__"):
        return ("function", value.__qualname__, value.__code__.co_filename, value.__code__.co_firstlineno)
    if isinstance(value, yaml.Node):
        return ("node", value.tag, value.value)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v) for v in value)
    return value


@pytest.mark.parametrize("mode", ["full", "simple"])
def test_every_task_yaml_reads_as_lmms_eval_reads_it(mode):
    from lmms_eval.utils import load_yaml_config

    assert len(YAMLS) > 50
    for path in YAMLS:
        assert comparable(load_task_yaml(path, mode)) == comparable(load_yaml_config(str(path), mode=mode)), path


def test_reading_our_tasks_imports_no_torch():
    code = ("import sys; from spatial_tasks.catalog import task_config, task_catalog; task_catalog(); "
            "task_config('spatialtunnel_logit_sample_phase'); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-2000:]
