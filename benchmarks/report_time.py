"""How long ``spatial-tasks report`` takes, and how often it opens each samples file: on a folder of
runs (the demo's: ``spatial-tasks demo --out D`` leaves them in ``D/runs``) and on 4 runs x 5,000
generated SpatialTunnel questions (20,000 logged samples, made as ``benchmarks/report_page.py`` makes
them). Prints, for each: the report's wall time (best of ``--repeat``), the number of samples files,
and how many times the report opened each (most, and in all).

    .venv/bin/python benchmarks/report_time.py --runs demo-out/runs [--questions 5000] [--repeat 1]
    .venv/bin/python benchmarks/report_time.py --questions 0 --one-file 100000 [--profile]

``--one-file N``: one run whose one samples file holds N lines (the docs of 64 images repeated under
new question ids); prints the report's wall time and the peak memory (max RSS) of a fresh process
that only imports spatial-tasks and writes that report, and with ``--profile`` where its time goes.

Run it on two checkouts to compare (``PYTHONPATH=<other checkout>`` imports that one's package).
"""

from __future__ import annotations

import argparse
import builtins
import gzip
import importlib.util
import io
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent


class OpenCounter:
    """Counts every open of a samples file (``*_samples_*.jsonl``), by any of Python's openers."""

    def __init__(self) -> None:
        self.opens: Counter[str] = Counter()
        self._saved = (builtins.open, io.open, gzip.open)

    def __enter__(self) -> OpenCounter:
        def counting(opener):
            def open_(file, *args, **kwargs):
                if isinstance(file, (str, Path)) and "_samples_" in Path(file).name:
                    self.opens[str(Path(file).resolve())] += 1
                return opener(file, *args, **kwargs)
            return open_

        builtins.open, io.open, gzip.open = (counting(o) for o in self._saved)
        return self

    def __exit__(self, *exc) -> None:
        builtins.open, io.open, gzip.open = self._saved


def timed_report(runs: Path, repeat: int) -> tuple[float, Counter[str]]:
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    best, opens = float("inf"), Counter()
    for _ in range(repeat):
        out = Path(tempfile.mkdtemp(prefix="report-time-"))
        try:
            with OpenCounter() as counter:
                start = time.perf_counter()
                write_report(read_runs(runs), out / "report")
                best = min(best, time.perf_counter() - start)
            opens = counter.opens
        finally:
            shutil.rmtree(out, ignore_errors=True)
    return best, opens


def line(label: str, seconds: float, opens: Counter[str], files: int) -> str:
    most = max(opens.values(), default=0)
    return (f"{label}: report {seconds:.1f} s; {files} samples files, each opened at most {most} times "
            f"({sum(opens.values())} opens in all)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, help="a folder of lmms-eval runs (the demo's runs/)")
    parser.add_argument("--questions", type=int, default=5000, help="generated questions per run (4 runs)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--one-file", type=int, default=0, help="lines of one samples file (e.g. 100000)")
    parser.add_argument("--profile", action="store_true", help="with --one-file: the top functions by time")
    args = parser.parse_args()
    import spatial_tasks

    print(f"spatial_tasks from {Path(spatial_tasks.__file__).parent}")
    if args.runs:
        files = len(list(args.runs.rglob("*_samples_*.jsonl")))
        print(line(f"runs in {args.runs}", *timed_report(args.runs, args.repeat), files))
    if args.questions:
        spec = importlib.util.spec_from_file_location("report_page", ROOT / "report_page.py")
        maker = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(maker)
        folder = Path(tempfile.mkdtemp(prefix="report-time-data-"))
        try:
            data = maker.make_data(folder, -(-args.questions // 4))
            runs = maker.make_runs(folder, data, 4)
            print(line(f"4 runs x {args.questions} generated questions", *timed_report(runs, args.repeat), 4))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if args.one_file:
        one_file(args.one_file, args.profile)


# Run in a fresh process: its peak RSS is the report's, not this script's data making.
MEASURE = """
import cProfile, pstats, sys, time
from pathlib import Path
from spatial_tasks.registry import read_runs
from spatial_tasks.report import write_report

def peak_mb():  # VmHWM: this process's own peak (ru_maxrss would carry the forking parent's across exec)
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024

runs, out, profile = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
before = peak_mb()
start = time.perf_counter()
profiler = cProfile.Profile() if profile else None
if profiler: profiler.enable()
write_report(read_runs(runs), out)
if profiler: profiler.disable()
took = time.perf_counter() - start
print(f"report {took:.1f} s; peak RSS {peak_mb():.0f} MB (after imports {before:.0f} MB)")
if profiler: pstats.Stats(profiler).sort_stats("cumulative").print_stats("spatial_tasks|matplotlib.figure|savefig", 40)
"""


def one_file(lines: int, profile: bool) -> None:
    import subprocess
    import sys

    spec = importlib.util.spec_from_file_location("report_page", ROOT / "report_page.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    folder = Path(tempfile.mkdtemp(prefix="report-time-one-"))
    try:
        made = time.perf_counter()
        runs = maker.make_runs(folder, maker.make_data(folder, 64), 1, questions=lines)
        samples = next(runs.rglob("*_samples_*.jsonl"))
        size = samples.stat().st_size / 1e6
        print(f"one samples file of {lines} lines ({size:.0f} MB), made in {time.perf_counter() - made:.0f} s")
        done = subprocess.run([sys.executable, "-c", MEASURE, str(runs), str(folder / "report"), "1" if profile else "0"],
                              capture_output=True, text=True)
        print(done.stdout.strip() or done.stderr[-3000:])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
