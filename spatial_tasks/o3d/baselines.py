"""O3-D rules for ``spatial_baseline`` (``--model spatial_baseline --model_args rule=NAME[,...]``).

Each rule decides whether the target is closer or farther than the distractors, then answers the
doc's question as a model would: the letter of the right option for a two-word question, the
option's own word (Yes / No / True / False) for a yes-no body, so the paper's parser reads it back.

* ``depth_oracle`` -- the ground-truth depth map and the masks (``depth.predict_order``; the
  median rule of the paper's DepthAnythingV2 row). Real photos have no depth map: there the
  oracle answers the ground truth itself (it is an oracle), so it scores 1.0 on every task.
* ``depth_model,pretrained=PATH`` -- any transformers depth-estimation checkpoint by path
  (``depth.DepthModel``; optional ``device=``, ``larger_is_nearer=``), loaded once per process,
  on the unmarked image.
* ``always_near`` / ``always_far`` -- the two extreme biases: bias_nf = -1 / +1 (Eq. 1).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from spatial_tasks.common.baseline_rules import rule
from spatial_tasks.common.validate import flag
from spatial_tasks.o3d import depth
from spatial_tasks.o3d.parse import CLOSER, FARTHER
from spatial_tasks.o3d.prompts import correct_letter, parse_prompt

_POSITION = {CLOSER: "near", FARTHER: "far"}


def answer(doc: Mapping[str, Any], label: str) -> str:
    """The response that means ``label`` ("closer" | "farther") for the doc's question."""
    if label not in _POSITION:
        raise ValueError(f"label must be {CLOSER!r} or {FARTHER!r}, not {label!r}")
    tags = parse_prompt(doc["question"])
    if tags is None:  # not one of the official questions: answer in words
        return label.capitalize()
    letter = correct_letter(tags, _POSITION[label])
    if tags.query == "yes-no":
        return tags.option_a if letter == "A" else tags.option_b
    return letter


@rule("o3d", "depth_oracle")
def depth_oracle(doc: Mapping[str, Any]) -> str:
    if doc.get("depth_min") is None or doc.get("depth_max") is None:
        label = doc["gt_label"] if doc["gt_label"] in _POSITION else FARTHER
        return answer(doc, label)  # real photo: no depth map, the oracle knows the answer
    return answer(doc, depth.predict_order(doc))


_MODELS: dict[tuple, depth.DepthModel] = {}
_MODELS_LOCK = threading.Lock()


def _as_bool(value: Any) -> bool | None:
    return None if value is None else flag(value, "larger_is_nearer")


def depth_model_for(pretrained: str, device: str = "cpu", larger_is_nearer: Any = None) -> depth.DepthModel:
    """The loaded checkpoint (one per path, device and convention in this process)."""
    key = (str(pretrained), str(device), _as_bool(larger_is_nearer))
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = depth.DepthModel(key[0], device=key[1], larger_is_nearer=key[2])
        return _MODELS[key]


@rule("o3d", "depth_model")
def depth_model(doc: Mapping[str, Any], pretrained: str | None = None, device: str = "cpu",
                larger_is_nearer: Any = None) -> str:
    if not pretrained:
        raise ValueError("spatial_baseline rule=depth_model needs pretrained=PATH (a transformers "
                         "depth-estimation checkpoint, e.g. a DepthAnythingV2 folder)")
    model = depth_model_for(pretrained, device, larger_is_nearer)
    return answer(doc, depth.predict_order(doc, model))


@rule("o3d", "always_near")
def always_near(doc: Mapping[str, Any]) -> str:
    return answer(doc, CLOSER)


@rule("o3d", "always_far")
def always_far(doc: Mapping[str, Any]) -> str:
    return answer(doc, FARTHER)

