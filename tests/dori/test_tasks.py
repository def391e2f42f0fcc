"""DORI lmms-eval hooks without the CLI: golden prompts (five parts), the seeded option order,
drawn boxes, and the per-answer record."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets
import pytest
from PIL import Image

from spatial_tasks.dori import load
from spatial_tasks.dori import tasks as T
from spatial_tasks.dori.schema import TASKS
from spatial_tasks.harness import TaskData

from . import official_layouts

GOLDEN = Path(__file__).with_name("golden")
KINDS = [(t, g) for t in TASKS for g in ("coarse", "granular")]


def doc_for(task: str, granularity: str, seed: int = 42) -> dict:
    """A canonical doc with the fixture's options (official_layouts.OPTIONS), seed 42."""
    options = official_layouts.OPTIONS[(task, granularity)]
    doc = {"question_id": f"golden-{task}-{granularity}", "options": options, "category": "chair",
           "source": "ShapeNet", "task": task, "granularity": granularity, "answer_index": 1,
           "boxes": [{"label": "A", "box": [1, 1, 9, 9]}] + ([{"label": "B", "box": [10, 1, 19, 9]}]
                                                              if task == "inter_object_direction" else []),
           "boxes_drawn": False, "object_a": "chair", "object_b": "car" if task == "inter_object_direction" else None,
           "option_values": json.dumps([None] * len(options))}
    return load._finish_doc(doc, seed)


@pytest.mark.parametrize(("task", "granularity"), KINDS)
def test_golden_prompts(task, granularity):
    text = T.doc_to_text(doc_for(task, granularity))
    path = GOLDEN / f"{task}_{granularity}.txt"
    if os.environ.get("SPATIAL_TASKS_WRITE_GOLDEN"):
        path.write_text(text + "\n", encoding="utf-8")
    assert text == path.read_text(encoding="utf-8").removesuffix("\n")


@pytest.mark.parametrize(("task", "granularity"), KINDS)
def test_five_parts_in_order(task, granularity):
    doc = doc_for(task, granularity)
    text = T.doc_to_text(doc)
    parts = [text.index("Context: "), text.index("Analysis steps:\n1. "), text.index("Options:\nA. "),
             text.index("Example: ")]
    assert parts == sorted(parts) and parts[0] > 20  # the task statement comes first
    statement = text.split("\n")[0]
    assert statement.startswith(("Determine", "Identify"))
    shown = [line[3:] for line in text.split("Options:\n")[1].split("\n\n")[0].splitlines()]
    assert shown == T.shown_options(doc) and sorted(shown) == sorted(doc["options"])
    assert text.rstrip().endswith(T.DEFAULT_PROMPT_KWARGS["answer_format"])
    assert ("two images" in text) == (task in ("compound_rotation", "viewer_scene_direction"))


def test_statements_follow_section_13():
    first_lines = {kind: T.doc_to_text(doc_for(*kind)).split("\n")[0] for kind in KINDS}
    assert first_lines[("view_parallelism", "coarse")] == \
        "Determine which way Object A's front is facing relative to the camera."
    assert first_lines[("view_parallelism", "granular")] == \
        "Determine how much Object A's front surface deviates from being parallel to the camera plane."
    assert first_lines[("inter_object_direction", "granular")] == \
        "Determine how much Object B would need to rotate to face Object A."
    assert first_lines[("canonical_orientation", "coarse")] == "Determine if the image is in its canonical orientation."


def test_prompt_parameters():
    doc = doc_for("viewer_scene_direction", "granular")
    text = T.doc_to_text(doc, {"pre_prompt": "Q: ", "answer_format": "Answer with a letter."})
    assert text.startswith("Q: Determine how many degrees clockwise") and text.endswith("Answer with a letter.")


def test_seed_orders_options_and_target_follows():
    orders = {seed: doc_for("compound_rotation", "granular", seed)["shown_order"] for seed in load.PAPER_SEEDS}
    assert len({tuple(o) for o in orders.values()}) == 3
    for seed in load.PAPER_SEEDS:
        doc = doc_for("compound_rotation", "granular", seed)
        letter = T.doc_to_target(doc)[0]
        assert T.shown_options(doc)["ABCDEF".index(letter)] == doc["options"][1]
        assert T.doc_to_target(doc).endswith(doc["options"][1])


SAMPLE_FILE = "tasks/dori/sample/test-00000-of-00001.parquet"


def sample_data(seed: int = 42, **prompt) -> TaskData:
    """The TaskData of a task reading the bundled sample with this option-order seed (and prompt
    parameters)."""
    return TaskData(task="dori_sample", path="parquet", split="train", kwargs={"data_files": SAMPLE_FILE},
                    prompt_kwargs={"seed": seed, **prompt})


