"""Where DORI data enters (load.py): every supported official layout, our generator's layout, and
bad input named by file, row and field."""

from __future__ import annotations

import json
import shutil

import datasets
import pyarrow.parquet as pq
import pytest

from spatial_tasks.common.images import ImageError, open_ref
from spatial_tasks.dori import load, soft
from spatial_tasks.dori.schema import DOC_FIELDS, TASKS
from spatial_tasks.dori.tasks import doc_to_visual

from . import official_layouts

SAMPLE = "tasks/dori/sample/test-00000-of-00001.parquet"


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    root = tmp_path_factory.mktemp("dori_layouts")
    return {layout: official_layouts.write(layout, root / layout) for layout in official_layouts.LAYOUTS}


@pytest.mark.parametrize("layout", official_layouts.LAYOUTS)
def test_every_official_layout_maps_onto_the_same_docs(layouts, layout):
    docs = load.load_source(str(layouts[layout]))
    expected = {q["id"]: q for q in official_layouts.questions()}
    assert len(docs) == len(expected) == 28
    assert {(d["task"], d["granularity"]) for d in docs} == {(t, g) for t in TASKS for g in ("coarse", "granular")}
    for doc in docs:
        assert set(doc) == set(DOC_FIELDS)
        q = expected[doc["question_id"].split(":")[-1]]
        assert (doc["task"], doc["granularity"]) == (q["task"], q["granularity"])
        assert doc["options"] == q["options"] and doc["answer_index"] == q["answer_index"]
        assert doc["category"] == q["category"] and doc["source"] == q["source"]
        assert doc["n_options"] == len(q["options"]) and doc["boxes_drawn"]
        assert sorted(doc["shown_order"]) == list(range(doc["n_options"]))
        assert doc["natural"] == (q["source"] in ("KITTI", "COCO", "Objectron", "NOCS-REAL"))
        shown = doc_to_visual(doc)
        assert len(shown) == (2 if q["two"] else 1) and shown[0].size == (48, 48)
        if doc["granularity"] == "granular":  # soft accuracy reads the option texts
            values = json.loads(doc["option_values"])
            assert values == [soft.option_value(doc["task"], o) for o in doc["options"]]
            assert None not in values, (doc["task"], doc["options"])


def test_folders_above_the_source_never_label_questions(tmp_path):
    """Parent folders named like a granularity or a task (coarse_runs/single_cell_runs) change
    nothing: the kind comes from the data and the file's path inside the source."""
    plain = official_layouts.write("per_task_folders", tmp_path / "plain")
    tricky = official_layouts.write("per_task_folders", tmp_path / "coarse_runs" / "single_cell_runs" / "copy")
    kinds = lambda root: sorted((d["question_id"].split(":")[-1], d["task"], d["granularity"])
                                for d in load.load_source(str(root)))
    assert kinds(tricky) == kinds(plain)
    assert {g for _, _, g in kinds(tricky)} == {"coarse", "granular"}


def test_the_seed_changes_the_shown_order_but_nothing_else(layouts):
    a = load.load_source(str(layouts["one_table"]), seed=42)
    b = load.load_source(str(layouts["one_table"]), seed=1998)
    assert [d["shown_order"] for d in a] != [d["shown_order"] for d in b]
    strip = lambda docs: [{k: v for k, v in d.items() if k not in ("shown_order", "seed")} for d in docs]
    assert strip(a) == strip(b)
    assert load.load_source(str(layouts["one_table"]), seed=42) == a  # deterministic


def test_generated_sample_round_trips_its_truth():
    data = datasets.load_dataset("parquet", data_files=SAMPLE, split="train")
    docs = load.to_docs(data, hint="sample")
    assert {d["task"] for d in docs} == {"single_axis_rotation", "compound_rotation", "inter_object_direction",
                                         "viewer_scene_direction", "canonical_orientation"}
    for doc in docs:
        truth, values = json.loads(doc["truth"]), json.loads(doc["option_values"])
        assert values[doc["answer_index"]] == truth["value"]
        assert not doc["boxes_drawn"]
        if doc["task"] != "canonical_orientation":
            assert doc["boxes"] and doc["natural"] is False
    image = open_ref(docs[0]["image"])
    assert doc_to_visual(docs[0])[0].tobytes() != image.tobytes()  # the boxes are drawn on a copy


# ------------------------------------------------------------------------------ bad input


def _rewrite(path, changes: dict):
    table = pq.read_table(path)
    rows = table.to_pylist()
    for (row, column), value in changes.items():
        rows[row][column] = value
    pq.write_table(datasets.Dataset.from_list(rows, features=datasets.Features.from_arrow_schema(table.schema))
                   .data.table, path)


def test_missing_columns_list_what_was_found_and_needed(tmp_path):
    data = datasets.Dataset.from_dict({"picture": ["x"], "q": ["?"], "answer": ["A"]})
    with pytest.raises(load.SourceError) as err:
        load.to_docs(data, hint="view_parallelism_coarse")
    message = str(err.value)
    assert "an image column" in message and "options" in message and "['answer', 'picture', 'q']" in message


def test_a_task_that_cannot_be_told(layouts, tmp_path):
    folder = shutil.copytree(layouts["one_table"], tmp_path / "t")
    path = folder / "data" / "test-00000-of-00001.parquet"
    _rewrite(path, {(3, "question_type"): "mystery"})
    with pytest.raises(load.SourceError, match=r"test-00000-of-00001.parquet, row 3, field 'question_type': cannot "
                                               r"tell the task from 'mystery'"):
        load.load_source(str(folder))


