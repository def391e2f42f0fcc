"""The results layer: the versioned record schema, the intervals, tidy records of a real lmms-eval
run, the scorecard and the leaderboard files (append without duplicates)."""

from __future__ import annotations

import gzip
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, run_cli

from spatial_tasks.common.intervals import cluster_bootstrap, grouped_bootstrap, wilson
from spatial_tasks.common.paper import PaperResults, paper_results
from spatial_tasks.common.samples import find_runs
from spatial_tasks.registry import benchmarks, get, read_runs
from spatial_tasks.report import write_report
from spatial_tasks.results.schema import (
    FIELDS,
    SCHEMA_FILE,
    ResultRecord,
    json_schema,
    merge,
    read_jsonl,
    write_jsonl,
)
from spatial_tasks.results.scorecard import headline_records
from spatial_tasks.results.tidy import identity_args, run_records
from spatial_tasks.results.verify import grade_points, verify, verify_lines
from spatial_tasks.spatialtunnel import metrics as st_metrics
from spatial_tasks.spatialtunnel.rescore import records_from_samples


def test_the_shipped_json_schema_is_the_records_schema():
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()  # regenerate: python -m spatial_tasks.results.schema
    version = json_schema()["properties"]["schema_version"]
    assert version["default"] == "3" and version["enum"] == ["1", "2", "3"]  # older files (fewer fields) still read
    old = {k: v for k, v in ResultRecord(model="m", model_args="", benchmark="o3d", task="t", metric="acc", value=0.5,
                                         n=2, run_id="r").model_dump().items() if k in _SCHEMA_1_FIELDS}
    assert ResultRecord.model_validate({**old, "schema_version": "1"}).torch_version is None


_SCHEMA_1_FIELDS = {"schema_version", "model", "model_args", "benchmark", "task", "metric", "value", "n", "ci_low",
                    "ci_high", "ci_method", "headline", "run_id", "lmms_eval_version", "task_version", "data_source",
                    "data_revision"}


def test_wilson_interval_known_values():
    low, high = wilson(8, 10)  # Wilson (1927); e.g. Newcombe (1998) Table I, 95 %
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson(10, 10)[1] == 1.0
    assert all(x != x for x in wilson(0, 0))  # NaN without questions


def _paired_rows(images: int = 30) -> list[dict]:
    """Each image: one consistent and one counter question; counter = consistent - 0.2 exactly."""
    rng = random.Random(1)
    rows = []
    for i in range(images):
        score = rng.uniform(0.3, 1.0)
        rows += [{"image_id": f"im{i}", "question_id": f"im{i}-a", "relation_two_way": "consistent", "score": score},
                 {"image_id": f"im{i}", "question_id": f"im{i}-b", "relation_two_way": "counter", "score": score - 0.2}]
    return rows


def test_cluster_bootstrap_resamples_paired_items_together():
    rows = _paired_rows()
    paired = cluster_bootstrap(rows, st_metrics.consistency_gap, lambda r: r["image_id"], iterations=300, seed=0)
    unpaired = cluster_bootstrap(rows, st_metrics.consistency_gap, lambda r: r["question_id"], iterations=300, seed=0)
    assert paired == (pytest.approx(0.2), pytest.approx(0.2))  # every paired resample has Δ = 0.2 exactly
    assert unpaired[1] - unpaired[0] > 0.1  # drawn apart, the pairs' shared level is noise
    again = cluster_bootstrap(rows, st_metrics.mean_score, lambda r: r["image_id"], iterations=300, seed=0)
    other = cluster_bootstrap(rows, st_metrics.mean_score, lambda r: r["image_id"], iterations=300, seed=1)
    first = cluster_bootstrap(rows, st_metrics.mean_score, lambda r: r["image_id"], iterations=300, seed=0)
    assert again == first != other and first[0] < st_metrics.mean_score(rows) < first[1]


