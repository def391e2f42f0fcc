"""DORI through the real lmms-eval console script: the bundled sample (our renders), the official
layouts (all 14 tasks and the three groups, data found by discovery), baselines with known
answers, the tiny Qwen2.5-VL, seeds, rescore and report. Asserts on results files and samples."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from lmms import SPATIAL_TASKS, TINY_QWEN_ARGS, assert_all_finite, declared_metrics, run_cli, run_lmms_eval

from spatial_tasks.dori import load, metrics, schema
from spatial_tasks.dori.schema import TASK_NAMES
from spatial_tasks.registry import read_runs

from . import official_layouts

pytestmark = pytest.mark.cli
SAMPLE = "tasks/dori/sample/test-00000-of-00001.parquet"
ALL_14 = ",".join(f"dori_{name}" for name in TASK_NAMES)


def sample_docs(seed: int = 42) -> list[dict]:
    return load.to_docs(datasets.load_dataset("parquet", data_files=SAMPLE, split="train"), seed=seed)


@pytest.fixture(scope="module")
def sample_runs(baseline_run):
    return {rule: baseline_run(rule, "dori_sample") for rule in ("oracle", "always_a")}


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    """The one-table layout, evaluated as the official release would be: every task and group."""
    root = tmp_path_factory.mktemp("dori_official")
    data = official_layouts.write("one_table", root / "release")
    env = {schema.SOURCE.env: str(data)}
    return data, {rule: run_lmms_eval(root / rule, "spatial_baseline", f"rule={rule}", "dori", env=env)
                  for rule in ("oracle", "always_a")}


def test_oracle_scores_one_on_every_question_of_the_sample(sample_runs):
    run = sample_runs["oracle"]
    m = run.metrics("dori_sample")
    assert (m["acc"], m["soft"], m["unparseable"], m["declined"]) == (1.0, 1.0, 0.0, 0.0)
    records = [s["acc"] for s in run.samples["dori_sample"]]
    assert len(records) == len(sample_docs()) and all(r["correct"] == 1 for r in records)
    assert_all_finite(m, declared_metrics("dori_sample"))


def test_always_a_scores_the_share_of_answers_shown_first(sample_runs):
    docs = sample_docs()
    expected = sum(d["shown_order"][0] == d["answer_index"] for d in docs) / len(docs)
    m = sample_runs["always_a"].metrics("dori_sample")
    assert m["acc"] == pytest.approx(expected)
    assert 0 < expected < 1  # the seeded order does not put every answer first (or none)
    chance = sum(1 / d["n_options"] for d in docs) / len(docs)
    assert abs(expected - chance) < 0.25  # and it is near what a random order gives on average


def test_the_official_layout_runs_all_14_tasks_and_the_groups(official):
    _data, runs = official
    oracle = runs["oracle"]
    for name in TASK_NAMES:
        assert oracle.metrics(f"dori_{name}")["acc"] == 1.0, name
    for group in ("dori", "dori_coarse", "dori_granular"):
        assert oracle.results["results"][group]["acc,none"] == pytest.approx(1.0)
    assert oracle.results["results"]["dori_granular"]["soft,none"] == pytest.approx(1.0)


def test_group_accuracy_is_the_mean_of_the_task_accuracies(official):
    _data, runs = official
    run = runs["always_a"]
    per_task = {name: run.metrics(f"dori_{name}")["acc"] for name in TASK_NAMES}
    for granularity in ("coarse", "granular"):
        values = [v for name, v in per_task.items() if name.endswith(granularity)]
        assert run.results["results"][f"dori_{granularity}"]["acc,none"] == pytest.approx(sum(values) / 7)
    assert run.results["results"]["dori"]["acc,none"] == pytest.approx(sum(per_task.values()) / 14)
    records = [s["acc"] for task in run.samples for s in run.samples[task]]
    assert metrics.task_average(records, "coarse") == pytest.approx(
        run.results["results"]["dori_coarse"]["acc,none"])
    for name, value in per_task.items():  # always A: exactly the share shown first
        rs = [r for r in records if f"{r['task']}_{r['granularity']}" == name]
        assert value == pytest.approx(metrics.expected_always_first(rs))


def test_tiny_qwen_runs_the_real_model_code(tiny_qwen_dir, tmp_path):
    run = run_lmms_eval(tmp_path / "tiny", "qwen2_5_vl", f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS}",
                        "dori_sample", "--limit", "6")
    m = run.metrics("dori_sample")
    assert_all_finite(m, declared_metrics("dori_sample"))
    assert m["unparseable"] + m["declined"] <= 1.0 and 0.0 <= m["acc"] <= m["soft"] <= 1.0
    samples = run.samples["dori_sample"]
    assert len(samples) == 6 and all(isinstance(s["acc"]["response"], str) for s in samples)


def test_seeds_need_every_task_in_the_data(tmp_path):
    """The bundled sample has no view-parallelism or directional-facing questions (no generator makes
    them): all 14 tasks are refused at once, naming what is missing; --only picks tasks it has."""
    made = run_cli([SPATIAL_TASKS, "dori-seeds", "--out", str(tmp_path / "all"), "--data", "tasks/dori/sample"],
                   capture_output=True, text=True)
    assert made.returncode == 2 and "no view_parallelism_coarse, view_parallelism_granular, directional_facing_coarse, " \
                                   "directional_facing_granular questions" in made.stderr
    assert not (tmp_path / "all").exists() or not list((tmp_path / "all").iterdir())


def test_seeds_rescore_and_report(tmp_path):
    tasks_dir = tmp_path / "seeds"
    made = run_cli([SPATIAL_TASKS, "dori-seeds", "--out", str(tasks_dir), "--data", "tasks/dori/sample",
                    "--only", "viewer_scene_direction,canonical_orientation_coarse"],
                   capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert len(list(tasks_dir.glob("*.yaml"))) == 3 * 3 + 3  # 3 tasks x 3 seeds, a group per seed
    names = ",".join(f"dori_viewer_scene_direction_granular_s{s}" for s in load.PAPER_SEEDS)
    (tmp_path / "runs").mkdir()
    run = run_lmms_eval(tmp_path / "runs" / "a", "spatial_baseline", "rule=always_a", names,
                        "--include_path", str(tasks_dir))
    per_seed = [run.metrics(f"dori_viewer_scene_direction_granular_s{s}")["acc"] for s in load.PAPER_SEEDS]
    out = run_cli([SPATIAL_TASKS, "rescore", "dori", str(tmp_path / "runs"), "--json"], capture_output=True,
                  text=True)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    (model,) = result["seeds"]
    summary = result["seeds"][model]
    assert summary["seeds"] == sorted(load.PAPER_SEEDS)
    mean, error = metrics.seed_summary(per_seed)
    assert summary["viewer_scene_direction_granular"] == {"mean": pytest.approx(mean), "error": pytest.approx(error)}
    report = run_cli([SPATIAL_TASKS, "report", str(tmp_path / "runs"), "--out", str(tmp_path / "report")],
                     capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## DORI" in text and "seed=1998" in text
    for figure in ("dori_hard_soft.png", "dori_by_options.png"):
        assert (tmp_path / "report" / figure).stat().st_size > 10_000


def test_a_release_without_a_task_fails_loudly(tmp_path):
    data = official_layouts.write("one_table", tmp_path / "release")
    import pyarrow.parquet as pq

    path = data / "data" / "test-00000-of-00001.parquet"
    table = pq.read_table(path)
    pq.write_table(table.filter([row["question_type"] != "CO" for row in table.to_pylist()]), path)
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=oracle", "dori_canonical_orientation_coarse",
                        env={schema.SOURCE.env: str(data)})
    assert run.results is None
    assert "no canonical_orientation coarse questions" in run.output


def test_seeds_saved_in_separate_folders_are_summarised_and_a_seed_twice_is_refused(tmp_path):
    """`rescore dori s42/ s1998/`: one folder per seed (the help's promise) gives the seed summary;
    two runs of one seed are never averaged as two seeds."""
    from spatial_tasks.common.samples import SamplesError
    from spatial_tasks.dori.rescore import rescore
    from spatial_tasks.dori.tasks import score

    def write(folder: Path, seed: int) -> Path:
        run = folder / "spatial_baseline"
        run.mkdir(parents=True)
        config = {"config": {"model": "spatial_baseline", "model_args": "rule=always_a"}}
        (run / "20260101_000000_results.json").write_text(json.dumps(config))
        with open(run / "20260101_000000_samples_dori_sample.jsonl", "w") as fh:
            for k, doc in enumerate(sample_docs(seed)):
                fh.write(json.dumps({"doc_id": k, "filtered_resps": [["A"]], "acc": score(doc, "A")}) + "\n")
        return folder

    first, second, again = write(tmp_path / "s42", 42), write(tmp_path / "s1998", 1998), write(tmp_path / "again", 42)
    result = rescore(read_runs(first, second))
    assert list(result["runs"]) == ["spatial_baseline(rule=always_a)", f"spatial_baseline(rule=always_a) [{second}]"]
    (model,) = result["seeds"]
    assert result["seeds"][model]["seeds"] == [42, 1998]
    per_run = [run["avg_coarse"] for run in result["runs"].values()]
    assert result["seeds"][model]["avg_coarse"]["mean"] == pytest.approx(sum(per_run) / 2)
    with pytest.raises(SamplesError, match="two runs with option-order seed 42"):
        rescore(read_runs(first, again))
