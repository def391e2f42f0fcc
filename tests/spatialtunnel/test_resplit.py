"""Consistent / counter / ambiguous re-splits of EmbSpatial-Bench and CV-Bench-3D depth questions
(paper Tables 1 and 2): the split rule, the checks where the data enters, and the real
lmms-eval CLI on fixtures in lmms-eval's schemas."""

from __future__ import annotations

import json
import math
import os

import datasets
import pytest
from lmms import run_lmms_eval
from spatial_tasks.generators.spatialtunnel.resplit_standins import (
    CV_BENCH_FEATURES,
    CV_BENCH_RELATIONS,
    CV_BENCH_ROWS,
    EMBSPATIAL_FEATURES,
    EMBSPATIAL_RELATIONS,
    EMBSPATIAL_ROWS,
    cv_bench_row,
    embspatial_row,
    write_rows,
)

from spatial_tasks import harness
from spatial_tasks.common.validate import DataError
from spatial_tasks.registry import read_runs
from spatial_tasks.results.verify import verify
from spatial_tasks.spatialtunnel.resplit import metrics as resplit
from spatial_tasks.spatialtunnel.resplit import tasks as resplit_tasks
from spatial_tasks.spatialtunnel.resplit.docs import ResplitError, resplit_docs, shortcut_relation


@pytest.mark.parametrize("reader", [harness.embspatial_answer_letter, harness.cv_bench_answer_letter])
@pytest.mark.parametrize("response, letter", [
    ("B. The front points right; option A would be wrong.", "B"),
    ("A. 90 degrees clockwise (answer B is the opposite direction).", "A"),
    ("(C) the lamp, since A is nearer", "C"),
])
def test_the_resplits_letter_readers_take_the_leading_letter(reader, response, letter):
    """The re-splits read answers with lmms-eval's own readers (so acc_all is lmms-eval's accuracy):
    a letter named later in the reasoning must not override the one that opens the answer."""
    assert reader(response) == letter


@pytest.mark.parametrize("response, lmms_eval, ours", [
    ("B", "B", "B"),
    ("The answer is (B).", "", "B"),     # lmms-eval reads T: no option, so unparseable
    ("Answer: C", "A", "C"),            # lmms-eval reads the A of "Answer"
    ("the lamp", "", "C"),              # T again; ours finds the option's text
    ("D", "", ""),                      # a letter past the options names nothing
])
def test_the_answer_reader_is_the_tasks_choice(response, lmms_eval, ours):
    options = ["chair", "sofa", "lamp"]
    for reader, want in (("lmms_eval", lmms_eval), ("spatial_tasks", ours)):
        for source in ("embspatial", "cv_bench_3d"):
            doc = {"answer_reader": reader, "resplit_source": source}
            assert resplit_tasks.read_letter(doc, response, options) == want, (reader, source)


def test_custom_task_chooses_the_reader_and_docs_carry_it(tmp_path):
    from spatial_tasks.catalog import write_custom_task
    from spatial_tasks.harness import TaskData, load_docs

    path = write_custom_task("spatialtunnel_embspatial_depth_split_sample", None, tmp_path, name="ours",
                             metadata={"answer_reader": "spatial_tasks"})
    docs = load_docs(*TaskData.from_yaml(path))
    assert set(docs["answer_reader"]) == {"spatial_tasks"}
    with pytest.raises(ValueError, match=r"--metadata colour: .* has no such setting \(it has: answer_reader, source\)"):
        write_custom_task("spatialtunnel_embspatial_depth_split_sample", None, tmp_path, name="x",
                          metadata={"colour": "red"})
    bad = write_custom_task("spatialtunnel_embspatial_depth_split_sample", None, tmp_path, name="bad",
                            metadata={"answer_reader": "guess"})
    with pytest.raises(ValueError, match="answer_reader 'guess' .* must be one of"):
        load_docs(*TaskData.from_yaml(bad))


