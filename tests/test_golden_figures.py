"""Every figure of rescore, results, verify, the report's tables and leaderboard.json stays what it
was before the benchmarks became one unit each (tests/golden_figures.py says what is compared)."""

from __future__ import annotations

import json
import math

import pytest
from golden_figures import GOLDEN, VOLATILE, figures


# Figures computed from a neural model's output (BERTScore's float32 embeddings) take the order of
# the CPU's BLAS reductions: another CPU or thread count moved VAGUE's free-form F1 from 1.0000000075
# to 1.0000000745. They are compared to NEURAL_TOL; every other float to EXACT_TOL (a mean's last bits).
NEURAL_TOL, EXACT_TOL = 1e-6, 1e-8


def _tolerance(where: str) -> float:
    return NEURAL_TOL if "bertscore" in where.rsplit("/", 1)[-1].lower() else EXACT_TOL


def _differences(ours: object, golden: object, where: str = "") -> list[str]:
    """Where the two documents differ (floats within ``_tolerance``)."""
    if isinstance(golden, dict) and isinstance(ours, dict):
        out = [f"{where}/{k}: missing" for k in golden if k not in ours]
        out += [f"{where}/{k}: new" for k in ours if k not in golden]
        for key in golden:
            if key in ours:
                out += _differences(ours[key], golden[key], f"{where}/{key}")
        return out
    if isinstance(golden, list) and isinstance(ours, list):
        if len(golden) != len(ours):
            return [f"{where}: {len(ours)} items, golden {len(golden)}"]
        return [d for i, (a, b) in enumerate(zip(ours, golden, strict=True)) for d in _differences(a, b, f"{where}[{i}]")]
    if isinstance(golden, float) and isinstance(ours, (int, float)) and not isinstance(ours, bool):
        close = math.isclose(ours, golden, rel_tol=0, abs_tol=_tolerance(where))
        return [] if close else [f"{where}: {ours!r} != golden {golden!r}"]
    return [] if ours == golden else [f"{where}: {ours!r} != golden {golden!r}"]


def _without_volatile(value: object) -> object:
    """The golden document as ``golden_figures`` would write it today: fields that say who ran it, or
    that were added since (``VOLATILE``: version and settings fields), are not figures."""
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def test_the_figures_are_the_golden_ones(golden_runs, tmp_path):
    golden = _without_volatile(json.loads(GOLDEN.read_text()))
    ours = json.loads(json.dumps(figures(golden_runs, tmp_path / "report")))
    differences = _differences(ours, golden)
    assert not differences, "\n".join(differences[:40])
    assert golden["verify"]["grades"]["exact"] == 65  # every reproducible Table 12 cell of the release, exact


def test_the_comparison_sees_a_moved_figure():
    golden = json.loads(GOLDEN.read_text())
    moved = json.loads(json.dumps(golden))
    moved["results"][0]["value"] = (moved["results"][0]["value"] or 0) + 1e-6
    assert _differences(moved, golden) and not _differences(golden, golden)
    with pytest.raises(AssertionError):
        assert not _differences({**golden, "results": golden["results"][1:]}, golden)


def test_a_bertscore_figure_is_compared_to_its_stated_tolerance():
    """The float32 jitter of another CPU passes; a moved BERTScore, or the same jitter in an exact
    figure, does not."""
    assert not _differences({"bertscore_f1": 1.0000000745}, {"bertscore_f1": 1.0000000075})
    assert _differences({"bertscore_f1": 1.00001}, {"bertscore_f1": 1.0000000075})
    assert _differences({"acc": 1.0000000745}, {"acc": 1.0000000075})
