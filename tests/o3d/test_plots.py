"""O3-D figures are written, are real PNGs and are not blank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from spatial_tasks.o3d import plots
from spatial_tasks.o3d.metrics import VISION_CUES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_png(path: Path, min_bytes: int = 15_000) -> None:
    assert path.is_file()
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > min_bytes
    pixels = imread(path)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    assert np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0).shape[0] > 50  # not a flat image


def _pairs(offset: float) -> dict:
    out = {c: 0.5 + offset for c in VISION_CUES}
    for i, a in enumerate(VISION_CUES):
        for b in VISION_CUES[i + 1 :]:
            out[f"{a}+{b}"] = (0.3 + 0.05 * i + offset) % 1
    return out


def test_cue_heatmap(tmp_path):
    lower = _pairs(0.0)
    upper = {tuple(k.split("+")): v for k, v in _pairs(0.4).items()}  # tuple keys work too
    del upper[("HP", "OC")]  # a missing cell is drawn grey
    _check_png(
        plots.plot_cue_heatmap(
            lower, upper, tmp_path / "heat.png", lower_name="VLM", upper_name="DepthAnythingV2"
        )
    )


def test_cue_heatmap_without_baseline(tmp_path):
    _check_png(plots.plot_cue_heatmap({"HP": 0.6, "OC": 0.4}, None, tmp_path / "sub" / "heat.png"))


def test_bias_and_sdgm_bars(tmp_path):
    _check_png(
        plots.plot_near_far_bias(
            {"BLIP2": -0.81, "VILA1.5": -0.17, "X": None, "Y": 0.4}, tmp_path / "bias.png", n={"BLIP2": 100}
        ),
        min_bytes=10_000,
    )
    _check_png(
        plots.plot_sdgm(
            {"BLIP2": {"vision": 0.03, "language": 0.16}, "Z": {"vision": None, "language": 0.3}},
            tmp_path / "sdgm.png",
            ddof=1,
        ),
        min_bytes=10_000,
    )


def test_plots_from_a_rescore_result(tmp_path):
    result = {
        "ddof": 0,
        "models": {
            "m1": {
                "cue_group_accuracy": _pairs(0.0),
                "bias_nf": -0.3,
                "sdgm_vision": 0.05,
                "sdgm_language": 0.2,
                "n": {"bias_nf": {"near": 10, "far": 10}},
            },
            "m/2": {
                "cue_group_accuracy": {},
                "bias_nf": None,
                "sdgm_vision": None,
                "sdgm_language": None,
                "n": {},
            },
        },
    }
    paths = plots.plots_from_rescore(
        result, tmp_path, baseline={"HP": 0.99}, baseline_name="DAv2", display_names={"m1": "Model one"}
    )
    assert set(paths) == {"heatmap_m1", "heatmap_m/2", "near_far_bias", "sdgm"}
    assert paths["heatmap_m/2"].parent == tmp_path  # model names are made safe for file names
    for path in paths.values():
        _check_png(path, min_bytes=10_000)


@pytest.mark.parametrize("key", ["HP+OC", "OC+HP", ("OC", "HP"), ["HP", "OC"], "HP, OC"])
def test_cue_keys_are_order_free(key):
    assert plots._cue_key(key) == frozenset({"HP", "OC"})
