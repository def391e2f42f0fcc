"""Reliability round 4 (issue 44): nothing of the user's is deleted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, run_cli

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.owned import LEDGER
from spatial_tasks.demo import claim_folder


def _users_folder(root: Path) -> Path:
    folder = root / "mine"
    (folder / "runs" / "paper").mkdir(parents=True)
    (folder / "runs" / "paper" / "results.json").write_text("{}")
    (folder / "logs").mkdir()
    (folder / "logs" / "train.log").write_text("a week of training\n")
    return folder


def test_the_demo_refuses_a_users_folder_and_deletes_nothing(tmp_path):
    folder = _users_folder(tmp_path)
    run = run_cli([SPATIAL_TASKS, "demo", "--out", str(folder)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == (f"error: spatial-tasks demo: {folder} holds runs/paper/results.json, logs/train.log, "
                                  "which spatial-tasks did not write (or which changed since); nothing was deleted or "
                                  "replaced. Choose another --out (a new or empty folder), or move them away.")
    assert (folder / "runs" / "paper" / "results.json").read_text() == "{}"
    assert (folder / "logs" / "train.log").read_text() == "a week of training\n"
    assert not (folder / LEDGER).exists()


def test_the_demo_replaces_only_what_it_wrote(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    ledger = claim_folder(fresh)
    (fresh / "runs" / "old").mkdir(parents=True)
    (fresh / "runs" / "old" / "results.json").write_text("{}")
    (fresh / "logs").mkdir()
    (fresh / "report").mkdir()
    (fresh / "report" / "leaderboard.json").write_text("[]")
    ledger.record(fresh / "runs", fresh / "report")
    claim_folder(fresh)  # a rerun: the demo's own runs, logs and report go (its leaderboard would keep old rows)
    assert not any((fresh / name).exists() for name in ("runs", "logs", "report"))
    with pytest.raises(UserError, match=r"holds logs/a\.log, which spatial-tasks did not write"):
        only_logs = tmp_path / "only_logs"
        (only_logs / "logs").mkdir(parents=True)
        (only_logs / "logs" / "a.log").write_text("mine")
        claim_folder(only_logs)
    assert (only_logs / "logs" / "a.log").read_text() == "mine"


@pytest.mark.parametrize("value", [None, 3])
def test_a_prompt_argument_that_is_not_text_is_named_never_printed(value):
    """Issue 44: a VAGUE MCQ prompt with pre_prompt None rendered the text "None"."""
    from spatial_tasks.common.prompts import PromptError
    from spatial_tasks.vague.tasks import mcq_prompt

    doc = {"indirect": "It is cold in here.", "letters": ["A", "B"], "option_texts": ["close the window", "sing"]}
    with pytest.raises(PromptError, match=f"vague: the task argument pre_prompt is {value!r}, not text; write "):
        mcq_prompt(doc, "lm", kwargs={"pre_prompt": value})
    assert "None" not in mcq_prompt(doc, "lm", kwargs={"pre_prompt": ""})


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["value", "ci_low"])
def test_a_leaderboard_figure_that_is_not_a_number_is_named_and_nothing_written(tmp_path, token, field):
    """Issue 44: a NaN or Infinity in leaderboard.json was merged and written back as bare NaN (not JSON).
    A figure is a finite number or null; anything else stops the merge, naming the file and record."""
    import json

    from spatial_tasks.results.schema import RecordFileError, ResultRecord, merge_with_files

    record = ResultRecord(model="m", model_args="", benchmark="spatialtunnel", task="t", metric="v", value=0.5, n=4,
                          run_id="r")
    board = tmp_path / "leaderboard.json"
    text = json.dumps({"records": [record.model_dump()]}).replace(f'"{field}": {0.5 if field == "value" else "null"}',
                                                                  f'"{field}": {token}')
    assert token in text
    board.write_text(text)
    with pytest.raises(RecordFileError, match=rf"leaderboard\.json: record 0: not a result record: {field}: "):
        merge_with_files([record], [board])
    assert board.read_text() == text


def test_the_local_server_refuses_bad_settings_in_one_line(tmp_path):
    """Issue 44: a missing model folder, a checkpoint that is no image-text model, a port in use, and a
    negative or NaN --latency each end `python -m spatial_tasks.models.logprob_server` in one line (exit 2)."""
    import json
    import socket

    text_only = tmp_path / "text-only"
    text_only.mkdir()
    (text_only / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = {
            "missing": (["--model", str(tmp_path / "nowhere")], "no such folder"),
            "not a VLM": (["--model", str(text_only)], "a 'bert' checkpoint, not an image-text model"),
            "port in use": (["--port", str(port)], f"cannot listen on 127.0.0.1:{port}: "),
            "negative latency": (["--latency", "-1"], "--latency must be a number of seconds from 0 to 600, got -1.0"),
            "NaN latency": (["--latency", "nan"], "--latency must be a number of seconds from 0 to 600, got nan"),
        }
        for name, (args, said) in cases.items():
            run = subprocess.run([sys.executable, "-m", "spatial_tasks.models.logprob_server", *args],
                                 capture_output=True, text=True, timeout=120)
            assert run.returncode == 2, (name, run.stderr[-2000:])
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], (name, run.stderr)


@pytest.mark.cli
def test_a_broken_extra_benchmark_is_left_out_and_breaks_nothing_else(tmp_path):
    """Issue 44: $SPATIAL_TASKS_BENCHMARKS naming a module that does not import, or one that registers a
    name twice, broke every command and every lmms-eval run (our DORI baseline included)."""
    import os

    from lmms import run_lmms_eval

    (tmp_path / "twice_dori.py").write_text("from spatial_tasks.dori.benchmark import BENCHMARK  # noqa: F401\n")
    env = {**os.environ, "SPATIAL_TASKS_BENCHMARKS": "no_such_module_xyz,twice_dori",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    listed = run_cli([SPATIAL_TASKS, "benchmarks"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "name", "spatialtunnel", "spatialtunnel_resplit", "o3d", "dori", "vague"]
    warnings = [line for line in listed.stderr.splitlines() if "$SPATIAL_TASKS_BENCHMARKS" in line]
    assert len(warnings) == 2
    assert "no_such_module_xyz: does not import (ModuleNotFoundError" in warnings[0]
    assert "twice_dori: a benchmark named 'dori' is already registered; left out" in warnings[1]
    run = run_lmms_eval(tmp_path / "dori", "spatial_baseline", "rule=always_a", "dori_sample", env=env)
    assert run.results is not None and run.metrics("dori_sample"), run.output[-2000:]


@pytest.mark.parametrize("task", ["dori_sample", "vague_sample_vlm"])
def test_a_first_token_scorer_refuses_a_text_task_before_asking_anything(task, tmp_path):
    """Issue 44: openai_yesno on dori_sample or vague_sample sent every request and reported accuracy 0."""
    from lmms import run_lmms_eval

    from spatial_tasks.models.logprob_server import LogprobServer

    with LogprobServer(kind="openai") as server:
        args = f"model_version={server.model_id},base_url={server.base_url},cache=off"
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", args, task)
        assert server.scored() == 0  # nothing was sent
    assert run.returncode == 2 and run.results is None
    last = run.output.strip().splitlines()[-1]
    assert last == (f"spatial-tasks: openai_yesno returns first-token Yes/No logits, which only the tasks that score "
                    f"them take (`spatial-tasks list`: scores first-token logits); {task} score(s) generated text: run "
                    "them with a model that generates (for example qwen2_5_vl, or lmms-eval's openai for a served "
                    "model)"), run.output[-2000:]


def test_the_in_process_scorers_refuse_a_text_task_too(tiny_qwen_dir):
    from lmms_eval.api.instance import Instance
    from PIL import Image

    from spatial_tasks.common.errors import RunStopped
    from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo

    model = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), device="cpu", device_map="cpu", dtype="float32")
    model.task_dict = {"dori_sample": {"test": [{"image": Image.new("RGB", (32, 32))}]}}
    request = Instance(request_type="generate_until", arguments=("Which way?", {}, lambda d: [d["image"]], 0,
                                                                  "dori_sample", "test"),
                       idx=0, metadata={"task": "dori_sample", "doc_id": 0, "repeats": 1})
    with pytest.raises(RunStopped, match="Qwen2_5_VLYesNo returns first-token Yes/No logits, .*; dori_sample score"):
        model.generate_until([request])


@pytest.mark.parametrize(("name", "split"), [("test-00000-of-00001.parquet", "test"), ("data.parquet", "train"),
                                             ("validation.parquet", "validation")])
def test_inspect_names_a_files_split_as_datasets_does(tmp_path, name, split):
    """Issue 44, item 8: `inspect FILE` called a test-* parquet's split "train"."""
    import datasets

    datasets.Dataset.from_dict({"a": [1, 2]}).to_parquet(str(tmp_path / name))
    shown = run_cli([SPATIAL_TASKS, "inspect", str(tmp_path / name)], capture_output=True, text=True,
                    timeout=120)
    assert f"config '(the file)', split '{split}':" in shown.stdout, shown.stdout + shown.stderr