def test_two_objects_follow_the_papers_rule():
    # CV-Bench asks for the closer object (asks_far False): the other one is the farther.
    assert shortcut_relation(80, [20], False, 100)["relation"] == "consistent"  # farther (row 20) higher
    assert shortcut_relation(20, [80], False, 100)["relation"] == "counter"
    assert shortcut_relation(50, [54.9], False, 100)["relation"] == "ambiguous"  # |dy| 4.9 < 5 % of 100
    assert shortcut_relation(50, [55.0], False, 100)["relation"] == "counter"  # 5.0 is not < 5
    far = shortcut_relation(10, [40], True, 100)
    assert far == {"relation": "consistent", "dy": 30, "far": "answer", "near": "competitor"}


def test_several_options_compare_the_answer_with_the_shortcuts_pick():
    # far: the shortcut picks the highest object; the answer must beat the highest OTHER one
    assert shortcut_relation(10, [40, 60, 50], True, 80)["relation"] == "consistent"
    assert shortcut_relation(30, [20, 70], True, 80)["relation"] == "counter"  # another object is higher
    # close: the shortcut picks the lowest object
    assert shortcut_relation(70, [10, 40, 30], False, 80)["relation"] == "consistent"
    assert shortcut_relation(20, [10, 60], False, 80)["relation"] == "counter"
    assert shortcut_relation(None, [10], True, 80)["relation"] == "unknown"
    assert shortcut_relation(10, [], True, 80)["relation"] == "unknown"


def test_embspatial_docs_keep_depth_questions_with_their_relation():
    docs = resplit_docs(datasets.Dataset.from_list(EMBSPATIAL_ROWS, features=EMBSPATIAL_FEATURES), "embspatial")
    assert docs["question_id"] == ["e0", "e1", "e2", "e3", "e4", "e5"]
    assert docs["depth_split"] == EMBSPATIAL_RELATIONS
    assert docs["image_height"] == [80] * 6 and docs["benchmark"] == [resplit.BENCHMARK] * 6
    assert docs["dy"][0] == pytest.approx(30.0) and docs["dy"][5] is None
    assert docs["option_rows"][5] == [32.0, 30.0, None, 50.0]
    assert isinstance(docs[0]["image"], object) and docs[0]["answer_options"][0] == "lamp"  # lmms-eval's fields stay


def test_cv_bench_docs_keep_depth_questions_with_their_relation():
    docs = resplit_docs(datasets.Dataset.from_list(CV_BENCH_ROWS, features=CV_BENCH_FEATURES), "cv_bench_3d")
    assert docs["idx"] == [0, 1, 2] and docs["depth_split"] == CV_BENCH_RELATIONS
    assert [d["asks_far"] for d in docs] == [False] * 3


@pytest.mark.parametrize("source, row, message", [
    ("embspatial", {**embspatial_row("x", "far", 7, {"a": 10, "b": 20})}, r"field 'answer': 7 is not an index into the 2 options"),
    ("embspatial", {**embspatial_row("x", "far", 0, {"a": 10, "b": 20}), "answer_options": ["a"]},
     r"field 'answer_options': expected a list of at least 2"),
    ("embspatial", {**embspatial_row("x", "close", 0, {"a": 10, "b": 20}),
                    "objects": {"name": ["a"], "bbox": [[1.0, 2.0, -5.0, 3.0]]}}, r"box of 'a'.* negative size \(xywh\)"),
    ("embspatial", {**embspatial_row("x", "close", 0, {"a": 10, "b": 20}),
                    "objects": {"name": ["a"], "bbox": [[1.0, 200.0, 5.0, 3.0]]}}, r"lies outside the 100 x 80 image"),
    ("embspatial", {**embspatial_row("x", "close", 0, {"a": 10, "b": 20}),
                    "objects": {"name": ["a"], "bbox": [[1.0, 2.0, 3.0]]}}, r"a box is 4 numbers"),
    ("cv_bench_3d", {**cv_bench_row(5, "Depth", "(C)", (10, 20))}, r"field 'answer': answer '\(C\)' is not one of the 2"),
    ("cv_bench_3d", {**cv_bench_row(5, "Depth", "(A)", (10, 20)), "bbox": [[1.0, 2.0, 3.0, 4.0]]},
     r"field 'bbox': expected one box per choice \(2\)"),
    ("cv_bench_3d", {**cv_bench_row(5, "Depth", "(A)", (10, 20)), "choices": ["a", "b", "c"]},
     r"field 'choices': a Depth question compares 2 objects"),
    ("cv_bench_3d", {**cv_bench_row(5, "Depth", "(A)", (10, 20)), "image": {"bytes": b"\x89PNG\r\n\x1a\nxx", "path": None}},
     r"column 'image': not a readable image"),
])
def test_bad_rows_are_named(tmp_path, source, row, message):
    rows, features = ((EMBSPATIAL_ROWS, EMBSPATIAL_FEATURES) if source == "embspatial" else (CV_BENCH_ROWS, CV_BENCH_FEATURES))
    path = write_rows(tmp_path / "bad" / "test-00000-of-00001.parquet", [rows[0], row], features)
    dataset = datasets.load_dataset("parquet", data_files=str(path), split="train")
    with pytest.raises(DataError, match=message) as info:
        resplit_docs(dataset, source)
    assert "row 1" in str(info.value)


