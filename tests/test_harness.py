"""The one lmms-eval seam (spatial_tasks/harness/): its assumptions about lmms-eval hold, and every
task's hooks run without lmms-eval -- from a plain script with no task object anywhere -- with docs
that work in another process (each doc carries what it needs to produce its images)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from spatial_tasks import harness
from spatial_tasks.paths import tasks_dir

# One task per process_docs hook of every benchmark, on the bundled samples (offline).
TASKS = [
    "spatialtunnel/spatialtunnel_sample_phase", "spatialtunnel/spatialtunnel_logit_sample_size",
    "spatialtunnel/spatialtunnel_embspatial_depth_split_sample", "spatialtunnel/spatialtunnel_cv_bench_3d_split_sample",
    "o3d/o3d_sample_markers", "o3d/o3d_sample_clarity_low", "o3d/o3d_sample_real", "o3d/o3d_sample_icl_cot",
    "dori/dori_sample", "vague/vague_sample_vlm",
]

# Process 1, for every task in turn: its docs through TaskData.from_yaml + load_docs, the first docs
# pickled, and what its own doc_to_visual / doc_to_text make of them. (One process for all the tasks:
# each task's hooks still run with no task object anywhere, and importing lmms-eval's utils costs
# seconds.)
BUILD = textwrap.dedent("""
    import hashlib, json, pickle, sys
    from lmms_eval.utils import load_yaml_config
    from spatial_tasks.harness import TaskData, load_docs

    made = {}
    for path, out in json.loads(sys.argv[1]):
        data, hook = TaskData.from_yaml(path)
        docs = load_docs(data, hook)
        config = load_yaml_config(path, mode="full")
        kwargs = (config.get("lmms_eval_specific_kwargs") or {}).get("default")
        picked = [docs[k] for k in range(min(3, len(docs)))]
        pickle.dump(picked, open(out, "wb"))
        seen = [[hashlib.sha1(image.convert("RGB").tobytes()).hexdigest() for image in config["doc_to_visual"](d)]
                for d in picked]
        texts = [config["doc_to_text"](d, kwargs) for d in picked]
        made[path] = {"n": len(docs), "task": data.task, "images": seen, "texts": texts}
    print(json.dumps(made))
""")

# Process 2, for every task: the pickled docs alone -- no dataset loaded, no hook run, nothing registered.
USE = textwrap.dedent("""
    import hashlib, json, pickle, sys
    from lmms_eval.utils import load_yaml_config

    used = {}
    for path, out in json.loads(sys.argv[1]):
        config = load_yaml_config(path, mode="full")
        kwargs = (config.get("lmms_eval_specific_kwargs") or {}).get("default")
        picked = pickle.load(open(out, "rb"))
        seen = [[hashlib.sha1(image.convert("RGB").tobytes()).hexdigest() for image in config["doc_to_visual"](d)]
                for d in picked]
        used[path] = {"images": seen, "texts": [config["doc_to_text"](d, kwargs) for d in picked]}
    print(json.dumps(used))
