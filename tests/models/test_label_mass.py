"""The label mass m = p(Yes) + p(No) of the first token (issue 43, item 4): carried by every
first-token payload of a model that scores logits, validated where records are read, and shown per
run and task by rescore, the report and verify, with one warning where the median is under 1/2."""

from __future__ import annotations

import json
import math

import pytest
import torch
from lmms import SPATIAL_TASKS, run_cli

from spatial_tasks.common.yesno import (
    YesNoLogits,
    decode_payload,
    encode_payload,
    label_mass,
    label_mass_below_half,
    label_mass_median,
    label_mass_warning,
    payload_label_mass,
)
from spatial_tasks.models.scoring_paths import GROUPED, ONE_BY_ONE, PACKED
from spatial_tasks.models.served import Labels, Reading

TASK = "spatialtunnel_logit_sample_phase"
MASS_TOL = 1e-6  # a float32 softmax summed in float64


def test_label_mass_is_the_two_labels_probability():
    assert label_mass(math.log(0.3), math.log(0.5)) == pytest.approx(0.8)
    assert label_mass(0.0, 0.0) == 1.0  # rounding past 1 is clamped
    assert label_mass(-math.inf, math.log(0.25)) == pytest.approx(0.25)
    assert label_mass(math.nan, 0.0) is None


@pytest.mark.parametrize(("value", "valid"), [(0.25, True), (1.0 + 5e-7, True), (0, True), (1.5, False), (-0.1, False),
                                              ("0.5", False), (True, False), (None, False)])
def test_a_payloads_label_mass_is_checked(value, valid):
    ok, mass = payload_label_mass({"label_mass": value})
    assert ok == valid and (mass is None) == (not valid)
    response = encode_payload(YesNoLogits(1.0, 0.0, "Yes")).replace('"answer"', f'"label_mass": {json.dumps(value)}, "answer"')
    assert (decode_payload(response) is None) == (not valid)


def test_payloads_carry_it_and_rule_baselines_do_not():
    assert json.loads(encode_payload(YesNoLogits(1.0, 0.0, "Yes", 0.75)))["label_mass"] == 0.75
    assert "label_mass" not in json.loads(encode_payload(YesNoLogits(1.0, 0.0, "Yes")))
    assert decode_payload(encode_payload(YesNoLogits(1.0, 0.0, "Yes", 0.75))).label_mass == 0.75


def test_median_share_and_warning():
    records = [{"label_mass": m} for m in (0.1, 0.2, 0.9)] + [{"other": 1}]
    assert label_mass_median(records) == pytest.approx(0.2)
    assert label_mass_below_half(records) == pytest.approx(2 / 3)
    assert label_mass_median(records[:2]) == pytest.approx(0.15)
    assert math.isnan(label_mass_median([{"other": 1}])) and math.isnan(label_mass_below_half([]))
    assert label_mass_warning(0.2).startswith("median label mass 0.200 < 0.5: the model mostly does not answer Yes or No")
    assert label_mass_warning(0.5) is None and label_mass_warning(math.nan) is None and label_mass_warning(None) is None


def test_served_readings_exact_and_a_lower_bound_where_censored():
    labels = Labels(yes_ids=(1,), no_ids=(2,), yes_texts=("Yes",), no_texts=("No",))
    exact = Reading.exact(labels, {1: math.log(0.6), 2: math.log(0.3)}, "Yes")
    assert exact.logits.label_mass == pytest.approx(0.9)
    top = Reading.from_top(labels, {"Yes": math.log(0.6), "Maybe": math.log(0.2), "The": math.log(0.1)}, "Yes")
    assert top.censored == ("No",) and top.logits.label_mass == pytest.approx(0.6)  # No's unknown share left out
    none = Reading.from_top(labels, {"Maybe": math.log(0.5)}, "Maybe")
    assert none.logits.label_mass == 0.0


