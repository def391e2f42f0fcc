"""Adding a benchmark touches its folder and one registry line: ToyBench (tests/toybench), registered
through ``$SPATIAL_TASKS_BENCHMARKS``, is handled by every shared layer -- list, benchmarks,
rescore, results, report (scorecard and section), verify, inspect, prompts, custom-task and the
``evaluate`` module -- through the real CLIs, with no edit anywhere else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, run_cli, run_lmms_eval

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """(environment registering ToyBench, its folder, a run of the baseline relabelled as the paper's
    ToyVLM) -- the toy package copied out with its sample parquet written."""
    root = tmp_path_factory.mktemp("toybench")
    shutil.copytree(HERE / "toybench" / "toybench", root / "toybench")
    sys.path.insert(0, str(root))
    from toybench.core import write_sample

    write_sample(root / "toybench" / "tasks")
    env = {**os.environ, "SPATIAL_TASKS_BENCHMARKS": "toybench.benchmark",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    run = run_lmms_eval(root / "runs", "spatial_baseline", "rule=always_yes", "toybench_sample", env=env)
    assert run.results is not None and "toybench_sample" in run.results["results"], run.output[-3000:]
    for results_file in (root / "runs").rglob("*_results.json"):
        data = json.loads(results_file.read_text())
        data["config"]["model_args"] = "pretrained=toy/ToyVLM,rule=always_yes"
        results_file.write_text(json.dumps(data))
    yield env, root, run
    sys.path.remove(str(root))


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = run_cli([SPATIAL_TASKS, *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_the_live_run_scores_it(toy):
    _, _, run = toy
    assert run.metrics("toybench_sample")["acc"] == 0.5  # always "Yes" on alternating answers


def test_list_benchmarks_and_prompts(toy):
    env, _, _ = toy
    assert any(line.split()[:2] == ["toybench_sample", "task"] for line in _cli(env, "list").stdout.splitlines())
    assert any(line.split()[:2] == ["toybench", "ToyBench"] for line in _cli(env, "benchmarks").stdout.splitlines())
    prompts = [json.loads(line) for line in _cli(env, "prompts", "toybench").stdout.splitlines()]
    assert prompts == [{"task": "toybench_sample", "id": "toy-0", "prompt": "Is square 0 red? Answer Yes or No."}]


def test_rescore_results_report_and_verify(toy, tmp_path):
    env, root, _ = toy
    rescored = json.loads(_cli(env, "rescore", "toybench", str(root / "runs"), "--json").stdout)
    (tasks,) = rescored["runs"].values()
    assert tasks == {"toybench_sample": {"acc": 0.5, "n": 6}}
    assert [(r["benchmark"], r["metric"], r["value"], r["ci_method"]) for r in rescored["records"]] == [
        ("toybench", "acc", 0.5, "wilson")]
    _cli(env, "results", str(root / "runs"), "--out", str(tmp_path / "results"))
    (record,) = [json.loads(line) for line in (tmp_path / "results" / "results.jsonl").read_text().splitlines()]
    assert (record["benchmark"], record["task"], record["value"], record["n"]) == ("toybench", "toybench_sample", 0.5, 6)
    _cli(env, "report", str(root / "runs"), "--out", str(tmp_path / "report"))
    text = (tmp_path / "report" / "report.md").read_text()
    card = text[text.index("## Scorecard"):text.index("## Beside the papers")]
    assert "| model | ToyBench acc |" in card and "| `spatial_baseline(pretrained=toy/ToyVLM,rule=always_yes)` | 0.500 [" in card
    section = text[text.index("## ToyBench"):]
    assert "| toybench_sample | 6 | 0.500 |" in section
    assert "| ToyVLM | ToyVLM | toybench table1 | acc | run | 0.500 | 0.500 | 0.0 | strong |" in text
    verified = json.loads(_cli(env, "verify", str(root / "runs"), "--json").stdout)
    assert verified["passed"] and [(c["paper_model"], c["table"], c["column"], c["grade"]) for c in verified["cells"]] \
        == [("ToyVLM", "table1", "acc", "strong")]


def test_inspect_and_custom_task(toy, tmp_path):
    env, root, _ = toy
    report = json.loads(_cli(env, "inspect", str(root / "toybench" / "tasks" / "sample"), "--json").stdout)
    assert [split["readers"]["toybench"] for split in report["splits"]] == ["accepted: ToyBench questions"]
    data = tmp_path / "other"
    shutil.copytree(root / "toybench" / "tasks" / "sample", data / "questions")
    path = Path(_cli(env, "custom-task", "toybench_sample", "--out", str(tmp_path / "custom"), "--data", str(data),
                     "--config", "default", "--name", "toybench_other").stdout.strip())
    text = path.read_text()
    assert f"dataset_path: {data}" in text and "task: toybench_other" in text and "test_split: test" in text


def test_the_evaluate_module(toy, monkeypatch):
    import evaluate

    import spatial_tasks

    env, _, _ = toy
    monkeypatch.setenv("SPATIAL_TASKS_BENCHMARKS", env["SPATIAL_TASKS_BENCHMARKS"])
    monkeypatch.setenv("SPATIAL_TASKS_CACHE", str(Path(env.get("TMPDIR", "/tmp")) / "toy-cache"))
    docs = [{"question_id": f"q{i}", "answer": answer} for i, answer in enumerate(["Yes", "No", "Yes", "No"])]
    metric = evaluate.load(spatial_tasks.metric_module("toybench"))
    figures = metric.compute(predictions=["Yes", "Yes", "No", "No"], references=[json.dumps(d) for d in docs])
    assert figures == {"acc": 0.5, "n": 4}