def test_identity_args_ignore_placement_and_order():
    assert identity_args("pretrained=Org/M,device=cuda:1,batch_size=8,dtype=float32") == \
        identity_args("device=cpu,pretrained=Org/M") == "pretrained=Org/M"


BOTH = "spatialtunnel_sample,spatialtunnel_logit_sample"


@pytest.fixture(scope="module")
def baseline_runs(tmp_path_factory, baseline_run):
    """Two real lmms-eval runs of the baseline on the SpatialTunnel samples, both protocols (the
    shortcut rule and the oracle; the session's shared runs, copied)."""
    root = tmp_path_factory.mktemp("results_runs")
    for rule in ("vertical", "oracle"):
        run = baseline_run(rule, BOTH)
        assert run.results is not None, run.output[-3000:]
        shutil.copytree(run.out, root / rule)
    return root


def test_tidy_records_of_a_real_run(baseline_runs, tmp_path):
    read = read_runs(baseline_runs / "vertical")
    (run,) = read.runs
    records = run_records(read, run, iterations=200)
    by = {(r.task, r.metric): r for r in records}
    assert {t for t, _ in by} == {"spatialtunnel_sample", "spatialtunnel_sample_phase", "spatialtunnel_sample_size",
                                  "spatialtunnel_logit_sample", "spatialtunnel_logit_sample_phase",
                                  "spatialtunnel_logit_sample_size"}
    assert by[("spatialtunnel_logit_sample", "v")].settings == {"protocol": "logit"}
    group = by[("spatialtunnel_sample", "delta")]
    assert group.value == 1.0 and (group.ci_low, group.ci_high) == (1.0, 1.0) and group.ci_method == "cluster_bootstrap"
    pooled = by[("spatialtunnel_sample", "v")]  # phase and size pooled: a record, never a headline (issue 44)
    assert pooled.n == 344 and not pooled.headline
    assert by[("spatialtunnel_sample_size", "v_size")].headline and not by[("spatialtunnel_sample_size", "v")].headline
    v = by[("spatialtunnel_sample_phase", "v")]
    assert v.ci_method == "wilson" and v.ci_low < v.value < v.ci_high and v.n == 256
    assert v.model == "spatial_baseline" and v.model_args == "rule=vertical" and v.headline
    assert v.task_version and v.data_source.startswith("parquet:")
    assert v.settings == {"protocol": "exact"}  # the scoring setting the figure depends on
    # the software of the run, as the run recorded it (harness: task config metadata)
    from importlib.metadata import version

    from spatial_tasks.common.environment import lock_hash, software

    assert (v.lmms_eval_version, v.torch_version, v.transformers_version, v.datasets_version, v.spatial_tasks_version) \
        == tuple(version(p) for p in ("lmms-eval", "torch", "transformers", "datasets", "spatial-tasks"))
    assert v.python_version == software()["python"] and v.lock_hash == lock_hash()
    assert v.spatial_tasks_commit == software()["spatial_tasks_commit"] and v.scored_with.startswith(version("spatial-tasks"))
    written = read_jsonl(write_jsonl(records, tmp_path / "r.jsonl"))
    assert written == records and tuple(written[0].model_dump()) == FIELDS
    assert merge(records, records) == records  # appending the same run adds nothing


