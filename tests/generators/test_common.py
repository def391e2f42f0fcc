"""The shared generator layer without Blender: the worker pool and the bpy path guard."""

from __future__ import annotations

import multiprocessing
import operator
import os
import subprocess
import sys
import time

import pytest
from spatial_tasks.generators.common import blender
from spatial_tasks.generators.common.jobs import run_jobs, threads_per_worker


@pytest.mark.parametrize("workers", [1, 2])
def test_run_jobs_returns_every_result(workers):
    jobs = [(k, k * k) for k in range(6)]
    results = list(run_jobs(jobs, factory=operator.itemgetter, factory_args=(1,), workers=workers,
                            progress=False))
    assert sorted(results) == [k * k for k in range(6)]


def test_a_worker_that_cannot_start_stops_the_run_instead_of_hanging():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="failed to start"):
        list(run_jobs([1, 2, 3], factory=int, factory_args=("not a number",), workers=2, progress=False))
    assert time.monotonic() - start < 60


class SleepOrFail:
    """A worker for the pool tests: a number is seconds to sleep, anything else fails."""

    def __call__(self, job):
        if isinstance(job, (int, float)):
            time.sleep(job)
            return os.getpid()
        raise ValueError(f"job {job!r} failed")


def test_a_failed_job_ends_the_other_workers_at_once():
    """The run stops when a job fails, without waiting for the 120 s job another worker is on,
    and leaves no worker process behind."""
    before = set(multiprocessing.active_children())
    start = time.monotonic()
    with pytest.raises(ValueError, match="job 'bad' failed"):
        list(run_jobs([120, "bad"], factory=SleepOrFail, workers=2, progress=False))
    assert time.monotonic() - start < 60
    assert set(multiprocessing.active_children()) - before == set()


STOP_MANY_TIMES = """
from spatial_tasks.generators.common.jobs import run_jobs
for _ in range(40):
    try:
        list(run_jobs([1, 2, 3], factory=int, factory_args=("not a number",), workers=2, progress=False))
    except RuntimeError:
        pass
    else:
        raise SystemExit("the run did not stop")
"""


def test_stopping_a_run_never_hangs():
    """multiprocessing.Pool.terminate hung here about one run in 35 (a worker killed while holding
    the result queue's lock): 40 stopped runs in a row, each of which must end."""
    done = subprocess.run([sys.executable, "-c", STOP_MANY_TIMES], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_bad_worker_count():
    with pytest.raises(ValueError, match="--workers"):
        list(run_jobs([1], factory=operator.itemgetter, factory_args=(0,), workers=0))


def test_threads_split_the_cores():
    assert threads_per_worker(1, cpus=8) == 8
    assert threads_per_worker(2, cpus=8) == 4
    assert threads_per_worker(16, cpus=8) == 1


def test_blender_scripts_folder_is_recognised():
    # a spawned worker inherits sys.path; this folder must not shadow the real bpy module
    assert blender._is_blender_scripts_path("/venv/lib/python3.13/site-packages/bpy/5.2/scripts/modules")
    assert blender._is_blender_scripts_path("/venv/lib/python3.13/site-packages/bpy/5.2/scripts/addons_core")
    assert not blender._is_blender_scripts_path("/venv/lib/python3.13/site-packages")
    assert not blender._is_blender_scripts_path("/home/me/scripts")
