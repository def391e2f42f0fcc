"""Run the real ``lmms-eval`` CLI and read what it wrote.

lmms-eval exits 0 even when an evaluation crashed (unless --verbosity DEBUG), so callers
assert on the results file, never only on the exit code.

Each run is a process of its own, started one of two ways:
- forked from ``tests/lmms_forkserver.py``, a process per pytest worker that has already imported
  what the console script imports (~7 s of CPU saved per run; the tests make ~60 runs). The child
  calls the console script's own ``main`` with the run's argv, environment, folder and files;
- the console script itself, whenever the run's environment differs from the server's in a
  variable that is read at import (anything but ``READ_WHEN_A_RUN_STARTS``), or when a test asks
  for ``console_script=True``.
``tests/test_harness.py::test_a_forked_run_equals_the_console_script`` checks that both give the
same results and samples.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

LMMS_EVAL = str(Path(sys.executable).with_name("lmms-eval"))
TINY_QWEN_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"


@dataclass
class Run:
    out: Path
    returncode: int
    output: str
    results: dict | None
    samples: dict[str, list[dict]]

    def metrics(self, task: str) -> dict[str, object]:
        """{metric: value} of one task, without the stderr columns."""
        assert self.results is not None, f"lmms-eval wrote no results:\n{self.output[-4000:]}"
        raw = self.results["results"][task]
        return {k.split(",")[0]: v for k, v in raw.items() if "," in k and "_stderr" not in k}


# Read by our task hooks when a run loads its data, never at import: a forked run may set them.
READ_WHEN_A_RUN_STARTS = frozenset({"SPATIAL_TASKS_DORI_SOURCE", "SPATIAL_TASKS_VAGUE_SOURCE", "SPATIAL_TASKS_O3D_SOURCE",
                                    "SPATIAL_TASKS_BERTSCORE_MODEL", "SPATIAL_TASKS_BERTSCORE_LAYERS",
                                    "SPATIAL_TASKS_AUTO_INCLUDE"})
# The environment as the test session began (tests/conftest.py imports this module first thing):
# what a test process's own imports add later (bpy: MATERIALX_SEARCH_PATH, PATH; ray: RAY_CLIENT_MODE)
# is not a run's business.
SESSION_ENV = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def run_env(env: dict | None = None) -> dict[str, str]:
    """The environment of a run: the session's, offline, one torch thread (pytest -n 2 already keeps
    both cores busy), then ``env``."""
    return {**SESSION_ENV, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", **(env or {})}


def run_lmms_eval(out: Path, model: str, model_args: str, tasks: str, *extra: str,
                  env: dict | None = None, timeout: int = 600, cwd: Path | None = None, verbose: bool = True,
                  console_script: bool = False) -> Run:
    """One lmms-eval run as a user types it (``verbose``: --verbosity DEBUG, so that a crash is not
    hidden behind exit status 0; without it the run is what a user sees by default)."""
    argv = [LMMS_EVAL, "--model", model, "--model_args", model_args, "--tasks", tasks,
            "--output_path", str(out), "--log_samples", *(["--verbosity", "DEBUG"] if verbose else []), *extra]
    full_env, folder = run_env(env), cwd or out.parent
    server = None if console_script else ForkServer.for_env(full_env)
    if server is None:
        proc = subprocess.run(argv, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=folder)
        returncode, output = proc.returncode, proc.stdout + proc.stderr
    else:
        returncode, output = server.run(argv, full_env, folder, timeout)
    return read_run(out, returncode, output)


class ForkServer:
    """The client of ``tests/lmms_forkserver.py`` (one per pytest worker, started on first use)."""

    _started: ForkServer | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.env = run_env()
        script = Path(__file__).with_name("lmms_forkserver.py")
        self.proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**self.env, "LMMS_FORKSERVER_SCRIPT": LMMS_EVAL})
        ready = self._reply()
        assert ready.get("ready") and ready.get("threads") == 1, f"lmms fork server did not start: {ready}"
        # What its imports set (torch: TORCHINDUCTOR_CACHE_DIR): a fresh process would set the same.
        self.set_at_import = {k: v for k, v in ready["env"].items() if k not in self.env and k != "LMMS_FORKSERVER_SCRIPT"}

    @classmethod
    def for_env(cls, env: dict[str, str]) -> ForkServer | None:
        """The worker's server, or None when ``env`` differs from its own in a variable read at import."""
        with cls._lock:
            if cls._started is None or cls._started.proc.poll() is not None:
                cls._started = cls()
            server = cls._started
        differs = server.differs_at_import(env)
        if differs and os.environ.get("LMMS_FORKSERVER_LOG"):  # why a run was not forked
            with open(os.environ["LMMS_FORKSERVER_LOG"], "a") as log:
                log.write(f"{os.environ.get('PYTEST_CURRENT_TEST')}\t{sorted(differs)}\n")
        return None if differs else server

    def differs_at_import(self, env: dict[str, str]) -> set[str]:
        """The variables a fresh process with ``env`` would import lmms-eval with, set otherwise than here."""
        def fresh(k: str) -> str | None:  # a variable its imports set, unless the environment already has it
            return env.get(k, self.set_at_import.get(k))

        def here(k: str) -> str | None:
            return self.env.get(k, self.set_at_import.get(k))

        names = set(env) | set(self.env) | set(self.set_at_import)
        return {k for k in names if fresh(k) != here(k)} - READ_WHEN_A_RUN_STARTS

    def _reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"lmms fork server ended (exit status {self.proc.wait()})")
        return json.loads(line)

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[int, str]:
        with self._lock, tempfile.TemporaryDirectory(prefix="lmms-run-") as logs:
            stdout, stderr = Path(logs, "stdout"), Path(logs, "stderr")
            request = {"argv": argv, "env": env, "cwd": str(cwd), "stdout": str(stdout), "stderr": str(stderr)}
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            pid = self._reply()["pid"]
            timed_out = threading.Event()
            timer = threading.Timer(timeout, lambda: (timed_out.set(), _kill_group(pid)))
            timer.start()
            try:
                returncode = self._reply()["returncode"]
            finally:
                timer.cancel()
            output = stdout.read_text(errors="replace") + stderr.read_text(errors="replace")
            if timed_out.is_set():  # as subprocess.run(timeout=...) says it
                raise subprocess.TimeoutExpired(argv, timeout, output=output)
            return returncode, output


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def read_run(out: Path, returncode: int, output: str) -> Run:
    """What an lmms-eval run wrote under ``out`` (its newest results file and every samples file)."""
    results_files = sorted(out.rglob("*_results.json")) if out.exists() else []
    results = json.loads(results_files[-1].read_text()) if results_files else None
    samples = {}
    for path in sorted(out.rglob("*_samples_*.jsonl")) if out.exists() else []:
        task = path.stem.split("_samples_", 1)[1]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return Run(out, returncode, output, results, samples)


def is_undefined(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def assert_all_finite(metrics: dict[str, object], declared: tuple[str, ...], undefined: tuple[str, ...] = ()) -> None:
    """Every declared metric present; scalars finite; grids hold finite numbers or None -- except
    the ``undefined`` ones, which must be NaN/None (a figure these rows cannot define)."""
    for name in declared:
        assert name in metrics, f"metric {name} missing from results: {sorted(metrics)}"
        value = metrics[name]
        if name in undefined:
            assert is_undefined(value), f"{name} = {value!r}, expected undefined"
            continue
        if isinstance(value, list):
            cells = [c for row in value for c in row]
            assert any(c is not None for c in cells), f"{name} is empty"
            assert all(c is None or math.isfinite(c) for c in cells), f"{name} has a non-finite cell"
        else:
            assert isinstance(value, (int, float)) and math.isfinite(value), f"{name} = {value!r}"
