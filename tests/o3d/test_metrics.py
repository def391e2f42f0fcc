"""O3-D metrics against hand-computed numbers on tiny record sets."""

from __future__ import annotations

import math
import random
from math import isnan

import pytest

from spatial_tasks.o3d import metrics as M

TAGS_A = {
    "query": "mcq",
    "order": "normal",
    "formality": "regular",
    "vocabulary": "close-far",
    "clarity_level": "high",
}


def rec(
    correct,
    gt="near",
    cues=("HP",),
    strength=1.0,
    ques_clarity=3.5,
    icl=False,
    is_real=False,
    label=None,
    **tags,
):
    label = label or (
        ("closer" if gt == "near" else "farther") if correct else "farther" if gt == "near" else "closer"
    )
    return {
        "correct": correct,
        "gt_position": gt,
        "cues": list(cues),
        "cue_strength": strength,
        "ques_clarity": ques_clarity,
        "icl": icl,
        "is_real": is_real,
        "label": label,
        **TAGS_A,
        **tags,
    }


def test_accuracy_counts_n_se_and_unparseable():
    rows = [rec(True), rec(True), rec(True), rec(False, label="unparseable"), rec(True, gt="none")]
    acc = M.accuracy(rows)
    assert acc["acc"] == 0.75 and acc["n"] == 4 and acc["n_unparseable"] == 1
    assert acc["se"] == pytest.approx(math.sqrt(0.75 * 0.25 / 4))
    empty = M.accuracy([])
    assert (empty["n"], empty["n_unparseable"]) == (0, 0) and isnan(empty["acc"]) and isnan(empty["se"])


def test_accuracy_by_cue_uses_single_cues_at_all_strengths():
    rows = [
        rec(True, cues=["HP"], strength=1.0),
        rec(False, cues=["HP"], strength=2.0),
        rec(True, cues=["OC"], strength=2.0),
        rec(True, cues=["HP", "OC"]),
    ]
    out = M.accuracy_by_cue(rows)
    assert list(out) == ["HP", "OC"]
    assert (out["HP"]["acc"], out["HP"]["n"]) == (0.5, 2)
    assert (out["OC"]["acc"], out["OC"]["n"]) == (1.0, 1)


def test_accuracy_by_num_cues_keeps_regular_strength_for_cued_images():
    rows = [
        rec(True, cues=[], strength=None),
        rec(False, cues=[], strength=None, gt="far"),
        rec(True, cues=[], strength=None, gt="none"),
        rec(True, cues=["HP"], strength=1.0),
        rec(False, cues=["HP"], strength=2.0),
        rec(False, cues=["HP", "OC"], strength=0.95),
        rec(True, cues=["HP", "OC"], strength=1.5),
        rec(True, cues=["HP", "OC"], strength=None),
    ]
    out = M.accuracy_by_num_cues(rows)
    assert {k: (v["acc"], v["n"]) for k, v in out.items()} == {0: (0.5, 2), 1: (1.0, 1), 2: (0.0, 1)}


def test_domain_and_overall():
    syn = [rec(True), rec(False)]
    real = [rec(True, is_real=True)]
    assert {k: v["acc"] for k, v in M.accuracy_by_domain(syn + real).items()} == {
        "synthetic": 0.5,
        "real": 1.0,
    }
    assert M.overall_accuracy(syn, real)["acc"] == 0.75
    assert isnan(M.overall_accuracy(syn, [])["acc"])


def test_near_far_bias_eq1():
    rows = [
        rec(True, gt="far"),
        rec(False, gt="far"),
        rec(False, gt="far"),
        rec(False, gt="far"),
        rec(True),
        rec(True),
        rec(True),
        rec(False),
    ]
    out = M.near_far_bias(rows)
    assert out["bias"] == pytest.approx(0.25 - 0.75)
    assert (out["n_far"], out["n_near"]) == (4, 4)
    always_far = [rec(True, gt="far"), rec(False, gt="near")]
    assert M.near_far_bias(always_far)["bias"] == 1.0
    assert isnan(M.near_far_bias([rec(True)])["bias"])


def test_sdgm_population_vs_sample():
    vals = [0.2, 0.4, 0.6]
    assert M.sdgm(vals) == pytest.approx(math.sqrt(0.08 / 3))  # paper Eq. 2
    assert M.sdgm(vals, ddof=1) == pytest.approx(0.2)  # authors' pandas .std()
    # a spread over one group is undefined (not a perfectly consistent 0.0) under either std
    assert isnan(M.sdgm([0.3])) and isnan(M.sdgm([0.3], ddof=1))
    assert isnan(M.sdgm([]))
    with pytest.raises(ValueError, match="ddof"):
        M.sdgm(vals, ddof=2)


def test_cue_group_names():
    assert M.cue_group({"cues": ["OC", "HP"]}) == "HP+OC"
    assert M.cue_group({"cues": ["FS"]}) == "FS"
    for cues in ([], ["HP", "LP"], ["HP", "HP"], ["HP", "OC", "RS"], None):
        assert M.cue_group({"cues": cues}) is None


def _vision_records():
    return [
        rec(True, cues=["HP"]),
        rec(True, cues=["HP"]),  # HP: Acc_N 1.0
        rec(True, cues=["OC"]),
        rec(False, cues=["OC"]),  # OC: 0.5
        rec(False, cues=["OC", "HP"]),  # HP+OC: 0.0
        # outside the SDGM population or not target-near: must not count
        rec(False, cues=["HP"], gt="far"),
        rec(False, cues=["HP"], icl=True),
        rec(False, cues=["HP"], strength=2.0),
        rec(False, cues=["HP"], ques_clarity=2),
        rec(False, cues=["HP"], is_real=True),
        rec(False, cues=["HP"], gt="none"),
        rec(False, cues=[], strength=None),
    ]


