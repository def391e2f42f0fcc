"""Contrastive probing metrics (SpatialTunnel paper §5, Eq. 3, Table 5): pure functions over deltas.

For each spatial question and its object-swapped twin ("Is A to the left or right of B?" and
"Is B to the left or right of A?"), a VLM's hidden state h at the last prompt token gives one
delta per layer, δ = h(swapped) − h(original). ``label`` is the original question's answer:
left / right (axis H), above / below (V), far / close (D).

* Sign correction: a delta whose original answer is the canonical direction of its axis (left,
  above, far) is kept; the opposite answer's delta is negated, so every delta of an axis points the
  same way when the model encodes the axis consistently.
* Axis coherence Coh_H / Coh_V / Coh_D: the mean pairwise cosine of the sign-corrected deltas of
  the axis (all unordered pairs i < j).
* VD-EI (Eq. 3), the vertical–depth entanglement index, over per-answer mean deltas μ_c (not sign
  corrected): ¼ [cos(μ_above, μ_far) + cos(μ_below, μ_close) − cos(μ_above, μ_close) −
  cos(μ_below, μ_far)]. +1: "far" is encoded as "above"; 0: the two axes are unrelated; −1: "far"
  is encoded as "below".

Paper numbers: Table 5 (Coh_H, Coh_V, Coh_D, VD-EI at the chosen layer) is in
tasks/spatialtunnel/paper_results.yaml (``paper_table5``). Chosen layers (PAPER_LAYERS): Qwen2.5-VL-3B 28 of 36, NVILA-Lite-2B 20 of 28,
Molmo-7B 23 of 32, Qwen3-VL-235B 87 of 94.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

AXES: dict[str, tuple[str, str]] = {"H": ("left", "right"), "V": ("above", "below"), "D": ("far", "close")}
AXIS_OF = {label: axis for axis, pair in AXES.items() for label in pair}
CANONICAL = {pair[0] for pair in AXES.values()}  # left, above, far
PAPER_LAYERS = {"Qwen2.5-VL-3B": (28, 36), "NVILA-Lite-2B": (20, 28), "Molmo-7B": (23, 32),
                "Qwen3-VL-235B": (87, 94)}


def _check(deltas: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    deltas = np.asarray(deltas, dtype=np.float64)
    if deltas.ndim != 2:
        raise ValueError(f"deltas must be a 2-D array (items x hidden size), got shape {deltas.shape}")
    if len(labels) != deltas.shape[0]:
        raise ValueError(f"{deltas.shape[0]} deltas but {len(labels)} labels")
    unknown = sorted({str(label) for label in labels} - set(AXIS_OF))
    if unknown:
        raise ValueError(f"unknown answer label(s) {unknown}; expected one of {sorted(AXIS_OF)}")
    if not np.isfinite(deltas).all():
        raise ValueError("deltas contain NaN or infinity")
    return deltas


def sign_corrected(deltas: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    """Each delta times +1 (answer left / above / far) or −1 (right / below / close)."""
    deltas = _check(deltas, labels)
    signs = np.array([1.0 if label in CANONICAL else -1.0 for label in labels])
    return deltas * signs[:, None]


def mean_pairwise_cosine(vectors: np.ndarray) -> float:
    """Mean cosine over all unordered pairs of rows: (|Σ u_i|² − Σ |u_i|²) / (n (n − 1)) with
    u_i = v_i / |v_i|. A zero row (the swapped prompt gave the same hidden state) has no direction:
    its cosine with anything is 0, as the authors' code computes it (scikit-learn's
    ``cosine_similarity``); ``zero_rows`` counts them. NaN for fewer than two rows."""
    vectors = np.asarray(vectors, dtype=np.float64)
    n = vectors.shape[0]
    if n < 2:
        return float("nan")
    norms = np.linalg.norm(vectors, axis=1)
    unit = np.divide(vectors, norms[:, None], out=np.zeros_like(vectors), where=norms[:, None] > 0)
    total = unit.sum(axis=0)
    return float((total @ total - int((norms > 0).sum())) / (n * (n - 1)))


def zero_rows(vectors: np.ndarray) -> int:
    """How many deltas are exactly zero (counted and reported: they pull a coherence towards 0)."""
    return int((np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1) == 0).sum())


def axis_coherence(deltas: np.ndarray, labels: Sequence[str], axis: str) -> float:
    """Coh_axis (§5): mean pairwise cosine of the axis's sign-corrected deltas (NaN with < 2)."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {list(AXES)}, not {axis!r}")
    corrected = sign_corrected(deltas, labels)
    rows = [i for i, label in enumerate(labels) if AXIS_OF[label] == axis]
    return mean_pairwise_cosine(corrected[rows])


