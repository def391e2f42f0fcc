"""Running many independent render jobs: sharding, stable seeds, atomic files, worker pools.

Nothing here imports bpy. A job list is computed up front and deterministically from the
run's flags, so every machine agrees on it:

* ``Shard("K/N")`` keeps the jobs whose position ``i`` in the full list has ``i % N == K - 1``
  (K is 1-based): N machines run ``--shard 1/N`` ... ``--shard N/N`` and together render every
  image exactly once, each shard holding every N-th image (so each shard covers all cells).
* ``derive_seed(run_seed, key)`` turns the run seed and a stable job id into a 63-bit seed with
  SHA-256, so an image gets the same seed whichever worker, shard or run renders it (Python's
  ``hash()`` is salted per process and must not be used).
* Finished outputs are written to a temporary file and ``os.replace``d, so an interrupted run
  never leaves a half-written file, and a rerun skips what is already finished.
* ``run_jobs`` runs jobs in ``workers`` long-lived processes (a ``ProcessPoolExecutor``,
  spawn context; each process builds its worker object, e.g. a Blender scene, once) or in this
  process when ``workers == 1``, with a progress bar -- or on a Ray cluster (``ray_address``):
  ``workers`` actors, each building its worker object once, spread over the cluster's nodes.

Ray (``--ray [ADDRESS]``): a job is ``(spec, work_dir)`` for every generator. An actor renders
into a scratch folder on its own node and sends the files back; this process writes them into
``work_dir`` exactly as a local worker would (atomically, the JSON record last), so the output
folder need not be shared between nodes, and the dataset's bytes do not depend on the backend.
An actor whose process dies (a killed worker, a lost node) is restarted and its job retried by
Ray (``max_restarts`` / ``max_task_retries``); finished files are never redone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------ sharding


# What a generator flag may be: far beyond any real run, far below what would hang or exhaust the
# machine (a 100,000 px render, a billion shards). One table for every generator.
FLAG_RANGES: dict[str, tuple[int, int]] = {
    "--resolution": (16, 8192),      # common.images.MAX_IMAGE_PIXELS is 8192 x 8192
    "--samples": (1, 65536),
    "--workers": (1, 1024),
    "--seed": (0, 2**63 - 1),
    "--grid": (2, 360),
    "--per-cell": (1, 100_000),
    "--count": (1, 10_000_000),
    "--patterns": (0, 100_000),
}
MAX_SHARDS = 100_000


def check_flag(flag: str, value: object) -> int:
    """``value`` when it is a whole number in ``FLAG_RANGES[flag]``; else an error naming the flag."""
    low, high = FLAG_RANGES[flag]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{flag} must be a whole number from {low:,} to {high:,}, got {value!r}")
    return value


@dataclass(frozen=True)
class Shard:
    """Shard K of N (1-based): the jobs at positions i with i % N == K - 1."""

    index: int = 1
    count: int = 1

    @classmethod
    def parse(cls, text: str, flag: str = "--shard") -> Shard:
        try:
            k_text, n_text = str(text).split("/")
            k, n = int(k_text), int(n_text)
        except ValueError:
            raise ValueError(f"{flag} must look like K/N (e.g. 1/4), got {text!r}") from None
        if n < 1 or not 1 <= k <= n:
            raise ValueError(f"{flag} {text!r} out of range: need 1 <= K <= N")
        if n > MAX_SHARDS:
            raise ValueError(f"{flag} {text!r}: at most {MAX_SHARDS:,} shards")
        return cls(k, n)

    def contains(self, position: int) -> bool:
        return position % self.count == self.index - 1

    def select(self, jobs: Sequence[Any]) -> list[Any]:
        return [job for i, job in enumerate(jobs) if self.contains(i)]

    def size_of(self, total: int) -> int:
        """How many of ``total`` jobs fall in this shard."""
        return len(range(self.index - 1, total, self.count))

    def require_jobs(self, total: int, what: str, flag: str = "--shard") -> None:
        """Refuse, before anything runs, a shard that gets none of ``total`` jobs: it would write a
        table with no rows, which no loader reads."""
        if self.size_of(total) == 0:
            raise ValueError(f"{flag} {self.label}: {what} gives {total} job(s), so shard {self.index} of "
                             f"{self.count} would get none; use at most {max(total, 1)} shard(s)")

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def slug(self) -> str:
        return f"shard-{self.index:05d}-of-{self.count:05d}"


# --------------------------------------------------------------------------------- seeds


def derive_seed(run_seed: int, key: str, namespace: str = "") -> int:
    """A 63-bit seed from the run seed and a stable id (SHA-256; identical on every machine)."""
    digest = hashlib.sha256(f"{namespace}|{int(run_seed)}|{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# --------------------------------------------------------------------------- atomic files


def _file_mode() -> int:
    """The mode a plainly created file gets (0o666 minus the umask); mkstemp would give 0o600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


