"""Reliability round 5 (issue 50), through the real CLI where a user would meet it.

Item 1: nothing a user made is deleted or overwritten -- each command that removes or replaces
files deletes only what its folder's ledger (spatial_tasks/common/owned.py) proves it wrote.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from spatial_tasks.common.owned import LEDGER, Ledger, NotOurs, owned

SPATIAL_TASKS = str(Path(sys.executable).with_name("spatial-tasks"))
REFUSED = "which spatial-tasks did not write (or which changed since); nothing was deleted or replaced."


def cli(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([SPATIAL_TASKS, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_line(run: subprocess.CompletedProcess) -> str:
    """The error of a refused command: exit 2, one line on stderr, no traceback."""
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return lines[0]


# --------------------------------------------------------------------------- the ledger itself


def test_the_ledger_owns_only_unchanged_files_it_lists(tmp_path):
    ledger = Ledger(tmp_path, "test")
    (tmp_path / "ours.txt").write_text("ours")
    (tmp_path / "theirs.txt").write_text("theirs")
    ledger.record(tmp_path / "ours.txt")
    assert owned(tmp_path / "ours.txt") and not owned(tmp_path / "theirs.txt")
    (tmp_path / "ours.txt").write_text("edited by the user")
    assert not owned(tmp_path / "ours.txt")  # changed since: the user's now
    with pytest.raises(NotOurs, match=re.escape("holds ours.txt, theirs.txt, " + REFUSED)):
        ledger.remove(tmp_path / "ours.txt", tmp_path / "theirs.txt")
    assert (tmp_path / "theirs.txt").exists()  # all or nothing
    (tmp_path / LEDGER).write_text("not json\n{}\n[1]\n")  # a broken ledger proves nothing
    assert not owned(tmp_path / "ours.txt")


def test_a_file_listed_by_a_ledger_above_is_owned_and_a_link_is_never(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.txt").write_text("x")
    Ledger(tmp_path, "test").record(tmp_path / "a")
    assert owned(tmp_path / "a" / "b" / "f.txt")
    (tmp_path / "a" / "b" / "link").symlink_to(tmp_path / "a" / "b" / "f.txt")
    assert not owned(tmp_path / "a" / "b" / "link")


# --------------------------------------------------------------------------- per command


def test_the_demo_keeps_a_users_notes_beside_a_tiny_model_of_theirs(tmp_path, tiny_qwen_dir):
    """The issue's case: X/tiny-qwen2_5_vl/config.json (built by the user with tiny-model) was taken as
    proof that X was the demo's, and X/report/my_notes.md was deleted."""
    folder = tmp_path / "X"
    built = cli("tiny-model", "--out", str(folder / "tiny-qwen2_5_vl"))
    assert built.returncode == 0, built.stderr
    (folder / "report").mkdir()
    (folder / "report" / "my_notes.md").write_text("my notes")
    line = one_line(cli("demo", "--out", str(folder)))
    assert line == (f"error: spatial-tasks demo: {folder} holds report/my_notes.md, {REFUSED} Choose another --out "
                    "(a new or empty folder), or move them away.")
    assert (folder / "report" / "my_notes.md").read_text() == "my notes"


