"""Contrastive probing metrics (§5, Eq. 3) on synthetic deltas whose values are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spatial_tasks.spatialtunnel.probe import metrics as P

E = np.eye(4)


def _deltas(directions: dict[str, np.ndarray], n: int = 3, noise: float = 0.0, seed: int = 0):
    """n items per answer label, each delta along the label's direction (plus optional noise)."""
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for label, direction in directions.items():
        for _ in range(n):
            rows.append(direction + noise * rng.standard_normal(direction.shape))
            labels.append(label)
    return np.array(rows), labels


def test_perfectly_aligned_axes_are_fully_coherent():
    """Every 'right' delta is the negated 'left' delta: after sign correction all point one way."""
    deltas, labels = _deltas({"left": E[0], "right": -E[0], "above": 2 * E[1], "below": -E[1],
                              "far": E[2], "close": -3 * E[2]})
    for axis in ("H", "V", "D"):
        assert P.axis_coherence(deltas, labels, axis) == pytest.approx(1.0)


def test_a_model_that_ignores_the_answer_direction_is_not_coherent():
    deltas, labels = _deltas({"left": E[0], "right": E[0]})  # the model ignores which way the answer goes
    # half the corrected deltas point each way: pairs within a label +1, across labels -1
    # 3 + 3 items: 2 * C(3, 2) = 6 pairs at +1, 9 pairs at -1 -> mean (6 - 9) / 15
    assert P.axis_coherence(deltas, labels, "H") == pytest.approx((6 - 9) / 15)


def test_coherence_of_two_directions_sixty_degrees_apart():
    a = E[0]
    b = 0.5 * E[0] + math.sqrt(3) / 2 * E[1]  # cos(a, b) = 0.5
    deltas = np.array([a, b])
    assert P.axis_coherence(deltas, ["far", "far"], "D") == pytest.approx(0.5)
    assert P.axis_coherence(np.array([a, -b]), ["far", "close"], "D") == pytest.approx(0.5)


def test_mean_pairwise_cosine_matches_the_pairwise_loop():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 5))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    loop = np.mean([unit[i] @ unit[j] for i in range(7) for j in range(i + 1, 7)])
    assert P.mean_pairwise_cosine(x) == pytest.approx(loop)
    assert math.isnan(P.mean_pairwise_cosine(x[:1]))


@pytest.mark.parametrize("far, close, expected", [
    (E[1], -E[1], 1.0),    # "far" encoded exactly as "above": fully entangled
    (-E[1], E[1], -1.0),   # "far" as "below"
    (E[2], -E[2], 0.0),    # depth orthogonal to vertical: no entanglement
])
def test_vd_ei_by_hand(far, close, expected):
    deltas, labels = _deltas({"above": E[1], "below": -E[1], "far": far, "close": close})
    assert P.vd_ei(deltas, labels) == pytest.approx(expected, abs=1e-12)


def test_vd_ei_of_a_partly_tilted_depth_axis():
    """far at 60 degrees from above: (cos 60 + cos 60 - cos 120 - cos 120) / 4 = 0.5."""
    tilt = 0.5 * E[1] + math.sqrt(3) / 2 * E[2]
    deltas, labels = _deltas({"above": E[1], "below": -E[1], "far": tilt, "close": -tilt})
    assert P.vd_ei(deltas, labels) == pytest.approx(0.5)


def test_vd_ei_needs_all_four_categories():
    deltas, labels = _deltas({"above": E[1], "below": -E[1], "far": E[2]})
    assert math.isnan(P.vd_ei(deltas, labels))


def test_layer_metrics_per_layer():
    deltas, labels = _deltas({"left": E[0], "right": -E[0], "above": E[1], "below": -E[1], "far": E[1],
                              "close": -E[1]}, noise=0.0)
    rng = np.random.default_rng(0)
    out = {layer: P.metrics_of(d, labels) for layer, d in {3: deltas, 1: rng.standard_normal(deltas.shape)}.items()}
    assert out[3] == pytest.approx({"Coh_H": 1.0, "Coh_V": 1.0, "Coh_D": 1.0, "VD-EI": 1.0, "VD-EI (code)": 1.0,
                                    "zero_deltas": 0})
    assert abs(out[1]["VD-EI"]) < 0.9 and set(out[1]) == {"Coh_H", "Coh_V", "Coh_D", "VD-EI", "VD-EI (code)",
                                                                  "zero_deltas"}


@pytest.mark.parametrize("deltas, labels, message", [
    (np.zeros(3), ["left"], "2-D"),
    (np.ones((2, 3)), ["left"], "2 deltas but 1 labels"),
    (np.ones((1, 3)), ["up"], "unknown answer label"),
    (np.array([[np.nan, 1.0]]), ["left"], "NaN"),
])
def test_bad_input_is_named(deltas, labels, message):
    with pytest.raises(ValueError, match=message):
        P.sign_corrected(deltas, labels)


def test_a_zero_delta_has_cosine_zero_with_the_others():
    assert P.axis_coherence(np.array([[0.0, 0.0], [1.0, 0.0]]), ["left", "left"], "H") == 0.0


