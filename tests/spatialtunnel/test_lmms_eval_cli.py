"""SpatialTunnel through the real lmms-eval console script, on the bundled sample and on data
pointed to by a user YAML. Asserts on the results JSON and the logged samples."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, TINY_QWEN_ARGS, assert_all_finite, declared_metrics, run_cli, run_lmms_eval

from .fakes import write_generated

pytestmark = pytest.mark.cli
BOTH = "spatialtunnel_sample,spatialtunnel_logit_sample"


@pytest.fixture(scope="module")
def baseline_runs(baseline_run):
    """One lmms-eval run per rule (shared by the session), no --include_path: our tasks are found on their own."""
    return {rule: baseline_run(rule, BOTH) for rule in ("vertical", "always_yes", "oracle", "size")}


@pytest.mark.parametrize("task", ["spatialtunnel_sample_phase", "spatialtunnel_logit_sample_phase"])
def test_vertical_rule_is_right_exactly_on_consistent_cells(baseline_runs, task):
    m = baseline_runs["vertical"].metrics(task)
    assert m["v_cons"] == pytest.approx(1.0) and m["v_ctr"] == pytest.approx(0.0)
    assert m["delta"] == pytest.approx(1.0)


@pytest.mark.parametrize("task", ["spatialtunnel_sample_phase", "spatialtunnel_sample_size",
                                  "spatialtunnel_logit_sample_phase", "spatialtunnel_logit_sample_size"])
def test_always_yes_is_chance_and_oracle_is_perfect(baseline_runs, task):
    assert baseline_runs["always_yes"].metrics(task)["v"] == pytest.approx(0.5)
    assert baseline_runs["oracle"].metrics(task)["v"] == pytest.approx(1.0)


def test_size_rule_follows_the_size_sweep(baseline_runs):
    m = baseline_runs["size"].metrics("spatialtunnel_sample_size")
    assert m["v_s010"] == pytest.approx(1.0)  # far object smaller: "smaller = farther" is right
    assert m["v_s030"] == pytest.approx(0.0)  # far object larger: the rule is always wrong
    assert m["delta_s"] == pytest.approx(1.0)


def test_every_declared_metric_and_every_sample_is_there(baseline_runs):
    run = baseline_runs["always_yes"]
    assert_all_finite(run.metrics("spatialtunnel_sample_phase"), declared_metrics("spatialtunnel_sample_phase"))
    assert_all_finite(run.metrics("spatialtunnel_logit_sample_size"), declared_metrics("spatialtunnel_logit_sample_size"))
    n = run.results["n-samples"]["spatialtunnel_sample_phase"]["effective"]
    assert len(run.samples["spatialtunnel_sample_phase"]) == n > 0


def test_rescore_of_saved_samples_equals_the_live_run(baseline_runs, tmp_path):
    run = baseline_runs["vertical"]
    live = run.metrics("spatialtunnel_sample_phase")
    samples = next(run.out.rglob("*_samples_spatialtunnel_sample_phase.jsonl"))
    out = run_cli([SPATIAL_TASKS, "rescore", "spatialtunnel", str(samples), "--json"],
                  capture_output=True, text=True, check=True)
    (run_result,) = json.loads(out.stdout)["runs"].values()
    rescored = run_result["tasks"]["spatialtunnel_sample_phase"]
    for key in ("v", "v_cons", "v_ctr", "delta", "v_amb", "unparseable"):
        assert rescored[key] == pytest.approx(live[key])
    # the per-cell grid is in the samples (and the report), not in lmms-eval's table
    assert "cell_grid" not in live and len(rescored["cell_grid"]) == 8  # the sample's 8 x 8 grid
    assert all(math.isnan(v) or v in (0.0, 1.0) for row in rescored["cell_grid"] for v in row)


def test_report_draws_heatmaps_and_size_curve(baseline_runs, tmp_path):
    runs_root = tmp_path / "runs"  # the four rules' runs, side by side
    for rule, run in baseline_runs.items():
        shutil.copytree(run.out, runs_root / rule)
    out = run_cli([SPATIAL_TASKS, "report", str(runs_root), "--out", str(tmp_path / "rep")],
                  capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    pngs = sorted((tmp_path / "rep").glob("*.png"))
    names = [p.name for p in pngs]
    assert any(n.startswith("spatialtunnel_heatmap_spatial_baseline_rule_vertical") for n in names)
    assert "spatialtunnel_size_curve.png" in names and "spatialtunnel_summary.png" in names
    assert all(p.stat().st_size > 10_000 for p in pngs)  # real drawings, not empty canvases
    assert "| spatial_baseline(rule=vertical) | spatialtunnel_sample_phase | exact |" in (
        tmp_path / "rep" / "report.md").read_text()


def test_logit_task_with_a_text_model_fails_clearly(tmp_path):
    run = run_lmms_eval(tmp_path / "out", "dummy", "response=Yes", "spatialtunnel_logit_sample_phase")
    assert run.results is None and run.returncode == 2  # at the first doc: not retried per doc, not exit 0
    last = run.output.strip().splitlines()[-1]
    assert last.startswith("spatial-tasks: spatialtunnel_logit scores first-token Yes/No logits"), last
    assert "qwen2_5_vl_yesno" in last and "openai_yesno" in last
    assert run.output.count("spatialtunnel_logit scores first-token") == 1  # said once, whatever the threads


def test_include_path_fallback_when_auto_discovery_is_off(tmp_path):
    off = {"SPATIAL_TASKS_AUTO_INCLUDE": "0"}
    missing = run_lmms_eval(tmp_path / "a", "spatial_baseline", "rule=oracle", "spatialtunnel_sample_phase", env=off)
    assert missing.results is None
    tasks_dir = run_cli([SPATIAL_TASKS, "tasks-dir"], capture_output=True, text=True, check=True).stdout.strip()
    found = run_lmms_eval(tmp_path / "b", "spatial_baseline", "rule=oracle", "spatialtunnel_sample_phase",
                          "--include_path", tasks_dir, env=off)
    assert found.metrics("spatialtunnel_sample_phase")["v"] == pytest.approx(1.0)


def test_user_yaml_points_a_task_at_a_local_dataset(tmp_path):
    data = write_generated(tmp_path / "mydata", variants=("phase",), grid=4)
    made = run_cli([SPATIAL_TASKS, "custom-task", "spatialtunnel_phase", "--data", str(data),
                    "--out", str(tmp_path / "mytasks"), "--name", "spatialtunnel_mine"],
                   capture_output=True, text=True, check=True)
    assert Path(made.stdout.strip()).name == "spatialtunnel_mine.yaml"
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=vertical", "spatialtunnel_mine",
                        "--include_path", str(tmp_path / "mytasks"))
    m = run.metrics("spatialtunnel_mine")
    assert (m["v_cons"], m["v_ctr"]) == (pytest.approx(1.0), pytest.approx(0.0))
    assert len(run.samples["spatialtunnel_mine"]) == 4 * 16


def test_custom_task_reads_a_copy_of_the_official_release(tmp_path):
    """A folder laid out like cubec/spatialtunnel (phase_variation.parquet: index, image, question,
    answer -- no geometry): the split comes from the pixels, and the shortcut scores 1 / 0 on it."""
    import datasets

    from .official_tables import official_rows, write_official

    generated = datasets.load_dataset("parquet", split="train",
                                      data_files="tasks/spatialtunnel/sample/phase_variation/test-00000-of-00001.parquet")
    rows, _ = official_rows(generated)
    release = tmp_path / "spatialtunnel"
    write_official(release, "phase_variation", rows)
    made = run_cli([SPATIAL_TASKS, "custom-task", "spatialtunnel_logit_phase", "--data", str(release),
                    "--out", str(tmp_path / "tasks"), "--name", "st_release"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "phase_variation.parquet" in (tmp_path / "tasks" / "st_release.yaml").read_text()
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=vertical", "st_release",
                        "--include_path", str(tmp_path / "tasks"))
    m = run.metrics("st_release")
    assert (m["v_cons"], m["v_ctr"]) == (pytest.approx(1.0), pytest.approx(0.0))
    records = [s["v"] for s in run.samples["st_release"]]
    assert len(records) == len(rows) and {r["relation"] for r in records} >= {"consistent", "counter"}


@pytest.mark.slow
def test_tiny_qwen_runs_both_protocols(tiny_qwen_dir, tmp_path):
    args = f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS}"
    text = run_lmms_eval(tmp_path / "qwen", "qwen2_5_vl", args, "spatialtunnel_sample_phase")
    m = text.metrics("spatialtunnel_sample_phase")
    unreadable = m["unparseable"] == 1.0  # the random model says nothing yes/no-like: Δ is undefined
    assert_all_finite(m, declared_metrics("spatialtunnel_sample_phase"), ("delta",) if unreadable else ())
    assert len(text.samples["spatialtunnel_sample_phase"]) == text.results["n-samples"][
        "spatialtunnel_sample_phase"]["effective"]
    logit = run_lmms_eval(tmp_path / "yesno", "qwen2_5_vl_yesno", args, "spatialtunnel_logit_sample")
    for task in ("spatialtunnel_logit_sample_phase", "spatialtunnel_logit_sample_size"):
        m = logit.metrics(task)
        assert_all_finite(m, declared_metrics(task))
        assert 0.0 < m["v"] < 1.0  # soft scores from real logits, not 0/1 answers
        logged = logit.samples[task]
        assert logged and all(0.0 < s["v"]["p_yes"] < 1.0 for s in logged)


def test_openai_api_model_against_a_local_server(openai_server, tmp_path):
    """--model openai talks to a local OpenAI-compatible server (the only fake: a remote API)."""
    openai_server.responder = lambda body: "Yes."  # answers are polarity balanced: v must be 0.5
    args = (f"model_version=stub,base_url={openai_server.base_url},api_key=test,num_concurrent=1,"
            "max_retries=1,retry_backoff_s=0,httpx_trust_env=False")
    run = run_lmms_eval(tmp_path / "api", "openai", args, "spatialtunnel_sample_phase")
    m = run.metrics("spatialtunnel_sample_phase")
    assert_all_finite(m, declared_metrics("spatialtunnel_sample_phase"))
    assert m["v"] == pytest.approx(0.5) and m["unparseable"] == 0.0
    assert len(openai_server.requests) == len(run.samples["spatialtunnel_sample_phase"])
    assert openai_server.requests, "the server received no request"
    first = openai_server.requests[0]
    assert "data:image" in json.dumps(first)  # the image travelled as a base64 data URL
    assert "closer to the camera than" in json.dumps(first) or "farther from the camera" in json.dumps(first)



def test_group_figures_are_metrics_of_the_pooled_records(baseline_runs):
    """The group table holds v, v_cons, v_ctr and Δ of both variants' records together -- what
    `rescore` recomputes -- never lmms-eval's size-weighted mean of the subtasks' values."""
    run = baseline_runs["size"]
    group = run.metrics("spatialtunnel_sample")
    out = run_cli([SPATIAL_TASKS, "rescore", "spatialtunnel", str(run.out), "--json"],
                  capture_output=True, text=True, check=True)
    (rescored,) = json.loads(out.stdout)["runs"].values()
    pooled = rescored["groups"]["spatialtunnel_sample"]
    for key in ("v", "v_cons", "v_ctr", "delta", "unparseable"):
        assert group[key] == pytest.approx(pooled[key]), key
    phase, size = run.metrics("spatialtunnel_sample_phase"), run.metrics("spatialtunnel_sample_size")
    n_phase, n_size = (run.results["n-samples"][t]["effective"] for t in ("spatialtunnel_sample_phase",
                                                                         "spatialtunnel_sample_size"))
    weighted = (phase["v_cons"] * n_phase + size["v_cons"] * n_size) / (n_phase + n_size)
    assert group["v_cons"] != pytest.approx(weighted)  # a mean of subset means is not the pooled figure
    assert "cell_grid" not in group
