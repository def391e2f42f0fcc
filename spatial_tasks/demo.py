"""The main job, offline: baselines and a tiny Qwen2.5-VL through the real lmms-eval CLI on the
bundled SpatialTunnel sample, then ``spatial-tasks report``.

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

from spatial_tasks.report import write_report

console = Console()

TINY_QWEN_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"


def lmms_eval_command(model: str, model_args: str, tasks: str, output: Path) -> list[str]:
    exe = shutil.which("lmms-eval") or str(Path(sys.executable).with_name("lmms-eval"))
    return [exe, "--model", model, "--model_args", model_args, "--tasks", tasks,
            "--output_path", str(output), "--log_samples", "--verbosity", "DEBUG"]


def demo_runs(model_dir: Path, out: Path) -> list[tuple[str, list[str]]]:
    sample = "spatialtunnel_sample,spatialtunnel_logit_sample"
    runs = [(f"spatial_baseline rule={rule}",
             lmms_eval_command("spatial_baseline", f"rule={rule}", sample, out / "runs" / f"baseline_{rule}"))
            for rule in ("vertical", "size", "always_yes", "oracle")]
    runs.append(("tiny qwen2_5_vl (exact match)",
                 lmms_eval_command("qwen2_5_vl", f"pretrained={model_dir},{TINY_QWEN_ARGS}",
                                   "spatialtunnel_sample", out / "runs" / "tiny_qwen2_5_vl")))
    runs.append(("tiny qwen2_5_vl_yesno (first-token logits)",
                 lmms_eval_command("qwen2_5_vl_yesno", f"pretrained={model_dir},{TINY_QWEN_ARGS}",
                                   "spatialtunnel_logit_sample", out / "runs" / "tiny_qwen2_5_vl_yesno")))
    return runs


def _run(label: str, command: list[str], log: Path) -> tuple[str, int]:
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with open(log, "w", encoding="utf-8") as fh:
        code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    return label, code


def run_demo(out: Path, workers: int = 2) -> Path:
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    out.mkdir(parents=True, exist_ok=True)
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
    console.print((files[-1]).read_text(encoding="utf-8").split("## ", 1)[-1])
    return files[-1]