@pytest.mark.parametrize("rule", ["exact", "variants"])
def test_in_process_it_is_the_full_softmax(tiny_qwen_dir, rule):
    """Through every setting (batch 1, grouped, packed) m equals the softmax of the model's own first
    token over the answer spellings, summed."""
    from PIL import Image

    from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo

    model = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), answer_rule=rule, device="cpu", device_map="cpu",
                            min_pixels=3136, max_pixels=50176, dtype="float32")
    tokens = model.answer_tokens()
    images = [Image.new("RGB", (64 + 32 * i, 64), (40 * i, 90, 200 - 40 * i)) for i in range(3)]
    items = [(f"Is the red cube closer than the {word}? Answer yes or no.", [image])
             for word, image in zip(["sphere", "big blue cone", "cube", "torus", "pyramid", "cup"], images * 2)]
    items.append(("Is the sky blue? Answer yes or no.", []))
    want = []
    for context, visuals in items:
        probs = torch.softmax(model.first_token_logits_batch(model.yesno_prepare_inputs(context, visuals))[0].double(), 0)
        want.append(float(probs[list(tokens.yes_ids)].sum() + probs[list(tokens.no_ids)].sum()))
    assert rule == "exact" or len(tokens.yes_ids) > 1
    for scored in (model.score_items(items, 1, paths=(ONE_BY_ONE,)), model.score_items(items, 4, paths=(GROUPED,)),
                   model.score_items(items, 4, paths=(PACKED,))):
        for got, expected in zip(scored, want, strict=True):
            assert got.label_mass == pytest.approx(expected, abs=MASS_TOL)


@pytest.fixture(scope="module")
def hf_run(lmms_run, tiny_family_dirs):
    """The one-process hf_yesno run of test_families/test_data_parallel (shared: made once)."""
    return lmms_run("hf_yesno", f"pretrained={tiny_family_dirs('qwen3_vl')},device=cpu,dtype=float32", TASK,
                    "--batch_size", "4")


def test_a_random_model_is_warned_about_in_the_run_and_by_rescore_report_and_verify(hf_run, tmp_path):
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report
    from spatial_tasks.results.verify import verify_lines, verify_run

    masses = [s["v"]["label_mass"] for s in hf_run.samples[TASK]]
    assert len(masses) == 256 and all(0 <= m < 0.5 for m in masses)  # a random model: the labels are rare
    assert "HFYesNo: median label mass" in hf_run.output and "reads a minority of its answer" in hf_run.output

    rescored = run_cli([SPATIAL_TASKS, "rescore", "spatialtunnel", str(hf_run.out), "--json"],
                       capture_output=True, text=True, check=True)
    figures = next(iter(json.loads(rescored.stdout)["runs"].values()))["tasks"][TASK]
    assert figures["label_mass_median"] == pytest.approx(label_mass_median([{"label_mass": m} for m in masses]))
    assert figures["label_mass_below_half"] == 1.0
    text = run_cli([SPATIAL_TASKS, "rescore", "spatialtunnel", str(hf_run.out)], capture_output=True,
                   text=True, check=True).stdout
    assert f"  warning: {TASK}: median label mass" in text and text.count("warning:") == 1

    files = write_report(read_runs(hf_run.out), tmp_path / "report")
    report = next(p for p in files if p.name == "report.md").read_text()
    assert "| m median | m < 0.5 |" in report and "\n- **Warning** (" in report and "reads a minority" in report
    assert "**m median / m < 0.5**" in report

    read = read_runs(hf_run.out)
    (run,) = read.runs
    _, _, notes = verify_run(read, run)
    assert len(notes["label_mass"]) == 1 and "100.0% of questions under 0.5 -- WARNING: median label mass" \
        in notes["label_mass"][0]
    lines = verify_lines({"cells": [], "grades": {}, "checked": 0, "unmatched_models": [], **notes})
    assert any(line.startswith("Label mass p(Yes) + p(No): ") for line in lines)


def test_a_rule_baseline_has_no_label_mass_and_no_column(baseline_run, tmp_path):
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    run = baseline_run("vertical", TASK)
    assert not any("label_mass" in s["v"] for s in run.samples[TASK])
    report = next(p for p in write_report(read_runs(run.out), tmp_path / "r") if p.name == "report.md").read_text()
    assert "m median" not in report


def test_a_logged_label_mass_that_is_no_probability_makes_the_answer_unparseable():
    from spatial_tasks.spatialtunnel.records import logit_record

    doc = {"question_id": "q", "variant": "phase", "template_id": 1, "answer": "Yes", "relation": "consistent",
           "relation_two_way": "consistent"}
    good = logit_record(doc, [encode_payload(YesNoLogits(2.0, 0.0, "Yes", 0.4))])
    assert good["label_mass"] == 0.4 and good["parsed"] == "Yes"
    bad = encode_payload(YesNoLogits(2.0, 0.0, "Yes", 0.4)).replace('"label_mass": 0.4', '"label_mass": 7')
    assert logit_record(doc, [bad])["parsed"] == "unparseable"
