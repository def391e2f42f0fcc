"""Run the real ``lmms-eval`` and ``spatial-tasks`` CLIs and read what they wrote.

lmms-eval exits 0 even when an evaluation crashed (unless --verbosity DEBUG), so callers
assert on the results file, never only on the exit code.

Each run is a process of its own, started one of two ways:
- forked from ``tests/lmms_forkserver.py``, a process per pytest worker and console script that has
  already imported what the script imports (~7 s of CPU saved per lmms-eval run, 1-4 s per
  ``spatial-tasks`` command). The child calls the console script's own ``main`` with the run's
  argv, environment, folder and files, and ends as the script ends but without freeing the heap it
  shares with the server (~2 s more per run, ~1 s per command);
- the console script itself, whenever the run's environment differs from the server's in a
  variable that is read at import (anything but ``READ_WHEN_A_RUN_STARTS``), or when a test asks
  for ``console_script=True``.
``tests/test_harness.py::test_a_forked_run_equals_the_console_script`` and
``::test_a_forked_command_equals_the_console_script`` check that both give the same output.
"""

from __future__ import annotations

import json
import locale
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

LMMS_EVAL = str(Path(sys.executable).with_name("lmms-eval"))
SPATIAL_TASKS = str(Path(sys.executable).with_name("spatial-tasks"))
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
                                    "SPATIAL_TASKS_AUTO_INCLUDE",
                                    "PYTEST_CURRENT_TEST"})  # pytest's, per test; nothing reads it
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
        returncode, stdout, stderr = server.run(argv, full_env, folder, timeout)
        output = _text(stdout) + _text(stderr)
    return read_run(out, returncode, output)


def run_cli(argv: list[str], *, capture_output: bool = False, text: bool = False, check: bool = False,
            env: dict | None = None, timeout: float | None = None, cwd: str | Path | None = None,
            **other) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, ...)`` for a ``spatial-tasks`` command, forked from the worker's
    ``spatial-tasks`` server when it can be (its output captured, nothing or /dev/null on stdin, an environment
    the server's imports agree with); otherwise ``subprocess.run`` itself. The same
    CompletedProcess, exceptions and text decoding either way."""
    full_env = dict(os.environ if env is None else env)
    server = None
    # a forked command reads /dev/null as its stdin: asking for that explicitly changes nothing
    if capture_output and other in ({}, {"stdin": subprocess.DEVNULL}) and argv[0] == SPATIAL_TASKS:
        server = ForkServer.for_env(full_env, SPATIAL_TASKS)
    if server is None:
        return subprocess.run(argv, capture_output=capture_output, text=text, check=check, env=env,
                              timeout=timeout, cwd=cwd, **other)
    returncode, stdout, stderr = server.run(argv, full_env, Path(cwd or os.getcwd()), timeout or 24 * 3600)
    if text:
        stdout, stderr = _text(stdout, strict=True), _text(stderr, strict=True)
    if check and returncode:
        raise subprocess.CalledProcessError(returncode, argv, stdout, stderr)
    return subprocess.CompletedProcess(argv, returncode, stdout, stderr)


def _text(data: bytes, strict: bool = False) -> str:
    """Bytes as ``subprocess.run(text=True)`` decodes them (universal newlines); lmms-eval's
    output, read for messages, with undecodable bytes replaced."""
    decoded = data.decode(locale.getpreferredencoding(False), "strict" if strict else "replace")
    return decoded.replace("\r\n", "\n").replace("\r", "\n")


class ForkServer:
    """The client of ``tests/lmms_forkserver.py`` (one per pytest worker and console script,
    started on first use)."""

    _started: ClassVar[dict[str, ForkServer]] = {}
    _lock = threading.Lock()

    def __init__(self, script: str, env: dict[str, str]) -> None:
        self.env = env
        server = Path(__file__).with_name("lmms_forkserver.py")
        self.proc = subprocess.Popen([sys.executable, str(server)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**self.env, "LMMS_FORKSERVER_SCRIPT": script})
        ready = self._reply()
        assert ready.get("ready") and ready.get("threads") == 1, f"fork server for {script} did not start: {ready}"
        # What its imports set (torch: TORCHINDUCTOR_CACHE_DIR): a fresh process would set the same.
        self.set_at_import = {k: v for k, v in ready["env"].items() if k not in self.env and k != "LMMS_FORKSERVER_SCRIPT"}
        self.run_lock = threading.Lock()

    @classmethod
    def for_env(cls, env: dict[str, str], script: str = LMMS_EVAL) -> ForkServer | None:
        """The worker's server for ``script``, or None when ``env`` differs from its own in a
        variable read at import.

        lmms-eval runs: one server, with a run's usual environment (``run_env()``). ``spatial-tasks``
        commands, which inherit the worker's environment: a server with the worker's environment as it
        is now, started anew when it has moved on (the worker's own imports add variables as the tests
        go: scikit-learn's KMP_DUPLICATE_LIB_OK, torch's TORCHINDUCTOR_CACHE_DIR, Blender's PATH)."""
        home = run_env() if script == LMMS_EVAL else {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
        with cls._lock:
            server = cls._started.get(script)
            alive = server is not None and server.proc.poll() is None
            if alive and script != LMMS_EVAL and server.differs_at_import(home):
                server.close()
                alive = False
            if not alive:
                server = cls._started[script] = cls(script, home)
        differs = server.differs_at_import(env)
        if differs and os.environ.get("LMMS_FORKSERVER_LOG"):  # why a run was not forked
            with open(os.environ["LMMS_FORKSERVER_LOG"], "a") as log:
                log.write(f"{os.environ.get('PYTEST_CURRENT_TEST')}\t{Path(script).name}\t{sorted(differs)}\n")
        return None if differs else server

    def close(self) -> None:
        """End the server (it stops when its requests end)."""
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def differs_at_import(self, env: dict[str, str]) -> set[str]:
        """The variables a fresh process with ``env`` would import the script's modules with, set otherwise than here."""
        def fresh(k: str) -> str | None:  # a variable its imports set, unless the environment already has it
            return env.get(k, self.set_at_import.get(k))

        def here(k: str) -> str | None:
            return self.env.get(k, self.set_at_import.get(k))

        names = set(env) | set(self.env) | set(self.set_at_import)
        return {k for k in names if fresh(k) != here(k)} - READ_WHEN_A_RUN_STARTS

    def _reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fork server ended (exit status {self.proc.wait()})")
        return json.loads(line)

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[int, bytes, bytes]:
        """(exit status, stdout, stderr) of one run."""
        with self.run_lock, tempfile.TemporaryDirectory(prefix="forked-run-") as logs:
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
            out, err = stdout.read_bytes(), stderr.read_bytes()
            if timed_out.is_set():  # as subprocess.run(timeout=...) says it
                raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
            return returncode, out, err


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


def declared_metrics(task: str) -> tuple[str, ...]:
    """The metrics our task's YAML declares (its ``metric_list``, includes resolved), in order."""
    from spatial_tasks.catalog import task_config
    from spatial_tasks.harness.data import metric_names

    return metric_names(task_config(task)[1].get("metric_list"))


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
