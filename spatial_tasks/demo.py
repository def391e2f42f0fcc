"""The main job, offline: baselines and a tiny Qwen2.5-VL through the real lmms-eval CLI on the
bundled SpatialTunnel and O3-D samples, then ``spatial-tasks report``.

Every evaluation is a separate ``lmms-eval`` process, exactly as a user would type it; the
tiny model is randomly initialised (its answers are noise) and only exercises the real code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from spatial_tasks.paths import output_folder
from spatial_tasks.report import write_report

console = Console()

TINY_QWEN_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"


def lmms_eval_command(model: str, model_args: str, tasks: str, output: Path) -> list[str]:
    exe = shutil.which("lmms-eval") or str(Path(sys.executable).with_name("lmms-eval"))
    return [exe, "--model", model, "--model_args", model_args, "--tasks", tasks,
            "--output_path", str(output), "--log_samples", "--verbosity", "DEBUG"]


def demo_runs(model_dir: Path, out: Path) -> list[tuple[str, list[str]]]:
    """Every evaluation of the demo: (label, lmms-eval command)."""
    runs_dir = out / "runs"
    st = "spatialtunnel_sample,spatialtunnel_logit_sample"
    o3d = "o3d_sample,o3d_sample_real"
    tiny = f"pretrained={model_dir},{TINY_QWEN_ARGS}"
    runs = [(f"spatial_baseline rule={rule} (SpatialTunnel)",
             lmms_eval_command("spatial_baseline", f"rule={rule}", st, runs_dir / f"st_baseline_{rule}"))
            for rule in ("vertical", "size", "always_yes", "oracle")]
    runs += [(f"spatial_baseline rule={rule} (O3-D)",
              lmms_eval_command("spatial_baseline", f"rule={rule}", o3d, runs_dir / f"o3d_baseline_{rule}"))
             for rule in ("depth_oracle", "always_near")]
    runs.append(("tiny qwen2_5_vl (exact match; SpatialTunnel + O3-D)",
                 lmms_eval_command("qwen2_5_vl", tiny, f"spatialtunnel_sample,{o3d}", runs_dir / "tiny_qwen2_5_vl")))
    runs.append(("tiny qwen2_5_vl_yesno (first-token logits)",
                 lmms_eval_command("qwen2_5_vl_yesno", tiny, "spatialtunnel_logit_sample",
                                   runs_dir / "tiny_qwen2_5_vl_yesno")))
    return runs


def _run(label: str, command: list[str], log: Path) -> tuple[str, int]:
    log.parent.mkdir(parents=True, exist_ok=True)
    # One thread per run: two runs share the two cores (torch would otherwise oversubscribe them).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1"}
    with open(log, "w", encoding="utf-8") as fh:
        code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    return label, code


def run_demo(out: Path, workers: int = 2) -> Path:
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    out = output_folder(out)
    model_dir = out / "tiny-qwen2_5_vl"
    if not (model_dir / "config.json").exists():
        console.print(f"[bold]Building a tiny random Qwen2.5-VL[/] -> {model_dir}")
        build_tiny_qwen2_5_vl(model_dir)
    runs = demo_runs(model_dir, out)
    console.print(f"[bold]Running {len(runs)} lmms-eval evaluations[/] (logs in {out / 'logs'})")
    with console.status("evaluating..."), ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(_run, label, cmd, out / "logs" / f"{i}.log") for i, (label, cmd) in enumerate(runs)]
        for future in futures:
            label, code = future.result()
            console.print(f"  {'[green]ok[/]' if code == 0 else f'[red]exit {code}[/]'}  {label}")
    files = write_report(out / "runs", out / "report")
    console.print(f"[bold]Report[/]: {files[-1]}")
    tables = [line for line in files[-1].read_text(encoding="utf-8").splitlines() if line.startswith(("|", "## "))]
    console.print("\n".join(tables), soft_wrap=True)
    return files[-1]
