"""Where the test suite's time goes: runs pytest (the README's test command unless other pytest
arguments are given after ``--``) with a small plugin, then prints the wall time, the time before the
first test (start-up and collection), each worker's idle tail, and the summed test time split into
lmms-eval runs, ``spatial-tasks`` commands and fork-server starts (``tests/lmms.py``), the workers'
garbage collection, and the slowest test files.

    .venv/bin/python benchmarks/suite_time.py                       # the whole suite, as .ci/run runs it
    .venv/bin/python benchmarks/suite_time.py -- tests/test_choice.py -n 2

Run it from a fresh clone after ``bash .ci/setup`` with nothing else running: one run's figure moves
by about 8 % on the 2-core machine. CI=true is set, as .ci/run sets it (derandomized property tests).
"""

from __future__ import annotations

import collections
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["-n", "2", "--dist", "worksteal"]  # the README's test command
LOG_VARIABLE = "SPATIAL_TASKS_SUITE_TIME_LOG"


# ---- the plugin (this file, copied next to the log and loaded with -p suite_time_plugin) ---------

def _log(**event) -> None:
    event["worker"] = os.environ.get("PYTEST_XDIST_WORKER", "")
    with open(os.environ[LOG_VARIABLE], "a", encoding="utf-8") as log:
        log.write(json.dumps(event) + "\n")


def _timed(kind: str, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _log(kind=kind, seconds=time.perf_counter() - start, test=os.environ.get("PYTEST_CURRENT_TEST", ""))
    return wrapper


def pytest_configure(config) -> None:
    """tests/lmms.py's three entry points, timed (the conftest has put tests/ on sys.path by now; test
    modules import them later, at collection)."""
    if LOG_VARIABLE not in os.environ:
        return
    import lmms

    lmms.run_lmms_eval = _timed("lmms-eval run", lmms.run_lmms_eval)
    lmms.run_cli = _timed("spatial-tasks command", lmms.run_cli)
    lmms.ForkServer.__init__ = _timed("fork-server start", lmms.ForkServer.__init__)
    collecting = {"since": 0.0, "seconds": 0.0}

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            collecting["since"] = time.perf_counter()
        else:
            collecting["seconds"] += time.perf_counter() - collecting["since"]

    gc.callbacks.append(on_gc)
    config._suite_time_gc = collecting


def pytest_runtest_logstart(nodeid: str, location) -> None:
    if LOG_VARIABLE in os.environ:
        _log(kind="start", test=nodeid, at=time.time())


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    if LOG_VARIABLE in os.environ:
        _log(kind="end", test=nodeid, at=time.time())


def pytest_runtest_logreport(report) -> None:
    if LOG_VARIABLE in os.environ:
        _log(kind="phase", test=report.nodeid, seconds=report.duration)


def pytest_unconfigure(config) -> None:
    if LOG_VARIABLE in os.environ and hasattr(config, "_suite_time_gc"):
        _log(kind="gc", seconds=config._suite_time_gc["seconds"])


# ---- the report ---------------------------------------------------------------------------------

def report(events: list[dict], wall: float, started: float) -> None:
    if any(e["worker"] for e in events):  # with xdist the controller hears every test again: the workers' own
        events = [e for e in events if e["worker"]]
    starts = [e["at"] for e in events if e["kind"] == "start"]
    ends = collections.defaultdict(float)
    for e in events:
        if e["kind"] == "end":
            ends[e["worker"]] = max(ends[e["worker"]], e["at"])
    summed = sum(e["seconds"] for e in events if e["kind"] == "phase")
    print(f"wall {wall:.1f} s; first test after {min(starts) - started:.1f} s (start-up and collection)")
    last = max(ends.values())
    for worker, end in sorted(ends.items()):
        print(f"  {worker or 'main'}: last test ended {last - end:.1f} s before the last worker's")
    print(f"summed test time (setup, call, teardown; all workers) {summed:.1f} s, of which (a command's or run's"
          " time includes the fork server it started):")
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e["kind"] in ("lmms-eval run", "spatial-tasks command", "fork-server start", "gc"):
            by_kind[e["kind"]][0] += 1
            by_kind[e["kind"]][1] += e["seconds"]
    for kind, (count, seconds) in by_kind.items():
        what = "garbage collection in the test processes" if kind == "gc" else f"{count} x {kind}"
        print(f"  {seconds:7.1f} s  {what}")
    per_file = collections.Counter()
    for e in events:
        if e["kind"] == "phase":
            per_file[e["test"].split("::")[0]] += e["seconds"]
    print("slowest test files (summed):")
    for path, seconds in per_file.most_common(15):
        print(f"  {seconds:7.1f} s  {path}")


def main(argv: list[str]) -> int:
    args = argv[argv.index("--") + 1:] if "--" in argv else DEFAULT_ARGS
    with tempfile.TemporaryDirectory(prefix="suite-time-") as folder:
        log = Path(folder) / "events.jsonl"
        log.touch()
        # Only this folder goes on PYTHONPATH: with the checkout there, the tests' fresh environments
        # would find spatial_tasks without installing their wheel.
        shutil.copy(__file__, Path(folder) / "suite_time_plugin.py")
        env = {**os.environ, "CI": "true", LOG_VARIABLE: str(log),
               "PYTHONPATH": os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))}
        started = time.time()
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "suite_time_plugin", *args], check=False,
                             cwd=ROOT, env=env)
        wall = time.time() - started
        events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not any(e["kind"] == "start" for e in events):
        print(f"pytest ran no test (exit status {run.returncode})", file=sys.stderr)
        return run.returncode or 1
    report(events, wall, started)
    print(f"pytest exit status {run.returncode}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
