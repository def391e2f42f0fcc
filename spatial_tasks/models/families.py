"""The model families we score and probe, and what is shared between scoring and probing.

A family is a transformers ``model_type`` (what a checkpoint's config.json says). Every family
here is transformers-native: ``AutoProcessor`` + ``AutoModelForImageTextToText`` load it, and its
processor's chat template builds the prompt. Two things differ per family and live here:

* ``paths``: the scoring paths the model allows (``scoring_paths``), e.g. whether the forward
  accepts precomputed image features, so that each distinct image goes through the vision tower
  once (``mm_encoder_outputs``; Qwen2.5-VL and Qwen3-VL);
* the decoder layers whose outputs probing reads (``decoder_layers``: the language model's
  ``layers``, found the same way for every family).

The prompt of ``hf_yesno`` and of probing is one user turn with the images before the question
(``chat_messages``), an optional system turn (none by default: the chat template adds its own
default where the family has one), and the generation prompt; batches are LEFT-padded so the
last position of every row is its last prompt token.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from spatial_tasks.common.errors import UserError
from spatial_tasks.models.scoring_terms import (
    GROUPED,
    ONE_BY_ONE,
    PACKED,
    PADDED,
    PREPARED_ONCE,
    SHARED_PREFIX,
)


class ModelFamilyError(UserError, ValueError):
    """A checkpoint whose family we cannot read or do not support."""


BASIC_PATHS = (PADDED, ONE_BY_ONE)  # what every model allows


@dataclass(frozen=True)
class Family:
    """One family, one entry: what it is, lmms-eval's model for it, and the scoring paths the model
    allows, fastest first (``scoring_paths``): ``packed`` where the forward takes precomputed image
    features and M-RoPE positions computed ahead (the Qwen families), ``prepared_once`` for the
    others; ``grouped`` where the forward takes precomputed image features; ``shared_prefix``
    where the prompt up to the image can run once on a KV cache; ``padded`` and ``one_by_one``
    for every family. A new family that packs is one entry here (and its tiny builder in
    ``tiny_models.TINY_FAMILIES``, which the equality tests run over)."""

    model_type: str
    title: str
    lmms_eval_model: str | None  # lmms-eval's own generation model for it (its ``<id>_yesno`` twin), if any
    paths: tuple[str, ...] = BASIC_PATHS

    @property
    def grouping(self) -> bool:
        """Whether each distinct image can go through the vision tower once per window of questions."""
        return GROUPED in self.paths


_QWEN = (PACKED, GROUPED, PADDED, ONE_BY_ONE)
_PREPARED = (PREPARED_ONCE, PADDED, ONE_BY_ONE)
FAMILIES: dict[str, Family] = {f.model_type: f for f in (
    Family("qwen2_5_vl", "Qwen2.5-VL", "qwen2_5_vl", (PACKED, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)),
    Family("qwen3_vl", "Qwen3-VL", "qwen3_vl", _QWEN),
    Family("qwen3_vl_moe", "Qwen3-VL-MoE", "qwen3_vl", _QWEN),
    Family("llava_onevision", "LLaVA-OneVision", "llava_hf", _PREPARED),
    Family("internvl", "InternVL (-hf)", None, _PREPARED),
    Family("gemma3", "Gemma 3", "gemma3", _PREPARED),
    # Molmo2's image_token_pooling indexes its patches another way than PreparedOnce assembles rows
    Family("molmo2", "Molmo2", None),
)}


def paths_of(model_type: str) -> tuple[str, ...]:
    """The scoring paths a family allows (a family not listed: padded batches and one by one)."""
    family = FAMILIES.get(model_type)
    return family.paths if family is not None else BASIC_PATHS


def is_image_text(model_type: str) -> bool:
    """Whether transformers' ``AutoModelForImageTextToText`` loads this family (what ``hf_yesno`` needs)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


def read_model_type(pretrained: str, trust_remote_code: bool = False) -> str:
    """The ``model_type`` of a checkpoint: config.json of a local folder, else the Hub's (cache)."""
    path = Path(pretrained).expanduser()
    if not path.exists() and (pretrained.startswith(("/", ".", "~")) or pretrained.count("/") != 1):
        raise ModelFamilyError(f"{pretrained}: no such folder (and not a Hub model id OWNER/NAME)")
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise ModelFamilyError(f"{path}: no config.json (not a Hugging Face model folder)")
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise ModelFamilyError(f"{config}: not valid JSON ({error})") from None
        model_type = data.get("model_type") if isinstance(data, dict) else None
        if not isinstance(model_type, str) or not model_type:
            raise ModelFamilyError(f"{config}: no 'model_type' field")
        return model_type
    from transformers import AutoConfig

    return str(AutoConfig.from_pretrained(pretrained, trust_remote_code=trust_remote_code).model_type)