@pytest.mark.parametrize(("column", "value", "match"), [
    ("answer", "sideways", r"row 5, field 'answer': 'sideways' is neither a letter"),
    ("B", "Toward", r"row 5, field 'options': the same option twice"),
    ("qid", "VP-c-0", r"row 5, field 'qid': duplicate"),
    ("level", "medium", r"row 5, field 'level': cannot tell coarse from granular"),
])
def test_bad_values_name_file_row_and_field(layouts, tmp_path, column, value, match):
    folder = shutil.copytree(layouts["one_table"], tmp_path / "t")
    path = folder / "data" / "test-00000-of-00001.parquet"
    _rewrite(path, {(5, column): value})
    with pytest.raises(load.SourceError, match=match):
        load.load_source(str(folder))


def test_two_image_task_without_its_second_image(layouts, tmp_path):
    folder = shutil.copytree(layouts["one_table"], tmp_path / "t")
    path = folder / "data" / "test-00000-of-00001.parquet"
    row = next(i for i, q in enumerate(official_layouts.questions()) if q["task"] == "compound_rotation")
    _rewrite(path, {(row, "image2"): None})
    with pytest.raises(load.SourceError, match=rf"row {row}, field 'image2': compound_rotation questions show two"):
        load.load_source(str(folder))


def test_truncated_image_is_named(layouts, tmp_path):
    folder = shutil.copytree(layouts["image_paths"], tmp_path / "t")
    target = folder / "images" / "SA-g-1.png"
    target.write_bytes(target.read_bytes()[:-30])
    with pytest.raises(ImageError, match=r"test.jsonl, row \d+ .*column 'image_path': damaged or truncated"):
        load.load_source(str(folder))


def test_image_paths_stay_inside_the_folder(layouts, tmp_path):
    folder = shutil.copytree(layouts["image_paths"], tmp_path / "t")
    lines = (folder / "test.jsonl").read_text().splitlines()
    row = json.loads(lines[2])
    row["image_path"] = "../../etc/passwd"
    lines[2] = json.dumps(row)
    (folder / "test.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ImageError, match="points outside the dataset folder"):
        load.load_source(str(folder))


def test_inter_object_boxes_need_a_and_b(layouts, tmp_path):
    folder = shutil.copytree(layouts["image_paths"], tmp_path / "t")
    lines = (folder / "test.jsonl").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if json.loads(line)["task"].startswith("inter_object"))
    row = json.loads(lines[k])
    row["bbox"] = [8, 8, 30, 30]
    lines[k] = json.dumps(row)
    (folder / "test.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(load.SourceError, match=rf"row {k} .*field 'boxes': inter_object_direction asks about objects A"):
        load.load_source(str(folder))


@pytest.mark.parametrize(("column", "value", "match"), [
    ("option_values", json.dumps([0, 45, 90, 135, 180, 225, 270, 999]), r"field 'option_values\[7\]'"),
    ("truth", json.dumps({"value": 12345}), r"field 'truth': value 12345 is not the correct option's value"),
    ("task", "spinning", r"field 'task': 'spinning' is not one of"),
    ("boxes", [{"label": "A", "box": [10, 10, 5, 50]}], r"field 'boxes\[0\].box'"),
    ("answer", "no such option", r"field 'answer'"),
])
def test_generated_layout_is_checked(tmp_path, column, value, match):
    path = tmp_path / "s.parquet"
    shutil.copy(SAMPLE, path)
    table = pq.read_table(path)
    row = next(i for i, r in enumerate(table.to_pylist()) if r["task"] == "single_axis_rotation"
               and r["granularity"] == "granular")
    _rewrite(path, {(row, column): value})
    data = datasets.load_dataset("parquet", data_files=str(path), split="train")
    from spatial_tasks.common.origin import origin_for

    with pytest.raises(load.SourceError, match=rf"s.parquet, row {row}, " + match):
        load.to_docs(data, origin_for(data, "parquet", None, "train", {"data_files": str(path)}))


def test_empty_and_unreadable_sources(tmp_path):
    with pytest.raises(load.SourceError, match="cannot list the dataset's configs"):
        load.load_source(str(tmp_path / "nowhere"))
    assert load.to_docs(datasets.Dataset.from_dict({"image": []})) == []


def test_task_words():
    assert load.task_from_text("Q5") == "inter_object_direction"
    assert load.task_from_text("dori/compound_rotation/granular.parquet") == "compound_rotation"
    assert load.task_from_text("viewer-scene direction") == "viewer_scene_direction"
    assert load.task_from_text("VP") == "view_parallelism" and load.task_from_text("coarse") is None
    assert load.granularity_from_text("fine-grained") == "granular" and load.granularity_from_text("CR") is None


@pytest.mark.parametrize(("answer", "index"), [("B", 1), ("(C)", 2), ("c.", None), ("A:", 0), (2, 2), (1.0, 1),
                                                ("clockwise", 0), (" Counterclockwise ", 1), ("1", 1), (3, None),
                                                (1.5, None), (True, None), (None, None), (["A"], None)])
def test_answer_forms(answer, index):
    options = ["clockwise", "counterclockwise", "no rotation"]

    def bad(field, problem):
        return load.SourceError(f"{field}: {problem}")

    if index is None:
        with pytest.raises(load.SourceError, match="answer"):
            load._answer_index(answer, options, bad)
    else:
        assert load._answer_index(answer, options, bad) == index
