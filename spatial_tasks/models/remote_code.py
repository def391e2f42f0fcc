"""Checkpoints whose model code lives on the Hub and whose processor breaks transformers' conventions.

``hf_yesno`` and ``spatial-tasks probe`` load a transformers-native family with ``AutoProcessor``
+ ``AutoModelForImageTextToText`` and the processor's chat template. A checkpoint run with
``trust_remote_code`` whose code does not follow that (no chat template, its own preprocessing
call) gets a small adapter here, keyed by the ``model_type`` of its config.json. An adapter says
how to load it, how to turn one (question, images) prompt into model inputs, and where its
decoder layers are; scoring, the answer-token rule, the logged payload and probing stay shared.
Every adapter builds one prompt per forward (the Hub code pads nothing, or pads its own way).

``molmo`` (allenai Molmo-7B-O-0924, Molmo-7B-D-0924, MolmoE-1B-0924; the SpatialTunnel paper's
Molmo-7B-O row): ``AutoModelForCausalLM`` + ``AutoProcessor`` from the Hub code, inputs from
``processor.process(images=..., text=question)`` -- Molmo's own " User: {question} Assistant:"
format, crops and BOS, as its model card runs it -- with a batch axis added; decoder layers
``model.model.transformer.blocks``.

``vila`` (Efficient-Large-Model NVILA-Lite-2B and the other NVILA/VILA checkpoints converted to
VILA's "HF compatible" code, NVlabs/VILA ``llava/remote_code``): ``AutoModel`` from the Hub code.
VILA's ``AutoProcessor`` moves every tensor to CUDA itself, so the inputs are built the way
``VILAForCausalLM.generate_content([*images, question])`` builds them, with the functions of the
checkpoint's own ``modeling_vila`` module: ``extract_media`` (an ``<image>`` token per image, then
the question), the image branch of ``generate_content`` (``dynamic``: tiles and one ``<image>``
per tile; ``dynamic_s2``: tiles plus ``block_sizes``; otherwise ``process_images``) and
``tokenize_conversation(..., add_generation_prompt=True)`` (the tokenizer's chat template). The
forward takes ``input_ids``, ``media`` and ``media_config``; decoder layers ``model.llm.model.layers``.
VILA's loader casts the model to float16 (its ``post_config``) and ``generate_content`` casts the
pixels with ``.half()``: pass ``dtype=float16`` to score as the authors' code does (the adapter
casts the model and the pixels to the dtype asked for).
RoboRefer-2B is released for its own repository's ``llava`` package, not as Hub code: a RoboRefer
checkpoint runs here only once converted to VILA's Hub code (config model_type ``vila``).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image

from spatial_tasks.models.families import ModelFamilyError, input_device


@dataclass(frozen=True)
class RemoteCodeAdapter:
    """One Hub-code family: how to load it, prompt it and find its decoder layers."""

    model_type: str
    title: str
    checkpoints: str  # the Hub checkpoints it was written for

    def load(self, pretrained: str, dtype: torch.dtype, device_map: Any) -> tuple[torch.nn.Module, Any]:
        """(model in eval mode, the object ``inputs`` prompts with)."""
        raise NotImplementedError

    def inputs(self, processor: Any, question: str, images: Sequence[Image.Image],
               device: torch.device) -> Mapping[str, Any]:
        """Model inputs for one prompt, batch axis first, on ``device``."""
        raise NotImplementedError

    def decoder_layers(self, model: torch.nn.Module) -> Sequence[torch.nn.Module]:
        raise NotImplementedError

    def hidden_size(self, model: torch.nn.Module) -> int:
        config = model.config
        return int(getattr(config, "text_config", config).hidden_size)

    def input_device(self, model: torch.nn.Module) -> torch.device:
        """Where the inputs go (the input embeddings' device)."""
        return input_device(model)


class MolmoAdapter(RemoteCodeAdapter):
    def load(self, pretrained: str, dtype: torch.dtype, device_map: Any) -> tuple[torch.nn.Module, Any]:
        from transformers import AutoModelForCausalLM, AutoProcessor

        model = AutoModelForCausalLM.from_pretrained(pretrained, trust_remote_code=True, dtype=dtype,
                                                     device_map=device_map).eval()
        return model, AutoProcessor.from_pretrained(pretrained, trust_remote_code=True)

    def inputs(self, processor: Any, question: str, images: Sequence[Image.Image],
               device: torch.device) -> Mapping[str, Any]:
        out = processor.process(images=[image.convert("RGB") for image in images] or None, text=question)
        return {key: value.unsqueeze(0).to(device) for key, value in out.items() if isinstance(value, torch.Tensor)}

    def decoder_layers(self, model: torch.nn.Module) -> Sequence[torch.nn.Module]:
        blocks = getattr(getattr(getattr(model, "model", None), "transformer", None), "blocks", None)
        if isinstance(blocks, torch.nn.ModuleList) and len(blocks):
            return blocks
        raise ModelFamilyError(f"{type(model).__name__}: no model.model.transformer.blocks (Molmo's decoder layers)")


class VilaAdapter(RemoteCodeAdapter):
    # the names generate_content uses from the checkpoint's modeling_vila module
    CODE = ("extract_media", "process_image", "process_images", "tokenize_conversation", "DEFAULT_IMAGE_TOKEN")

    def load(self, pretrained: str, dtype: torch.dtype, device_map: Any) -> tuple[torch.nn.Module, Any]:
        from transformers import AutoModel

        model = AutoModel.from_pretrained(pretrained, trust_remote_code=True, device_map=device_map)
        if device_map != "auto":  # VILA's loader moves its vision tower to CUDA only for "auto"/"cuda"
            model.to(device_map)
        model.to(dtype).eval()
        self._code(model)  # a checkpoint without generate_content's helpers fails at load time
        return model, model  # VILA prompts through the model: its tokenizer, vision tower and config

    def _code(self, model: torch.nn.Module) -> Any:
        code = sys.modules.get(type(model).__module__)
        missing = [name for name in self.CODE if not hasattr(code, name)]
        if missing or not hasattr(model, "tokenizer"):
            raise ModelFamilyError(f"{type(model).__module__}: not VILA's Hub code (it lacks "
                                   f"{', '.join(missing) or 'model.tokenizer'}, which generate_content uses)")
        return code

    def inputs(self, processor: Any, question: str, images: Sequence[Image.Image],
               device: torch.device) -> Mapping[str, Any]:
        model = processor
        code = self._code(model)
        conversation = [{"from": "human", "value": [*(image.convert("RGB") for image in images), question]}]
        media = code.extract_media(conversation, model.config)  # puts the media tokens into the text
        media_config: dict[str, dict] = defaultdict(dict)
        if media.get("image"):
            dtype = next(model.parameters()).dtype
            pixels = self._image_tiles(code, model, media["image"], conversation, media_config)
            media["image"] = [tile.to(device, dtype) for tile in pixels]
        if media.get("video"):
            raise ModelFamilyError("the vila adapter scores images only")
        input_ids = code.tokenize_conversation(conversation, model.tokenizer, add_generation_prompt=True)
        return {"input_ids": input_ids.unsqueeze(0).to(device), "media": dict(media), "media_config": media_config}

    @staticmethod
    def _image_tiles(code: Any, model: torch.nn.Module, images: list, conversation: list[dict],
                     media_config: dict[str, dict]) -> torch.Tensor:
        """generate_content's image branch: the pixel tiles, and the text/config edits it makes."""
        config, processor = model.config, model.vision_tower.image_processor
        mode = getattr(config, "image_aspect_ratio", None)
        if len(images) != 1 or mode not in ("dynamic", "dynamic_s2"):
            return code.process_images(images, processor, config)
        config.image_processor = processor
        if mode == "dynamic":
            tiles = code.process_image(images[0], config, None, enable_dynamic_res=True)
            token = code.DEFAULT_IMAGE_TOKEN
            conversation[0]["value"] = conversation[0]["value"].replace(token, f"{token}\n" * tiles.shape[0])
            return tiles
        if isinstance(config.s2_scales, str):
            config.s2_scales = [int(scale) for scale in config.s2_scales.split(",")]
        tiles, block_sizes = code.process_image(images[0], config, None, enable_dynamic_s2=True)
        media_config["image"]["block_sizes"] = [block_sizes]
        return tiles

    def decoder_layers(self, model: torch.nn.Module) -> Sequence[torch.nn.Module]:
        layers = getattr(getattr(getattr(model, "llm", None), "model", None), "layers", None)
        if isinstance(layers, torch.nn.ModuleList) and len(layers):
            return layers
        raise ModelFamilyError(f"{type(model).__name__}: no model.llm.model.layers (VILA's decoder layers)")

    def hidden_size(self, model: torch.nn.Module) -> int:
        return int(model.llm.config.hidden_size)

    def input_device(self, model: torch.nn.Module) -> torch.device:
        return input_device(model.llm)  # the wrapper itself names no input embeddings


ADAPTERS: dict[str, RemoteCodeAdapter] = {
    "molmo": MolmoAdapter("molmo", "Molmo (Hub code)", "allenai/Molmo-7B-O-0924, Molmo-7B-D-0924, MolmoE-1B-0924"),
    "vila": VilaAdapter("vila", "NVILA / VILA (Hub code)", "Efficient-Large-Model/NVILA-Lite-2B and other NVILA checkpoints"),
}


def adapter_for(pretrained: str, model_type: str, trust_remote_code: bool) -> RemoteCodeAdapter | None:
    """The adapter for this checkpoint's family, if it needs one; an error if it needs one but
    ``trust_remote_code`` was not given (its code would not load otherwise)."""
    adapter = ADAPTERS.get(model_type)
    if adapter is not None and not trust_remote_code:
        raise ModelFamilyError(f"{pretrained}: model_type {model_type!r} ({adapter.title}) runs code from its "
                               "checkpoint; pass trust_remote_code=true (hf_yesno) or --trust-remote-code (probe)")
    return adapter
