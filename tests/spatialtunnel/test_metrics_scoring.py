import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spatial_tasks.common.yesno import UNPARSEABLE, YesNoLogits, decode_payload, encode_payload, parse_yes_no
from spatial_tasks.spatialtunnel import metrics, tasks


def rec(score, two_way="consistent", three_way=None, i=0, j=0, grid=2, variant="phase", s1=0.2):
    return {"score": score, "relation_two_way": two_way, "relation": three_way or two_way,
            "theta1_index": i, "theta2_index": j, "grid": grid, "variant": variant, "size1_nominal": s1}


def test_hand_computed_phase_figures():
    records = [rec(1.0, "consistent", i=0, j=0), rec(0.5, "consistent", "ambiguous", i=0, j=0),
               rec(0.0, "counter", i=1, j=0), rec(0.25, "counter", i=1, j=0)]
    assert metrics.mean_score(records) == pytest.approx(0.4375)
    assert metrics.mean_by_relation(records, "consistent") == pytest.approx(0.75)
    assert metrics.mean_by_relation(records, "counter") == pytest.approx(0.125)
    assert metrics.consistency_gap(records) == pytest.approx(0.625)
    assert metrics.mean_by_relation(records, "ambiguous", two_way=False) == pytest.approx(0.5)
    grid = metrics.cell_grid(records)
    assert [grid[0][0], grid[1][0]] == [0.75, 0.125] and math.isnan(grid[0][1]) and math.isnan(grid[1][1])
    assert metrics.cell_relations(records) == [["consistent", None], ["counter", None]]
    # sample std of (1, .5, 0, .25) = 0.4270, / sqrt(4)
    assert metrics.standard_error(records) == pytest.approx(0.4269563 / 2, abs=1e-6)


def test_hand_computed_size_figures():
    records = [rec(1.0, variant="size", s1=0.10), rec(0.8, variant="size", s1=0.10),
               rec(0.2, variant="size", s1=0.30), rec(0.5, variant="size", s1=0.2)]
    assert metrics.size_curve(records) == {0.1: pytest.approx(0.9), 0.2: 0.5, 0.3: 0.2}
    assert metrics.mean_at_size(records, 0.1) == pytest.approx(0.9)
    assert metrics.size_gap(records) == pytest.approx(0.7)
    assert "v_s010" in metrics.summary(records)
    assert "v_s010" not in metrics.summary([rec(1.0)])  # phase records carry no size sweep


def test_empty_subsets_are_nan_not_errors():
    assert math.isnan(metrics.mean_by_relation([rec(1.0)], "counter"))
    assert math.isnan(metrics.mean_score([]))


def doc(answer="Yes"):
    return {"benchmark": "spatialtunnel", "question_id": "x-q2", "answer": answer, "relation": "counter",
            "relation_two_way": "counter", "theta1_index": 0, "theta2_index": 1, "grid": 16, "variant": "phase"}


def test_logit_protocol_scores_p_or_one_minus_p():
    payload = encode_payload(YesNoLogits(2.0, 0.0))
    p = 1 / (1 + math.exp(-2.0))
    assert tasks.logit_record(doc("Yes"), [payload])["score"] == pytest.approx(p)
    assert tasks.logit_record(doc("No"), [payload])["score"] == pytest.approx(1 - p)


def test_logit_protocol_refuses_plain_text_clearly():
    with pytest.raises(tasks.LogitsMissingError, match="qwen2_5_vl_yesno"):
        tasks.logit_record(doc(), ["Yes"])


PARSER_CASES = [
    ("Yes", "Yes"), ("no", "No"), ("No, the red cube is farther.", "No"), ("YES.", "Yes"),
    ("The answer is yes", "Yes"), ("I think not", UNPARSEABLE), ("Nope", UNPARSEABLE),
    ("", UNPARSEABLE), ("Yesterday", UNPARSEABLE), ("Answer: No", "No"),
    (encode_payload(YesNoLogits(-1.0, 3.0)), "No"),
]


@pytest.mark.parametrize(("text", "expected"), PARSER_CASES)
def test_yes_no_parser(text, expected):
    assert parse_yes_no(text) == expected


@given(st.one_of(st.text(), st.none(), st.integers(), st.binary()))
def test_yes_no_parser_never_raises(value):
    assert parse_yes_no(value) in ("Yes", "No", UNPARSEABLE)


def test_payload_round_trip_and_garbage():
    logits = YesNoLogits(1.5, -0.5, "Yes")
    assert decode_payload(encode_payload(logits)) == logits
    assert decode_payload('{"spatial_tasks_yesno": 1, "logit_yes": "x"}') is None
    assert decode_payload("plain") is None


def test_exact_match_record_counts_unparseable_as_wrong():
    record = tasks.exact_match_record(doc("Yes"), ["I cannot tell"])
    assert record["parsed"] == UNPARSEABLE and record["score"] == 0.0
    assert metrics.unparseable_share([record]) == 1.0
