"""Rescoring and reporting never blend runs, and the report reads right: a folder holding several
lmms-eval runs (other models, the same model twice) is scored run by run; a report written twice
into one folder replaces itself; undefined figures read "n/a", never 0.000 / 1.000 / -0.000.

The runs are lmms-eval output files written here from real records (the bundled SpatialTunnel
sample, scored by the task's own process_results), in lmms-eval's layout."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from lmms import declared_metrics

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.formatting import number
from spatial_tasks.common.owned import LEDGER
from spatial_tasks.common.samples import RunFailed, SamplesError, check_run, find_runs, run_label
from spatial_tasks.common.yesno import YesNoLogits, encode_payload
from spatial_tasks.harness import TaskData, load_docs
from spatial_tasks.paths import tasks_dir
from spatial_tasks.registry import read_runs
from spatial_tasks.report import write_report
from spatial_tasks.spatialtunnel import tasks
from spatial_tasks.spatialtunnel.rescore import rescore

TASK = "spatialtunnel_sample_phase"


@pytest.fixture(scope="module")
def docs():
    return load_docs(*TaskData.from_yaml(tasks_dir() / "spatialtunnel" / f"{TASK}.yaml"))


def write_run(folder: Path, stamp: str, model: str, model_args: str, docs, answer, task: str = TASK) -> None:
    """One lmms-eval run: <stamp>_results.json + <stamp>_samples_<task>.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    hook = tasks.process_results if "logit" not in task else tasks.process_results_logit
    process = hook.bound(declared_metrics(task))
    with open(folder / f"{stamp}_samples_{task}.jsonl", "w") as fh:
        for i, doc in enumerate(docs):
            response = answer(doc)
            out = process(doc, [response])
            fh.write(json.dumps({"doc_id": i, "filtered_resps": [response], "v": out["v"]}, default=str) + "\n")
    (folder / f"{stamp}_results.json").write_text(json.dumps(
        {"results": {task: {}}, "config": {"model": model, "model_args": model_args}, "group_subtasks": {}}))


def truth(doc) -> str:
    return doc["answer"]


def yes(doc) -> str:
    return "Yes"


def test_runs_in_one_folder_are_scored_apart(docs, tmp_path):
    root = tmp_path / "out"
    write_run(root / "m", "20260101_000001", "a_model", "pretrained=/ckpt/a,device=cuda", docs, truth)
    write_run(root / "m", "20260101_000002", "a_model", "pretrained=/ckpt/a,device=cuda", docs, yes)  # again
    write_run(root / "m", "20260101_000003", "b_model", "pretrained=/ckpt/b", docs, yes)
    result = rescore(read_runs(root))["runs"]
    assert set(result) == {"a_model(pretrained=a) [20260101_000001]", "a_model(pretrained=a) [20260101_000002]",
                           "b_model(pretrained=b)"}
    assert result["a_model(pretrained=a) [20260101_000001]"]["tasks"][TASK]["v"] == 1.0
    assert result["a_model(pretrained=a) [20260101_000002]"]["tasks"][TASK]["v"] == pytest.approx(0.5)
    assert all(run["tasks"][TASK]["n"] == len(docs) for run in result.values())  # nothing pooled


def test_a_doc_logged_twice_is_an_error_naming_the_lines(docs, tmp_path):
    write_run(tmp_path / "m", "20260101_000001", "a", "", docs, truth)
    path = tmp_path / "m" / f"20260101_000001_samples_{TASK}.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[3]]) + "\n")
    with pytest.raises(SamplesError, match=rf"{path.name}:{len(lines) + 1}: doc_id 3 is logged twice \(also on line 4\)"):
        rescore(read_runs(tmp_path))


def test_nan_logits_are_unparseable_not_no(docs, tmp_path):
    nan = encode_payload(YesNoLogits(math.nan, 0.0, "?"))
    write_run(tmp_path / "m", "20260101_000001", "y", "", docs, lambda d: nan, task="spatialtunnel_logit_sample_phase")
    figures = rescore(read_runs(tmp_path))["runs"]["y"]["tasks"]["spatialtunnel_logit_sample_phase"]
    assert figures["unparseable"] == 1.0 and figures["v"] == 0.0  # scored wrong, counted
    assert math.isnan(figures["delta"])  # a gap between nothing readable is undefined


LABELS = [
    ({"config": {"model": "qwen2_5_vl", "model_args": "pretrained=/very/long/path/Qwen2.5-VL-3B-Instruct,"
                 "device=cuda,device_map=auto,max_pixels=1000000"}}, "qwen2_5_vl(pretrained=Qwen2.5-VL-3B-Instruct)"),
    ({"config": {"model": "openai", "model_args": "model_version=gpt-4o,base_url=http://x,api_key=sk-secret"}},
     "openai(model_version=gpt-4o)"),
    ({}, "folder"),
]


@pytest.mark.parametrize(("results", "label"), LABELS)
def test_run_labels_are_short_and_keep_what_tells_runs_apart(results, label):
    assert run_label(results, "folder") == label
    assert len(run_label({"config": {"model": "m", "model_args": ",".join(f"k{i}=v{i}" for i in range(40))}},
                         "x")) <= 48


