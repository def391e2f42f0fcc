"""The model families we score and probe: one entry each, everything that differs between them.

A family is a transformers ``model_type`` (what a checkpoint's config.json says); which exist, their
names and scoring paths are a table that imports no torch (``family_table``). Every family here is
transformers-native: ``AutoProcessor`` + ``AutoModelForImageTextToText`` load it
(``Family.load``, for ``hf_yesno``, probing and the local logprob server), and its processor's
chat template builds the prompt (``chat_inputs``). What differs per family is its entry in
``FAMILIES``:

* ``paths``: the scoring paths the model allows, fastest first (``scoring_paths``);
* ``image_features``: whether and how its forward takes precomputed image features, so that each
  distinct image goes through the vision tower once (``mm_encoder_outputs``; the Qwen families):
  what the ``grouped``, ``shared_prefix`` and ``packed`` paths need;
* ``probe_prompt``: how probing builds its inputs (the hidden-state access: the decoder layers are
  found the same way for every family, ``decoder_layers``);
* ``tiny``: the builder of its tiny random checkpoint (``tiny_models``), which the tests, the demo
  and the equality checks run.

Checkpoints whose code lives on the Hub go through ``remote_code`` adapters instead. The prompt of
``hf_yesno`` and of probing is one user turn with the images before the question
(``chat_messages``), an optional system turn (none by default: the chat template adds its own
default where the family has one), and the generation prompt; batches are LEFT-padded so the
last position of every row is its last prompt token.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from spatial_tasks.common.errors import UserError
from spatial_tasks.models import tiny_models
from spatial_tasks.models.family_table import BASIC_PATHS, FAMILY_TABLE, GROUPED, PACKED, SHARED_PREFIX
from spatial_tasks.paths import output_folder


class ModelFamilyError(UserError, ValueError):
    """A checkpoint whose family we cannot read, build or do not support."""


NEED_IMAGE_FEATURES = (PACKED, SHARED_PREFIX, GROUPED)  # paths that hand the forward precomputed features


@dataclass(frozen=True)
class ImageFeatures:
    """How a family's forward takes precomputed image features: ``parts`` cuts the processor's
    tensors into one part per image (None: a video, which it cannot cut), ``encode`` runs the
    vision tower once over parts (per image: its features and any extra per-layer features), and
    ``encoder_outputs`` hands features back to the forward (its ``mm_encoder_outputs``)."""

    parts: Callable[[Mapping[str, torch.Tensor]], list[dict[str, torch.Tensor]] | None]
    encode: Callable[[torch.nn.Module, Sequence[dict[str, torch.Tensor]]], list[tuple]]
    encoder_outputs: Callable[[Sequence[tuple]], dict[str, Any]]


TinyBuilder = Callable[[Path, int, dict], None]  # (out_dir, seed, shape) -> writes the checkpoint


@dataclass(frozen=True)
class Family:
    """One family, one entry (module docstring): what it is (its row of ``family_table``), its tiny
    builder, the scoring paths the model allows, fastest first
    (``packed`` where the forward takes precomputed image features and M-RoPE positions computed
    ahead, ``prepared_once`` for the others; ``grouped`` and ``shared_prefix`` where it takes
    precomputed features; ``padded`` and ``one_by_one`` for every family), its image features and
    probing's prompt. A new family is one row of the table and one entry in ``FAMILIES``."""

    model_type: str
    title: str
    tiny: TinyBuilder | None
    paths: tuple[str, ...] = BASIC_PATHS
    image_features: ImageFeatures | None = None
    probe_prompt: Callable[[Any, Sequence[tuple[str, Image.Image]]], Mapping[str, torch.Tensor]] | None = None

    def __post_init__(self) -> None:
        needing = [p for p in self.paths if p in NEED_IMAGE_FEATURES]
        if needing and self.image_features is None:
            raise ValueError(f"family {self.model_type}: the {', '.join(needing)} path(s) need image_features")
        if not set(BASIC_PATHS) <= set(self.paths):
            raise ValueError(f"family {self.model_type}: every family allows {' and '.join(BASIC_PATHS)}")

    @property
    def grouping(self) -> bool:
        """Whether each distinct image can go through the vision tower once per window of questions."""
        return GROUPED in self.paths

    def load(self, pretrained: str, dtype: torch.dtype, device_map: Any = None, trust_remote_code: bool = False,
             **kwargs: Any) -> tuple[torch.nn.Module, Any]:
        """(model in eval mode, processor) of a checkpoint of this family; ``device_map`` and the other
        ``from_pretrained`` arguments (``attn_implementation``, ``max_memory``) passed on when set."""
        from transformers import AutoModelForImageTextToText, AutoProcessor

        options = {k: v for k, v in {"device_map": device_map, **kwargs}.items() if v is not None}
        model = AutoModelForImageTextToText.from_pretrained(pretrained, dtype=dtype,
                                                            trust_remote_code=trust_remote_code, **options)
        return model.eval(), AutoProcessor.from_pretrained(pretrained, trust_remote_code=trust_remote_code)

    def probe_inputs(self, processor: Any, items: Sequence[tuple[str, Image.Image]]) -> Mapping[str, torch.Tensor]:
        """Probing's left-padded inputs for (question, image) prompts, with the generation prompt:
        ``probe_prompt`` where the family has its own, else the chat template (``chat_inputs``)."""
        if self.probe_prompt is not None:
            return self.probe_prompt(processor, items)
        return chat_inputs(processor, [(question, [image]) for question, image in items])

    def build_tiny(self, out_dir: Path, seed: int = 0, shape: str = "tiny") -> Path:
        """Write a random checkpoint of this family at ``shape`` (``tiny_models.SHAPES``) to ``out_dir``."""
        if self.tiny is None:
            raise ModelFamilyError(f"family {self.model_type}: no tiny builder")
        if shape not in tiny_models.SHAPES:
            raise ModelFamilyError(f"shape {shape!r}: choose one of {', '.join(tiny_models.SHAPES)}")
        out_dir = output_folder(Path(out_dir))
        self.tiny(out_dir, seed, {**tiny_models.SHAPES[shape], "name": shape})
        return out_dir


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


