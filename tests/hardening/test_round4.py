"""Reliability round 4 (issue 44): nothing of the user's is deleted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spatial_tasks.common.errors import UserError
from spatial_tasks.demo import DEMO_MARK, claim_folder

SPATIAL_TASKS = str(Path(sys.executable).with_name("spatial-tasks"))


def _users_folder(root: Path) -> Path:
    folder = root / "mine"
    (folder / "runs" / "paper").mkdir(parents=True)
    (folder / "runs" / "paper" / "results.json").write_text("{}")
    (folder / "logs").mkdir()
    (folder / "logs" / "train.log").write_text("a week of training\n")
    return folder


def test_the_demo_refuses_a_users_folder_and_deletes_nothing(tmp_path):
    folder = _users_folder(tmp_path)
    run = subprocess.run([SPATIAL_TASKS, "demo", "--out", str(folder)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == (f"error: --out {folder}: holds runs/ and logs/ that spatial-tasks demo did not "
                                  "write; nothing was deleted. Choose another --out (a new or empty folder), or "
                                  "move them away.")
    assert (folder / "runs" / "paper" / "results.json").read_text() == "{}"
    assert (folder / "logs" / "train.log").read_text() == "a week of training\n"
    assert not (folder / DEMO_MARK).exists()


def test_the_demo_replaces_only_what_it_wrote(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    claim_folder(fresh)
    assert (fresh / DEMO_MARK).exists()
    (fresh / "runs" / "old").mkdir(parents=True)
    (fresh / "logs").mkdir()
    claim_folder(fresh)  # a rerun: the demo's own runs and logs go
    assert not (fresh / "runs").exists() and not (fresh / "logs").exists()
    earlier = tmp_path / "earlier"  # a demo folder from before the mark: its tiny model says whose it is
    (earlier / "tiny-qwen2_5_vl").mkdir(parents=True)
    (earlier / "tiny-qwen2_5_vl" / "config.json").write_text("{}")
    (earlier / "runs").mkdir()
    claim_folder(earlier)
    assert not (earlier / "runs").exists() and (earlier / DEMO_MARK).exists()
    with pytest.raises(UserError, match="holds logs/ that spatial-tasks demo did not write"):
        only_logs = tmp_path / "only_logs"
        (only_logs / "logs").mkdir(parents=True)
        claim_folder(only_logs)