def test_the_report_replaces_its_own_files_only(baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    assert run.results is not None, run.output[-3000:]
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("my own report")
    line = one_line(cli("report", str(run.out), "--out", str(out)))
    assert line.startswith(f"error: spatial-tasks report: {out} holds report.md, {REFUSED}"), line
    assert (out / "report.md").read_text() == "my own report"
    assert sorted(p.name for p in out.iterdir()) == [LEDGER, "report.md"]  # the staging folder went too
    (out / "report.md").unlink()
    assert cli("report", str(run.out), "--out", str(out)).returncode == 0
    assert cli("report", str(run.out), "--out", str(out)).returncode == 0  # its own: replaced
    figure = next(p for p in out.glob("*.png"))
    figure.write_bytes(b"edited by hand")
    line = one_line(cli("report", str(run.out), "--out", str(out)))
    assert f"holds {figure.name}, {REFUSED}" in line, line
    assert figure.read_bytes() == b"edited by hand"


def test_generate_refuses_a_users_readme_before_rendering(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "README.md").write_text("my project")
    line = one_line(cli("generate", "spatialtunnel", "--variant", "phase", "--grid", "2", "--per-cell", "1",
                        "--resolution", "32", "--samples", "1", "--out", str(folder)))
    assert line.startswith(f"error: spatial-tasks generate: {folder} holds README.md, {REFUSED}"), line
    assert (folder / "README.md").read_text() == "my project"
    assert sorted(p.name for p in folder.iterdir()) == [".spatial-tasks.lock", "README.md"]


def test_generate_overwrite_keeps_a_users_file_in_the_config(tmp_path):
    from generators.fake_renders import write_fake_renders
    from spatial_tasks.generators.spatialtunnel import generate as gen

    flags = {"grid": 2, "per_cell": 1, "resolution": 32, "samples": 1, "seed": 0, "shard": "1/1"}
    out = tmp_path / "st"
    write_fake_renders(out, "phase", grid=2, per_cell=1, seed=0, shard="1/1", resolution=32)
    gen.generate("phase", out, **flags, steps=("build",))
    shard = next((out / "phase_variation").glob("*.parquet"))
    shutil.copy(shard, tmp_path / "keep.parquet")
    shard.write_bytes(b"the user's own file, under our name")
    with pytest.raises(NotOurs, match=re.escape(f"holds phase_variation/{shard.name}, " + REFUSED)):
        gen.generate("phase", out, **{**flags, "seed": 1}, overwrite=True, steps=("build",))
    assert shard.read_bytes() == b"the user's own file, under our name"
    assert (out / "_work" / "phase_variation" / "dataset.json").exists()  # nothing of the config went


def test_tiny_model_and_custom_task_replace_only_their_own(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text("{}")
    line = one_line(cli("tiny-model", "--out", str(mine)))
    assert line.startswith(f"error: spatial-tasks tiny-model: {mine} holds config.json, {REFUSED}"), line
    assert (mine / "config.json").read_text() == "{}"

    tasks = tmp_path / "tasks"
    made = cli("custom-task", "spatialtunnel_phase", "--data", "hub:me/st", "--out", str(tasks))
    assert made.returncode == 0, made.stderr
    yaml_file = tasks / "spatialtunnel_phase_custom.yaml"
    assert cli("custom-task", "spatialtunnel_phase", "--data", "hub:me/st2", "--out", str(tasks)).returncode == 0
    yaml_file.write_text(yaml_file.read_text() + "# my edit\n")
    line = one_line(cli("custom-task", "spatialtunnel_phase", "--data", "hub:me/st3", "--out", str(tasks)))
    assert "was not written by custom-task (or was edited since); pass --overwrite to replace it" in line, line
    assert yaml_file.read_text().endswith("# my edit\n")


def test_the_probe_overwrites_only_its_own_files(tmp_path, tiny_qwen_dir):
    from spatial_tasks.paths import benchmark_tasks_dir

    out = tmp_path / "probe"
    probe = ("probe", "--model", str(tiny_qwen_dir), "--data",
             str(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing"), "--out", str(out),
             "--dtype", "float32")
    done = cli(*probe, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert cli(*probe, "--overwrite", timeout=600).returncode == 0  # its own files: replaced
    (out / "metrics.json").write_text("{\"mine\": 1}")
    line = one_line(cli(*probe, "--overwrite", timeout=600))
    assert f"holds metrics.json, {REFUSED}" in line, line
    assert (out / "metrics.json").read_text() == "{\"mine\": 1}" and (out / "probe.json").exists()


def test_the_asset_cache_replaces_only_a_cache_it_made(tmp_path):
    from spatial_tasks.generators.o3d import assets

    archive = tmp_path / f"pybullet-{assets.PYBULLET_VERSION}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for rel in [rel for _, rel, *_ in assets._PYBULLET] + list(assets._PYBULLET_EXTRA):
            info = tarfile.TarInfo(assets.PYBULLET_PREFIX + rel)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    target = assets.pybullet_dir(tmp_path / "cache")
    target.mkdir(parents=True)
    (target / "my_mesh.obj").write_text("mine")  # a folder of the user's at the cache's path
    env = {"SPATIAL_TASKS_ASSETS": str(tmp_path / "cache")}
    line = one_line(cli("assets", "pybullet", "--archive", str(archive), env=env))
    assert f"holds {target.name}/my_mesh.obj, {REFUSED}" in line, line
    assert (target / "my_mesh.obj").read_text() == "mine"
    (target / "my_mesh.obj").unlink()
    target.rmdir()
    assert cli("assets", "pybullet", "--archive", str(archive), env=env).returncode == 0
    first = next(p for p in target.rglob("*.obj"))
    first.unlink()  # an incomplete cache of ours: replaced whole
    assert cli("assets", "pybullet", "--archive", str(archive), env=env).returncode == 0
    assert first.exists()