def test_missing_columns_and_no_depth_question(tmp_path):
    dataset = datasets.Dataset.from_list(EMBSPATIAL_ROWS, features=EMBSPATIAL_FEATURES).remove_columns("objects")
    with pytest.raises(ResplitError, match=r"missing column\(s\) \['objects'\] needed for the EmbSpatial depth re-split"):
        resplit_docs(dataset, "embspatial")
    only_left = datasets.Dataset.from_list(EMBSPATIAL_ROWS[-1:], features=EMBSPATIAL_FEATURES)
    with pytest.raises(ResplitError, match="no depth question"):
        resplit_docs(only_left, "embspatial")


def test_metrics_are_accuracies_per_split():
    records = [{"relation": r, "score": s, "parsed": "A"} for r, s in
               [("consistent", 1), ("consistent", 1), ("counter", 0), ("counter", 1), ("ambiguous", 0), ("unknown", 1)]]
    s = resplit.summary(records)
    assert (s["acc_all"], s["acc_cons"], s["acc_ctr"], s["delta"], s["acc_amb"]) == (pytest.approx(4 / 6), 1.0, 0.5, 0.5, 0.0)
    assert (s["n_cons"], s["n_ctr"], s["n_amb"], s["n_unknown"]) == (2, 2, 1, 1)
    unreadable = [{**r, "parsed": "unparseable", "score": 0.0} for r in records]
    assert math.isnan(resplit.gap(unreadable)) and resplit.summary(unreadable)["unparseable"] == 1.0