def qwen_vl_utils_inputs(processor: Any, items: Sequence[tuple[str, Image.Image]]) -> Mapping[str, torch.Tensor]:
    """Qwen2.5-VL's probing prompt as the authors' probing code builds it: one user turn with the
    image (through ``qwen_vl_utils``' resizing) before the question, the chat template's default
    system turn, the generation prompt, left padding."""
    from qwen_vl_utils import process_vision_info

    messages = [[{"role": "user", "content": [{"type": "image", "image": image.convert("RGB")},
                                              {"type": "text", "text": question}]}]
                for question, image in items]
    texts = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    image_inputs, _ = process_vision_info(messages)
    return processor(text=texts, images=image_inputs, padding=True, padding_side="left", return_tensors="pt")


# --- the families ---------------------------------------------------------------------------------

QWEN_FEATURES = ImageFeatures(qwen_image_parts, qwen_encode_images, qwen_encoder_outputs)


def _family(model_type: str, tiny: TinyBuilder | None, image_features: ImageFeatures | None = None,
            probe_prompt=None) -> Family:
    """A family's entry: its row of the table (``family_table``) and the code that runs it."""
    row = FAMILY_TABLE[model_type]
    return Family(model_type, row.title, tiny, row.paths, image_features, probe_prompt)


FAMILIES: dict[str, Family] = {f.model_type: f for f in (
    _family("qwen2_5_vl", tiny_models.build_qwen2_5_vl, QWEN_FEATURES, probe_prompt=qwen_vl_utils_inputs),
    _family("qwen3_vl", tiny_models.build_qwen3_vl, QWEN_FEATURES),
    _family("qwen3_vl_moe", tiny_models.build_qwen3_vl_moe, QWEN_FEATURES),
    _family("llava_onevision", tiny_models.build_llava_onevision),
    _family("internvl", tiny_models.build_internvl),
    _family("gemma3", tiny_models.build_gemma3),
    _family("molmo2", tiny_models.build_molmo2),
)}


def family_of(model_type: str) -> Family:
    """The entry of a family; one not listed gets the generic one (padded batches and one by one,
    the chat template's prompt, no tiny builder)."""
    return FAMILIES.get(model_type) or Family(model_type, model_type, None)


def build_tiny_model(family: str, out_dir: Path, seed: int = 0, shape: str = "tiny") -> Path:
    """Write a random checkpoint of ``family`` (a key of FAMILIES) at ``shape`` (a key of
    ``tiny_models.SHAPES``) to ``out_dir`` (``Family.build_tiny``)."""
    if family not in FAMILIES:
        raise ModelFamilyError(f"--family {family!r}: choose one of {', '.join(FAMILIES)}")
    return FAMILIES[family].build_tiny(out_dir, seed, shape)
