"""O3-D depth baselines: depth order from a depth map and the masks, with an oracle and any
transformers depth-estimation model.

The paper's DepthAnythingV2 row (Table 12) orders the target by the median depth inside masks.
Rule implemented here (``order_from_depth``): t = median depth over the target mask's pixels;
d = median over distractors of each distractor's own median depth (so every distractor counts
once, whatever its size on screen); the answer is "closer" when t < d, else "farther" (a tie —
only possible for a scene without an odd object, which is never scored — reads "farther").
Non-finite depth values are ignored (a distractor with none is left out).

Depth conventions: everything here uses *depth-like* maps, larger = farther. A model that
outputs disparity / relative inverse depth (larger = nearer: DepthAnything(V2) "relative"
checkpoints, MiDaS-style DPT) is negated by ``DepthModel.predict``, which preserves medians and
order exactly. Which convention a checkpoint uses is read from its config (``larger_is_nearer``
table below) or given explicitly.

Ground truth: the synthetic subsets store an 8-bit (or 16-bit) PNG ``depth_map`` with
``depth_scale = {'min': m, 'max': M}``; metric depth = m + v / vmax * (M - m), v the pixel value
and vmax = 255 (8-bit) or 65535 (16-bit), so 0 is the nearest rendered depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image

from spatial_tasks.o3d import load, markers

CLOSER = "closer"
FARTHER = "farther"

# model_type -> does the raw output grow towards the camera (disparity / inverse depth)?
LARGER_IS_NEARER_BY_MODEL_TYPE = {
    "dpt": True,  # MiDaS-style relative inverse depth (Intel/dpt-large, dpt-hybrid-midas)
    "glpn": False,  # metric depth
    "zoedepth": False,  # metric depth
    "depth_pro": False,  # metric depth
    "prompt_depth_anything": False,  # metric depth
}


def _finite_median(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise ValueError("mask covers no finite depth value")
    return float(np.median(values))


def _as_mask_list(distractor_masks: Any) -> list[np.ndarray]:
    if isinstance(distractor_masks, (np.ndarray, Image.Image)):
        arr = np.asarray(distractor_masks)
        if arr.ndim == 2 and arr.dtype != bool:
            return markers.instance_masks(arr)  # one labelled mask: one object per grey level
        if arr.ndim == 2:
            return [arr]
        return [m.astype(bool) for m in arr]  # a stack of masks
    return [np.asarray(m).astype(bool) for m in distractor_masks]


def order_from_depth(depth: np.ndarray, target_mask: np.ndarray, distractor_masks: Any, *,
                     larger_is_nearer: bool = False) -> str:
    """"closer" | "farther": the target's median depth vs the median of the distractors' medians.

    ``distractor_masks``: a sequence of masks, a stack (N x H x W), or one labelled mask (one
    object per non-zero grey level). ``larger_is_nearer=True`` for a raw disparity map.
    """
    depth = np.asarray(depth, dtype=np.float64)
    if depth.ndim != 2:
        raise ValueError(f"depth must be 2-D, got shape {depth.shape}")
    target = np.asarray(target_mask).astype(bool)
    if target.shape != depth.shape:
        raise ValueError(f"target mask shape {target.shape} != depth shape {depth.shape}")
    if not target.any():
        raise ValueError("target mask is empty")
    masks = [m for m in _as_mask_list(distractor_masks) if m.any()]
    if not masks:
        raise ValueError("no non-empty distractor mask")
    for m in masks:
        if m.shape != depth.shape:
            raise ValueError(f"distractor mask shape {m.shape} != depth shape {depth.shape}")
    if larger_is_nearer:
        depth = -depth
    t = _finite_median(depth[target])
    medians = [float(np.median(v[np.isfinite(v)])) for v in (depth[m] for m in masks) if np.isfinite(v).any()]
    if not medians:
        raise ValueError("no distractor mask covers a finite depth value")
    d = float(np.median(medians))
    return CLOSER if t < d else FARTHER


def decode_depth_png(image: Image.Image, depth_min: float, depth_max: float) -> np.ndarray:
    """Metric depth (float32) from an 8- or 16-bit depth PNG and its depth_scale."""
    arr = np.asarray(image)
    if arr.ndim == 3:
        arr = arr[..., 0]
    if image.mode.startswith("I;16") or image.mode == "I" or arr.dtype in (np.uint16, np.int32):
        vmax = 65535.0
    elif image.mode == "F":
        return arr.astype(np.float32)  # already metric
    else:
        vmax = 255.0
    return (depth_min + arr.astype(np.float64) / vmax * (depth_max - depth_min)).astype(np.float32)


def ground_truth_depth(doc: Mapping[str, Any]) -> np.ndarray:
    """Metric depth map of a synthetic doc, decoded with its depth_scale."""
    if doc.get("depth_min") is None or doc.get("depth_max") is None:
        raise ValueError(f"doc {doc.get('question_id')!r} (subset {doc.get('subset_name')!r}) has no "
                         "depth_scale: ground-truth depth exists only for the synthetic subsets")
    return decode_depth_png(load.depth_map_for(doc), doc["depth_min"], doc["depth_max"])


def _resize(arr: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    if arr.shape == shape:
        return arr
    img = Image.fromarray(arr.astype(np.float32), mode="F")
    return np.asarray(img.resize((shape[1], shape[0]), Image.Resampling.NEAREST))


def larger_is_nearer_for(config: Any) -> bool:
    """Whether a transformers depth model's raw output is disparity-like (see module docstring)."""
    model_type = getattr(config, "model_type", None)
    if model_type == "depth_anything":
        return getattr(config, "depth_estimation_type", "relative") != "metric"
    if model_type in LARGER_IS_NEARER_BY_MODEL_TYPE:
        return LARGER_IS_NEARER_BY_MODEL_TYPE[model_type]
    raise ValueError(f"unknown depth convention for model_type {model_type!r}; pass larger_is_nearer=")