TEMP_TAG = ".spatial-tasks-"  # in every temporary file's name: what clean_scratch may remove as ours


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_TAG}", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(Path(tmp))
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def temporary_sibling(path: Path) -> Path:
    """A fresh temporary name next to ``path`` (same file system, so ``os.replace`` is atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}{TEMP_TAG}", suffix=f"{path.suffix}.tmp")
    os.close(fd)
    os.chmod(tmp, _file_mode())
    return Path(tmp)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


# ---------------------------------------------------------------------------- provenance


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def threads_per_worker(workers: int, cpus: int | None = None) -> int:
    """Split the machine's cores evenly over the workers (at least one thread each)."""
    return max(1, (cpus or available_cpus()) // max(1, workers))


# ----------------------------------------------------------------------------- the pool

JOBS_QUEUED_PER_WORKER = 2
_WORKER: Callable[[Any], Any] | None = None
_WORKER_ERROR: BaseException | None = None


def _init_worker(factory: Callable[..., Callable[[Any], Any]], args: tuple) -> None:
    # A failing initializer would leave the pool broken with only "a child process terminated
    # abruptly": keep the error and raise it from the first job instead, which stops the run.
    global _WORKER, _WORKER_ERROR
    try:
        _WORKER = factory(*args)
    except BaseException as err:  # noqa: BLE001 - re-raised in _run_in_worker
        _WORKER_ERROR = err


def _run_in_worker(job: Any) -> Any:
    if _WORKER_ERROR is not None:
        raise RuntimeError(f"worker process failed to start: {_WORKER_ERROR!r}") from _WORKER_ERROR
    assert _WORKER is not None, "worker not initialised"
    return _WORKER(job)


def run_jobs(
    jobs: Sequence[Any],
    *,
    factory: Callable[..., Callable[[Any], Any]],
    factory_args: tuple = (),
    workers: int = 1,
    description: str = "rendering",
    progress: bool = True,
    ray_address: str | None = None,
    cpus_per_worker: int = 1,
) -> Iterator[Any]:
    """Yield ``worker(job)`` for every job, in completion order.

    ``factory(*factory_args)`` builds one worker callable per process, once (e.g. imports bpy
    and builds the static scene); it and the jobs must be picklable for ``workers > 1``. With
    ``workers == 1`` everything runs in this process. A failing job stops the run and its
    exception propagates; results already yielded (files already written) stay valid.

    ``ray_address``: run on Ray instead ("local" starts a local cluster; else a cluster address
    such as "127.0.0.1:6379" or "auto"); ``workers`` actors of ``cpus_per_worker`` CPUs each.
    Jobs must then be ``(spec, work_dir)`` pairs (see the module docstring).
    """
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    if not jobs:
        return
    with _progress(len(jobs), description, progress) as advance:
        if ray_address is not None:
            for result in _run_on_ray(jobs, factory, factory_args, workers, ray_address, cpus_per_worker):
                advance()
                yield result
            return
        if workers == 1:
            worker = factory(*factory_args)
            for job in jobs:
                result = worker(job)
                advance()
                yield result
            return
        executor = ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                                       mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_init_worker, initargs=(factory, factory_args))
        waiting = iter(jobs)
        running: set[Future] = set()
        try:
            while True:
                # a few jobs queued per worker, not the whole list: a future per job would hold
                # every result until the end (a million-image run)
                for job in islice(waiting, JOBS_QUEUED_PER_WORKER * workers - len(running)):
                    running.add(executor.submit(_run_in_worker, job))
                if not running:
                    break
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    result = future.result()
                    advance()
                    yield result
        except BaseException:  # a failed job, Ctrl-C, or the caller stopped reading
            _stop_now(executor, running)
            raise
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


