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


# Issue 44, item 2: each scorecard column is a paper's quantity over the paper's subset, and each
# paper figure printed beside a run is computed over the same subset. (benchmark, metric) -> the task
# or group the golden runs' scorecard takes it from, and why that is the paper's subset.
SCORECARD_SOURCES = {
    ("spatialtunnel", "v"): {"spatialtunnel_sample_phase", "spatialtunnel_logit_sample_phase"},  # Tables 8, 3
    ("spatialtunnel", "delta"): {"spatialtunnel_sample_phase", "spatialtunnel_logit_sample_phase"},
    ("spatialtunnel", "v_size"): {"spatialtunnel_sample_size", "spatialtunnel_logit_sample_size"},  # Table 9
    ("spatialtunnel", "delta_s"): {"spatialtunnel_sample_size", "spatialtunnel_logit_sample_size"},
    ("o3d", "acc"): {"o3d_sample_markers"},  # Table 12: marked images only
    ("o3d", "bias_nf"): {"o3d_sample_markers"},  # Eq. 1 on the marked images
    ("o3d", "sdgm_vision"): {"o3d_sample_markers"},  # Eq. 2, Omega_V on the marked images
    ("o3d", "sdgm_language"): {"o3d_sample"},  # Eq. 2, Omega_L: 42 groups over clarity 3, 3.5 and 4
    ("dori", "avg_coarse"): {"dori_sample"},  # Table 2: every task
    ("dori", "avg_granular"): {"dori_sample"},
    ("vague", "acc"): {"vague_sample_vlm"},  # the VLM setting
}
# "Beside the papers": (benchmark, table) -> where its cells come from in the golden runs.
PAPER_SOURCES = {
    ("spatialtunnel", "table3"): {"spatialtunnel_logit_sample_phase"},  # logit, phase
    ("spatialtunnel", "table8"): {"spatialtunnel_sample_phase"},  # exact match, phase
    ("spatialtunnel", "table9"): {"spatialtunnel_logit_sample_size"},  # logit, size
    ("spatialtunnel", "table2"): {"spatialtunnel_cv_bench_3d_split_sample", "spatialtunnel_embspatial_depth_split_sample"},
    ("o3d", "table12"): {"run (all O3-D tasks)"},  # each cell filters its own rows (clarity 4, cues)
    ("dori", "table2"): {"run (all DORI tasks)"},
}


def test_each_headline_and_paper_cell_is_the_papers_quantity_over_its_subset():
    golden = json.loads(GOLDEN.read_text())
    sources: dict[tuple, set] = {}
    for record in golden["leaderboard"]:
        sources.setdefault((record["benchmark"], record["metric"]), set()).add(record["task"])
    assert sources == SCORECARD_SOURCES
    beside: dict[tuple, set] = {}
    for line in golden["report_tables"]["Beside the papers"][2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        benchmark, table = cells[2].split()
        beside.setdefault((benchmark, table), set()).add(cells[4])
    assert beside == PAPER_SOURCES
    header = golden["report_tables"]["Scorecard"][0]
    assert "SpatialTunnel v (phase) | SpatialTunnel Δ (phase) | SpatialTunnel v (size) | SpatialTunnel Δ_s (size)" in header
    row = next(line for line in golden["report_tables"]["Scorecard"] if "rule=vertical" in line)
    assert "(exact); " in row and "(logit)" in row  # a run with both protocols: each figure, labelled
