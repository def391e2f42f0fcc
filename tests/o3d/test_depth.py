"""Depth baselines: the median rule, ground-truth decoding, the oracle, and a tiny depth model."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from spatial_tasks.o3d import depth, load


def _masks(h=40, w=60):
    target = np.zeros((h, w), bool)
    target[10:20, 25:35] = True
    d1 = np.zeros((h, w), bool)
    d1[10:20, 2:12] = True
    d2 = np.zeros((h, w), bool)
    d2[10:20, 45:55] = True
    return target, [d1, d2]


def test_closer_and_farther():
    target, dist = _masks()
    field = np.full(target.shape, 50.0)
    field[dist[0]] = 10.0
    field[dist[1]] = 10.0
    field[target] = 5.0
    assert depth.order_from_depth(field, target, dist) == "closer"
    field[target] = 15.0
    assert depth.order_from_depth(field, target, dist) == "farther"
    # a disparity map (larger = nearer) reads the other way round
    assert depth.order_from_depth(field, target, dist, larger_is_nearer=True) == "closer"


def test_target_median_ignores_outlier_pixels():
    target, dist = _masks()
    field = np.full(target.shape, 10.0)
    field[target] = 8.0
    field[10, 25:35] = 1000.0  # one row of the target mask leaks onto the far background
    assert depth.order_from_depth(field, target, dist) == "closer"


def test_median_of_distractor_medians_not_pooled_pixels():
    """Three distractors at 10, 10 and 30 m, the third far larger on screen: pooled pixels would
    give a median of 30 (target at 20 -> 'closer'); the median of per-object medians is 10 ->
    'farther'. The documented rule counts every distractor once."""
    h, w = 60, 100
    target = np.zeros((h, w), bool)
    target[0:5, 0:5] = True
    small1 = np.zeros((h, w), bool)
    small1[10:12, 10:12] = True
    small2 = np.zeros((h, w), bool)
    small2[20:22, 20:22] = True
    big = np.zeros((h, w), bool)
    big[30:60, 30:100] = True
    field = np.zeros((h, w))
    field[target], field[small1], field[small2], field[big] = 20.0, 10.0, 10.0, 30.0
    assert np.median(field[small1 | small2 | big]) == 30.0
    assert depth.order_from_depth(field, target, [small1, small2, big]) == "farther"


def test_distractors_as_labelled_mask_or_stack():
    target, dist = _masks()
    field = np.full(target.shape, 10.0)
    field[target] = 4.0
    labelled = dist[0].astype(np.uint8) * 100 + dist[1].astype(np.uint8) * 200
    assert depth.order_from_depth(field, target, labelled) == "closer"
    assert depth.order_from_depth(field, target, np.stack(dist)) == "closer"


def test_non_finite_depth_is_ignored():
    target, dist = _masks()
    field = np.full(target.shape, 10.0)
    field[target] = 4.0
    field[10:12, 25:35] = np.nan
    field[dist[0]] = np.inf
    assert depth.order_from_depth(field, target, dist) == "closer"


@pytest.mark.parametrize("case", ["shape", "empty_target", "no_distractor"])
def test_bad_input_is_a_clear_error(case):
    target, dist = _masks()
    field = np.ones(target.shape)
    if case == "shape":
        with pytest.raises(ValueError, match="shape"):
            depth.order_from_depth(field[:-1], target, dist)
    elif case == "empty_target":
        with pytest.raises(ValueError, match="target mask is empty"):
            depth.order_from_depth(field, np.zeros_like(target), dist)
    else:
        with pytest.raises(ValueError, match="no non-empty distractor"):
            depth.order_from_depth(field, target, [np.zeros_like(target)])


def test_decode_depth_png_8_and_16_bit():
    v8 = Image.fromarray(np.array([[0, 255], [51, 102]], np.uint8), mode="L")
    np.testing.assert_allclose(depth.decode_depth_png(v8, 2.0, 12.0), [[2, 12], [4, 6]], rtol=1e-6)
    v16 = Image.fromarray(np.array([[0, 65535]], np.uint16))
    np.testing.assert_allclose(depth.decode_depth_png(v16, 1.0, 3.0), [[1, 3]], rtol=1e-6)


def test_ground_truth_depth_of_a_fixture_doc(o3d_docs):
    doc = next(d for d in o3d_docs if d["subset_name"] == "kb-1cue" and d["gt_position"] == "near")
    field = depth.ground_truth_depth(doc)
    assert field.dtype == np.float32
    assert field.min() == pytest.approx(doc["depth_min"]) and field.max() == pytest.approx(doc["depth_max"])
    target, distractors = load.masks_for(doc)
    assert field.shape == target.shape
    assert np.median(field[target]) < min(np.median(field[m]) for m in distractors)


def test_ground_truth_depth_needs_a_synthetic_doc(o3d_docs):
    doc = next(d for d in o3d_docs if d["subset_name"] == "real-012cue")
    with pytest.raises(ValueError, match="real-012cue"):
        depth.ground_truth_depth(doc)


def test_oracle_scores_one_on_synthetic_fixture(o3d_docs):
    synthetic = [d for d in o3d_docs if d["synthetic"]]
    result = depth.accuracy(synthetic)
    assert result["n"] == sum(d["scored"] for d in synthetic) > 50
    assert result["accuracy"] == 1.0


# ---- a tiny random transformers depth model, built at test time --------------------------------


def _tiny_depth_anything(path: Path, estimation_type: str = "relative") -> Path:
    import torch
    from transformers import (
        DepthAnythingConfig,
        DepthAnythingForDepthEstimation,
        Dinov2Config,
        DPTImageProcessor,
    )

    backbone = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                            patch_size=14, image_size=56, out_features=["stage1", "stage2"],
                            reshape_hidden_states=False)
    config = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=32, neck_hidden_sizes=[16, 32],
                                 reassemble_factors=[2, 1], fusion_hidden_size=16, head_hidden_size=8,
                                 patch_size=14, depth_estimation_type=estimation_type,
                                 max_depth=20)
    torch.manual_seed(0)
    DepthAnythingForDepthEstimation(config).save_pretrained(path)
    DPTImageProcessor(size={"height": 56, "width": 56}, keep_aspect_ratio=True, ensure_multiple_of=14,
                      do_pad=False).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def o3d_tiny_depth_dir(tmp_path_factory) -> Path:
    return _tiny_depth_anything(tmp_path_factory.mktemp("tiny_depth_anything"))


def test_depth_model_by_path_negates_disparity(o3d_tiny_depth_dir, o3d_docs):
    model = depth.DepthModel(str(o3d_tiny_depth_dir))
    assert model.larger_is_nearer  # a "relative" DepthAnything checkpoint outputs disparity
    doc = next(d for d in o3d_docs if d["subset_name"] == "kb-1cue" and not d["is_marked"])
    image = load.image_for(doc)
    raw = model.raw(image)
    assert raw.ndim == 2 and np.isfinite(raw).all()
    pred = model.predict(image)
    assert pred.shape == (image.height, image.width)
    import torch

    resized = torch.nn.functional.interpolate(torch.from_numpy(raw)[None, None], size=pred.shape,
                                              mode="bilinear", align_corners=False)[0, 0].numpy()
    np.testing.assert_allclose(pred, -resized, rtol=1e-5, atol=1e-6)
    assert model.predict(image, size=(20, 30)).shape == (20, 30)


def test_depth_model_baseline_runs_on_fixture_docs(o3d_tiny_depth_dir, o3d_docs):
    model = depth.DepthModel(str(o3d_tiny_depth_dir))
    docs = [d for d in o3d_docs if d["subset_name"] in ("kb-0cue", "real-012cue-cropped", "real-mcue")]
    answers = {depth.predict_order(d, model) for d in docs}
    assert answers <= {"closer", "farther"}
    result = depth.accuracy(docs, model)
    assert result["n"] == sum(d["scored"] for d in docs) and 0.0 <= result["accuracy"] <= 1.0


def test_depth_convention_per_model_config(tmp_path):
    metric = depth.DepthModel(str(_tiny_depth_anything(tmp_path / "metric", "metric")))
    assert not metric.larger_is_nearer
    forced = depth.DepthModel(str(tmp_path / "metric"), larger_is_nearer=True)
    assert forced.larger_is_nearer
    assert depth.larger_is_nearer_for(SimpleNamespace(model_type="dpt"))
    assert not depth.larger_is_nearer_for(SimpleNamespace(model_type="zoedepth"))
    with pytest.raises(ValueError, match="larger_is_nearer"):
        depth.larger_is_nearer_for(SimpleNamespace(model_type="mystery"))