def _stop_now(executor: ProcessPoolExecutor, futures: set[Future]) -> None:
    """Drop the jobs not started and end the workers now, not after their current job.

    Not ``multiprocessing.Pool.terminate``: it can hang for ever when a worker is killed while
    holding the result queue's lock (about one run in 35 here, with a worker that fails to start).
    The executor notices a dead worker by its process sentinel and never takes that lock.
    """
    for future in futures:
        future.cancel()
    terminate = getattr(executor, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((executor._processes or {}).values()):  # the same, before 3.14
        process.terminate()


# ------------------------------------------------------------------------------- Ray

RAY_RECORD_SUFFIX = ".json"  # the file that marks a job finished: written last
RAY_POLL_SECONDS = 0.5


class RayWorker:
    """A Ray actor around one worker object: renders into node-local scratch, returns the files."""

    def __init__(self, factory: Callable[..., Callable[[Any], Any]], args: tuple) -> None:
        self.worker = factory(*args)

    def run(self, item: tuple[int, tuple[Any, str]]) -> tuple[int, Any, dict[str, bytes]]:
        """``(i, (spec, work_dir))`` -> ``(i, worker result, {file name: bytes})``."""
        i, (spec, _) = item
        with tempfile.TemporaryDirectory(prefix="spatial-tasks-ray-") as scratch:
            result = self.worker((spec, scratch))
            files = {p.name: p.read_bytes() for p in sorted(Path(scratch).iterdir())
                     if p.is_file() and not p.name.startswith(".")}
        return i, result, files


def ray_connect(address: str) -> bool:
    """Connect this process to Ray ("local": start a local cluster); True when it started it."""
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("--ray needs Ray: pip install 'spatial-tasks[cluster]'") from None
    if ray.is_initialized():
        return False
    if address != "local":
        if address != "auto":
            check_reachable(address)
        # Ray waits ~1 s per attempt for the cluster's GCS; bound it (RAY_gcs_server_port_wait_time_s,
        # Ray's own knob: set it higher for a head that is restarting from RocksDB)
        os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(int(RAY_CONNECT_TIMEOUT)))
    try:
        ray.init(address=None if address == "local" else address, log_to_driver=False, include_dashboard=False,
                 configure_logging=False)
    except ConnectionError as err:
        raise ConnectionError(f"--ray {address}: no Ray cluster answered ({str(err).splitlines()[0][:200]}); is the "
                              "head node running (ray start --head) and the address its GCS address?") from None
    return True


RAY_CONNECT_TIMEOUT = 10.0  # seconds


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """An error naming ``--ray ADDRESS`` unless something accepts connections there within
    ``timeout`` seconds (HOST:PORT, or ray://HOST:PORT)."""
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--ray {address!r}: expected HOST:PORT (e.g. 10.0.0.5:6379), ray://HOST:PORT, auto, "
                         "or --ray alone for a local cluster")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as err:
        raise ConnectionError(f"--ray {address}: nothing answers at {host}:{port} within {timeout:g} s "
                              f"({getattr(err, 'strerror', None) or type(err).__name__}); is the head node running "
                              "(ray start --head)?") from None


