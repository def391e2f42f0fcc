"""Run the real ``lmms-eval`` console script and read what it wrote.

lmms-eval exits 0 even when an evaluation crashed (unless --verbosity DEBUG), so callers
assert on the results file, never only on the exit code.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
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


def run_lmms_eval(out: Path, model: str, model_args: str, tasks: str, *extra: str,
                  env: dict | None = None, timeout: int = 600, cwd: Path | None = None, verbose: bool = True) -> Run:
    """One lmms-eval run as a user types it (``verbose``: --verbosity DEBUG, so that a crash is not
    hidden behind exit status 0; without it the run is what a user sees by default)."""
    cmd = [LMMS_EVAL, "--model", model, "--model_args", model_args, "--tasks", tasks,
           "--output_path", str(out), "--log_samples", *(["--verbosity", "DEBUG"] if verbose else []), *extra]
    # One torch thread per run: pytest -n 2 already keeps both cores busy.
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd or out.parent)
    return read_run(out, proc.returncode, proc.stdout + proc.stderr)


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
