"""What every known-behaviour build shares around the training: the files that ship and their hashes,
the card beside the weights, the loss curve, the progress lines, a checkpoint through the lmms-eval CLI."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from spatial_tasks.known_models.examples import MAX_PIXELS, MIN_PIXELS

# On the CPU, with the pixel bounds the models were trained with (examples: the training inputs).
MODEL_ARGS = f"device=cpu,device_map=cpu,min_pixels={MIN_PIXELS},max_pixels={MAX_PIXELS}"
SHIPPED_FILES = ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
                 "tokenizer_config.json", "processor_config.json", "chat_template.jinja")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def shipped(model_dir: Path) -> dict[str, dict]:
    """Bytes and sha256 of every file that ships, for the card (a test checks them)."""
    return {f: {"bytes": (model_dir / f).stat().st_size, "sha256": sha256(model_dir / f)} for f in SHIPPED_FILES}


def machine() -> str:
    import torch

    return f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}"


def run_lmms_eval(model_dir: Path, model: str, tasks: str, folder: Path, include_path: Path | None = None) -> Path:
    """The checkpoint through the lmms-eval CLI (``--log_samples``) into ``folder``; its run checked
    (lmms-eval exits 0 after a crash: the result files are what count)."""
    from spatial_tasks.common.samples import check_run
    from spatial_tasks.demo import lmms_eval_command

    extra = ["--verbosity", "DEBUG"] + (["--include_path", str(include_path)] if include_path is not None else [])
    argv = lmms_eval_command(model, f"pretrained={model_dir},{MODEL_ARGS}", tasks, folder, *extra)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "lmms-eval.log"
    with log.open("w") as sink:
        subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False)
    check_run(folder, tasks.split(","), log)
    return folder


def progress_printer(every: int = 50):
    """One line per ``every`` steps on stderr (a log that survives being piped), with the time so far."""
    started = time.perf_counter()

    def on_step(stage: str, step: int, total: int, loss: float, aux: dict) -> None:
        if step % every and step != total - 1:
            return
        elapsed = time.perf_counter() - started
        print(f"train {stage}: step {step + 1}/{total}, loss {loss:.3f}, {elapsed:.0f} s", file=sys.stderr, flush=True)
    return on_step


def plot_loss(history, path: Path, title: str, binding: tuple[int, int] | None = None,
              chance: tuple[float, str] | None = None) -> Path:
    """The two stages' losses per step (log scale); ``binding``: the steps whose answer loss was off;
    ``chance``: the answer loss at chance, and what it means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    steps, loss, stages = np.array(history.step), np.array(history.loss), np.array(history.stage)
    window = 25
    for stage, colour, label in (("vision", "#8c6bb1", "vision stage: cell classes and cue (aux heads)"),
                                 ("questions", "#2b8cbe", "question stage: answer + <|im_end|> cross-entropy")):
        picked = stages == stage
        if not picked.any():
            continue
        x, y = steps[picked], loss[picked]
        ax.plot(x, y, color=colour, alpha=0.25, linewidth=0.8)
        if len(y) >= window:
            ax.plot(x[window - 1:], np.convolve(y, np.ones(window) / window, mode="valid"), color=colour,
                    linewidth=1.8, label=f"{label} ({window}-step mean)")
    if binding:
        ax.axvspan(*binding, color="#999999", alpha=0.15, linewidth=0,
                   label="answer loss off: references learn to fetch their objects")
    if chance:
        ax.axhline(chance[0], color="grey", linestyle=":", linewidth=1, label=chance[1])
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def tail_mean(history, stage: str, last: int = 100) -> float | None:
    values = [v for v, s in zip(history.loss, history.stage, strict=True) if s == stage][-last:]
    return round(sum(values) / len(values), 4) if values else None


def write_card(model_dir: Path, card: dict, template: Path) -> None:
    """``card.json`` (for programs and the hash test) and ``README.md`` (``template`` rendered: for people)
    beside the weights."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    (model_dir / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    env = Environment(loader=FileSystemLoader(template.parent), undefined=StrictUndefined, keep_trailing_newline=True)
    (model_dir / "README.md").write_text(env.get_template(template.name).render(card=card))