def test_report_opens_with_the_scorecard_and_keeps_its_leaderboard(baseline_runs, tmp_path):
    out = tmp_path / "report"
    write_report(read_runs(baseline_runs / "vertical"), out)
    first = json.loads((out / "leaderboard.json").read_text())["records"]
    # v and Δ of the phase variant, v and Δ_s of the size variant, each protocol its own record
    assert {(r["model_args"], r["metric"], r["task"]) for r in first} == {
        ("rule=vertical", metric, f"spatialtunnel_{protocol}sample_{variant}")
        for metric, variant in (("v", "phase"), ("delta", "phase"), ("v_size", "size"), ("delta_s", "size"))
        for protocol in ("", "logit_")}
    write_report(read_runs(baseline_runs), out)  # both runs: the vertical rows again (same key) plus the oracle's
    rows = json.loads((out / "leaderboard.json").read_text())["records"]
    assert len(rows) == 16 and len({(r["model_args"], r["metric"], r["task"], r["run_id"]) for r in rows}) == 16
    assert {ResultRecord.model_validate(r).settings["protocol"] for r in rows} == {"exact", "logit"}
    csv_lines = (out / "leaderboard.csv").read_text().splitlines()
    assert csv_lines[0].split(",") == list(FIELDS) and len(csv_lines) == 17
    text = (out / "report.md").read_text()
    assert text.index("## Scorecard") < text.index("## SpatialTunnel")
    card = text[text.index("## Scorecard"):text.index("## SpatialTunnel")]
    # the phase variant's v and Δ (the papers' Tables 3 and 8), each protocol's figure labelled; the pooled
    # phase + size figure (0.535 for the vertical rule) is no headline
    assert ("| `spatial_baseline(rule=oracle)` | 1.000 [0.985, 1.000] (exact); 1.000 [1.000, 1.000] (logit) | "
            "0.000 [0.000, 0.000] (exact); 0.000 [0.000, 0.000] (logit) |") in card
    assert ("| `spatial_baseline(rule=vertical)` | 0.469 [0.409, 0.530] (exact); 0.469 [0.344, 0.578] (logit) | "
            "1.000 [1.000, 1.000] (exact); 1.000 [1.000, 1.000] (logit) | 0.727 [0.626, 0.809] (exact); ") in card
    assert "0.535" not in card


def test_scorecard_prefers_the_largest_headline_scope():
    base = dict(model="m", model_args="a", benchmark="vague", metric="acc", n=8, run_id="r", value=0.5)
    records = [ResultRecord(task="vague_lm", headline=False, **{**base, "n": 99}),
               ResultRecord(task="vague_vlm", headline=True, **base)]
    assert [r.task for r in headline_records(records)] == ["vague_vlm"]


# --- the papers' tables as data, and `spatial-tasks verify` ------------------------------------

RELEASED = Path(__file__).parents[1] / "o3d" / "data" / "released_outputs_5models.jsonl.gz"


def test_every_paper_table_loads_and_names_its_models():
    sizes = {b: {t: (len(table.columns), len(table.rows)) for t, table in paper_results(b).tables.items()}
             for b in ("o3d", "spatialtunnel", "dori", "vague")}
    assert sizes == {"o3d": {"table12": (15, 14)},
                     "spatialtunnel": {"table3": (4, 17), "table8": (4, 8), "table9": (4, 6), "table5": (4, 5),
                                       "table2": (4, 5)},
                     "dori": {"table2": (16, 12)}, "vague": {"table1": (6, 10)}}
    assert paper_results("o3d").tables["table12"].fraction("InternVL2.5", "HP") == 0.5863
    assert paper_results("dori").tables["table2"].fraction("Mantis-Idefics2-8B", "avg_coarse") == pytest.approx(0.345)
    assert paper_results("vague").tables["table1"].fraction("GPT-4o", "ego4d_vlm") == pytest.approx(0.636)
    st = paper_results("spatialtunnel")
    assert st.match("Qwen/Qwen2.5-VL-3B-Instruct") == st.match("/models/Qwen2.5-VL-3B-Instruct") == "Qwen2.5-VL-3B"
    assert st.match("allenai/Molmo-7B-O-0924") == "Molmo-7B-O-0924" and st.match("Qwen/Qwen2.5-VL-7B-Instruct") is None
    assert paper_results("o3d").match("llava-v1.5-7b") == "LLaVA1.5"
    with pytest.raises(ValueError, match=r"row 'A' has 1 values for 2 columns"):
        PaperResults.model_validate({"models": {"A": {"hub_id": None}},
                                     "tables": {"t": {"title": "t", "scale": 1, "columns": ["x", "y"], "rows": {"A": [0.5]}}}})
    with pytest.raises(ValueError, match=r"rows \['B'\] are not in models"):
        PaperResults.model_validate({"models": {"A": {"hub_id": None}},
                                     "tables": {"t": {"title": "t", "scale": 1, "columns": ["x"], "rows": {"B": [0.5]}}}})