def test_sdgm_vision_eq2_on_acc_n():
    out = M.sdgm_vision(_vision_records())
    assert out["groups"] == {"HP": 1.0, "OC": 0.5, "HP+OC": 0.0}
    assert out["n_groups"] == 3 and out["n"] == 5
    assert out["sdgm"] == pytest.approx(math.sqrt(1 / 6))
    assert M.sdgm_vision(_vision_records(), ddof=1)["sdgm"] == pytest.approx(0.5)


def _language_records():
    g2 = {"order": "reversed"}
    g3 = {"clarity_level": "highest"}
    return [
        rec(True),
        rec(True),  # (mcq, normal, regular, close-far, high): 1.0
        rec(False, **g2),  # (..., reversed, ..., high): 0.0
        rec(True, **g3),
        rec(False, **g3),  # (..., normal, ..., highest): 0.5
        rec(True, gt="far", **g2),
        rec(True, query=None),
    ]  # far / untagged: not counted


def test_sdgm_language_and_consistency():
    out = M.sdgm_language(_language_records())
    assert out["groups"] == {
        "mcq|normal|regular|close-far|high": 1.0,
        "mcq|reversed|regular|close-far|high": 0.0,
        "mcq|normal|regular|close-far|highest": 0.5,
    }
    assert out["sdgm"] == pytest.approx(math.sqrt(1 / 6))
    assert M.language_consistency(_language_records()) == pytest.approx(1 - math.sqrt(1 / 6))
    assert M.language_consistency(_language_records(), ddof=1) == pytest.approx(0.5)


def test_modified_sdgm_eq3_by_hand():
    rows = _language_records()
    # order: (high) levels normal 1.0 / reversed 0.0 -> pop std 0.5; (highest) only normal -> 0 (pop) / skipped
    assert M.modified_sdgm(rows, "order")["sdgm"] == pytest.approx(0.25)
    assert M.modified_sdgm(rows, "order", ddof=1)["sdgm"] == pytest.approx(math.sqrt(0.5))
    # clarity: (normal) high 1.0 / highest 0.5 -> pop 0.25; (reversed) only high
    assert M.modified_sdgm(rows, "clarity_level")["sdgm"] == pytest.approx(0.125)
    out = M.modified_sdgm(rows, "clarity_level", ddof=1)
    assert (
        out["sdgm"] == pytest.approx(math.sqrt(0.125)) and out["n_groups"] == 1 and out["n_single_level"] == 1
    )
    assert isnan(M.modified_sdgm(rows, "query")["sdgm"])  # no group varies the query: undefined, not 0
    assert isnan(M.modified_sdgm(rows, "query", ddof=1)["sdgm"])
    assert set(M.modified_sdgm_all(rows)) == set(M.LANGUAGE_TAGS)
    with pytest.raises(ValueError, match="variation"):
        M.modified_sdgm(rows, "colour")


def test_figures_of_unreadable_answers_are_undefined():
    """A model none of whose answers parse has accuracy 0 (the paper's rule) but no bias, no SDGM
    and no consistency: those would read as "unbiased" / "perfectly consistent"."""
    rows = [{**r, "label": "unparseable", "correct": False} for r in _language_records()]
    assert M.accuracy(rows)["acc"] == 0.0
    assert isnan(M.near_far_bias(rows)["bias"])
    assert isnan(M.sdgm_language(rows, population=False)["sdgm"])
    assert isnan(M.language_consistency(rows, population=False))
    assert all(isnan(v) for v in M.modified_sdgm_all(rows, population=False).values())


@pytest.mark.parametrize("ddof", [0, 1])
def test_modified_sdgm_matches_the_pandas_recipe(ddof):
    pd = pytest.importorskip("pandas")
    rng = random.Random(7)
    levels = {
        "query": ["mcq", "yes-no"],
        "order": ["normal", "reversed"],
        "formality": ["casual", "formal", "regular"],
        "vocabulary": ["close-far", "front-rear", "before-after"],
        "clarity_level": ["medium", "high", "highest"],
    }
    rows = [rec(rng.random() < 0.6, **{k: rng.choice(v) for k, v in levels.items()}) for _ in range(400)]
    frame = pd.DataFrame(rows)
    five = list(M.LANGUAGE_TAGS)
    means = frame.groupby(five)["correct"].mean()
    for tag in five:
        others = [t for t in five if t != tag]
        expected = means.groupby(level=others).std(ddof=ddof).mean()
        assert M.modified_sdgm(rows, tag, ddof=ddof)["sdgm"] == pytest.approx(expected)
    assert M.sdgm_language(rows, ddof=ddof)["sdgm"] == pytest.approx(means.std(ddof=ddof))


def test_cue_group_accuracy_both_positions():
    rows = _vision_records() + [rec(True, cues=["OC"], gt="far")]
    out = M.cue_group_accuracy(rows)
    assert {k: (v["acc"], v["n"]) for k, v in out.items()} == {
        "HP": (2 / 3, 3),
        "OC": (2 / 3, 3),
        "HP+OC": (0.0, 1),
    }


def test_canonical_doc_fields_are_understood():
    # the canonical doc (schema.DOC_FEATURES) says synthetic instead of is_real
    syn = {**rec(True), "synthetic": True}
    real = {**rec(False), "synthetic": False}
    for r in (syn, real):
        del r["is_real"]
    assert {k: v["acc"] for k, v in M.accuracy_by_domain([syn, real]).items()} == {
        "synthetic": 1.0,
        "real": 0.0,
    }
    assert M.sdgm_population([syn, real]) == [syn]