""")


def _run(script: str, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plain_script_docs(tmp_path_factory):
    """{task: (built, used)}: BUILD over every task in one plain process, then USE in another."""
    folder = tmp_path_factory.mktemp("plain_script_docs")
    jobs = [(str(tasks_dir() / f"{task}.yaml"), str(folder / f"{k}.pkl")) for k, task in enumerate(TASKS)]
    built = _run(BUILD, json.dumps(jobs))
    used = _run(USE, json.dumps(jobs))
    return {task: (built[path], used[path]) for task, (path, _) in zip(TASKS, jobs)}


def test_lmms_evals_behaviour_is_what_the_seam_assumes():
    assert harness.contract_problems() == []


def test_every_task_yaml_reads_the_same_on_libyaml():
    """(12) lmms-eval's YAML reading on PyYAML's C parser gives every config the pure-Python loader
    gives: each task YAML lmms-eval ships and each of ours as its index reads them (``!function``
    tags kept as text), and each of ours as a run reads it (lmms-eval's ``load_yaml_config`` in
    "full" mode: ``!function`` imports the hook next to the file)."""
    import glob
    import os

    import lmms_eval
    import yaml

    code = textwrap.dedent("""
        import glob, json, os, sys, yaml
        from spatial_tasks import harness
        harness.install_fast_yaml()
        assert yaml.full_load is not yaml.full_load.pure_python
        yaml.add_constructor("!function", lambda loader, node: ["!function", node.value])
        differ, read = [], 0
        for path in json.loads(sys.stdin.read()):
            outcomes = []
            for load in (yaml.full_load.pure_python, yaml.full_load):
                try:
                    with open(path, "rb") as stream:
                        outcomes.append(("ok", load(stream)))
                except yaml.YAMLError as err:
                    outcomes.append(("error", type(err).__name__))
            read += outcomes[0][0] == "ok"
            if outcomes[0] != outcomes[1]:
                differ.append(path)
        from lmms_eval.utils import load_yaml_config

        def plain(value):  # a hook loaded twice is two objects: compare what it is
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list):
                return [plain(v) for v in value]
            if callable(value):
                return f"{type(value).__name__}:{getattr(value, '__qualname__', None) or getattr(value, 'name', '')}"
            return value

        fast, full = yaml.full_load, 0
        for path in json.loads(sys.argv[1]):
            configs = []
            for load in (fast.pure_python, fast):
                yaml.full_load = load
                configs.append(plain(load_yaml_config(path, mode="full")))
            full += 1
            if configs[0] != configs[1] or "process_docs" in configs[0] and not configs[0]["process_docs"]:
                differ.append(path)
        print(json.dumps({"differ": differ, "read": read, "full": full}))
    """)
    roots = [os.path.join(os.path.dirname(lmms_eval.__file__), "tasks"), str(tasks_dir())]
    paths = sorted(p for root in roots for p in glob.glob(f"{root}/**/*yaml*", recursive=True) if os.path.isfile(p))
    ours = sorted(str(p) for p in tasks_dir().rglob("*.yaml"))
    out = subprocess.run([sys.executable, "-c", code, json.dumps(ours)], input=json.dumps(paths), capture_output=True,
                         text=True, check=True)
    result = json.loads(out.stdout)
    assert result["differ"] == [] and result["read"] > 2000 and result["full"] == len(ours) > 50
    assert yaml.__with_libyaml__


def test_a_broken_assumption_is_named(monkeypatch):
    monkeypatch.setattr(harness.upstream, "embspatial_answer_letter", lambda response: "")
    problems = harness.contract_problems()
    assert len(problems) == 1 and problems[0].startswith("(7) lmms-eval's embspatial and cv_bench letter readers take")


def test_the_supported_lmms_eval_range_is_checked_at_import():
    from importlib.metadata import version

    assert harness.LMMS_EVAL_VERSION == version("lmms_eval")  # checked when the module was imported
    for outside in ("0.7.2", "0.8.0", "0.9.1"):
        with pytest.raises(ImportError, match=rf"supports lmms-eval >=0\.7\.3,<0\.8; found {outside}"):
            harness.check_version(outside)
    assert harness.check_version("0.7.9") == "0.7.9"


@pytest.mark.parametrize("task", TASKS)
def test_hooks_run_from_a_plain_script_and_docs_work_in_another_process(task, plain_script_docs):
    built, used = plain_script_docs[task]
    assert built["n"] > 0 and built["task"] == task.split("/")[1]
    assert used == {"images": built["images"], "texts": built["texts"]}
    if not task.endswith("_lm"):
        assert all(images for images in built["images"])  # every doc shows its images


# --- tests/lmms.py forks most runs from a process that has imported lmms-eval ----------------------

VOLATILE_RESULT_KEYS = {"date", "start_time", "end_time", "total_evaluation_time_seconds", "efficiency", "usage",
                        "config"}  # config: holds the output path


@pytest.mark.cli
def test_a_forked_run_equals_the_console_script(tmp_path):
    from lmms import ForkServer, run_env, run_lmms_eval

    assert ForkServer.for_env(run_env()) is not None  # so the first run below is really forked
    runs = {how: run_lmms_eval(tmp_path / how, "spatial_baseline", "rule=vertical", "spatialtunnel_sample_phase",
                               console_script=how == "script") for how in ("forked", "script")}
    forked, script = runs["forked"], runs["script"]
    assert forked.returncode == script.returncode == 0
    assert _stable(forked.results) == _stable(script.results)
    assert forked.samples == script.samples and len(forked.samples["spatialtunnel_sample_phase"]) == 256
    # what a user reads is there too: lmms-eval's own table on stdout
    assert "|spatialtunnel_sample_phase|" in forked.output and "|spatialtunnel_sample_phase|" in script.output


@pytest.mark.cli
def test_a_forked_command_equals_the_console_script(tmp_path):
    """``spatial-tasks`` forked from its server (tests/lmms.py ``run_cli``) prints what the console
    script prints, byte for byte, and exits alike: a table, a folder's inspection, one-line errors."""
    import os

    from lmms import SPATIAL_TASKS, ForkServer, run_cli

    assert ForkServer.for_env(dict(os.environ), SPATIAL_TASKS) is not None  # so the commands below are really forked
    for argv in (["benchmarks"], ["inspect", str(tasks_dir() / "spatialtunnel" / "sample")],
                 ["rescore", "spatialtunnel", str(tmp_path / "missing")], ["no-such-command"], []):
        forked = run_cli([SPATIAL_TASKS, *argv], capture_output=True, text=True, timeout=300)
        script = subprocess.run([SPATIAL_TASKS, *argv], capture_output=True, text=True, timeout=300, check=False)
        assert (forked.returncode, forked.stdout, forked.stderr) == (script.returncode, script.stdout, script.stderr), argv