def test_easi_bands():
    assert [grade_points(d) for d in (0.0, 2.5, 2.51, 5.0, 5.01, None)] == [
        "strong", "strong", "acceptable", "acceptable", "discrepancy", "missing"]


def test_verify_the_released_o3d_outputs_exactly_and_fail_when_they_differ(tmp_path):
    proc = _cli("verify", str(RELEASED), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["checked"] == 65 and result["grades"] == {"exact": 65} and result["passed"]
    assert {c["paper_model"] for c in result["cells"]} == {"BLIP2", "InternVL2.5", "LLaVA1.5", "PaliGemma2", "VILA1.5"}
    # rescore of the release returns its headline figures as tidy records too: 4 per model
    released = [ResultRecord.model_validate(r) for r in
                json.loads(_cli("rescore", "o3d", str(RELEASED), "--json").stdout)["records"]]
    assert len(released) == 20 and {(r.task, r.metric) for r in released} == {
        ("released:marked", "acc"), ("released:marked", "bias_nf"), ("released:marked", "sdgm_vision"),
        ("released:language", "sdgm_language")}
    assert all((r.ci_method == "wilson") == (r.metric == "acc") for r in released)  # no scene ids to resample
    # one model's outputs with every tenth row dropped: not the outputs the paper scored any more
    thinned = tmp_path / "thinned.jsonl"
    with gzip.open(RELEASED, "rt") as src, thinned.open("w") as dst:
        kept = [line for i, line in enumerate(src) if '"model": "InternVL2_5-4B"' in line and i % 10]
        dst.writelines(kept)
    proc = _cli("verify", str(thinned))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mismatch" in proc.stdout and "FAILED" in proc.stdout


def test_verify_grades_a_runs_figures_against_its_paper_row(baseline_runs, tmp_path):
    # a real lmms-eval run (the oracle baseline on the SpatialTunnel samples), its results file told it
    # was Qwen2.5-VL-3B: its exact-match phase task is then checked against Table 8's row (and its
    # logit tasks against Tables 3 and 9)
    run_dir = tmp_path / "as_qwen"
    shutil.copytree(baseline_runs / "oracle", run_dir)
    for results_file in run_dir.rglob("*_results.json"):
        data = json.loads(results_file.read_text())
        data["config"]["model_args"] = "pretrained=Qwen/Qwen2.5-VL-3B-Instruct,device=cpu"
        results_file.write_text(json.dumps(data))
    result = verify(read_runs(run_dir))
    (run,) = find_runs(run_dir)
    phase = "spatialtunnel_sample_phase"
    expected = st_metrics.summary(records_from_samples(run.samples[phase]))
    assert {(c["table"], c["scope"]) for c in result["cells"]} == {
        ("table8", phase), ("table3", "spatialtunnel_logit_sample_phase"), ("table9", "spatialtunnel_logit_sample_size")}
    cells = {c["column"]: c for c in result["cells"] if c["table"] == "table8"}
    assert set(cells) == {"v", "v_cons", "v_ctr", "delta"}
    for column, cell in cells.items():
        assert cell["ours"] == pytest.approx(expected[column]) and cell["scope"] == phase
        assert cell["delta_points"] == pytest.approx(abs(expected[column] - cell["paper"]) * 100)
        assert cell["grade"] == grade_points(cell["delta_points"])
    assert cells["v"]["paper"] == 0.493 and cells["v"]["grade"] == "discrepancy"  # the oracle is right everywhere
    proc = _cli("verify", str(run_dir))
    assert proc.returncode == 1 and "FAILED: some cells differ by more than 5 points" in proc.stdout
    write_report(read_runs(run_dir), tmp_path / "report")  # the report shows the paper's row beside ours
    text = (tmp_path / "report" / "report.md").read_text()
    section = text[text.index("## Beside the papers"):text.index("## SpatialTunnel")]
    assert text.index("## Scorecard") < text.index("## Beside the papers")
    assert f"| Qwen2.5-VL-3B-Instruct | Qwen2.5-VL-3B | spatialtunnel table8 | v | {phase} | " \
           f"{expected['v']:.3f} | 0.493 | {abs(expected['v'] - 0.493) * 100:.1f} | discrepancy |" in section
    proc = _cli("verify", str(baseline_runs / "vertical"))  # model spatial_baseline: no paper row
    # issue 44, item 5: fair to a run of one's own -- said so, how to map it named, exit 0; --strict exits 1
    assert proc.returncode == 0 and "Nothing verified: no run or released file matched a paper model" in proc.stdout
    assert "one of its names in tasks/<benchmark>/paper_results.yaml" in proc.stdout and "FAILED" not in proc.stdout
    assert "No paper row for: spatial_baseline (spatialtunnel)" in proc.stdout
    assert _cli("verify", str(baseline_runs / "vertical"), "--strict").returncode == 1


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli([SPATIAL_TASKS, *args], capture_output=True,
                   text=True, timeout=300)


def test_the_spatialtunnel_tables_intervals_of_v_cons_and_v_ctr():
    rows = [{"image_id": f"im{i}", "question_id": f"q{i}", "relation_two_way": "consistent",
             "relation": "consistent", "score": float(i < 8)} for i in range(10)]
    rows += [{"image_id": f"im{i}", "question_id": f"r{i}", "relation_two_way": "counter",
              "relation": "counter", "score": float(i < 3)} for i in range(10)]
    found = get("spatialtunnel").scorecard.intervals(rows)
    assert found["v_cons"] == (0.8, *wilson(8, 10), "wilson") and found["v_ctr"] == (0.3, *wilson(3, 10), "wilson")
    assert found["v"] == (0.55, *wilson(11, 20), "wilson")
    assert found["delta"][0] == pytest.approx(0.5) and found["delta"][3] == "cluster_bootstrap"
    assert "v_cons" not in {h.metric for h in get("spatialtunnel").scorecard.headlines}  # not a scorecard column


def test_headline_figures_equal_the_live_metric_functions_on_real_records(baseline_runs):
    """Each headline figure (defined once, in its benchmark's description) equals the metric function
    the live lmms-eval task reports: O3-D on the authors' released outputs (5 models, marked and
    language rows), SpatialTunnel on real runs, DORI on random records of every task."""
    from spatial_tasks.dori import metrics as dori_metrics
    from spatial_tasks.o3d.metric_sets import METRICS
    from spatial_tasks.o3d.rescore import records_from_released

    specs = {name: b.scorecard for name, b in benchmarks().items() if b.scorecard is not None}
    checked = set()
    by_model: dict[str, list[dict]] = {}
    for record in records_from_released(RELEASED):
        by_model.setdefault(record["model"], []).append(record)
    for rows in by_model.values():
        marked = [r for r in rows if r.get("is_marked")]
        language = [r for r in rows if not r.get("is_marked") and not r.get("is_real")]
        for headline in specs["o3d"].headlines:
            for scope in (marked, language, rows):
                assert headline.value(scope) == pytest.approx(METRICS[headline.metric](scope), abs=1e-12, nan_ok=True)
                checked.add(headline.metric)
    live = {"v": st_metrics.mean_score, "delta": st_metrics.consistency_gap,
            "v_cons": lambda rows: st_metrics.mean_by_relation(rows, "consistent"),
            "v_ctr": lambda rows: st_metrics.mean_by_relation(rows, "counter"),
            "v_size": lambda rows: st_metrics.mean_score([r for r in rows if r.get("variant") == "size"]),
            "delta_s": st_metrics.size_gap}
    for run in find_runs(baseline_runs):
        for path in run.samples.values():
            rows = records_from_samples(path)
            for headline in (*specs["spatialtunnel"].headlines, *specs["spatialtunnel"].details):
                assert headline.value(rows) == pytest.approx(live[headline.metric](rows), abs=1e-12, nan_ok=True)
                checked.add(headline.metric)
    rng = random.Random(3)
    from spatial_tasks.dori.schema import GRANULARITIES, TASKS
    dori = [{"question_id": f"q{i}", "task": rng.choice(list(TASKS)[:5]), "granularity": rng.choice(GRANULARITIES),
             "correct": rng.random() < 0.4} for i in range(400)]
    for headline in specs["dori"].headlines:
        granularity = headline.metric.removeprefix("avg_")
        assert headline.value(dori) == pytest.approx(dori_metrics.task_average(dori, granularity), abs=1e-12)
        checked.add(headline.metric)
    assert checked == {"acc", "bias_nf", "sdgm_vision", "sdgm_language", "v", "delta", "v_cons", "v_ctr", "v_size",
                       "delta_s", "avg_coarse", "avg_granular"}


def test_grouped_bootstrap_agrees_with_the_row_list_bootstrap():
    """The matrix form draws with numpy, the row-list form with Python's random: different draws of
    the same bootstrap, so their intervals agree to resampling noise (here < 0.01)."""
    rng = random.Random(5)
    rows = []
    for image in range(300):
        level = rng.uniform(0.2, 0.9)
        rows += [{"image_id": f"im{image}", "relation_two_way": relation, "parsed": "Yes",
                  "score": min(1.0, max(0.0, level - (0.15 if relation == "counter" else 0) + rng.gauss(0, 0.1)))}
                 for relation in ("consistent", "counter")]
    delta = next(h for h in get("spatialtunnel").scorecard.headlines if h.metric == "delta")
    unit = get("spatialtunnel").scorecard.unit
    fast = grouped_bootstrap(rows, delta.grouped, unit, iterations=1000, seed=0)
    slow = cluster_bootstrap(rows, delta.value, unit, iterations=1000, seed=0)
    assert fast[0] < delta.value(rows) < fast[1]
    assert abs(fast[0] - slow[0]) < 0.01 and abs(fast[1] - slow[1]) < 0.01
    assert grouped_bootstrap(rows, delta.grouped, unit, iterations=1000, seed=0) == fast  # seeded


def test_report_and_verify_warn_when_compared_runs_ran_with_other_software(baseline_runs, tmp_path):
    from spatial_tasks.common.environment import ENVIRONMENT_KEY

    runs = tmp_path / "runs"
    shutil.copytree(baseline_runs, runs)
    out = tmp_path / "report"
    write_report(read_runs(runs), out)
    text = (out / "report.md").read_text()
    assert "## Software" in text and "Warning" not in text  # one environment: nothing to warn about
    assert json.loads((out / "leaderboard.json").read_text())["written_with"]["torch"]
    # the oracle run told it ran with another transformers
    for results_file in (runs / "oracle").rglob("*_results.json"):
        data = json.loads(results_file.read_text())
        for config in data["configs"].values():
            config["metadata"][ENVIRONMENT_KEY]["transformers"] = "4.0.0"  # no environment here has it
        results_file.write_text(json.dumps(data))
    write_report(read_runs(runs), out)
    text = (out / "report.md").read_text()
    assert "**Warning: the rows of this scorecard ran with different versions (transformers 4.0.0, " in text
    assert "**Warning: the runs compared in this report ran with different versions (transformers 4.0.0, " in text
    assert "| 4.0.0 |" in text[text.index("## Software"):]
    result = verify(read_runs(runs))
    assert result["software_warning"].startswith("Warning: the runs verified here ran with different versions "
                                                 "(transformers 4.0.0, ")
    assert result["software_warning"] in verify_lines(result)