def test_list_and_benchmarks_keep_their_columns_and_agree_on_the_data():
    """Issue 44, item 8: `list` broke its columns on long names and had no protocol column; `benchmarks`
    showed "-" as SpatialTunnel's default data where `list` showed cubec/spatialtunnel."""
    listed = run_cli([SPATIAL_TASKS, "list"], capture_output=True, text=True, timeout=300, check=True).stdout
    lines = listed.splitlines()
    assert lines[0].split() == ["name", "kind", "scores", "default", "data"]
    start = lines[0].index("kind")
    assert all(line[start - 2:start] == "  " and line[start:start + 5] in ("group", "task ", "kind ") for line in lines)
    scores = {line.split()[0]: line[lines[0].index("scores"):lines[0].index("default")].strip() for line in lines[1:]}
    assert scores["spatialtunnel_logit_sample_phase"] == "first-token logits"
    assert scores["spatialtunnel_sample_phase"] == scores["dori_sample"] == "generated text"
    assert scores["spatialtunnel_logit"] == "-"  # a group
    table = run_cli([SPATIAL_TASKS, "benchmarks"], capture_output=True, text=True, timeout=120, check=True).stdout
    row = next(line for line in table.splitlines() if line.startswith("spatialtunnel "))
    assert "cubec/spatialtunnel" in row and "cubec/spatialtunnel" in listed


