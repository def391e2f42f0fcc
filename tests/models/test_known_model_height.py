"""O3-D's model with known behaviour (issue 65, item 6): trained on renders where height in the plane is the
one depth cue, it is right on that cue and at chance on every other, through the real lmms-eval CLI on a
held-out set the generator renders with another seed (read as custom tasks), and the report's cue heatmap
shows it. The held-out set is rendered here, as the build renders it (Blender, deterministic)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess

import pytest
from lmms import SPATIAL_TASKS

from spatial_tasks.known_models.card import SHIPPED_FILES, sha256
from spatial_tasks.o3d.known_models import build
from spatial_tasks.registry import get

CHECKPOINT = next(k.checkpoint for k in get("o3d").known_models if k.name == "height")
CHANCE, BAND, PLANTED_FLOOR, MIN_QUESTIONS = 0.5, 0.15, 0.8, 40


def test_the_command_replaces_only_what_it_made(tmp_path):
    """`spatial-tasks known-model height --out DIR` refuses a DIR/model of the user's before anything runs."""
    mine = tmp_path / "out" / "model" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    done = subprocess.run([SPATIAL_TASKS, "known-model", "height", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "Choose a new or empty --out" in done.stderr, done.stderr
    assert mine.read_text() == "mine"


def test_the_shipped_files_are_the_ones_on_the_card():
    card = json.loads((CHECKPOINT / "card.json").read_text())
    assert set(card["files"]) == set(SHIPPED_FILES)
    readme = (CHECKPOINT / "README.md").read_text()
    for file, entry in card["files"].items():
        assert (CHECKPOINT / file).stat().st_size == entry["bytes"], file
        assert sha256(CHECKPOINT / file) == entry["sha256"] and entry["sha256"] in readme, file
    assert sum((CHECKPOINT / f).stat().st_size for f in card["files"]) <= 20 * 1024 * 1024
    for picture in ("loss.png", "cue_heatmap.png"):
        assert (CHECKPOINT / picture).stat().st_size > 10_000, picture


def _cue_figure(figures: dict, cue: str) -> None:
    """Right on the planted cue, chance +- 0.15 on any other, each on at least 40 questions."""
    f = figures[cue]
    assert f["n"] >= MIN_QUESTIONS, (cue, f)
    if cue == build.PLANTED:
        assert f["acc"] >= PLANTED_FLOOR, (cue, f)
    else:
        assert abs(f["acc"] - CHANCE) <= BAND, (cue, f)


def _signature(figures: dict) -> None:
    """The whole of item 6's target (the retrain lane checks a rebuild against it)."""
    for cue in build.CUES:
        _cue_figure(figures, cue)
    assert figures["unparseable"] == 0  # it writes a letter


@pytest.mark.parametrize("cue", build.CUES)
def test_the_card_shows_the_signature(cue):
    card = json.loads((CHECKPOINT / "card.json").read_text())
    assert card["lmms_eval"]["held_out"]["unparseable"] == 0
    _cue_figure(card["lmms_eval"]["held_out"], cue)


@pytest.fixture(scope="module")
def held_out_run(tmp_path_factory):
    """The held-out set rendered by the command the card names (a process of its own: one that has imported
    bpy, as a test worker may have, finds no HDRIs in its forked render workers), and the shipped model on it
    through lmms-eval."""
    if importlib.util.find_spec("bpy") is None:
        pytest.skip("needs bpy (the lock installs it on Python 3.13)")
    out = tmp_path_factory.mktemp("height")
    argv = [SPATIAL_TASKS, *build.generator_command(build.HELD_OUT).split()[1:], "--workers", "2",
            "--out", str(out / "held-out")]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return build.held_out_figures(CHECKPOINT, out / "held-out", out / "eval")


@pytest.mark.render
@pytest.mark.cli
@pytest.mark.slow
@pytest.mark.parametrize("cue", build.CUES)
def test_the_planted_cue_is_measured_and_no_other(held_out_run, cue):
    _, figures = held_out_run
    assert figures["unparseable"] == 0
    _cue_figure(figures, cue)


@pytest.mark.render
@pytest.mark.cli
@pytest.mark.slow
def test_the_figures_are_the_cards(held_out_run):
    """The same renders and model as the card's: the same figures (float sums may differ on another CPU)."""
    _, figures = held_out_run
    card = json.loads((CHECKPOINT / "card.json").read_text())
    for cue in build.CUES:
        assert figures[cue]["n"] == card["lmms_eval"]["held_out"][cue]["n"], cue
        assert math.isclose(figures[cue]["acc"], card["lmms_eval"]["held_out"][cue]["acc"], abs_tol=0.03), cue


@pytest.mark.render
@pytest.mark.cli
@pytest.mark.slow
def test_the_report_heatmap_shows_it(held_out_run, tmp_path):
    """`spatial-tasks report` on the run draws the cue heatmap, and the single-cue cells it draws (the paper's
    Fig. 5 population: regular strength, clarity >= 3) put the planted cue alone above 0.8."""
    from spatial_tasks.o3d.rescore import records_and_metric_names, summary
    from spatial_tasks.report import write_report

    run, _ = held_out_run
    files = write_report(run, tmp_path / "report")
    assert any(f.name.startswith("o3d_cue_heatmap_") and f.stat().st_size > 10_000 for f in files)
    records = [r for f in sorted(run.rglob("*_samples_*.jsonl")) for r in records_and_metric_names(f)[0]]
    cells = summary(records)["cue_group_accuracy"]
    assert set(cells) == set(build.CUES)
    assert cells[build.PLANTED] >= PLANTED_FLOOR, cells
    assert all(value < PLANTED_FLOOR for cue, value in cells.items() if cue != build.PLANTED), cells