def coherence_intervals(deltas: np.ndarray, labels: Sequence[str], iterations: int = 1000, seed: int = 0,
                        level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile-bootstrap intervals of Coh_H, Coh_V and Coh_D (``level``, seeded): each axis's items
    drawn with replacement, then the mean cosine over the pairs of distinct items drawn (an item paired
    with its own copy would count a cosine of 1). NaN bounds for an axis with fewer than two items."""
    corrected = sign_corrected(deltas, labels)
    rng = np.random.default_rng(seed)
    out = {}
    for axis in AXES:
        rows = [i for i, label in enumerate(labels) if AXIS_OF[label] == axis]
        if len(rows) < 2:
            out[f"Coh_{axis}"] = (float("nan"), float("nan"))
            continue
        vectors = corrected[rows]
        norms = np.linalg.norm(vectors, axis=1)
        unit = np.divide(vectors, norms[:, None], out=np.zeros_like(vectors), where=norms[:, None] > 0)
        cosines = unit @ unit.T
        values = []
        for _ in range(iterations):
            drawn = rng.integers(len(rows), size=len(rows))
            distinct = drawn[:, None] != drawn[None, :]
            if distinct.any():
                values.append(float(cosines[np.ix_(drawn, drawn)][distinct].mean()))
        tail = (1 - level) / 2 * 100
        out[f"Coh_{axis}"] = (float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail)))
    return out


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine; 0 with a zero vector, as the authors' code (scikit-learn) computes it."""
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(a @ b / (na * nb))


def category_means(deltas: np.ndarray, labels: Sequence[str]) -> dict[str, np.ndarray]:
    """μ_c: the mean (uncorrected) delta of the items whose original answer is c."""
    deltas = _check(deltas, labels)
    labels = list(labels)
    return {c: deltas[[i for i, label in enumerate(labels) if label == c]].mean(axis=0)
            for c in AXIS_OF if c in labels}


def vd_ei(deltas: np.ndarray, labels: Sequence[str]) -> float:
    """VD-EI (Eq. 3) = ¼ [cos(μ_above, μ_far) + cos(μ_below, μ_close) − cos(μ_above, μ_close) −
    cos(μ_below, μ_far)]; NaN when one of the four categories has no item."""
    mu = category_means(deltas, labels)
    if not {"above", "below", "far", "close"} <= set(mu):
        return float("nan")
    return (_cos(mu["above"], mu["far"]) + _cos(mu["below"], mu["close"])
            - _cos(mu["above"], mu["close"]) - _cos(mu["below"], mu["far"])) / 4


def metrics_of(deltas: np.ndarray, labels: Sequence[str]) -> dict[str, float]:
    """{"Coh_H", "Coh_V", "Coh_D", "VD-EI", "VD-EI (code)", "zero_deltas"} of one layer's
    (items x hidden) deltas."""
    return {**{f"Coh_{axis}": axis_coherence(deltas, labels, axis) for axis in AXES},
            "VD-EI": vd_ei(deltas, labels), "VD-EI (code)": vd_ei_code(deltas, labels),
            "zero_deltas": zero_rows(deltas)}


def vd_ei_code(deltas: np.ndarray, labels: Sequence[str]) -> float:
    """VD-EI as the authors' released code computes it (contrastive-probing ``probing.py``,
    ``compute_vd_ei_per_layer``): cos(mean sign-corrected vertical delta, mean sign-corrected
    distance delta). It differs from Eq. 3 (``vd_ei``, the paper's definition and our default):
    one cosine of two axis means instead of four cosines of per-answer means. Both are +1 when
    "far" is encoded as "above". NaN when either axis has no item."""
    corrected = sign_corrected(deltas, labels)
    rows = {axis: [i for i, label in enumerate(labels) if AXIS_OF[label] == axis] for axis in ("V", "D")}
    if not rows["V"] or not rows["D"]:
        return float("nan")
    return _cos(corrected[rows["V"]].mean(axis=0), corrected[rows["D"]].mean(axis=0))


def paper_model(model_name: str, num_layers: int) -> str | None:
    """The PAPER_LAYERS name of a model whose name contains it (e.g. "Qwen/Qwen2.5-VL-3B-Instruct"
    is "Qwen2.5-VL-3B") and that has that model's number of decoder layers; None otherwise."""
    def fold(text: str) -> str:
        return text.lower().replace("_", "-").replace(".", "-")

    for name, (_, total) in PAPER_LAYERS.items():
        if fold(name) in fold(model_name) and total == num_layers:
            return name
    return None


def paper_layer(model_name: str, num_layers: int) -> int | None:
    """The paper's analysis layer (App. D.1; 0-based decoder-layer index as in the authors' hooks)
    for one of the paper's models (``paper_model``), else None."""
    name = paper_model(model_name, num_layers)
    return PAPER_LAYERS[name][0] if name else None


def paper_table5(model_name: str, num_layers: int) -> dict[str, float] | None:
    """The paper's Table 5 row (Coh_H, Coh_V, Coh_D, VD-EI) for one of its models (``paper_model``),
    else None; the numbers live in tasks/spatialtunnel/paper_results.yaml."""
    from spatial_tasks.common.paper import paper_results

    name = paper_model(model_name, num_layers)
    results = paper_results("spatialtunnel")
    row = results.match(name) if name else None
    table = results.tables["table5"]
    if row not in table.rows:
        return None
    return dict(zip(("Coh_H", "Coh_V", "Coh_D", "VD-EI"), (table.fraction(row, c) for c in table.columns), strict=True))


def candidate_layers(metrics: Mapping[int, Mapping[str, float]], num_layers: int, near_peak: float = 0.85,
                     exclude_last: float = 0.07) -> list[int]:
    """App. D.4's candidate range: the union over axes of the layers whose Coh_axis is near that
    axis's peak (>= ``near_peak`` x peak), without the output-specialised last layers (the last
    ``exclude_last`` of the stack). The paper states the rule in words; 0.85 and 0.07 are the
    authors' code's thresholds (``recommend_layer``). Axes whose peak is <= 0 add nothing."""
    layers = sorted(metrics)
    keep = {layer for layer in layers if layer <= round(num_layers * (1 - exclude_last))}
    union: set[int] = set()
    for axis in AXES:
        values = {layer: metrics[layer][f"Coh_{axis}"] for layer in layers if np.isfinite(metrics[layer][f"Coh_{axis}"])}
        peak = max(values.values(), default=float("nan"))
        if np.isfinite(peak) and peak > 0:
            union |= {layer for layer, value in values.items() if value >= near_peak * peak}
    return sorted(union & keep)


def choose_layer(metrics: Mapping[int, Mapping[str, float]], num_layers: int,
                 model_name: str = "") -> tuple[int | None, str]:
    """(layer, why): the paper's layer for the paper's models (``paper_layer``), else the layer of
    the App. D.4 candidate range closest to all three axis peaks (largest min over axes of
    Coh_axis / peak; deeper wins ties). When no layer meets the criteria, (None, why): no layer
    qualifies, as the authors' code returns None -- never a fallback; name one with ``--layer``."""
    known = paper_layer(model_name, num_layers)
    if known is not None and known in metrics:
        return known, "the paper's layer for this model (App. D.1)"
    candidates = candidate_layers(metrics, num_layers)
    if not candidates:
        return None, ("no layer qualifies: none is near every axis's coherence peak outside the final layers "
                      "(App. D.4); name one with --layer")
    peaks = {axis: max((m[f"Coh_{axis}"] for m in metrics.values() if np.isfinite(m[f"Coh_{axis}"])), default=0.0)
             for axis in AXES}

    def closeness(layer: int) -> tuple[float, int]:
        ratios = [metrics[layer][f"Coh_{axis}"] / peak for axis, peak in peaks.items() if peak > 0]
        ratios = [r if np.isfinite(r) else 0.0 for r in ratios]
        return (min(ratios, default=0.0), layer)

    return max(candidates, key=closeness), "App. D.4 rule: near-peak coherence on every axis, not a final layer"
