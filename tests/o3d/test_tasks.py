"""O3-D lmms-eval hooks without the CLI: registration, golden prompts, records, metric fan-out,
group pooling, the data-source inference, ICL+CoT shapes, baseline answers, custom-task YAMLs."""

from __future__ import annotations

import json
import math
import pickle
from math import isnan
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from spatial_tasks.generators.o3d import standins as fixture

from spatial_tasks.harness import TaskData, pooling
from spatial_tasks.o3d import (
    baselines,
    demonstrations,
    metric_sets,
    metrics,
    model_input,
    records,
    schema,
    slices,
    task_docs,
)
from spatial_tasks.o3d import tasks as T
from spatial_tasks.o3d.parse import parse_answer
from spatial_tasks.o3d.prompts import prompt_space, real_prompt_space
from spatial_tasks.paths import benchmark_tasks_dir

TASKS_DIR = benchmark_tasks_dir("o3d")
SAMPLE = TASKS_DIR / "sample"
QUESTIONS_FILE = SAMPLE / "visual_questions" / "train-00000-of-00001.parquet"
# The fixture with the layout of the release's names (timestamps: strength 1 then 2 per scene).
FIXTURE_ARGS = {"seed": 0, "counts": {"kb-0cue": 6, "kb-1cue": 32, "kb-2cue": 8, "real-012cue-cropped": 12},
                "image_size": (256, 192)}
# Each task's metrics as Table 12 and Eqs. 1-3 give them (pinned: its YAML must declare these), and its slice
# (its YAML metadata) with them.
BASIC_METRICS = ("acc", "acc_near", "acc_far", "bias_nf", "unparseable")
LANGUAGE_ONLY = ("sdgm_language", "consistency", "msdgm_query", "msdgm_order", "msdgm_formality", "msdgm_vocabulary",
                 "msdgm_clarity_level")
LANGUAGE_METRICS = BASIC_METRICS + ("sdgm_vision",) + LANGUAGE_ONLY
MARKERS_METRICS = (BASIC_METRICS + ("acc_HP", "acc_OC", "acc_RS", "acc_TG", "acc_SA", "acc_LS", "acc_FO", "acc_FS")
                   + ("acc_0cue", "acc_1cue", "acc_2cue", "sdgm_vision") + LANGUAGE_ONLY)
REAL_METRICS = BASIC_METRICS + ("acc_0cue", "acc_1cue", "acc_2cue")
ICL_METRICS = BASIC_METRICS + ("acc_1cue", "acc_2cue")
TASK_HOOKS = {
    "markers": ({"subsets": "synthetic", "marked": True, "clarity": None, "demonstrations": False}, MARKERS_METRICS),
    "clarity_low": ({"subsets": "synthetic", "marked": False, "clarity": "low", "demonstrations": False},
                    BASIC_METRICS),
    "clarity_med": ({"subsets": "synthetic", "marked": False, "clarity": "med", "demonstrations": False},
                    LANGUAGE_METRICS),
    "clarity_high": ({"subsets": "synthetic", "marked": False, "clarity": "high", "demonstrations": False},
                     LANGUAGE_METRICS),
    "real": ({"subsets": "real", "marked": True, "clarity": None, "demonstrations": False}, REAL_METRICS),
    "icl_cot": ({"subsets": "icl", "marked": True, "clarity": None, "demonstrations": True}, ICL_METRICS),
}
MARKERS = TASK_HOOKS["markers"][0]


def sample_data(**changes) -> TaskData:
    """The TaskData of a sample task (parquet + data_files, as its YAML gives lmms-eval)."""
    fields = {"task": "o3d_sample_markers", "path": "parquet", "split": "train",
              "kwargs": {"data_files": {"train": str(QUESTIONS_FILE)}}, "metadata": MARKERS, **changes}
    return TaskData(**fields)


