"""Checkpoints whose model code lives on the Hub and whose processor breaks transformers' conventions.

``hf_yesno`` and ``spatial-tasks probe`` load a transformers-native family with ``AutoProcessor``
+ ``AutoModelForImageTextToText`` and the processor's chat template. A checkpoint run with
``trust_remote_code`` whose code does not follow that (no chat template, its own preprocessing
call) gets a small adapter here, keyed by the ``model_type`` of its config.json. An adapter says
how to load it, how to turn one (question, images) prompt into model inputs, and where its
decoder layers are; scoring, the answer-token rule, the logged payload and probing stay shared.

``molmo`` (allenai Molmo-7B-O-0924, Molmo-7B-D-0924, MolmoE-1B-0924; the SpatialTunnel paper's
Molmo-7B-O row): ``AutoModelForCausalLM`` + ``AutoProcessor`` from the Hub code, inputs from
``processor.process(images=..., text=question)`` -- Molmo's own " User: {question} Assistant:"
format, crops and BOS, as its model card runs it -- with a batch axis added; one prompt per forward
(``process`` builds one example and pads nothing); decoder layers ``model.model.transformer.blocks``.

Not covered: NVILA-Lite-2B / RoboRefer-2B (VILA's Hub code, which builds prompts and media through
its own ``generate_content`` API). No adapter is written for them: their code could not be read or
run here (no Hub access).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image

from spatial_tasks.models.families import ModelFamilyError


@dataclass(frozen=True)
class RemoteCodeAdapter:
    model_type: str
    title: str
    checkpoints: str  # the Hub checkpoints it was written for

    def load(self, pretrained: str, dtype: torch.dtype, device_map: Any) -> tuple[torch.nn.Module, Any]:
        """(model in eval mode, processor)."""
        from transformers import AutoModelForCausalLM, AutoProcessor

        model = AutoModelForCausalLM.from_pretrained(pretrained, trust_remote_code=True, dtype=dtype,
                                                     device_map=device_map).eval()
        return model, AutoProcessor.from_pretrained(pretrained, trust_remote_code=True)

    def inputs(self, processor: Any, question: str, images: Sequence[Image.Image],
               device: torch.device) -> Mapping[str, torch.Tensor]:
        """Model inputs for one prompt, batch axis first, on ``device``."""
        out = processor.process(images=[image.convert("RGB") for image in images] or None, text=question)
        return {key: value.unsqueeze(0).to(device) for key, value in out.items() if isinstance(value, torch.Tensor)}

    def decoder_layers(self, model: torch.nn.Module) -> Sequence[torch.nn.Module]:
        blocks = getattr(getattr(getattr(model, "model", None), "transformer", None), "blocks", None)
        if isinstance(blocks, torch.nn.ModuleList) and len(blocks):
            return blocks
        raise ModelFamilyError(f"{type(model).__name__}: no model.model.transformer.blocks (Molmo's decoder layers)")


ADAPTERS: dict[str, RemoteCodeAdapter] = {
    "molmo": RemoteCodeAdapter("molmo", "Molmo (Hub code)", "allenai/Molmo-7B-O-0924, Molmo-7B-D-0924, MolmoE-1B-0924"),
}


def adapter_for(pretrained: str, model_type: str, trust_remote_code: bool) -> RemoteCodeAdapter | None:
    """The adapter for this checkpoint's family, if it needs one; an error if it needs one but
    ``trust_remote_code`` was not given (its code would not load otherwise)."""
    adapter = ADAPTERS.get(model_type)
    if adapter is not None and not trust_remote_code:
        raise ModelFamilyError(f"{pretrained}: model_type {model_type!r} ({adapter.title}) runs code from its "
                               "checkpoint; pass trust_remote_code=true (hf_yesno) or --trust-remote-code (probe)")
    return adapter
