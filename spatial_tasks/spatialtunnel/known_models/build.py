"""``spatial-tasks known-model shortcut|depth --out DIR``: renders, training, figures, card.

    spatial-tasks known-model shortcut --out km/shortcut [--renders km/renders]

1. renders the training scenes with our own generator (``RENDERS``: another seed and grid than the
   bundled sample's, so the sample stays unseen), resumable, shared between models via ``--renders``;
2. builds a random ``known``-shape tiny Qwen2.5-VL (``tiny_qwen.SHAPES``) and trains it on the
   behaviour's answers (``train``), 10 % of the renders held out;
3. measures what it learned through the real lmms-eval CLI on the bundled sample (both protocols)
   and writes the card (``README.md``) with the data, steps, loss curve, figures and the sha256 of
   every shipped file beside the weights in ``DIR/model``.

The same flags and seed give the same model on this machine (float sums may differ on another CPU).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from spatial_tasks.spatialtunnel.known_models.behaviours import BEHAVIOURS

# The training renders: phase variation, another seed and a finer grid than the bundled sample
# (seed 0, grid 8), at its resolution.
RENDERS = {"variant": "phase", "grid": 16, "per_cell": 4, "resolution": 128, "samples": 16, "seed": 1}
HELD_OUT = 0.1
# What the card reports, through lmms-eval on the bundled sample (renders neither model saw).
EVALUATIONS = (("logit", "qwen2_5_vl_yesno", "spatialtunnel_logit_sample_phase"),
               ("exact match", "qwen2_5_vl", "spatialtunnel_sample_phase"))
MODEL_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"
SHIPPED_FILES = ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
                 "tokenizer_config.json", "processor_config.json", "chat_template.jinja")


def checkpoint(name: str) -> Path:
    """The shipped checkpoint of a known model (``shortcut`` or ``depth``)."""
    from spatial_tasks.spatialtunnel.benchmark import DEMO

    found = {k.name: k.checkpoint for k in DEMO.known_models}
    if name not in found:
        raise ValueError(f"known model {name!r}: one of {sorted(found)}")
    return found[name]


@dataclass
class Figures:
    protocol: str
    task: str
    v: tuple[float, float, float]  # value, interval low, high
    v_cons: tuple[float, float, float]
    v_ctr: tuple[float, float, float]
    delta: tuple[float, float, float]
    n: int


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_figures(folder: Path, task: str) -> dict[str, tuple[float, float, float]]:
    """v, v_cons, v_ctr and Δ of ``task`` in the lmms-eval run under ``folder``, each with its 95 %
    interval (``results.tidy.task_figures``: what ``spatial-tasks results`` reports)."""
    from spatial_tasks.registry import get
    from spatial_tasks.results.tidy import task_figures

    found = task_figures(get("spatialtunnel"), folder, task)
    return {metric: found[metric] for metric in ("v", "v_cons", "v_ctr", "delta")}


def lmms_eval_figures(model_dir: Path, out: Path) -> list[Figures]:
    """Each protocol's v, v_cons, v_ctr and Δ (95 % intervals) through the lmms-eval CLI."""
    from spatial_tasks.common.samples import check_run

    exe = Path(sys.executable).with_name("lmms-eval")
    figures = []
    for protocol, model, task in EVALUATIONS:
        folder = out / protocol.replace(" ", "_")
        argv = [str(exe), "--model", model, "--model_args", f"pretrained={model_dir},{MODEL_ARGS}",
                "--tasks", task, "--output_path", str(folder), "--log_samples", "--verbosity", "DEBUG"]
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "lmms-eval.log"
        with log.open("w") as sink:
            subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False)
        check_run(folder, [task], log)
        found = run_figures(folder, task)
        n = len(next(folder.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines())
        figures.append(Figures(protocol, task, found["v"], found["v_cons"], found["v_ctr"], found["delta"], n))
    return figures


def _progress_printer(every: int = 50):
    """One line per ``every`` steps on stderr (a log that survives being piped), with the ETA."""
    started = time.perf_counter()

    def on_step(stage: str, step: int, total: int, loss: float, aux: dict) -> None:
        if step % every and step != total - 1:
            return
        elapsed = time.perf_counter() - started
        print(f"train {stage}: step {step + 1}/{total}, loss {loss:.3f}, {elapsed:.0f} s", file=sys.stderr, flush=True)
    return on_step


def plot_loss(history, path: Path, title: str, binding: tuple[int, int] | None = None) -> Path:
    """The two stages' losses per step (log scale); ``binding``: the steps whose answer loss was off."""
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
                   label="answer loss off: names learn to fetch their objects")
    ax.axhline(np.log(2) / 2, color="grey", linestyle=":", linewidth=1,
               label="chance for the answer (ln 2 / 2: <|im_end|> learned, Yes/No not)")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def build(name: str, out: Path, renders: Path | None = None, seed: int = 0, schedule=None,
          workers: int | None = None, evaluate: bool = True) -> Path:
    """Render (or reuse), train, measure and write the model ``name`` into ``out``; returns ``out``."""
    import torch
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    from spatial_tasks.generators.common.jobs import available_cpus
    from spatial_tasks.generators.spatialtunnel import generate as gen
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl
    from spatial_tasks.spatialtunnel.known_models import examples, train

    behaviour = BEHAVIOURS[name]
    schedule = schedule or train.Schedule(seed=seed)
    out = Path(out)
    renders = Path(renders) if renders else out / "renders"
    started = time.perf_counter()

    print(f"known-model {name}: rendering the training scenes into {renders} (resumable)", file=sys.stderr)
    render_args = {k: v for k, v in RENDERS.items() if k != "variant"}
    gen.generate(RENDERS["variant"], renders, workers=workers or available_cpus(), **render_args)
    render_seconds = time.perf_counter() - started
    docs = examples.read_docs(sorted((renders / "phase_variation").glob("*.parquet")))

    model_dir = out / "model"
    build_tiny_qwen2_5_vl(model_dir, seed=seed, shape="known")
    processor = AutoProcessor.from_pretrained(model_dir)
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32)
    print(f"known-model {name}: {len(docs)} questions from {len({d['image_id'] for d in docs})} renders",
          file=sys.stderr)
    images, questions = examples.build_examples(docs, processor, behaviour)
    n = images.pixel_values.shape[0]
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    held, kept = order[:round(n * HELD_OUT)], order[round(n * HELD_OUT):]

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        history = train.train(model, images, questions, kept, schedule, _progress_printer())
    model.save_pretrained(model_dir)

    tokenizer = processor.tokenizer
    yes, no = tokenizer.convert_tokens_to_ids("Yes"), tokenizer.convert_tokens_to_ids("No")
    held_rows = torch.isin(questions.image, held).nonzero().squeeze(1)
    held_figures = train.summary(train.p_yes(model, images, questions, held_rows, yes, no), questions, held_rows)
    plot_loss(history, model_dir / "loss.png", f"known model '{name}': training loss",
              (schedule.vision_steps, schedule.vision_steps + schedule.binding_steps))
    figures = lmms_eval_figures(model_dir, out / "eval") if evaluate else []

    files = {f: {"bytes": (model_dir / f).stat().st_size, "sha256": sha256(model_dir / f)}
             for f in SHIPPED_FILES}
    card = {
        "name": name, "summary": behaviour.summary, "seed": seed,
        "renders": {**RENDERS, "images": n, "questions": len(questions.image), "held_out_images": len(held),
                    "rendered_now": _rendered_now(renders),
                    "command": "spatial-tasks generate spatialtunnel " + " ".join(
                        f"--{k.replace('_', '-')} {v}" for k, v in RENDERS.items())},
        "schedule": asdict(schedule),
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_loss": {"vision": _tail_mean(history, "vision"), "questions": _tail_mean(history, "questions")},
        "seconds": {"render": round(render_seconds), "train": round(history.seconds),
                    "total": round(time.perf_counter() - started)},
        "held_out": held_figures,
        "lmms_eval": [asdict(f) for f in figures],
        "model_args": MODEL_ARGS,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",
        "files": files,
    }
    write_card(model_dir, card)
    return out


def write_card(model_dir: Path, card: dict) -> None:
    """``card.json`` (for programs and the hash test) and ``README.md`` (for people) beside the weights."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    (model_dir / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    env = Environment(loader=FileSystemLoader(Path(__file__).parent), undefined=StrictUndefined,
                      keep_trailing_newline=True)
    (model_dir / "README.md").write_text(env.get_template("card.md.jinja").render(card=card))


def _rendered_now(renders: Path) -> int | None:
    """How many images this build's generator run rendered (the others were in ``--renders`` already)."""
    runs = sorted((renders / "_work" / "phase_variation").glob("*.run.json"))
    return json.loads(runs[-1].read_text()).get("images_rendered") if runs else None


def _tail_mean(history, stage: str, last: int = 100) -> float | None:
    values = [v for v, s in zip(history.loss, history.stage, strict=True) if s == stage][-last:]
    return round(sum(values) / len(values), 4) if values else None