def folder_data(folder: Path, cache: Path) -> TaskData:
    """The TaskData of a task reading an O3-D folder in the official layout."""
    return TaskData(task="o3d_markers", path=str(folder), name="visual_questions", split="train",
                    kwargs={"cache_dir": str(cache)}, metadata=MARKERS)


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> datasets.Dataset:
    return datasets.load_dataset("parquet", data_files={"train": str(QUESTIONS_FILE)}, split="train",
                                 cache_dir=str(tmp_path_factory.mktemp("hf_cache")))


@pytest.fixture(scope="module")
def sample_docs(questions) -> dict[str, datasets.Dataset]:
    """Every sample task's docs, built as lmms-eval builds them (parquet + data_files)."""
    return {name: T.process_docs(questions, sample_data(metadata=meta)) for name, (meta, _) in TASK_HOOKS.items()}


def _doc(docs, question_id: str) -> dict:
    return next(d for d in docs if d["question_id"] == question_id)


# ---- registration ------------------------------------------------------------------------------


def test_every_task_and_group_registers_and_resolves():
    from lmms_eval.api.registry import get_aggregation
    from lmms_eval.tasks import TaskManager
    from lmms_eval.utils import load_yaml_config

    from spatial_tasks.harness import register_aggregations

    register_aggregations()  # what the entry point does in every lmms-eval process (alone, this test has none)
    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    names = {"o3d_markers", "o3d_clarity_low", "o3d_clarity_med", "o3d_clarity_high", "o3d_real", "o3d_icl_cot"}
    names |= {n.replace("o3d_", "o3d_sample_") for n in names}
    assert names <= set(tm.all_subtasks)
    assert {"o3d", "o3d_sample"} <= set(tm.all_groups)
    for name in names:
        cfg = load_yaml_config(tm.task_index[name]["yaml_path"], mode="full")  # every include and !function
        kind = next(k for k in TASK_HOOKS if name.endswith(k))
        declared = tuple(m["metric"] for m in cfg["metric_list"])
        assert declared == TASK_HOOKS[kind][1], name
        # each metric aggregated by its registered name: one entry of the table, one YAML line
        assert [m["aggregation"] for m in cfg["metric_list"]] == [f"o3d_{m}" for m in declared]
        assert all(get_aggregation(m["aggregation"]).metric_function is metric_sets.METRICS[m["metric"]] for m in cfg["metric_list"])
        assert cfg["metadata"] == {"version": 0.2, **TASK_HOOKS[kind][0]} and cfg["test_split"] == "train"
        assert cfg["process_docs"] is T.process_docs
        if "sample" in name:
            assert cfg["dataset_path"] == "parquet" and cfg["dataset_name"] is None
        else:
            assert (cfg["dataset_path"], cfg["dataset_name"]) == ("liuyiqian/O3-D", "visual_questions")
    icl = load_yaml_config(tm.task_index["o3d_icl_cot"]["yaml_path"], mode="full")
    assert icl["doc_to_messages"] is T.doc_to_messages_icl and icl["doc_to_visual"] is T.doc_to_visual_icl
    assert icl["generation_kwargs"]["max_new_tokens"] == 128
    group = load_yaml_config(tm.task_index["o3d"]["yaml_path"], mode="full")
    assert group["task"] == ["o3d_clarity_low", "o3d_clarity_med", "o3d_clarity_high", "o3d_markers"]
    assert all(m["aggregation"] is T.pool_subtasks for m in group["aggregate_metric_list"])
    # lmms-eval matches these names as substrings: together they cover every subtask metric
    patterns = [m["metric"] for m in group["aggregate_metric_list"]]
    assert all(any(p in metric for p in patterns) for metric in metric_sets.METRICS)


def test_process_results_fan_out_exactly_the_declared_metrics(sample_docs):
    doc = sample_docs["markers"][0]
    for hook, names in ((T.process_results, BASIC_METRICS), (T.process_results, LANGUAGE_METRICS),
                        (T.process_results, MARKERS_METRICS), (T.process_results, REAL_METRICS),
                        (T.process_results_icl, ICL_METRICS)):
        out = hook.bound(names)(doc, ["A"])
        assert tuple(out) == names
        assert isinstance(out["acc"], dict) and out["acc"]["benchmark"] == "o3d"
        assert all(isinstance(out[n], pooling.RecordRef) and out[n].record is out["acc"] for n in names[1:])
        assert str(out[names[1]]) == "<o3d record: see 'acc'>"  # what --log_samples writes