def test_paper_tables_are_kept_as_data():
    assert P.PAPER_LAYERS["Qwen2.5-VL-3B"] == (28, 36)
    assert P.paper_table5("Qwen/Qwen2.5-VL-3B-Instruct", 36) == {"Coh_H": 0.367, "Coh_V": 0.293, "Coh_D": 0.043,
                                                                 "VD-EI": 0.457}
    assert P.paper_table5("allenai/Molmo-7B-O-0924", 32)["VD-EI"] == 0.279  # the YAML's row "Molmo-7B-O-0924"
    assert P.paper_table5("Qwen/Qwen2.5-VL-3B-Instruct", 2) is None


def test_vd_ei_code_variant_differs_from_eq3_where_the_means_are_asymmetric():
    # above = e1, below = -e2 (not the mirror of above), far = e1, close = -e1.
    # Eq. 3: 1/4 [cos(e1, e1) + cos(-e2, -e1) - cos(e1, -e1) - cos(-e2, e1)] = 1/4 [1 + 0 + 1 - 0] = 0.5.
    # Code: cos(mean(e1, e2), mean(e1, e1)) = cos((e1 + e2)/2, e1) = 1/sqrt(2).
    deltas, labels = _deltas({"above": E[1], "below": -E[2], "far": E[1], "close": -E[1]}, noise=0.0)
    assert P.vd_ei(deltas, labels) == pytest.approx(0.5)
    assert P.vd_ei_code(deltas, labels) == pytest.approx(1 / math.sqrt(2))


def test_vd_ei_code_is_one_when_far_is_above_and_nan_without_an_axis():
    deltas, labels = _deltas({"above": E[1], "below": -E[1], "far": E[1], "close": -E[1]})
    assert P.vd_ei_code(deltas, labels) == pytest.approx(1.0, abs=0.05)
    deltas, labels = _deltas({"left": E[0], "right": -E[0], "above": E[1]})
    assert math.isnan(P.vd_ei_code(deltas, labels))


def _coh(h, v, d):
    return {"Coh_H": h, "Coh_V": v, "Coh_D": d, "VD-EI": 0.0}


def test_paper_layer_for_the_papers_models_only():
    assert P.paper_layer("Qwen/Qwen2.5-VL-3B-Instruct", 36) == 28
    assert P.paper_layer("qwen2_5-vl-3b", 36) == 28
    assert P.paper_layer("Qwen/Qwen2.5-VL-3B-Instruct", 2) is None  # a different stack: no paper layer
    assert P.paper_layer("my/model", 36) is None
    metrics = {layer: _coh(0.1, 0.1, 0.1) for layer in range(36)}
    assert P.choose_layer(metrics, 36, "Qwen/Qwen2.5-VL-3B-Instruct") == (28, "the paper's layer for this model (App. D.1)")


def test_candidate_range_and_choice_by_the_d4_rule():
    # 10 layers; the last 7 % (layer 10 and beyond round(9.3) = 9) are dropped: layer 9 is kept, none later.
    metrics = {layer: _coh(0.1, 0.1, 0.1) for layer in range(10)}
    metrics[4] = _coh(1.0, 0.5, 0.1)   # H peak
    metrics[5] = _coh(0.9, 0.9, 0.05)  # near every peak but D
    metrics[6] = _coh(0.86, 0.86, 0.2) # near H (0.86 >= 0.85) and V and the D peak
    metrics[9] = _coh(0.1, 1.0, 0.1)   # V peak, late but kept
    assert P.candidate_layers(metrics, 10) == [4, 5, 6, 9]
    # min ratio: 4 -> 0.1/0.2... = min(1, .5, .5) = .5; 5 -> min(.9, .9, .25); 6 -> min(.86, .86, 1) = .86; 9 -> .1
    assert P.choose_layer(metrics, 10, "unknown") == (6, "App. D.4 rule: near-peak coherence on every axis, not a final layer")


def test_without_a_qualifying_layer_none_is_chosen():
    """The authors' recommend_layer returns None when no layer meets App. D.3/D.4's criteria: no
    fallback to the last layers or the largest mean."""
    for metrics, n in (({0: _coh(-0.2, -0.1, -0.3), 1: _coh(-0.1, -0.1, -0.1)}, 2),
                       ({0: _coh(float("nan"), float("nan"), float("nan"))}, 1)):
        layer, why = P.choose_layer(metrics, n, "unknown")
        assert layer is None and "no layer qualifies" in why and "--layer" in why


def test_zero_deltas_count_and_have_cosine_zero():
    """The authors' cosine (scikit-learn) with a zero vector is 0: a zero delta never stops the
    metrics; it is counted."""
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    assert P.mean_pairwise_cosine(x) == pytest.approx((1 + 0 + 0) / 3)
    assert P.zero_rows(x) == 1
    deltas, labels = _deltas({"left": E[0], "right": -E[0], "above": E[1], "below": -E[1], "far": E[2], "close": -E[2]})
    deltas[labels.index("far")] = 0.0
    metrics = P.metrics_of(deltas, labels)
    assert metrics["zero_deltas"] == 1 and all(np.isfinite(metrics[k]) for k in ("Coh_D", "VD-EI", "VD-EI (code)"))