def test_seed_is_a_task_argument_and_checked():
    data = datasets.load_dataset("parquet", data_files=SAMPLE_FILE, split="train")
    a = T.docs_for(data, sample_data(42), "single_axis_rotation", "granular")
    b = T.docs_for(data, sample_data(1998), "single_axis_rotation", "granular")
    assert a["question_id"] == b["question_id"] and a["shown_order"] != b["shown_order"]
    assert set(a["task"]) == {"single_axis_rotation"} and set(a["granularity"]) == {"granular"}
    with pytest.raises(ValueError, match="seed must be an integer"):
        T.prompt_seed("forty-two")
    with pytest.raises(ValueError, match="draw_boxes must be one of"):  # at the docs' load, before any image
        T.docs_for(data, sample_data(42, draw_boxes="sometimes"), "single_axis_rotation", "granular")
    with pytest.raises(load.SourceError, match="no view_parallelism coarse questions"):
        T.docs_for(data, sample_data(), "view_parallelism", "coarse")


def test_boxes_are_drawn_only_when_the_image_has_none():
    image = Image.new("RGB", (40, 40), (128, 128, 128))
    drawn = T.draw_boxes(image, [{"label": "A", "box": [5, 15, 30, 35]}, {"label": "B", "box": [2, 2, 12, 12]}])
    assert drawn.getpixel((5, 25)) == T.BOX_COLOURS["A"] and drawn.getpixel((12, 7)) == T.BOX_COLOURS["B"]
    assert image.getpixel((5, 25)) == (128, 128, 128)  # the source image is untouched


def test_draw_boxes_argument(tmp_path):
    data = datasets.load_dataset("parquet", data_files=SAMPLE_FILE, split="train")
    doc = T.docs_for(data, sample_data(), "single_axis_rotation", "coarse")[0]
    plain = T.doc_to_visual({**doc, "boxes_drawn": True})[0]
    drawn = T.doc_to_visual(doc)[0]
    assert plain.tobytes() != drawn.tobytes()
    assert T.doc_to_visual({**doc, "boxes_drawn": True}, {"draw_boxes": "always"})[0].tobytes() == drawn.tobytes()
    assert T.doc_to_visual(doc, {"draw_boxes": "never"})[0].tobytes() == plain.tobytes()
    with pytest.raises(ValueError, match="draw_boxes must be one of"):
        T.doc_to_visual(doc, {"draw_boxes": "sometimes"})


def test_record_and_fan_out():
    doc = doc_for("single_axis_rotation", "granular")
    doc["option_values"] = json.dumps([0, 45, 90, 135, 180])
    doc["answer_index"] = 4  # 180
    near = T.shown_options(doc).index("135")
    record = T.score(doc, f"{'ABCDE'[near]}. It shows its back, slightly turned.")
    assert (record["correct"], record["soft"], record["predicted_value"], record["truth_value"]) == (0, 0.5, 135, 180)
    assert record["outcome"] == "selected" and record["chosen_text"] == "135"
    again = T.score(record, record["response"])  # a logged record re-scores without the dataset
    assert {k: again[k] for k in ("correct", "soft", "chosen")} == {k: record[k] for k in ("correct", "soft", "chosen")}
    granular, coarse = ("acc", "soft", "unparseable", "declined", "refused"), ("acc", "unparseable", "declined", "refused")
    out = T.process_results.bound(granular)(doc, ["Cannot be determined"])
    assert tuple(out) == granular and out["acc"]["outcome"] == "declined"
    assert tuple(T.process_results.bound(coarse)(doc, [""])) == coarse
    with pytest.raises(TypeError, match="called without its task's metrics"):
        T.process_results(doc, [""])  # by hand, unbound: it says how to bind them, not a KeyError in lmms-eval


def cannot_determine_doc(gold_is_cbd: bool) -> dict:
    options = ["Yes, it is in its canonical orientation", "No, it is not in its canonical orientation",
               "Cannot be determined"]
    doc = {"question_id": f"co-{gold_is_cbd}", "options": options, "category": "pattern", "source": "generated",
           "task": "canonical_orientation", "granularity": "coarse", "answer_index": 2 if gold_is_cbd else 1,
           "boxes": [], "boxes_drawn": False, "object_a": None, "object_b": None,
           "option_values": json.dumps([True, False, None])}
    return load._finish_doc(doc, 42)


@pytest.mark.parametrize("how", ["letter", "words", "letter and words"])
def test_cannot_be_determined_is_right_when_it_is_the_answer(how):
    doc = cannot_determine_doc(gold_is_cbd=True)
    letter = "ABC"[T.shown_options(doc).index("Cannot be determined")]
    response = {"letter": f"{letter}. The pattern looks the same every way round.",
                "words": "It cannot be determined: the pattern is symmetric.",
                "letter and words": f"Answer: {letter} (cannot be determined)"}[how]
    record = T.score(doc, response)
    assert (record["outcome"], record["correct"], record["chosen_text"]) == ("selected", 1, "Cannot be determined")


@pytest.mark.parametrize("how", ["letter", "words"])
def test_cannot_be_determined_is_a_counted_decline_when_it_is_not(how):
    doc = cannot_determine_doc(gold_is_cbd=False)
    letter = "ABC"[T.shown_options(doc).index("Cannot be determined")]
    response = f"{letter}." if how == "letter" else "This cannot be determined from the image."
    record = T.score(doc, response)
    assert (record["outcome"], record["correct"], record["soft"]) == ("declined", 0, 0)
    from spatial_tasks.dori import metrics

    assert metrics.declined_share([record]) == 1.0 and metrics.accuracy([record]) == 0.0