# ---- golden prompts ----------------------------------------------------------------------------

NEAR_0CUE, FAR_0CUE = "kb-0cue/929418134042_near_.png", "kb-0cue/756037282361_far_.png"
ICL_QUERY = "kb-1cue/865111462387_near_HP.png/marked/0"
GOLDEN = {
    ("markers", f"{NEAR_0CUE}/marked/0"):
        "Does the object marked with a red circle feel farther or nearer than the objects marked with a blue "
        "square? A. Farther. B. Nearer. Answer A or B.",
    ("markers", f"{FAR_0CUE}/marked/0"):
        "Relative to the camera, is the object marked with a red circle closer or farther away than the objects "
        "marked with a blue square? A. Closer. B. Farther. Answer A or B.",
    ("clarity_low", f"{NEAR_0CUE}/plain/0"):
        "Is the object that stands out closer to or farther away from the viewer than the rest of the objects? "
        "A. Farther. B. Closer. Answer A or B.",
    ("clarity_low", f"{FAR_0CUE}/plain/0"):
        "Is the special object positioned farther from or closer to the observer than the rest of the objects? "
        "A. Farther. B. Closer. Answer A or B.",
    ("real", "real-012cue-cropped/img_0600-trfar.jpg/marked/0"):
        "In this image, there is an object marked with a red circle. Is the object closer to the viewer or "
        "farther away than the objects marked with a blue square? A. farther. B. closer. Answer A or B.",
}
# Each demonstration has its own freshly drawn question and the authors' CoT wording.
GOLDEN_ICL = (
    "<image 1> Is the object marked with a red circle closer to or farther away from the viewer than the objects "
    "marked with a blue square? A. Closer. B. Farther. Answer A or B. (Let's think step by step. The object of "
    "interest appears higher than the others. Based on the height-in-plane pictorial cues, it is likely that the "
    "object is farther away than the other objects.) B.\n"
    "<image 2> Is the object marked with a red circle positioned farther from or closer to the observer than the "
    "objects marked with a blue square? A. Closer. B. Farther. Answer A or B. (Let's think step by step. The "
    "object of interest appears lower than the others. Based on the height-in-plane pictorial cues, it is likely "
    "that the object is closer than the other objects.) A.\n"
    "<image 3> Along the line of sight, is the object marked with a red circle positioned before or after the "
    "objects marked with a blue square? A. Before. B. After. Answer A or B."
)


@pytest.mark.parametrize("key", list(GOLDEN))
def test_golden_prompts(sample_docs, key):
    kind, question_id = key
    doc = _doc(sample_docs[kind], question_id)
    assert T.doc_to_text(doc) == GOLDEN[key]
    assert T.doc_to_text(doc, {"pre_prompt": "Q: ", "post_prompt": " A:"}) == f"Q: {GOLDEN[key]} A:"
    assert T.doc_to_target(doc) == doc["gt_label"]


@pytest.mark.parametrize("key", list(GOLDEN))
def test_answer_instruction_is_a_task_parameter(sample_docs, key):
    """The authors prompted Kosmos2 with "Answer:" instead of "Answer A or B."."""
    doc = _doc(sample_docs[key[0]], key[1])
    kosmos = GOLDEN[key].removesuffix("Answer A or B.") + "Answer:"
    assert T.doc_to_text(doc, {"answer_instruction": "Answer:"}) == kosmos
    assert T.doc_to_text(doc, {"answer_instruction": ""}) == GOLDEN[key].removesuffix(" Answer A or B.")
    assert T.doc_to_text(doc, {"answer_instruction": None}) == GOLDEN[key]
    with pytest.raises(ValueError, match="does not end with"):
        T.doc_to_text({**doc, "question": "Is it closer?"}, {"answer_instruction": "Answer:"})


