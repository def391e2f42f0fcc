from pathlib import Path

import datasets
import pytest

from spatial_tasks.common.prompts import PromptError, render
from spatial_tasks.common.validate import DataError
from spatial_tasks.harness import TaskData
from spatial_tasks.spatialtunnel import tasks
from spatial_tasks.spatialtunnel.load import SourceError, to_docs
from spatial_tasks.spatialtunnel.schema import DOC_FIELDS

from .fakes import write_generated, write_official_tsv


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    return write_generated(tmp_path_factory.mktemp("st"))


def _load(root, config):
    return datasets.load_dataset(str(root), config, split="test")


def _phase_docs(root):
    data = TaskData(task="spatialtunnel_phase", path=str(root), name="phase_variation", split="test",
                    metadata={"variant": "phase"})
    return tasks.process_docs(_load(root, "phase_variation"), data)


def test_generated_dataset_maps_to_four_docs_per_image(generated):
    rows = _load(generated, "phase_variation")
    docs = _phase_docs(generated)
    assert len(docs) == 4 * len(rows)
    assert set(DOC_FIELDS) <= set(docs.column_names)
    doc = docs[0]
    assert doc["question_id"] == "phase-00-00-00-q1" and doc["answer"] == "No"
    assert doc["benchmark"] == "spatialtunnel" and doc["subject"] == "obj1" and doc["comparison"] == "closer"
    image = tasks.doc_to_visual(doc)[0]
    assert image.size == (64, 64)
    # Every doc of one image refers to the same stored cell (the image is not copied per question).
    same = [d for d in docs if d["image_id"] == doc["image_id"]]
    assert len(same) == 4 and doc["image"]["encoding"] == "image" and doc["image"]["bytes"] is None
    assert {(d["image"]["file"], d["image"]["row"]) for d in same} == {(doc["image"]["file"], doc["image"]["row"])}


def test_a_size_task_refuses_phase_images(generated):
    data = TaskData(task="spatialtunnel_size", path=str(generated), name="phase_variation", split="test",
                    metadata={"variant": "size"})
    with pytest.raises(SourceError, match="a phase image, but this task reads the size variant"):
        tasks.process_docs(_load(generated, "phase_variation"), data)
    data = TaskData(task="spatialtunnel_custom", path=str(generated), name="phase_variation", split="test",
                    metadata={"variant": "Phase"})
    with pytest.raises(DataError, match=r"spatialtunnel_custom: metadata.variant 'Phase' is not one of"):
        tasks.process_docs(_load(generated, "phase_variation"), data)


def test_relations_follow_the_recorded_pixel_rows(generated):
    docs = _phase_docs(generated)
    for d in docs:
        assert d["relation_two_way"] == ("consistent" if d["y1"] < d["y2"] else "counter")
        if abs(d["y2"] - d["y1"]) < 0.05 * d["height"]:
            assert d["relation"] == "ambiguous"


GOLDEN_PROMPT = "Is the red sphere closer to the camera than the blue cube? Answer with yes or no."


def test_prompt_is_pinned(generated):
    doc = _phase_docs(generated)[0]
    assert tasks.doc_to_text(doc, None) == GOLDEN_PROMPT
    assert tasks.doc_to_text(doc, {"pre_prompt": "Look. ", "answer_suffix": ""}) == (
        "Look. Is the red sphere closer to the camera than the blue cube?")
    assert not tasks.doc_to_text(doc, None).endswith(" ")


def test_missing_template_field_is_an_error():
    with pytest.raises(PromptError, match="question"):
        render("spatialtunnel", "question.jinja", pre_prompt="", answer_suffix="")


def test_official_tsv_per_question(tmp_path):
    tsv = write_official_tsv(tmp_path / "phase_variation.tsv")
    rows = datasets.load_dataset("csv", data_files=str(tsv), delimiter="\t", split="train")
    docs = to_docs(rows, label="cubec/spatialtunnel phase_variation")
    assert len(docs) == len(rows) == 64
    d = docs[1]
    assert (d["template_id"], d["obj1"], d["obj2"], d["answer"]) == (2, "red sphere", "blue cube", "Yes")
    assert d["relation"] in ("consistent", "counter", "ambiguous")  # derived from the angles
    assert tasks.doc_to_visual(d)[0].size == (64, 64)


def test_official_tsv_per_image_generates_the_four_questions(tmp_path):
    tsv = write_official_tsv(tmp_path / "t.tsv", per_question=False, drop=("question", "answer"))
    rows = datasets.load_dataset("csv", data_files=str(tsv), delimiter="\t", split="train")
    docs = to_docs(rows, label="official")
    assert len(docs) == 4 * len(rows)
    assert [d["template_id"] for d in docs.select(range(4))] == [1, 2, 3, 4]


def test_official_tsv_missing_columns_are_named(tmp_path):
    tsv = write_official_tsv(tmp_path / "t.tsv", drop=("question", "obj1", "obj2"))
    rows = datasets.load_dataset("csv", data_files=str(tsv), delimiter="\t", split="train")
    with pytest.raises(SourceError, match=r"missing column\(s\) \['question'\]"):
        to_docs(rows, label="official")


def test_undecodable_image_names_the_row(tmp_path):
    tsv = write_official_tsv(tmp_path / "t.tsv")
    text = tsv.read_text().splitlines()
    cells = text[3].split("\t")
    cells[1] = "bm90IGFuIGltYWdl"  # base64 of "not an image"
    text[3] = "\t".join(cells)
    tsv.write_text("\n".join(text) + "\n")
    rows = datasets.load_dataset("csv", data_files=str(tsv), delimiter="\t", split="train")
    with pytest.raises(ValueError, match="official, row 2, column 'image': not a readable image"):
        to_docs(rows, label="official")