def test_the_dori_report_names_the_tasks_its_data_lacks(baseline_run):
    """Issue 44, item 8: the report omitted DORI tasks the data lacks without a word."""
    from spatial_tasks.dori.report import _task_table
    from spatial_tasks.dori.rescore import records_from_samples
    from spatial_tasks.dori.schema import TASKS

    run = baseline_run("always_a", "dori_sample")
    records = [r for path in sorted(run.out.rglob("*_samples_*.jsonl")) for r in records_from_samples(path)]
    held = sorted({r["task"] for r in records})

    def named(rows: list[dict]) -> set[str]:
        (line,) = [line for line in _task_table("run", rows) if line.startswith("Not in this run's data")]
        return {task for task, code in TASKS.items() if f"{code} {task.replace('_', ' ')}" in line}

    assert 1 < len(held) < len(TASKS)  # the bundled sample lacks some of the seven tasks: said, not dropped
    assert named(records) == set(TASKS) - set(held)
    assert named([r for r in records if r["task"] != held[0]]) == set(TASKS) - set(held[1:])


# ---- the held-out kit's last cases (issue 44, item 9) ----------------------------------------------


def test_a_dori_box_with_a_nan_is_blamed_on_the_box_not_its_label():
    from spatial_tasks.dori import load as dori_load

    def bad(field, problem):
        return dori_load.SourceError(f"row 0, field {field!r}: {problem}")

    for boxes in ([0, 0, float("nan"), 10], [[0, 0, 5, 5], [1, 1, float("inf"), 9]], [{"label": "A", "box": [0, 0, None, 4]}]):
        with pytest.raises(dori_load.SourceError, match=r"field 'boxes\[\d\]\.box': .* is not four finite numbers"):
            dori_load._check_boxes(boxes, "view_parallelism", bad)
    with pytest.raises(dori_load.SourceError, match=r"field 'boxes\[1\]': 7 is neither a box"):
        dori_load._check_boxes([{"label": "A", "box": [0, 0, 5, 5]}, 7], "view_parallelism", bad)
    assert dori_load._check_boxes([0, 0, 5, 5], "view_parallelism", bad) == [{"label": "A", "box": [0.0, 0.0, 5.0, 5.0]}]