def test_icl_prompt_uses_the_answer_instruction_everywhere(sample_docs):
    doc = _doc(sample_docs["icl_cot"], ICL_QUERY)
    text = T.doc_to_text_icl(doc, {"answer_instruction": "Answer:"})
    assert text == GOLDEN_ICL.replace("Answer A or B.", "Answer:")


def test_golden_icl_cot_prompt(sample_docs):
    doc = _doc(sample_docs["icl_cot"], ICL_QUERY)
    assert T.doc_to_text_icl(doc) == GOLDEN_ICL
    assert [d["image_name"] for d in doc["icl_demos"]] == ["061038373729_far_HP.png", "500397998328_near_HP.png"]
    assert all(d["question"] != doc["question"] for d in doc["icl_demos"])


def test_prompt_text_is_the_dataset_question_and_has_no_trailing_space(sample_docs):
    for kind in ("markers", "clarity_low", "clarity_med", "clarity_high", "real"):
        for doc in sample_docs[kind]:
            text = T.doc_to_text(doc)
            assert text == doc["question"] and text == text.strip()


def test_missing_prompt_field_is_an_error(sample_docs):
    from spatial_tasks.common.prompts import PromptError, render

    with pytest.raises(PromptError, match="prompt.jinja"):
        render("o3d", "prompt.jinja", question="q")


# ---- the docs of each task ----------------------------------------------------------------------


def test_each_task_keeps_its_slice(sample_docs):
    m = sample_docs["markers"]
    assert set(m["subset_name"]) == set(slices.SYNTHETIC_TASK_SUBSETS) and all(m["is_marked"])
    assert set(m["ques_clarity"]) == {4.0}
    for kind, clarity in (("clarity_low", 2.0), ("clarity_med", 3.0), ("clarity_high", 3.5)):
        docs = sample_docs[kind]
        assert len(docs) > 20 and set(docs["ques_clarity"]) == {clarity} and not any(docs["is_marked"])
        assert set(docs["subset_name"]) <= set(slices.SYNTHETIC_TASK_SUBSETS)
    real = sample_docs["real"]
    assert set(real["subset_name"]) == {"real-012cue-cropped"} and all(real["is_marked"])
    assert {d["num_cues"] for d in real} == {0, 1, 2}
    icl = sample_docs["icl_cot"]
    # kb-2cue's HP+SA, OC+RS and LS+TG have one near and one far image: no other image to show (6 left out)
    assert set(icl["subset_name"]) == set(slices.ICL_SUBSETS) and len(icl) == 32 + 10 - 6


def test_records_carry_what_the_metrics_need(sample_docs):
    doc = _doc(sample_docs["markers"], f"{NEAR_0CUE}/marked/0")  # A. Farther. B. Nearer.
    rec = records.record(doc, "B")
    assert set(rec) == set(records.RECORD_FIELDS)
    assert (rec["label"], rec["correct"], rec["gt_position"]) == ("closer", True, "near")
    assert (rec["query"], rec["order"], rec["formality"], rec["vocabulary"], rec["clarity_level"]) == (
        "mcq", "reversed", "casual", "close-far", "highest")
    assert rec["is_real"] is False and rec["icl"] is False and rec["image_family"] == "kb-0cue"
    assert records.record(doc, "A")["correct"] is False
    assert records.record(doc, "I cannot tell")["label"] == "unparseable"
    assert T.process_results_icl.bound(ICL_METRICS)(doc, ["A"])["acc"]["icl"] is True
    # a rescored record equals the live one
    assert records.rescored({**rec, "label": "x", "correct": None}) == rec


# ---- metrics and group pooling ------------------------------------------------------------------


def _agg(metric):
    """O3-D's aggregation of ``metric`` as lmms-eval finds it by name (registered by the entry point)."""
    import lmms_eval.models  # noqa: F401 -- loads our entry point, which registers the table
    from lmms_eval.api.registry import get_aggregation

    return get_aggregation(f"o3d_{metric}")


def _records(sample_docs, kind, answer):
    return [records.record(d, answer(d)) for d in sample_docs[kind]]