def chat_messages(question: str, images: Sequence[Image.Image], system_prompt: str | None = None) -> list[dict]:
    """One conversation: optional system turn, one user turn with the images, then the question."""
    content = [{"type": "image"} for _ in images] + [{"type": "text", "text": question}]
    messages = [{"role": "user", "content": content}]
    if system_prompt:
        messages.insert(0, {"role": "system", "content": [{"type": "text", "text": system_prompt}]})
    return messages


def chat_inputs(processor: Any, items: Sequence[tuple[str, Sequence[Image.Image]]], system_prompt: str | None = None,
                padding_side: str = "left") -> Mapping[str, torch.Tensor]:
    """The processor's tensors for (question, images) prompts with the generation prompt, padded on
    ``padding_side``; images as one list per prompt (rows without images are text-only)."""
    texts = processor.apply_chat_template([chat_messages(q, imgs, system_prompt) for q, imgs in items],
                                          tokenize=False, add_generation_prompt=True)
    images = [[image.convert("RGB") for image in imgs] for _, imgs in items]
    kwargs: dict[str, Any] = {"text": texts, "padding": True, "padding_side": padding_side, "return_tensors": "pt"}
    if any(images):
        if not all(images):
            raise ValueError("a batch mixes prompts with and without images; score them apart")
        kwargs["images"] = images
    return processor(**kwargs)


def decoder_layers(model: torch.nn.Module) -> Sequence[torch.nn.Module]:
    """The language model's decoder layers (``layers`` of the decoder transformers names)."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(decoder, "layers", None)
    if isinstance(layers, torch.nn.ModuleList) and len(layers):
        return layers
    raise ModelFamilyError(f"{type(model).__name__}: cannot find the language model's decoder layers "
                           "(model.get_decoder().layers)")


def input_device(model: torch.nn.Module) -> torch.device:
    """Where inputs go: the device of the input embeddings (the first shard under device_map=auto)."""
    return model.get_input_embeddings().weight.device


# --- precomputed image features (Qwen2.5-VL, Qwen3-VL, Qwen3-VL-MoE) ------------------------------

def qwen_image_parts(inputs: Mapping[str, torch.Tensor]) -> list[dict[str, torch.Tensor]] | None:
    """Each image's rows of ``pixel_values`` (its grid's t*h*w patches) and its grid row."""
    if "pixel_values_videos" in inputs:
        return None
    grids = inputs.get("image_grid_thw")
    if grids is None:
        return []
    pixels = torch.split(inputs["pixel_values"], grids.prod(-1).tolist())
    return [{"pixel_values": p, "image_grid_thw": g.unsqueeze(0)} for p, g in zip(pixels, grids, strict=True)]


def qwen_encode_images(model: torch.nn.Module, parts: Sequence[dict[str, torch.Tensor]]) -> list[tuple]:
    """The vision tower once over several images: per image (features, deepstack features or None)."""
    with torch.inference_mode():
        out = model.model.get_image_features(torch.cat([p["pixel_values"] for p in parts]),
                                             torch.cat([p["image_grid_thw"] for p in parts]), return_dict=True)
    deep = getattr(out, "deepstack_features", None)  # Qwen3-VL: per layer, one tensor per image
    return [(features, None if deep is None else tuple(layer[i] for layer in deep))
            for i, features in enumerate(out.pooler_output)]


def qwen_encoder_outputs(features: Sequence[tuple]) -> dict[str, Any]:
    """``mm_encoder_outputs`` for a forward with these images' precomputed features, in order."""
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    pooled = tuple(f for f, _ in features)
    if features and features[0][1] is not None:
        from transformers.models.qwen3_vl.modeling_qwen3_vl import BaseModelOutputWithDeepstackFeatures

        layers = len(features[0][1])
        deep = [tuple(d[k] for _, d in features) for k in range(layers)]
        return {"image": BaseModelOutputWithDeepstackFeatures(pooler_output=pooled, deepstack_features=deep)}
    return {"image": BaseModelOutputWithPooling(pooler_output=pooled)}