def _task_yaml(folder, name, base, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(
        f"include: {base}\ntask: {name}\ndataset_path: parquet\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data}\n")


@pytest.mark.cli
def test_lmms_eval_runs_both_resplit_tasks(tmp_path):
    from spatial_tasks.paths import benchmark_tasks_dir

    tasks = benchmark_tasks_dir("spatialtunnel")
    emb = write_rows(tmp_path / "emb" / "test-00000-of-00001.parquet", EMBSPATIAL_ROWS, EMBSPATIAL_FEATURES)
    cvb = write_rows(tmp_path / "cvb" / "test-00000-of-00001.parquet", CV_BENCH_ROWS, CV_BENCH_FEATURES)
    _task_yaml(tmp_path / "mytasks", "emb_depth_split_fixture", tasks / "spatialtunnel_embspatial_depth_split.yaml", emb)
    _task_yaml(tmp_path / "mytasks", "cvb_depth_split_fixture", tasks / "spatialtunnel_cv_bench_3d_split.yaml", cvb)
    names = "emb_depth_split_fixture,cvb_depth_split_fixture"
    shortcut = run_lmms_eval(tmp_path / "vertical", "spatial_baseline", "rule=vertical", names,
                             "--include_path", str(tmp_path / "mytasks"))
    emb_m, cvb_m = shortcut.metrics("emb_depth_split_fixture"), shortcut.metrics("cvb_depth_split_fixture")
    # the shortcut is right exactly on consistent questions: Δ = 1
    assert (emb_m["acc_cons"], emb_m["acc_ctr"], emb_m["delta"]) == (1.0, 0.0, 1.0)
    assert (emb_m["n_cons"], emb_m["n_ctr"], emb_m["n_amb"]) == (2, 2, 1)
    assert (cvb_m["acc_cons"], cvb_m["acc_ctr"], cvb_m["delta"], cvb_m["n_amb"]) == (1.0, 0.0, 1.0, 1)
    logged = shortcut.samples["emb_depth_split_fixture"]
    assert [s["acc_all"]["relation"] for s in logged] == EMBSPATIAL_RELATIONS
    assert logged[0]["acc_all"]["response"] == "A"
    # lmms-eval's own prompt reached the model (its pre_prompt and lettered options)
    assert logged[0]["input"].startswith("Note: You only need to respond with A, B, C, D")
    oracle = run_lmms_eval(tmp_path / "oracle", "spatial_baseline", "rule=oracle", names,
                           "--include_path", str(tmp_path / "mytasks"))
    assert oracle.metrics("emb_depth_split_fixture")["acc_all"] == 1.0
    assert oracle.metrics("cvb_depth_split_fixture")["acc_all"] == 1.0
    # `spatial-tasks verify` puts the shortcut run beside Table 2 once its results say it was Qwen2.5-VL-3B
    for results_file in (tmp_path / "vertical").rglob("*_results.json"):
        data = json.loads(results_file.read_text())
        data["config"]["model_args"] = "pretrained=Qwen/Qwen2.5-VL-3B-Instruct"
        results_file.write_text(json.dumps(data))
    cells = {c["column"]: c for c in verify(read_runs(tmp_path / "vertical"))["cells"]}
    assert set(cells) == {"embspatial_consistent", "embspatial_counter", "cv_bench_3d_consistent",
                          "cv_bench_3d_counter"} and {c["table"] for c in cells.values()} == {"table2"}
    assert (cells["embspatial_consistent"]["ours"], cells["embspatial_counter"]["ours"]) == (1.0, 0.0)
    assert (cells["embspatial_consistent"]["paper"], cells["cv_bench_3d_counter"]["paper"]) == pytest.approx((0.547, 0.554))


@pytest.mark.network
@pytest.mark.skipif(os.environ.get("SPATIAL_TASKS_NETWORK") != "1", reason="needs the Hugging Face Hub "
                    "(set SPATIAL_TASKS_NETWORK=1 where it is reachable)")
@pytest.mark.parametrize("source, path, name", [("embspatial", "FlagEval/EmbSpatial-Bench", None),
                                                ("cv_bench_3d", "nyu-visionx/CV-Bench", "3D")])
def test_table1_counts_on_the_real_data(source, path, name):
    """Paper Table 1: EmbSpatial 976 / 129 / 101, CV-Bench-3D 363 / 65 / 172."""
    dataset = datasets.load_dataset(path, name, split="test")
    relations = resplit_docs(dataset, source)["depth_split"]
    counts = {r: relations.count(r) for r in ("consistent", "counter", "ambiguous")}
    assert counts == resplit.PAPER_TABLE1[source]


def test_bundled_stand_ins_are_what_the_fixture_builds(tmp_path):
    from spatial_tasks.generators.spatialtunnel.resplit_standins import build_sample

    from spatial_tasks.paths import benchmark_tasks_dir

    sample = benchmark_tasks_dir("spatialtunnel") / "sample"
    for built in build_sample(tmp_path):
        bundled = sample / built.parent.name / built.name
        fresh = datasets.load_dataset("parquet", data_files=str(built), split="train")
        shipped = datasets.load_dataset("parquet", data_files=str(bundled), split="train")
        assert fresh.to_list() == shipped.to_list(), f"{bundled} is stale: rerun python -m spatial_tasks.generators.spatialtunnel.resplit_standins"