def test_aggregations_wrap_the_pure_metric_functions(sample_docs):
    recs = _records(sample_docs, "markers", lambda d: "A")
    assert _agg("acc")(recs) == pytest.approx(metrics.accuracy(recs)["acc"])
    assert _agg("bias_nf")(recs) == pytest.approx(metrics.near_far_bias(recs)["bias"])
    assert _agg("acc_HP")(recs) == pytest.approx(metrics.accuracy_by_cue(recs)["HP"]["acc"])
    assert _agg("acc_1cue")(recs) == pytest.approx(metrics.accuracy_by_num_cues(recs)[1]["acc"])
    assert _agg("sdgm_language")(recs) == pytest.approx(metrics.sdgm_language(recs)["sdgm"])
    assert _agg("consistency")(recs) == pytest.approx(1 - metrics.sdgm_language(recs)["sdgm"])
    assert _agg("msdgm_order")(recs) == pytest.approx(metrics.modified_sdgm(recs, "order")["sdgm"])
    refs = [T.process_results.bound(MARKERS_METRICS)(d, ["A"])[n] for d in sample_docs["markers"] for n in ("acc_near",)]
    assert _agg("acc_near")(refs) == pytest.approx(metrics.near_far_bias(recs)["acc_near"])  # RecordRefs unwrap
    assert math.isnan(_agg("acc_FS")([]))  # undefined -> NaN, never an exception


def test_unparseable_counts_every_row():
    rows = [{"label": "unparseable", "gt_position": "none"}, {"label": "closer", "gt_position": "near"}]
    assert metric_sets.METRICS["unparseable"](rows) == 0.5
    assert isnan(metric_sets.METRICS["unparseable"]([]))


def test_group_pools_records_not_means(sample_docs):
    def answer(d):  # a mixed, deterministic model
        return "A" if sum(map(ord, d["question_id"])) % 3 else "B"

    parts = {k: _records(sample_docs, k, answer) for k in ("clarity_med", "clarity_high", "markers")}
    for name in ("acc", "bias_nf", "sdgm_vision", "sdgm_language", "consistency", "msdgm_clarity_level"):
        values = [_agg(name)(list(recs)) for recs in parts.values()]
        pooled = T.pool_subtasks(values, [len(r) for r in parts.values()], True)
        assert isinstance(pooled, pooling.PooledValue) and pooled.metric == name
        expected = metric_sets.METRICS[name]([r for recs in parts.values() for r in recs])
        assert float(pooled) == pytest.approx(expected)
    # over three clarity levels the language SDGM has more groups than any one task alone
    everything = [r for recs in parts.values() for r in recs]
    assert metrics.sdgm_language(everything)["n_groups"] > max(
        metrics.sdgm_language(r)["n_groups"] for r in parts.values())


def test_pooled_values_are_plain_floats_outside_the_process(sample_docs):
    value = _agg("acc")(_records(sample_docs, "real", lambda d: "A"))
    assert type(pickle.loads(pickle.dumps(value))) is float
    import copy

    assert type(copy.deepcopy(value)) is float and copy.deepcopy(value) == value
    import json

    assert json.loads(json.dumps({"acc": value}))["acc"] == float(value)


def test_group_without_records_reports_nan():
    assert math.isnan(T.pool_subtasks([0.5, 0.7], [10, 10], True))


# ---- data source --------------------------------------------------------------------------------


def test_subsets_come_from_the_dataset_root_of_the_data_files():
    source, kwargs = task_docs.subset_source(sample_data())
    assert Path(source) == SAMPLE.resolve() and kwargs == {}


def test_subsets_come_from_the_tasks_folder_or_hub_id():
    assert task_docs.subset_source(sample_data(path=str(SAMPLE), kwargs={})) == (str(SAMPLE.resolve()), {})
    hub = sample_data(path="someone/O3-D-mirror", name="visual_questions", kwargs={"revision": "abc", "num_proc": 2})
    assert task_docs.subset_source(hub) == ("someone/O3-D-mirror", {"revision": "abc"})