def write_job_files(work_dir: Path, files: dict[str, bytes]) -> None:
    """Write a job's files atomically, its JSON record last (what marks the job finished)."""
    for name in sorted(files, key=lambda n: n.endswith(RAY_RECORD_SUFFIX)):
        atomic_write_bytes(Path(work_dir) / name, files[name])


def _run_on_ray(jobs: Sequence[Any], factory: Callable[..., Callable[[Any], Any]], factory_args: tuple,
                workers: int, address: str, cpus_per_worker: int) -> Iterator[Any]:
    import ray
    from ray.util import ActorPool

    started = ray_connect(address)
    try:
        actor = ray.remote(num_cpus=cpus_per_worker, max_restarts=-1, max_task_retries=-1)(RayWorker)
        pool = ActorPool([actor.remote(factory, factory_args) for _ in range(min(workers, len(jobs)))])
        for item in enumerate(jobs):
            pool.submit(lambda a, value: a.run.remote(value), item)
        while pool.has_next():
            try:  # a short wait, so Ctrl-C reaches this process between results
                i, result, files = pool.get_next_unordered(timeout=RAY_POLL_SECONDS)
            except TimeoutError:
                continue
            write_job_files(Path(jobs[i][1]), files)
            yield result
    finally:
        if started:
            ray.shutdown()


class _progress:
    """Progress of finished jobs (``advance()`` per job), on stderr: a rich bar on a terminal; plain
    periodic lines (count, rate, ETA) when stderr is a file or pipe, where a bar would show nothing
    until the end; silent when disabled."""

    PLAIN_EVERY_S = 30.0  # seconds between plain lines (SPATIAL_TASKS_PROGRESS_EVERY overrides)

    def __init__(self, total: int, description: str, enabled: bool) -> None:
        self.total, self.description, self.enabled = total, description, enabled
        self._progress = None
        self._plain: PlainProgress | None = None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        import sys

        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)  # stderr: Blender's own chatter on stdout is silenced around renders
        if not console.is_terminal:
            every = float(os.environ.get("SPATIAL_TASKS_PROGRESS_EVERY") or self.PLAIN_EVERY_S)
            self._plain = PlainProgress(self.total, self.description, every, sys.stderr)
            return self._plain.advance
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TimeRemainingColumn(), console=console)
        self._progress.start()
        task = self._progress.add_task(self.description, total=self.total)
        return lambda: self._progress.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
        if self._plain is not None:
            self._plain.finish(interrupted=exc[0] is not None)


class PlainProgress:
    """One line per ``every`` seconds -- "DESC: 120/3072 (3.9%), 2.10/s, ETA 0:23:25" -- plus the
    first job and the last: progress a log file or ``| tee`` can show."""

    def __init__(self, total: int, description: str, every: float, stream) -> None:
        import time

        self.total, self.description, self.every, self.stream = total, description, every, stream
        self.done, self._clock = 0, time.monotonic
        self.started = self._last = self._clock()
        self._line("started")

    def advance(self) -> None:
        self.done += 1
        now = self._clock()
        if self.done == 1 or self.done == self.total or now - self._last >= self.every:
            self._last = now
            self._line()

    def finish(self, interrupted: bool = False) -> None:
        if interrupted:
            self._line("stopped (finished jobs are kept; rerun the command to resume)")

    def _line(self, note: str | None = None) -> None:
        import datetime

        elapsed = self._clock() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = datetime.timedelta(seconds=round((self.total - self.done) / rate)) if rate > 0 else "?"
        share = f" ({100 * self.done / self.total:.1f}%)" if self.total else ""
        text = note if note else f"{rate:.2f}/s, ETA {eta}"
        print(f"{self.description}: {self.done}/{self.total}{share}, {text}", file=self.stream, flush=True)