def _stable(results: dict) -> str:
    """A results file without its times, output paths and the addresses in functions' reprs."""
    import re

    kept = {k: v for k, v in results.items() if k not in VOLATILE_RESULT_KEYS}
    return re.sub(r" at 0x[0-9a-f]+", " at 0x?", json.dumps(kept, sort_keys=True))


def test_a_run_whose_environment_differs_at_import_is_the_console_script():
    from lmms import ForkServer, run_env

    assert ForkServer.for_env(run_env({"SPATIAL_TASKS_DORI_SOURCE": "/x"})) is not None  # read when a run starts
    assert ForkServer.for_env(run_env({"SPATIAL_TASKS_AUTO_INCLUDE": "0"})) is not None  # read when the index is built
    assert ForkServer.for_env(run_env({"SPATIAL_TASKS_BENCHMARKS": "x"})) is None  # not known to wait for a run
    assert ForkServer.for_env(run_env({"PYTHONPATH": "/elsewhere"})) is None


# --- what lmms-eval needs at run time but does not pin (filelock._api, gone in filelock 4.3) ---------

def _without_filelock_api(tmp_path) -> dict:
    """An environment whose filelock is shaped as 4.3 ships it: the installed one, copied ahead on
    PYTHONPATH with ``_api`` moved to another module name (everything else of it still works)."""
    import os
    import re
    import shutil
    from pathlib import Path

    import filelock

    site = tmp_path / "site"
    copy = shutil.copytree(Path(filelock.__file__).parent, site / "filelock",
                           ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "_api.py").rename(copy / "_lock_core.py")
    for module in copy.glob("*.py"):
        module.write_text(re.sub(r"\b_api\b", "_lock_core", module.read_text()))
    return {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def test_runtime_needs_hold_here_and_a_missing_one_is_one_line():
    assert harness.runtime_problems() == []
    missing = harness.RuntimeNeed("filelock", "filelock._gone", ">=3.16,<4.3", "lmms-eval imports filelock._gone")
    (line,) = harness.runtime_problems([missing])
    from importlib.metadata import version

    assert line == (f"filelock {version('filelock')} breaks lmms-eval: lmms-eval imports filelock._gone; "
                    "filelock>=3.16,<4.3 works. Fix: pip install 'filelock>=3.16,<4.3' "
                    "(or, in a checkout, the tested set: bash .ci/setup)")


@pytest.mark.cli
def test_the_lmms_eval_cli_names_a_broken_filelock_before_anything_loads(tmp_path):
    from lmms import LMMS_EVAL

    run = subprocess.run([LMMS_EVAL, "--model", "spatial_baseline", "--model_args", "rule=oracle", "--tasks",
                          "spatialtunnel_sample_phase", "--output_path", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300, env=_without_filelock_api(tmp_path))
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stderr.strip().splitlines()[-1].startswith("spatial-tasks: filelock ")
    assert "breaks lmms-eval" in run.stderr and "pip install 'filelock>=3.16,<4.3'" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()


@pytest.mark.cli
def test_spatial_tasks_demo_names_a_broken_filelock_at_once(tmp_path):
    from pathlib import Path

    cli = str(Path(sys.executable).with_name("spatial-tasks"))
    run = subprocess.run([cli, "demo", "--out", str(tmp_path / "demo")], capture_output=True, text=True,
                         timeout=300, env=_without_filelock_api(tmp_path))
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    (line,) = [x for x in run.stderr.splitlines() if x.strip()]
    assert "filelock" in line and "breaks lmms-eval" in line and "pip install 'filelock>=3.16,<4.3'" in line
    assert not (tmp_path / "demo" / "runs").exists()  # stopped before the first evaluation


def test_a_benchmark_release_and_its_override_are_one_source(monkeypatch, tmp_path):
    """Issue 66, item 3: a benchmark's Hub id and override variable stand once, in its ``Source``: every
    task's process_docs redirects by that very object, and the loader's default is what it chooses."""
    from spatial_tasks.catalog import task_catalog
    from spatial_tasks.o3d import load as o3d_load
    from spatial_tasks.registry import benchmarks

    specs, redirected = benchmarks(), set()
    for entry in task_catalog():
        if entry.kind == "task":
            _, hook = harness.TaskData.from_yaml(entry.path)
            if getattr(hook, "source", None) is not None:
                assert hook.source is specs[entry.benchmark].source, entry.name
                redirected.add(entry.benchmark)
    assert {"o3d", "dori", "vague"} <= redirected
    source = specs["o3d"].source
    assert o3d_load.default_source() == source.default
    monkeypatch.setenv(source.env, str(tmp_path))
    assert o3d_load.default_source() == str(tmp_path)
