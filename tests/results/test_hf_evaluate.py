"""Each benchmark's ``evaluate`` module (``spatial_tasks.metric_module``) gives the figures of
``spatial-tasks rescore`` on the same answers: real lmms-eval samples of each bundled sample task,
with the answers shuffled between questions (seeded) (so that right and wrong answers mix), rescored from the
rewritten samples file on one side and passed to ``evaluate.load(...).compute`` on the other. The
same runs also check the report's per-benchmark intervals."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import evaluate
import pytest

import spatial_tasks
from spatial_tasks.registry import read_runs
from spatial_tasks.results.hf_evaluate import NotAQuestionError
from spatial_tasks.results.schema import ResultRecord
from spatial_tasks.results.tidy import benchmark_records

RECORD_KEYS = {"spatialtunnel": "v", "o3d": "acc", "dori": "acc", "vague": "acc"}


@pytest.fixture(scope="module")
def shuffled_runs(tmp_path_factory, baseline_run):
    """{benchmark: (run folder, records, shuffled answers)}: copies of two real runs, answers shuffled (seed 0)."""
    import shutil

    root = tmp_path_factory.mktemp("evaluate_runs")
    for name, rule, tasks in (("oracle", "oracle", "spatialtunnel_sample_phase,dori_sample,vague_sample_vlm"),
                              ("depth", "depth_oracle", "o3d_sample_markers")):
        run = baseline_run(rule, tasks)
        assert run.results is not None, run.output[-3000:]
        shutil.copytree(run.out, root / name)
    out = {}
    for name in ("oracle", "depth"):
        for path in sorted((root / name).rglob("*_samples_*.jsonl")):
            benchmark = next(b for b in RECORD_KEYS if f"_samples_{b}" in path.name)
            samples = [json.loads(line) for line in path.read_text().splitlines()]
            key = RECORD_KEYS[benchmark]
            answers = [s[key]["response"] for s in samples]
            random.Random(0).shuffle(answers)
            for sample, answer in zip(samples, answers, strict=True):
                sample[key]["response"] = sample["filtered_resps"] = answer
            path.write_text("".join(json.dumps(s) + "\n" for s in samples))
            records = [{k: v for k, v in s[key].items() if k != "response"} for s in samples]
            out[benchmark] = (root / name, records, answers)
    return out


def _module(benchmark: str):
    return evaluate.load(spatial_tasks.metric_module(benchmark))


def _record(folder: Path, benchmark: str, task: str, metric: str) -> ResultRecord:
    """The tidy record (documented schema) that ``rescore --json`` adds for one task's figure."""
    records = [ResultRecord.model_validate(r) for r in benchmark_records(read_runs(folder), benchmark)]  # each one valid
    (found,) = [r for r in records if r.task == task and r.metric == metric]
    assert found.ci_low <= found.value <= found.ci_high and found.ci_method != "none"
    return found