def test_runs_that_started_in_the_same_second_keep_apart(docs, tmp_path):
    """Parallel runs of one model (the demo's two generation settings) share model, args and stamp:
    the ends of their folders tell them apart, so no table, figure or page merges them."""
    root = tmp_path / "out"
    write_run(root / "settings_0" / "m", "20260101_000001", "a_model", "pretrained=/ckpt/a", docs, truth)
    write_run(root / "settings_1" / "m", "20260101_000001", "a_model", "pretrained=/ckpt/a", docs, yes)
    write_run(root / "other", "20260101_000009", "b_model", "", docs, yes)
    assert [r.label for r in find_runs(root)] == ["b_model", "a_model(pretrained=a) [20260101_000001, settings_0/m]",
                                                  "a_model(pretrained=a) [20260101_000001, settings_1/m]"]
    assert set(rescore(read_runs(root))["runs"]) == {r.label for r in find_runs(root)}


def test_a_report_that_fails_leaves_the_earlier_one_whole(docs, tmp_path):
    root = tmp_path / "out"
    write_run(root / "a", "20260101_000001", "a_model", "", docs, truth)
    out = tmp_path / "report"
    first = write_report(read_runs(root), out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.name != LEDGER}
    with pytest.raises(UserError, match=r"no_such_probe: not a study folder \(SpatialTunnel: a `spatial-tasks probe` "
                                        r"folder holds probe.json\)"):
        write_report(read_runs(root), out, probes=[tmp_path / "no_such_probe"])
    # no staging folder left either (the ledger, the report's bookkeeping, notes that it came and went)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LEDGER} == before
    assert (out / "report.md") in first


def test_the_report_replaces_itself_and_reads_right(docs, tmp_path):
    root = tmp_path / "out"
    write_run(root / "a", "20260101_000001", "a_model", "", docs, truth)
    write_run(root / "b", "20260101_000002", "b_model", "", docs, lambda d: "I cannot tell.")
    out = tmp_path / "report"
    out.mkdir()
    (out / "my_notes.md").write_text("mine")
    first = write_report(read_runs(root), out)
    second = write_report(read_runs(root), out)
    assert sorted(p.name for p in first) == sorted(p.name for p in second)
    on_disk = sorted(p.name for p in out.iterdir())
    assert on_disk == sorted([*(p.name for p in second), LEDGER, "my_notes.md"])  # no pile-up, notes kept
    report = (out / "report.md").read_text()
    assert "-0.000" not in report and "+0.000" not in report
    row = next(line for line in report.splitlines() if line.startswith("| b_model"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = next(line for line in report.splitlines() if line.startswith("| run | task | protocol"))
    # the columns are the metric names of lmms-eval and rescore (one name per concept)
    assert [c.strip() for c in header.strip("|").split("|")][4:] == [
        "v", "v_cons", "v_ctr", "delta", "v_amb", "v_s010", "v_s030", "delta_s", "unparseable"]
    # n scored, v: unparseable answers are wrong; with its 95 % Wilson interval (0 right of n)
    assert cells[3:5] == [str(len(docs)), f"0.000 [0.000, {3.841459 / (len(docs) + 3.841459):.3f}]"]
    assert cells[7] == "n/a"  # Δ of nothing readable: undefined, not a neutral 0.000
    assert cells[-1] == "1.000"  # unparseable share
    for term in ("**v**", "**v_cons / v_ctr**", "**delta**", "**v_amb**", "**v_s010 / v_s030 / delta_s**", "**unparseable**", "**n/a**",
                 "**[low, high]**"):
        assert term in report
    # a run removed from the folder disappears from the next report too
    for file in (root / "b").iterdir():
        file.unlink()
    third = write_report(read_runs(root), out)
    assert not any("b_model" in p.name for p in third) and not any("b_model" in p.name for p in out.iterdir())


@pytest.mark.parametrize(("value", "kwargs", "text"), [
    (-0.0001, {}, "0.000"), (-0.0, {"signed": True}, "0.000"), (0.30000000000000004, {}, "0.300"),
    (None, {}, "n/a"), (math.nan, {}, "n/a"), (math.inf, {}, "n/a"), (0.4167, {"signed": True}, "+0.417"),
    (-0.2104, {"signed": True}, "-0.210"), (256, {}, "256"),
])
def test_numbers(value, kwargs, text):
    assert number(value, **kwargs) == text


def test_check_run_finds_what_lmms_eval_did_not_write(docs, tmp_path):
    with pytest.raises(RunFailed, match=r"wrote no results under .* \(it exits 0 even when a task crashes\)"):
        check_run(tmp_path / "nothing", [TASK])
    write_run(tmp_path / "m", "20260101_000001", "a", "", docs, truth)
    assert check_run(tmp_path, [TASK]).name == "20260101_000001_results.json"
    with pytest.raises(RunFailed, match=r"no results for \['spatialtunnel_sample_size'\]"):
        check_run(tmp_path, [TASK, "spatialtunnel_sample_size"])


def test_find_runs_on_one_file_and_on_nothing(docs, tmp_path):
    write_run(tmp_path / "m", "20260101_000001", "a", "x=1", docs, truth)
    (run,) = find_runs(tmp_path / "m" / f"20260101_000001_samples_{TASK}.jsonl")
    assert run.label == "a(x=1)" and run.results_path is not None
    with pytest.raises(SamplesError, match="not an lmms-eval output file"):
        find_runs(tmp_path / "m" / "other.txt" if (tmp_path / "m" / "other.txt").write_text("x") else None)