def test_a_vague_item_list_given_as_boxes_is_read_as_items(tmp_path):
    from spatial_tasks.vague.person_tags import read_boxes

    items = [{"image_name": "a.jpg", "meta": {"person_bbox": [[1, 1, 9, 9]]}},
             {"image_name": "b.jpg", "meta": {"person_bbox": [[2, 2, 8, 8], [3, 3, 7, 7]]}}]
    path = tmp_path / "items.json"
    path.write_text(__import__("json").dumps(items))
    assert read_boxes(str(path), "b.jpg") == [[2, 2, 8, 8], [3, 3, 7, 7]]
    with pytest.raises(ValueError, match=r"holds a list of 2 VAGUE items, none of them for image 'c.jpg'; pass the item"):
        read_boxes(str(path), "c.jpg")
    assert read_boxes("[[1, 2, 3, 4]]", "c.jpg") == [[1, 2, 3, 4]]  # a box list stays a box list


def test_a_pybullet_archive_of_other_content_is_the_users_error(tmp_path):
    import io
    import tarfile

    with tarfile.open(tmp_path / "pybullet-3.2.7.tar.gz", "w:gz") as tar:
        data = b"not pybullet"
        info = tarfile.TarInfo("something/else.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    run = run_cli([SPATIAL_TASKS, "assets", "pybullet", "--archive", str(tmp_path / "pybullet-3.2.7.tar.gz")],
                  capture_output=True, text=True, timeout=120,
                  env={**__import__("os").environ, "SPATIAL_TASKS_ASSETS": str(tmp_path / "assets")})
    assert run.returncode == 2 and "internal error" not in run.stderr, run.stderr
    assert "not pybullet 3.2.7's source archive: its pybullet_data lacks" in run.stderr, run.stderr


def test_vague_rescore_prints_the_same_columns_whatever_the_backbone(monkeypatch):
    from typer.testing import CliRunner

    from spatial_tasks import cli, registry
    from spatial_tasks.results import tidy
    from spatial_tasks.vague import rescore

    runs = {"runs": {"run": {"vague_sample_freeform": {"n": 8, "setting": "freeform", "bleu1": 0.5,
                                                      "bertscore_f1": 0.9, "bertscore_model": "minilm",
                                                      "bertscore_revision": "abc", "bertscore_layers": 6}}}}
    monkeypatch.setattr(registry, "read_runs", lambda *roots: None)  # no folder: rescore's figures stand in
    monkeypatch.setattr(rescore, "rescore", lambda read: runs)
    monkeypatch.setattr(tidy, "benchmark_records", lambda read, name: [])
    out = CliRunner().invoke(cli.app, ["rescore", "vague", "anything"]).output
    assert "bertscore_layers=" not in out and "[BERTScore minilm @ abc, layer 6]" in out, out
    assert "n=8  bleu1=0.5000  bertscore_f1=0.9000" in out, out


def test_a_report_over_a_run_and_its_backup_copy_moves_each_file_once(baseline_run, tmp_path):
    """The kit: a run and its copy in one folder made report stop naming a temporary PNG and leave a PNG
    and a .report-* folder in --out."""
    import shutil

    run = baseline_run("vertical", "spatialtunnel_sample")
    assert run.results is not None, run.output[-3000:]
    shutil.copytree(run.out, tmp_path / "runs" / "run")
    shutil.copytree(run.out, tmp_path / "runs" / "run-backup")
    done = run_cli([SPATIAL_TASKS, "report", str(tmp_path / "runs"), "--out", str(tmp_path / "report")],
                   capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    left = sorted(p.name for p in (tmp_path / "report").iterdir())
    assert not [name for name in left if name.startswith(".report-")], left
    assert "report.md" in left and all((tmp_path / "report" / name).stat().st_size > 0 for name in left)