def test_the_source_variable_redirects_only_the_official_release(monkeypatch, tmp_path):
    monkeypatch.setenv(schema.SOURCE.env, str(tmp_path))
    official = TaskData(task="o3d_markers", path=schema.SOURCE.default, name="visual_questions", split="train",
                        kwargs={"revision": "v1"})
    redirected = T.process_docs.resolve(official)
    assert (redirected.path, redirected.name, redirected.kwargs, redirected.override) == (
        str(tmp_path), "visual_questions", {}, schema.SOURCE.env)
    assert T.process_docs.resolve(sample_data()) == sample_data()  # the sample stays the sample


def test_a_saved_split_says_nothing_about_the_subsets():
    with pytest.raises(schema.SchemaError, match="load_from_disk"):
        task_docs.subset_source(sample_data(path="/somewhere", kwargs={"load_from_disk": True}))
    with pytest.raises(schema.SchemaError, match="not <root>/visual_questions/<file>"):
        task_docs.subset_source(sample_data(kwargs={"data_files": {"train": "questions.parquet"}}))


# ---- ICL + CoT ----------------------------------------------------------------------------------


def test_icl_demonstrations_are_one_near_one_far_with_the_same_cues(sample_docs):
    icl = sample_docs["icl_cot"]
    by_image = {(d["subset_name"], d["image_name"]): d for d in sample_docs["markers"]}
    firsts = set()
    for doc in icl:
        demos = doc["icl_demos"]
        assert sorted(d["position"] for d in demos) == ["far", "near"]
        firsts.add(demos[0]["position"])
        for demo in demos:
            source = by_image[(demo["subset_name"], demo["image_name"])]
            assert source["cues"] == doc["cues"] and source["gt_position"] == demo["position"]
            assert demo["image_name"] != doc["image_name"] and demo["is_marked"]
    assert firsts == {"near", "far"}  # the order is random (seeded), not fixed
    again = demonstrations.attach_demonstrations(sample_docs["markers"].filter(lambda d: d["subset_name"] != "kb-0cue"))
    assert again["icl_demos"] == icl["icl_demos"]  # same seed, same prompts


def test_icl_visuals_text_and_messages_line_up(sample_docs):
    doc = sample_docs["icl_cot"][5]
    visuals = T.doc_to_visual_icl(doc)
    assert len(visuals) == 3 and all(isinstance(v, Image.Image) and v.mode == "RGB" for v in visuals)
    assert visuals[2].tobytes() == T.doc_to_visual(doc)[0].tobytes()  # the query comes last
    text = T.doc_to_text_icl(doc)
    assert [int(n) for n in model_input.IMAGE_PLACEHOLDER.findall(text)] == [1, 2, 3]
    assert text.count("(Let's think step by step.") == 2 and text.endswith(doc["question"])
    (message,) = T.doc_to_messages_icl(doc)
    assert message["role"] == "user"
    kinds = [p["type"] for p in message["content"]]
    assert kinds == ["image", "text", "image", "text", "image", "text"]
    assert [p["url"].tobytes() for p in message["content"] if p["type"] == "image"] == [v.tobytes() for v in visuals]
    assert message["content"][-1]["text"] == doc["question"]
    from lmms_eval.protocol import ChatMessages  # the chat models' own parser accepts it

    images, videos, _ = ChatMessages(messages=[message]).extract_media()
    assert len(images) == 3 and not videos


def test_interleave_rejects_a_missing_image():
    with pytest.raises(ValueError, match="<image 2>"):
        model_input.interleave("<image 1> a <image 2> b", [Image.new("RGB", (4, 4))])


def test_a_cue_set_without_demonstrations_is_left_out(sample_docs):
    one_image = sample_docs["icl_cot"].filter(lambda d: d["image_name"] == ICL_QUERY.split("/")[1])
    assert len(demonstrations.attach_demonstrations(one_image.remove_columns("icl_demos"))) == 0