class DepthModel:
    """Any transformers depth-estimation checkpoint, loaded by path (AutoModelForDepthEstimation).

    ``predict`` returns a depth-like map (larger = farther) at the requested size.
    """

    def __init__(self, pretrained_path: str, *, larger_is_nearer: bool | None = None, device: str = "cpu"):
        from transformers import AutoImageProcessor, AutoModelForDepthEstimation

        self.path = str(pretrained_path)
        self.device = device
        self.processor = AutoImageProcessor.from_pretrained(self.path)
        self.model = AutoModelForDepthEstimation.from_pretrained(self.path).to(device).eval()
        self.larger_is_nearer = (larger_is_nearer_for(self.model.config)
                                 if larger_is_nearer is None else bool(larger_is_nearer))

    def raw(self, image: Image.Image) -> np.ndarray:
        """The model's own output (its convention, its resolution), float32."""
        import torch

        inputs = self.processor(images=image.convert("RGB"), return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = self.model(**inputs).predicted_depth
        return out[0].float().cpu().numpy()

    def predict(self, image: Image.Image, size: tuple[int, int] | None = None) -> np.ndarray:
        """Depth-like map (larger = farther), bilinearly resized to ``size`` = (h, w) or the image's."""
        import torch

        h, w = size if size is not None else (image.height, image.width)
        raw = torch.from_numpy(self.raw(image))[None, None]
        resized = torch.nn.functional.interpolate(raw, size=(h, w), mode="bilinear", align_corners=False)
        depth = resized[0, 0].numpy()
        return -depth if self.larger_is_nearer else depth


def predict_order(doc: Mapping[str, Any], model: DepthModel | None = None) -> str:
    """The baseline's answer for one doc: oracle (ground-truth depth) when ``model`` is None,
    else the model's depth on the unmarked image."""
    target, distractors = load.masks_for(doc)
    if model is None:
        depth = _resize(ground_truth_depth(doc), target.shape)
    else:
        depth = model.predict(load.image_for(doc, marked=False), size=target.shape)
    return order_from_depth(depth, target, distractors)


def accuracy(docs: Sequence[Mapping[str, Any]], model: DepthModel | None = None) -> dict[str, float]:
    """Accuracy of the baseline over scored docs (gt 'none' excluded), with n."""
    correct = n = 0
    for doc in docs:
        if not doc["scored"]:
            continue
        n += 1
        correct += predict_order(doc, model) == doc["gt_label"]
    return {"accuracy": correct / n if n else float("nan"), "n": n}
