"""``spatial-tasks inspect``: on every bundled sample and every layout we read it names the reader
that takes it; on an unknown layout it says why none does; it never downloads."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from dori import official_layouts
from spatialtunnel.official_tables import official_rows, write_official

from spatial_tasks.common.validate import DataError
from spatial_tasks.inspect_source import inspect_source, render
from lmms import SPATIAL_TASKS, run_cli

TASKS = Path("tasks")


def accepted(report) -> set[str]:
    found = {b for s in report.splits for b, v in s.readers.items() if v.startswith("accepted")}
    return found | {b for b, v in report.folder_readers.items() if v.startswith("accepted")}


@pytest.mark.parametrize(("folder", "reader", "configs"), [
    ("spatialtunnel/sample/contrastive_probing", "spatialtunnel", {"default"}),
    ("spatialtunnel/sample", "spatialtunnel", {"phase_variation", "size_variation", "contrastive_probing"}),
    ("spatialtunnel/sample/embspatial_depth", "spatialtunnel", {"default"}),
    ("spatialtunnel/sample/cv_bench_3d_depth", "spatialtunnel", {"default"}),
    ("o3d/sample", "o3d", {"visual_questions", "kb-0cue", "kb-1cue", "kb-2cue", "real-012cue-cropped"}),
    ("dori/sample", "dori", {"default"}),
    ("vague/sample/hub", "vague", {"default"}),
])
def test_every_bundled_sample(folder, reader, configs):
    report = inspect_source(str(TASKS / folder))
    assert {s.config for s in report.splits} == configs
    assert all(s.columns and s.sample for s in report.splits)
    assert accepted(report) == {reader}  # issue 32: listed only where its loader reads the rows
    text = render(report)
    assert "read by:" in text and "first row:" in text


def test_the_vague_github_layout_is_read_as_a_folder():
    report = inspect_source(str(TASKS / "vague/sample/github"))
    assert report.folder_readers["vague"].startswith("accepted: the GitHub layout")
    assert "read by: vague" in render(report)


def test_the_official_spatialtunnel_tables(tmp_path):
    generated = datasets.load_dataset("parquet", split="train",
                                      data_files=str(TASKS / "spatialtunnel/sample/size_variation/test-00000-of-00001.parquet"))
    rows, _ = official_rows(generated)
    write_official(tmp_path / "release", "size_variation", rows)
    write_official(tmp_path / "release", "size_variation", rows, tsv=True)
    report = inspect_source(str(tmp_path / "release"), benchmark="spatialtunnel")
    assert [r for s in report.splits for r in s.readers.values()] and all(
        v.startswith("accepted: official table") for s in report.splits for v in s.readers.values())
    assert report.splits[0].sample["image"].startswith("<image")


@pytest.mark.parametrize("layout", official_layouts.LAYOUTS)
def test_every_dori_layout_we_read(tmp_path, layout):
    folder = official_layouts.write(layout, tmp_path / layout)
    report = inspect_source(str(folder), benchmark="dori")
    assert "dori" in accepted(report), render(report)


def test_an_unknown_layout_says_why_no_reader_takes_it(tmp_path):
    (tmp_path / "odd").mkdir()
    datasets.Dataset.from_dict({"prompt": ["what?"], "label": [1]}).to_parquet(str(tmp_path / "odd" / "train.parquet"))
    report = inspect_source(str(tmp_path / "odd"))
    assert accepted(report) == set()
    readers = report.splits[0].readers
    assert "missing column(s)" in readers["spatialtunnel"] and "missing" in readers["o3d"]
    assert "cannot read this split as DORI questions" in readers["dori"] and "missing column(s)" in readers["vague"]
    assert "none of our readers" in render(report)


def test_a_hub_id_is_read_from_the_cache_only(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match=r"someone/nothing: not in the local Hugging Face cache .* never downloads"):
        inspect_source("someone/nothing")


def test_the_command(tmp_path):
    out = run_cli([SPATIAL_TASKS, "inspect", str(TASKS / "vague/sample/hub"), "--json"], capture_output=True,
                  text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["splits"][0]["readers"]["vague"].startswith("accepted")
    assert "Repo card metadata" not in out.stderr
    bad = run_cli([SPATIAL_TASKS, "inspect", str(tmp_path / "missing")], capture_output=True, text=True)
    assert bad.returncode == 2 and "no such folder" in bad.stderr
    wrong = run_cli([SPATIAL_TASKS, "inspect", str(TASKS), "--benchmark", "mmlu"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "--benchmark 'mmlu': one of spatialtunnel, o3d, dori, vague" in wrong.stderr


def test_a_data_file_is_inspected_and_an_unreadable_one_is_named(tmp_path):
    """Issue 32, items 4 and 6: ``inspect`` takes one data file, as the README says; a parquet file
    with no rows, or one that is not parquet (also behind a link), is named with the reason; and
    a reader whose columns fit but whose loader refuses the rows is not listed (the DORI sample
    fits the official SpatialTunnel table's columns, but its answers are not Yes/No)."""
    import pyarrow.parquet as pq

    dori_file = next((TASKS / "dori/sample").glob("*.parquet"))
    report = inspect_source(str(dori_file))
    assert [s.config for s in report.splits] == ["(the file)"] and accepted(report) == {"dori"}
    assert "rows do not load" in report.splits[0].readers["spatialtunnel"]
    assert "is not Yes or No" in report.splits[0].readers["spatialtunnel"]

    empty = tmp_path / "empty.parquet"
    pq.write_table(pq.read_table(dori_file).slice(0, 0), empty)
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello\n")
    link = tmp_path / "linked.parquet"
    link.symlink_to(foreign)
    assert inspect_source(str(empty)).error == f"{empty}: no rows (a parquet file with only its schema)"
    assert inspect_source(str(link)).error == f"{link} is a link to {foreign}, which is a text file (not a parquet file)"
    with pytest.raises(DataError, match="inspect reads a dataset folder, a Hub id, or one data file"):
        inspect_source(str(foreign))
    folder = tmp_path / "folder" / "phase_variation"
    folder.mkdir(parents=True)
    pq.write_table(pq.read_table(dori_file).slice(0, 0), folder / "test-00000.parquet")
    (split,) = inspect_source(str(folder.parent)).splits
    assert split.error == f"{folder / 'test-00000.parquet'}: no rows (a parquet file with only its schema)"