def test_write_out_writes_prompts_and_images(sample_docs, tmp_path):
    out = model_input.write_out(sample_docs["icl_cot"], tmp_path / "check", n=2, icl=True)
    assert len(list(out.glob("*.png"))) == 6 and "<image 3>" in (out / "prompts.txt").read_text()


# ---- cue strengths missing in the source ---------------------------------------------------------


def test_null_strengths_are_recovered_from_render_order(tmp_path):
    """The release's kb-1cue has no strengths: they follow from the render order of its
    timestamped names (strength 1, then 2, per scene) -- checked on the fixture, which names its
    images that way (our generator always writes the strengths)."""
    built = fixture.build_fixture(tmp_path / "O3-D", **FIXTURE_ARGS)
    questions_file = built / "visual_questions" / fixture.PARQUET_NAME
    qs = datasets.load_dataset("parquet", data_files={"train": str(questions_file)}, split="train",
                               cache_dir=str(tmp_path / "cache0"))
    original = {d["question_id"]: d["cue_strength"]
                for d in T.process_docs(qs, folder_data(built, tmp_path / "cache1"))}
    path = built / "kb-1cue" / fixture.PARQUET_NAME
    table = pq.read_table(path)
    i = table.schema.get_field_index("cue_strength")
    pq.write_table(table.set_column(i, "cue_strength", pa.nulls(table.num_rows, pa.float64())), path)
    docs = T.process_docs(qs, folder_data(built, tmp_path / "cache2"))
    assert {d["question_id"]: d["cue_strength"] for d in docs} == original
    assert sum(1 for d in docs if d["subset_name"] == "kb-1cue" and d["cue_strength"] == 2.0) > 10


def test_null_strengths_of_single_strength_sets_are_regular():
    cues = [["FS"], ["HP", "OC"]]
    docs = datasets.Dataset.from_dict({
        "cue_strength": [None, None], "synthetic": [True, True], "cues": cues, "image_name": ["a", "b"],
        "subset_name": ["kb-1cue", "kb-2cue"], "odd_position": ["near", "far"], "source": ["x", "x"]})
    assert task_docs._fill_missing_strengths(docs)["cue_strength"] == [1.0, 1.0]


# ---- baselines ----------------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["closer", "farther"])
def test_baseline_answers_parse_back_for_every_prompt(label):
    for prompt in (*prompt_space(), *real_prompt_space()):
        text = prompt.text
        response = baselines.answer({"question": text}, label)
        assert parse_answer(response, text) == label, (text, response)
        if prompt.tags.query == "yes-no":
            assert response in ("Yes", "No", "True", "False")
        else:
            assert response in ("A", "B")
    assert baselines.answer({"question": "Which is nearer?"}, label) == label.capitalize()


def test_rules_on_sample_docs(sample_docs):
    for kind in ("markers", "real", "icl_cot"):
        for doc in sample_docs[kind]:
            if doc["scored"]:
                assert records.record(doc, baselines.depth_oracle(doc))["correct"], doc["question_id"]
            assert records.record(doc, baselines.always_near(doc))["label"] == "closer"
            assert records.record(doc, baselines.always_far(doc))["label"] == "farther"
    with pytest.raises(ValueError, match="pretrained=PATH"):
        baselines.depth_model(sample_docs["markers"][0])


def test_rules_are_registered_for_spatial_baseline():
    from spatial_tasks.models.baseline import rules_for

    assert {"depth_oracle", "depth_model", "always_near", "always_far"} <= set(rules_for("o3d"))


# ---- custom-task, sample -------------------------------------------------------------------------


def test_custom_task_yaml_for_o3d(tmp_path):
    import yaml

    from spatial_tasks.catalog import write_custom_task

    path = write_custom_task("o3d_sample_markers", str(SAMPLE), tmp_path / "mine", name="o3d_mine")
    spec = yaml.safe_load(path.read_text())
    assert spec["dataset_path"] == str(SAMPLE.resolve()) and spec["dataset_name"] == "visual_questions"
    assert spec["test_split"] == "train" and spec["dataset_kwargs"] == {}  # the split the data declares
    with pytest.raises(ValueError, match=r"declares only the split\(s\) \['train'\]"):
        write_custom_task("o3d_markers", str(SAMPLE), tmp_path / "x", split="validation")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="official layout"):
        write_custom_task("o3d_markers", str(tmp_path / "empty"), tmp_path / "x")
    hub = yaml.safe_load(write_custom_task("o3d_real", "hub:me/o3d", tmp_path / "hub").read_text())
    assert (hub["dataset_path"], hub["test_split"]) == ("me/o3d", "train")