def _same(ours: dict, theirs: dict) -> None:
    shared = [k for k, v in theirs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert shared, theirs
    for key in shared:
        expected = theirs[key]
        if isinstance(expected, float) and math.isnan(expected):
            assert ours[key] is None, key
        else:
            assert ours[key] == pytest.approx(expected, abs=1e-12), key


def test_spatialtunnel_module_equals_rescore(shuffled_runs):
    from spatial_tasks.spatialtunnel.rescore import rescore

    folder, records, answers = shuffled_runs["spatialtunnel"]
    ours = _module("spatialtunnel").compute(predictions=answers, references=[json.dumps(r) for r in records])
    result = rescore(read_runs(folder))
    (run,) = result["runs"].values()
    theirs = run["tasks"]["spatialtunnel_sample_phase"]
    _same(ours, theirs)
    assert _record(folder, "spatialtunnel", "spatialtunnel_sample_phase", "v").value == pytest.approx(theirs["v"])
    assert 0 < ours["v"] < 1 and ours["n"] == len(records)


def test_o3d_module_equals_rescore(shuffled_runs):
    from spatial_tasks.o3d.rescore import rescore_samples

    folder, records, answers = shuffled_runs["o3d"]
    ours = _module("o3d").compute(predictions=answers, references=[json.dumps(r) for r in records])
    result = rescore_samples(read_runs(folder))
    (theirs,) = result["models"].values()
    _same(ours, {k: v for k, v in theirs.items() if k not in ("tasks", "groups")})
    assert _record(folder, "o3d", "o3d_sample_markers", "acc").value == pytest.approx(theirs["tasks"]["o3d_sample_markers"]["acc"])
    assert 0 < ours["HP"] < 1


def test_dori_module_equals_rescore(shuffled_runs):
    from spatial_tasks.dori.rescore import rescore

    folder, records, answers = shuffled_runs["dori"]
    ours = _module("dori").compute(predictions=answers, references=[json.dumps(r) for r in records])
    result = rescore(read_runs(folder))
    (theirs,) = result["runs"].values()
    _same(ours, theirs)
    assert _record(folder, "dori", "dori_sample", "avg_coarse").value == pytest.approx(theirs["avg_coarse"])
    assert 0 < ours["avg_coarse"] < 1


def test_vague_module_equals_rescore_and_names_a_bad_reference(shuffled_runs):
    from spatial_tasks.vague.rescore import rescore

    folder, records, answers = shuffled_runs["vague"]
    module = _module("vague")
    ours = module.compute(predictions=answers, references=[json.dumps(r) for r in records])
    result = rescore(read_runs(folder))
    (run,) = result["runs"].values()
    _same(ours, run["vague_sample_vlm"])
    assert _record(folder, "vague", "vague_sample_vlm", "acc").value == pytest.approx(run["vague_sample_vlm"]["acc"])
    assert 0 <= ours["acc"] < 1 and ours["n"] == len(records)
    bad = [json.dumps(r) for r in records]
    bad[1] = json.dumps({k: v for k, v in records[1].items() if k != "option_texts"})
    with pytest.raises(NotAQuestionError, match=r"references\[1\]: not a vague question.*option_texts"):
        module.compute(predictions=answers, references=bad)
    with pytest.raises(ValueError, match=r"no metric module for 'spatial'"):
        spatial_tasks.metric_module("spatial")
    # issue 32, item 5: an option's value is checked before any question, and never blamed on one
    with pytest.raises(ValueError, match=r"^vague: option setting='nope' is not one of 'lm', 'sm'"):
        module.compute(predictions=answers, references=[json.dumps(r) for r in records], setting="nope")
    with pytest.raises(ValueError, match=r"^spatialtunnel: option protocol='nope' is not one of 'auto', 'exact'"):
        _module("spatialtunnel").compute(predictions=["Yes"], references=[json.dumps({"question_id": "q"})],
                                         protocol="nope")  # was: "references[0]: not a spatialtunnel question"
    with pytest.raises(ValueError, match=r"^o3d: option ddof=2 is not one of 0, 1"):
        _module("o3d").compute(predictions=[], references=[], ddof=2)


def test_a_user_outside_lmms_eval_scores_docs():
    """The README's example: the bundled SpatialTunnel docs as references, answers from elsewhere."""
    import datasets

    from spatial_tasks.paths import benchmark_tasks_dir
    from spatial_tasks.spatialtunnel.load import to_docs

    files = str(benchmark_tasks_dir("spatialtunnel") / "sample" / "phase_variation" / "*.parquet")
    docs = to_docs(datasets.load_dataset("parquet", data_files=files, split="train"), variant="phase")
    references = [json.dumps({k: v for k, v in doc.items() if k != "image"}) for doc in docs]
    metric = _module("spatialtunnel")
    gold = metric.compute(predictions=[doc["answer"] for doc in docs], references=references)
    assert gold["v"] == gold["v_cons"] == gold["v_ctr"] == 1.0 and gold["n"] == len(docs) == 256
    always_yes = metric.compute(predictions=["Yes"] * len(docs), references=references)
    assert always_yes["v"] == pytest.approx(sum(doc["answer"] == "Yes" for doc in docs) / len(docs))


def test_module_files_only_name_their_benchmark():
    for benchmark in RECORD_KEYS:  # the computing lives in spatial_tasks.results.hf_evaluate
        assert f'benchmark = "{benchmark}"' in Path(spatial_tasks.metric_module(benchmark)).read_text()


def test_report_sections_show_95_percent_intervals(shuffled_runs, tmp_path):
    """The same shuffled runs through `spatial-tasks report`: every benchmark's section gives its
    headline figures with their intervals (Wilson where the figure is a share of right answers)."""
    from spatial_tasks.common.intervals import wilson
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    root = shuffled_runs["o3d"][0].parent
    write_report(read_runs(root), tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text()
    _, records, answers = shuffled_runs["vague"]
    acc = _module("vague").compute(predictions=answers, references=[json.dumps(r) for r in records])["acc"]
    low, high = wilson(round(acc * len(records)), len(records))
    assert f"| vague_sample_vlm | {len(records)} | {acc:.3f} [{low:.3f}, {high:.3f}] |" in text
    dori_avg = next(line for line in text.splitlines() if line.startswith("| **Avg** |"))
    assert dori_avg.count("[") == 2  # coarse and granular averages with their bootstrap intervals
    o3d_row = next(line for line in text.splitlines() if "| o3d_sample_markers |" in line)
    assert o3d_row.count("[") >= 2  # accuracy (Wilson) and bias (bootstrap over scenes) at least
    assert "| spatialtunnel_sample_phase | exact |" in text and "**[low, high]**" in text


def test_verify_maps_o3d_and_dori_runs_to_their_tables(shuffled_runs, tmp_path):
    """Real O3-D and DORI runs, their results files told they were paper models: Table 12's cells
    (pooled O3-D tasks) and Table 2's task cells (never its printed averages) are checked, each
    against the value rescore gives."""
    from spatial_tasks.dori.rescore import rescore as dori_rescore
    from spatial_tasks.o3d.rescore import rescore_samples
    from spatial_tasks.results.verify import verify

    copies = {}
    for benchmark, hub_id in (("o3d", "OpenGVLab/InternVL2_5-4B"), ("dori", "TIGER-Lab/Mantis-8B-Idefics2")):
        copies[benchmark] = tmp_path / benchmark
        shutil.copytree(shuffled_runs[benchmark][0], copies[benchmark])
        for results_file in copies[benchmark].rglob("*_results.json"):
            data = json.loads(results_file.read_text())
            data["config"]["model_args"] = f"pretrained={hub_id}"
            results_file.write_text(json.dumps(data))
    cells = verify(read_runs(*copies.values()))["cells"]
    o3d = {c["column"]: c for c in cells if c["benchmark"] == "o3d"}
    (o3d_figures,) = rescore_samples(read_runs(copies["o3d"]))["models"].values()
    assert {c["paper_model"] for c in o3d.values()} == {"InternVL2.5"} and "HP" in o3d
    for column, cell in o3d.items():
        assert cell["table"] == "table12" and (cell["ours"] is None or cell["ours"] == o3d_figures[column])
    dori = {c["column"]: c for c in cells if c["benchmark"] == "dori"}
    (dori_figures,) = dori_rescore(read_runs(copies["dori"]))["runs"].values()
    assert dori and not any(column.startswith("avg_") for column in dori)
    assert all(cell["ours"] == dori_figures[column] and cell["paper_model"] == "Mantis-Idefics2-8B"
               for column, cell in dori.items())
