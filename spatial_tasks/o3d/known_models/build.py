"""``spatial-tasks known-model height --out DIR``: renders, training, figures per cue, card.

    spatial-tasks known-model height --out km/height [--renders km/o3d-renders]

1. renders, with our own generator, the training scenes (``TRAINING``: height in the plane the one cue,
   three seeds) and a held-out set (``HELD_OUT``: every single cue, another seed), resumable, into ``--renders``
   (``held_out_renders`` alone: what the tests render to check the figures again);
2. builds a random ``known``-shape tiny Qwen2.5-VL (``tiny_qwen.SHAPES``) and trains it on the height
   rule's answers to the unmarked questions (``behaviours``), 10 % of the training renders held out;
3. measures it through the real lmms-eval CLI: on the held-out set, read as custom tasks of the three
   unmarked clarity levels, its accuracy per cue (Table 12's single-cue cells); on the bundled sample,
   the marked and unmarked tasks; and writes the card (``README.md``) beside the weights in ``DIR/model``.

The same flags and seed give the same model on this machine (float sums may differ on another CPU).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from spatial_tasks.known_models import card as cards
from spatial_tasks.o3d.known_models.behaviours import (
    CLASSES,
    PLANTED,
    SUMMARY,
    VIEWS,
    read_docs,
    training_questions,
)

# The generator runs: height in the plane alone for training (every object and environment of the default
# selection, both positions and strengths, three seeds); every single cue for the held-out set, another
# seed, three shapes in four environments (48 images a cue; FS, whose objects are the two familiar-size
# pairs and which has no strength sweep, 16). The bundled sample is seed 0.
COMMON = {"positions": "near,far", "strengths": "1,2", "resolution": 128, "samples": 16}
TRAINING = tuple({"cues": PLANTED, "objects": "blender", "seed": seed, **COMMON} for seed in (1, 2, 3))
HELD_OUT = {"cues": "all-single", "objects": "cube,cylinder,suzanne", "envs": "basic,studio,courtyard,forest",
            "seed": 4, **COMMON}
# The unmarked clarity levels (the model is trained on unmarked questions: at 128 px the release's
# 20 px markers cover the objects and their bases).
HELD_OUT_TASKS = ("o3d_clarity_low", "o3d_clarity_med", "o3d_clarity_high")
SAMPLE_TASKS = ("o3d_sample_clarity_low", "o3d_sample_clarity_med", "o3d_sample_clarity_high", "o3d_sample_markers")
CUES = ("HP", "OC", "RS", "TG", "SA", "LS", "FO", "FS")
NAMES = ("height",)  # what ``spatial-tasks known-model`` builds here (commands.py registers each)


def generator_command(run: dict) -> str:
    return "spatial-tasks generate o3d " + " ".join(f"--{k} {v}" for k, v in run.items())


def held_out_renders(folder: Path, workers: int, progress: bool = True) -> Path:
    """The held-out set in ``folder`` (made or resumed)."""
    from spatial_tasks.generators.o3d import generate as gen

    return gen.generate(folder, workers=workers, progress=progress, **HELD_OUT)


def render(renders: Path, workers: int) -> tuple[list[Path], Path]:
    """The training folders and the held-out folder under ``renders`` (made or resumed)."""
    from spatial_tasks.generators.o3d import generate as gen

    training = [gen.generate(renders / f"train-seed{run['seed']}", workers=workers, **run) for run in TRAINING]
    return training, held_out_renders(renders / "held-out", workers)


def cue_figures(folder: Path, tasks: tuple[str, ...]) -> dict:
    """Accuracy per single cue (the single-cue images, every strength, near and far) with n and a 95 %
    Wilson interval, pooled over ``tasks`` of the lmms-eval run in ``folder``, from the records the tasks
    logged and ``spatial-tasks rescore`` re-reads. (Table 12's cue columns are the marked questions only.)"""
    from spatial_tasks.common.intervals import wilson
    from spatial_tasks.o3d.metrics import accuracy
    from spatial_tasks.o3d.rescore import records_from_samples

    records = []
    for task in tasks:
        records += records_from_samples(next(folder.rglob(f"*_samples_{task}.jsonl")))
    single = [r for r in records if len(r["cues"]) == 1]
    out: dict = {}
    for cue in CUES:
        found = accuracy(r for r in single if r["cues"][0] == cue)
        n = found["n"]
        out[cue] = {"acc": found["acc"], "n": n,
                    "interval": list(wilson(round(found["acc"] * n), n)) if n else None}
    out["unparseable"] = sum(r["label"] == "unparseable" for r in records) / len(records)
    return out


def custom_tasks(data: Path, out: Path) -> Path:
    """``spatial-tasks custom-task`` of each unmarked clarity level on the held-out folder, into ``out``."""
    from spatial_tasks.catalog import write_custom_task

    for task in HELD_OUT_TASKS:
        write_custom_task(task, str(data), out, name=f"{task}_held_out", overwrite=True)
    return out


def held_out_figures(model_dir: Path, held_out: Path, out: Path) -> tuple[Path, dict]:
    """The checkpoint through the lmms-eval CLI on the held-out set (custom tasks of the unmarked clarity
    levels): the run folder, and the accuracy per cue."""
    include = custom_tasks(held_out, out / "tasks")
    names = tuple(f"{t}_held_out" for t in HELD_OUT_TASKS)
    run = cards.run_lmms_eval(model_dir, "qwen2_5_vl", ",".join(names), out / "held_out", include)
    return run, cue_figures(run, names)


def measure(model_dir: Path, held_out: Path, out: Path) -> dict:
    """Per cue on the held-out set and on the bundled sample (unmarked, marked), through the lmms-eval CLI;
    the held-out run's report, whose cue heatmap is kept beside the weights (``cue_heatmap.png``)."""
    import shutil

    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    run, held = held_out_figures(model_dir, held_out, out)
    sample = cards.run_lmms_eval(model_dir, "qwen2_5_vl", ",".join(SAMPLE_TASKS), out / "sample")
    files = write_report(read_runs(run), out / "report")
    heatmap = next(f for f in files if f.name.startswith("o3d_cue_heatmap_"))
    shutil.copyfile(heatmap, model_dir / "cue_heatmap.png")
    return {"held_out": held, "sample_unmarked": cue_figures(sample, SAMPLE_TASKS[:3]),
            "sample_markers": cue_figures(sample, SAMPLE_TASKS[3:])}


def build(name: str, out: Path, renders: Path | None = None, seed: int = 0, schedule=None,
          workers: int | None = None, evaluate: bool = True) -> Path:
    """Render (or reuse), train, measure and write the model ``name`` (``height``) into ``out``."""
    from spatial_tasks.generators.common.jobs import available_cpus
    from spatial_tasks.known_models import train

    if name not in NAMES:
        raise ValueError(f"O3-D known model {name!r}: one of {NAMES}")
    # it learns fast (held-out v 0.93 after 200 steps with the answer loss on): 1,500 question steps
    schedule = schedule or train.Schedule(seed=seed, question_steps=1500)
    out = Path(out)
    renders = Path(renders) if renders else out / "renders"
    started = time.perf_counter()
    print(f"known-model {name}: rendering the training and held-out scenes into {renders} (resumable)",
          file=sys.stderr)
    reused = all((renders / f"train-seed{run['seed']}" / "README.md").is_file() for run in TRAINING)
    training, held_out = render(renders, workers or available_cpus())
    render_seconds = time.perf_counter() - started

    model_dir = out / "model"
    docs = read_docs(training)
    questions_read = training_questions(docs)
    agree = sum((q.answer == q.first) == q.truth_first for q in questions_read)
    print(f"known-model {name}: {len(questions_read)} questions from {len(docs)} docs, each also on {VIEWS} edited "
          f"copies (those that show no target are left out); the planted rule gives the true answer on {agree}",
          file=sys.stderr)
    fitted = train.fit(model_dir, questions_read, CLASSES, ("A", "B"), schedule, seed,
                       f"known model '{name}': training loss")
    print(f"known-model {name}: held-out training renders {fitted.held_out}", file=sys.stderr)
    figures = measure(model_dir, held_out, out / "eval") if evaluate else {}
    card = {
        "name": name, "summary": SUMMARY, "seed": seed,
        "renders": {"training": [generator_command(r) for r in TRAINING],
                    "held_out": generator_command(HELD_OUT),
                    "images": fitted.images, "questions": fitted.questions, "docs": len(docs), "views": VIEWS,
                    "reused": reused,
                    "planted_equals_truth": agree, "held_out_images": fitted.held_out_images},
        **fitted.card(schedule, render_seconds, started),
        "lmms_eval": figures,
        "planted": PLANTED, "cues": list(CUES),
        "model_args": cards.MODEL_ARGS,
        "files": cards.shipped(model_dir),
    }
    cards.write_card(model_dir, card, Path(__file__).with_name("card.md.jinja"))
    return out
