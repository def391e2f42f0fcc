"""A local dataset folder is read as it is now: datasets caches a folder's configs under the folder's name
and the config's, not its files, so two folders of one name (``runs/a/o3d``, ``runs/b/o3d``), or one folder
generated again, used to give the first one's rows, silently (found training the O3-D known model: its
HP renders in ``.../train-seed1`` read back as the RS renders of another ``train-seed1``).
``common.origin.folder_cache`` gives each version of a folder's files its own cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from lmms import run_lmms_eval

from spatial_tasks.common.origin import folder_cache
from spatial_tasks.o3d import load
from spatial_tasks.paths import tasks_dir

SAMPLE = tasks_dir() / "o3d" / "sample"


def _copy(to: Path, keep_questions: int | None = None) -> Path:
    """The bundled O3-D sample in the official layout at ``to``, with only the first ``keep_questions``."""
    shutil.copytree(SAMPLE, to)
    if keep_questions is not None:
        _keep(to, keep_questions)
    return to


def _keep(folder: Path, n: int) -> None:
    questions = next((folder / "visual_questions").glob("*.parquet"))
    table = pq.read_table(questions)
    pq.write_table(table.slice(0, n), questions)


def test_two_folders_of_one_name_give_their_own_rows(tmp_path):
    first = _copy(tmp_path / "a" / "o3d")
    second = _copy(tmp_path / "b" / "o3d", keep_questions=60)
    everything = load.load_o3d(str(first))
    fewer = load.load_o3d(str(second))  # before: the first folder's rows, from the cache of the name "o3d"
    assert len(fewer) < len(everything)
    assert {d["question_id"] for d in fewer} < {d["question_id"] for d in everything}
    assert folder_cache(first)["cache_dir"] != folder_cache(second)["cache_dir"]


def test_a_folder_written_again_is_read_again(tmp_path):
    folder = _copy(tmp_path / "o3d")
    before = len(load.load_o3d(str(folder)))
    cache = folder_cache(folder)["cache_dir"]
    _keep(folder, 40)
    assert folder_cache(folder)["cache_dir"] != cache
    assert len(load.load_o3d(str(folder))) < before


def test_what_the_caller_chose_and_what_is_not_a_folder_stay(tmp_path):
    assert folder_cache(tmp_path, {"cache_dir": "mine", "revision": "x"}) == {"cache_dir": "mine", "revision": "x"}
    assert folder_cache("liuyiqian/O3-D", {"revision": "x"}) == {"revision": "x"}
    # the ledger and the generators' work files are not data: writing them changes nothing
    folder = _copy(tmp_path / "o3d")
    cache = folder_cache(folder)["cache_dir"]
    (folder / ".spatial-tasks-ledger").write_text("x")
    (folder / "_work").mkdir()
    (folder / "_work" / "scratch").write_text("x")
    assert folder_cache(folder)["cache_dir"] == cache


@pytest.mark.cli
@pytest.mark.slow
def test_lmms_eval_reads_each_folder_of_one_name_as_it_is(tmp_path):
    """The harness's path: a custom task on ``a/o3d``, then one on ``b/o3d`` with fewer questions."""
    from lmms import SPATIAL_TASKS, run_cli

    counts = {}
    for name, keep in (("a", None), ("b", 120)):
        data = _copy(tmp_path / name / "o3d", keep_questions=keep)
        made = run_cli([SPATIAL_TASKS, "custom-task", "o3d_clarity_low", "--data", str(data), "--out",
                        str(tmp_path / name / "tasks"), "--name", "o3d_clarity_low_mine"], capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        run = run_lmms_eval(tmp_path / name / "out", "spatial_baseline", "rule=always_near", "o3d_clarity_low_mine",
                            "--include_path", str(tmp_path / name / "tasks"))
        assert run.results is not None, run.output[-3000:]
        counts[name] = len(run.samples["o3d_clarity_low_mine"])
    unmarked_low = lambda folder: sum(
        1 for q in pq.read_table(next((folder / "visual_questions").glob("*.parquet"))).to_pylist()
        if q["ques_clarity"] == 2.0 and not q["is_marked"] and q["subset_name"].startswith("kb-"))
    assert counts == {"a": unmarked_low(tmp_path / "a" / "o3d"), "b": unmarked_low(tmp_path / "b" / "o3d")}
    assert counts["b"] < counts["a"]
