"""Generators never destroy finished work (generators/common/folder.py): a table of second runs
on a finished dataset folder -> refused (with the one-line reason) or allowed; one writer at a
time; scratch of killed renders removed. Renders are the renderer's work files made without
Blender (tests/generators/fake_renders.py); the refusal comes before any rendering."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from generators.fake_renders import write_fake_renders
from lmms import SPATIAL_TASKS, run_cli
from spatial_tasks.generators.common.folder import LOCK_NAME, FolderBusyError, OutputFolder
from spatial_tasks.generators.spatialtunnel import generate as gen

FLAGS = {"grid": 2, "per_cell": 1, "resolution": 32, "samples": 1, "seed": 0, "shard": "1/1"}


def finished(out: Path, **changes) -> Path:
    """A folder holding a finished phase_variation made with FLAGS (+ changes)."""
    flags = {**FLAGS, **changes}
    write_fake_renders(out, "phase", grid=flags["grid"], per_cell=flags["per_cell"], seed=flags["seed"],
                       shard=flags["shard"], resolution=flags["resolution"])
    gen.generate("phase", out, **flags, steps=("build",))
    return out


def shards(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "phase_variation").glob("*.parquet"))


SECOND_RUNS = [
    # (case, flags of the second run, refused with)
    ("another seed", {"seed": 1}, r"already holds phase_variation made with --seed 0 \(this run: 1\)"),
    ("another grid", {"grid": 3}, r"made with --grid 2 \(this run: 3\)"),
    ("another resolution", {"resolution": 64}, r"made with --resolution 32 \(this run: 64\)"),
    ("another sample count", {"samples": 4}, r"made with --samples 1 \(this run: 4\)"),
    ("another shard count", {"shard": "1/2"}, r"made with shard count 1 \(this run: 2\)"),
    ("more images per cell", {"per_cell": 2}, r"made with --per-cell 1 \(this run: 2\)"),
]


@pytest.mark.parametrize(("case", "changes", "message"), SECOND_RUNS, ids=[c[0] for c in SECOND_RUNS])
def test_other_flags_on_a_finished_folder_are_refused_and_nothing_is_touched(tmp_path, case, changes, message):
    out = finished(tmp_path / "st")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    with pytest.raises(FileExistsError, match=message + r".*pass --overwrite to replace it"):
        gen.generate("phase", out, **{**FLAGS, **changes}, steps=("build",))
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    assert after == before  # not one file changed


def test_the_same_flags_resume(tmp_path):
    out = finished(tmp_path / "st")
    gen.generate("phase", out, **FLAGS, steps=("build",))
    assert shards(out) == ["test-00000-of-00001.parquet"]


def test_overwrite_replaces_the_config(tmp_path):
    out = finished(tmp_path / "st")
    with pytest.raises(FileExistsError):
        gen.generate("phase", out, **{**FLAGS, "shard": "1/2"}, steps=())
    gen.generate("phase", out, **{**FLAGS, "shard": "1/2"}, overwrite=True, steps=())  # the claim alone
    assert shards(out) == [] and not any((out / "_work" / "phase_variation").glob("phase-*.json"))
    manifest = json.loads((out / "_work" / "phase_variation" / "dataset.json").read_text())
    assert manifest["shards"] == 2


def test_the_other_shards_of_the_same_layout_are_welcome(tmp_path):
    out = tmp_path / "st"
    for k in (1, 2):
        write_fake_renders(out, "phase", grid=2, per_cell=1, seed=0, shard=f"{k}/2", resolution=32)
        gen.generate("phase", out, **{**FLAGS, "shard": f"{k}/2"}, steps=("build",))
    assert shards(out) == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]


def test_scratch_of_killed_renders_is_removed(tmp_path):
    out = finished(tmp_path / "st")
    work = out / "_work" / "phase_variation"
    (work / ".scratch").mkdir()
    (work / ".scratch" / "4242.exr").write_bytes(b"half an exr")
    (work / ".phase-r00-c00-k00.spatial-tasks-abc.png.tmp").write_bytes(b"half a png")
    (out / "phase_variation" / ".test-00000-of-00001.spatial-tasks-xyz.parquet.tmp").write_bytes(b"half a shard")
    (out / "phase_variation" / ".my-notes.tmp").write_text("mine")  # a user's file: not a name we make
    gen.generate("phase", out, **FLAGS, steps=("build",))
    leftovers = [p.name for p in out.rglob("*") if p.name.endswith(".tmp") or ".scratch" in p.parts]
    assert leftovers == [".my-notes.tmp"]


HOLD = """
import sys, time
from pathlib import Path
from spatial_tasks.generators.common.folder import OutputFolder
with OutputFolder(Path(sys.argv[1])):
    print("holding", flush=True)
    time.sleep(120)
"""


def test_a_second_run_on_a_busy_folder_stops_with_a_message_and_the_lock_dies_with_its_owner(tmp_path):
    out = tmp_path / "st"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(FolderBusyError, match=rf"{out} is being written by another `spatial-tasks generate`"):
            gen.generate("phase", out, **FLAGS, steps=("build",))
        run = run_cli([SPATIAL_TASKS, "generate", "spatialtunnel", "--out", str(out), "--variant", "phase"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and run.stderr.count("\n") == 1 and "being written by another" in run.stderr
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # as a crash or kill -9 would
        holder.wait()
    deadline = time.time() + 10
    while True:  # the OS released the lock with the process
        try:
            with OutputFolder(out):
                break
        except FolderBusyError:
            assert time.time() < deadline
            time.sleep(0.1)


def test_cli_refusal_is_one_line(tmp_path):
    out = finished(tmp_path / "st")
    run = run_cli([SPATIAL_TASKS, "generate", "spatialtunnel", "--out", str(out), "--variant", "phase",
                          "--grid", "2", "--per-cell", "1", "--resolution", "32", "--samples", "1", "--seed", "7"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1
    assert "made with --seed 0 (this run: 7)" in run.stderr
