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

import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from spatial_tasks.known_models import card as cards
from spatial_tasks.spatialtunnel.known_models.behaviours import BEHAVIOURS, CLASSES, read_docs

# The training renders: phase variation, another seed and a finer grid than the bundled sample
# (seed 0, grid 8), at its resolution.
RENDERS = {"variant": "phase", "grid": 16, "per_cell": 4, "resolution": 128, "samples": 16, "seed": 1}
# What the card reports, through lmms-eval on the bundled sample (renders neither model saw).
EVALUATIONS = (("logit", "qwen2_5_vl_yesno", "spatialtunnel_logit_sample_phase"),
               ("exact match", "qwen2_5_vl", "spatialtunnel_sample_phase"))


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


def run_figures(folder: Path, task: str) -> dict[str, tuple[float, float, float]]:
    """v, v_cons, v_ctr and Δ of ``task`` in the lmms-eval run under ``folder``, each with its 95 %
    interval (``results.tidy.task_figures``: what ``spatial-tasks results`` reports)."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.tidy import task_figures

    found = task_figures(read_runs(folder), task)
    return {metric: found[metric] for metric in ("v", "v_cons", "v_ctr", "delta")}


def lmms_eval_figures(model_dir: Path, out: Path) -> list[Figures]:
    """Each protocol's v, v_cons, v_ctr and Δ (95 % intervals) through the lmms-eval CLI."""
    figures = []
    for protocol, model, task in EVALUATIONS:
        folder = cards.run_lmms_eval(model_dir, model, task, out / protocol.replace(" ", "_"))
        found = run_figures(folder, task)
        n = len(next(folder.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines())
        figures.append(Figures(protocol, task, found["v"], found["v_cons"], found["v_ctr"], found["delta"], n))
    return figures


def build(name: str, out: Path, renders: Path | None = None, seed: int = 0, schedule=None,
          workers: int | None = None, evaluate: bool = True) -> Path:
    """Render (or reuse), train, measure and write the model ``name`` into ``out``; returns ``out``."""
    from spatial_tasks.generators.common.jobs import available_cpus
    from spatial_tasks.generators.spatialtunnel import generate as gen
    from spatial_tasks.known_models import train

    behaviour = BEHAVIOURS[name]
    schedule = schedule or train.Schedule(seed=seed)
    out = Path(out)
    renders = Path(renders) if renders else out / "renders"
    started = time.perf_counter()

    print(f"known-model {name}: rendering the training scenes into {renders} (resumable)", file=sys.stderr)
    render_args = {k: v for k, v in RENDERS.items() if k != "variant"}
    gen.generate(RENDERS["variant"], renders, workers=workers or available_cpus(), **render_args)
    render_seconds = time.perf_counter() - started
    docs = read_docs(sorted((renders / "phase_variation").glob("*.parquet")))

    model_dir = out / "model"
    print(f"known-model {name}: {len(docs)} questions from {len({d['image_id'] for d in docs})} renders",
          file=sys.stderr)
    fitted = train.fit(model_dir, (behaviour.asked(d) for d in docs), CLASSES, ("Yes", "No"), schedule, seed,
                       f"known model '{name}': training loss")
    figures = lmms_eval_figures(model_dir, out / "eval") if evaluate else []

    card = {
        "name": name, "summary": behaviour.summary, "seed": seed,
        "renders": {**RENDERS, "images": fitted.images, "questions": fitted.questions,
                    "held_out_images": fitted.held_out_images,
                    "rendered_now": _rendered_now(renders),
                    "command": "spatial-tasks generate spatialtunnel " + " ".join(
                        f"--{k.replace('_', '-')} {v}" for k, v in RENDERS.items())},
        **fitted.card(schedule, render_seconds, started),
        "lmms_eval": [asdict(f) for f in figures],
        "model_args": cards.MODEL_ARGS,
        "files": cards.shipped(model_dir),
    }
    cards.write_card(model_dir, card, Path(__file__).with_name("card.md.jinja"))
    return out


def _rendered_now(renders: Path) -> int | None:
    """How many images this build's generator run rendered (the others were in ``--renders`` already)."""
    import json

    runs = sorted((renders / "_work" / "phase_variation").glob("*.run.json"))
    return json.loads(runs[-1].read_text()).get("images_rendered") if runs else None