@pytest.mark.render
def test_bundled_sample_is_what_the_documented_command_builds(tmp_path):
    """tasks/o3d/sample comes from the O3-D generator (README.md, "Bundled sample"): rebuilt here, the
    same rows (metadata and questions; the images are renders, checked to decode)."""
    pytest.importorskip("bpy")
    from spatial_tasks.generators.o3d.sample import build_sample

    from spatial_tasks.common.images import check_image

    fresh = build_sample(tmp_path / "sample")
    for config in ("visual_questions", *slices.SYNTHETIC_TASK_SUBSETS, "real-012cue-cropped"):
        ours = pq.read_table(SAMPLE / config / fixture.PARQUET_NAME)
        theirs = pq.read_table(fresh / config / fixture.PARQUET_NAME)
        meta = [c for c in ours.column_names if c not in (*schema.SUBSET_IMAGE_COLUMNS.get(config, ()), "depth_f32", "scene")]
        assert ours.select(meta).equals(theirs.select(meta)), config
        for column in schema.SUBSET_IMAGE_COLUMNS.get(config, ()):
            for cell in ours.column(column).to_pylist():
                check_image(cell["bytes"], f"{config}/{cell['path']}")
    generation = json.loads(pq.read_schema(SAMPLE / "kb-1cue" / fixture.PARQUET_NAME).metadata[b"spatial_tasks.generation"])
    assert generation["generator"] == "spatial_tasks.generators.o3d"
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 1_500_000


def test_spatial_tasks_list_shows_the_o3d_tasks_with_their_source():
    from spatial_tasks.catalog import task_catalog

    entries = {e.name: e for e in task_catalog() if e.name.startswith("o3d")}
    assert entries["o3d_markers"].source == "liuyiqian/O3-D [visual_questions] split=train"
    assert entries["o3d_sample_icl_cot"].source == "bundled sample (offline)"
    assert entries["o3d"].kind == "group" and "o3d_markers" in entries["o3d"].source
    assert len(entries) == 14  # 6 tasks + 6 sample tasks + 2 groups


def test_a_folder_with_some_subsets_evaluates_those(tmp_path):
    """A generated folder with only the 1-cue subset: custom-task accepts it and says which subsets
    are absent; the task evaluates the questions about the subset present."""
    from loguru import logger

    from spatial_tasks.catalog import write_custom_task

    built = fixture.build_fixture(tmp_path / "O3-D", seed=0, counts={"kb-1cue": 6})
    said: list[str] = []
    sink = logger.add(lambda m: said.append(str(m)), level="INFO")
    try:
        spec = write_custom_task("o3d_markers", str(built), tmp_path / "tasks")
        qs = datasets.load_dataset("parquet", data_files={"train": str(built / "visual_questions" /
                                                                        fixture.PARQUET_NAME)},
                                   split="train", cache_dir=str(tmp_path / "cache0"))
        docs = T.process_docs(qs, folder_data(built, tmp_path / "cache1"))
    finally:
        logger.remove(sink)
    assert spec.is_file() and set(docs["subset_name"]) == {"kb-1cue"} and len(docs) > 0
    assert any("subsets present ['kb-1cue']; absent: ['kb-0cue', 'kb-2cue']" in m for m in said)
    assert any("evaluating the subsets ['kb-1cue']; no questions about ['kb-0cue', 'kb-2cue']" in m for m in said)
    with pytest.raises(ValueError, match=r"holds none of the image subsets"):
        write_custom_task("o3d_real", str(built), tmp_path / "tasks")
