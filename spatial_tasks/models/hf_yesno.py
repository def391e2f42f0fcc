"""``hf_yesno``: first-token Yes/No scoring for any transformers-native image-text model.

The generic path for families lmms-eval has no model class of ours for: the checkpoint is loaded
with ``AutoProcessor`` + ``AutoModelForImageTextToText`` and the family is read from its config
(``spatial_tasks.models.families``). The prompt is the processor's own chat template over one
user turn (images, then the question; ``<image>`` markers removed; optional ``system_prompt``)
with the generation prompt, so the last position predicts the first generated token. Scoring,
batching (left padding), the answer-token rule and the logged payload are ``HFYesNoMixin``'s, as
for ``qwen2_5_vl_yesno``; for the Qwen families each distinct image is encoded once
(``group_images``).

    lmms-eval --model hf_yesno --model_args pretrained=google/gemma-3-4b-it,device=cuda --tasks spatialtunnel_logit
    accelerate launch --num_processes 8 -m lmms_eval --model hf_yesno ...   # data parallel, one model per GPU
    lmms-eval --model hf_yesno --model_args pretrained=Qwen/Qwen3-VL-235B-A22B-Instruct,device_map=auto ...  # sharded

model_args: ``pretrained``; ``device`` (default cuda when there is one, else cpu); ``device_map``
(``auto`` shards one model over every visible GPU, with ``max_memory_gb`` per GPU if given);
``dtype`` (bfloat16 | float16 | float32; default bfloat16); ``batch_size`` (lmms-eval's);
``trust_remote_code``; ``attn_implementation``; ``system_prompt``; ``yes_text``/``no_text``/
``answer_rule`` (``spatial_tasks.models.answer_tokens``); ``group_images``/``group_window``;
``packed`` (true | false | auto, the default: ``spatial_tasks.models.packed`` -- each distinct image
prepared once per window for every family, and for the Qwen families one packed forward per window).
Under ``accelerate launch`` with several processes each process loads the model on its own
device (``accelerator.device``; CPU processes with ``--cpu``) and lmms-eval splits the requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import torch
from lmms_eval.api.model import lmms
from PIL import Image

from spatial_tasks.common.validate import flag
from spatial_tasks.models import families
from spatial_tasks.models.arguments import ModelArgsError, ScoringOptions, model_id
from spatial_tasks.models.packed import Prompt
from spatial_tasks.models.remote_code import adapter_for
from spatial_tasks.models.scoring_paths import (
    ONE_BY_ONE,
    PathUnavailable,
)
from spatial_tasks.models.yesno_scoring import HFYesNoMixin, ImageFeatureHooks


class HFYesNo(ImageFeatureHooks, HFYesNoMixin, lmms):
    """First-token Yes/No logits of any ``AutoModelForImageTextToText`` checkpoint (module docstring)."""

    def __init__(self, pretrained: str, device: str | None = None, device_map: str | None = None,
                 batch_size: int | str = 1, trust_remote_code: bool | str = False,
                 attn_implementation: str | None = None, system_prompt: str | None = None,
                 max_memory_gb: float | str | None = None, **others: Any) -> None:
        super().__init__()
        options = ScoringOptions.take(model_id(type(self)), others)
        if others:
            raise ModelArgsError(f"{model_id(type(self))}: unknown --model_args {sorted(others)}; it takes pretrained, device, "
                                 "device_map, dtype, batch_size, trust_remote_code, attn_implementation, system_prompt, "
                                 f"max_memory_gb, {', '.join(f.name for f in fields(ScoringOptions) if f.name != 'dtype')}")
        self.pretrained = pretrained
        self.trust_remote_code = flag(trust_remote_code, "trust_remote_code")
        self.family = families.read_model_type(pretrained, self.trust_remote_code)
        self.adapter = adapter_for(pretrained, self.family, self.trust_remote_code)  # Hub code off conventions
        if self.adapter is None and not self.trust_remote_code and not families.is_image_text(self.family):
            raise families.ModelFamilyError(
                f"hf_yesno: {pretrained} is a {self.family!r} checkpoint, not an image-text model: hf_yesno scores "
                "checkpoints that transformers' AutoModelForImageTextToText loads (tested: "
                f"{', '.join(f.title for f in families.FAMILIES.values())}), and Molmo or NVILA Hub code with "
                "trust_remote_code=true")
        self.batch_size_per_gpu = int(batch_size)
        if self.batch_size_per_gpu < 1:
            raise ModelArgsError(f"hf_yesno: batch_size must be >= 1 (got {batch_size})")
        self._place(device, device_map)
        self._load(options.dtype or "bfloat16", attn_implementation, max_memory_gb)
        self.system_prompt = system_prompt or None
        self._scoring_setup(options, cast=False)  # loaded in its dtype

    # --- loading and placement ----------------------------------------------------------------
    def _place(self, device: str | None, device_map: str | None) -> None:
        from accelerate import Accelerator

        from spatial_tasks.models.hidden_states import check_torch_device

        self.accelerator = Accelerator()
        if self.accelerator.num_processes > 1:  # accelerate launch: one whole model per process
            if device_map == "auto":
                raise ModelArgsError("hf_yesno: device_map=auto shards ONE model over the GPUs; under accelerate launch "
                                     "with several processes each process holds a whole model. Use one or the other.")
            self._device = self.accelerator.device
            self.device_map = str(self._device)
            self._rank, self._world_size = self.accelerator.process_index, self.accelerator.num_processes
            return
        if device_map == "auto":
            self._device, self.device_map = None, "auto"
            return
        chosen = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._device = check_torch_device(chosen)
        self.device_map = str(self._device) if device_map in (None, "", chosen) else device_map

    def _load(self, dtype: str, attn_implementation: str | None, max_memory_gb: float | str | None) -> None:
        max_memory = None
        if max_memory_gb is not None and self.device_map == "auto":
            per_gpu = f"{float(max_memory_gb)}GiB"
            max_memory = {i: per_gpu for i in range(torch.cuda.device_count())} | {"cpu": "512GiB"}
        if self.adapter is not None:
            self._model, self.processor = self.adapter.load(self.pretrained, getattr(torch, dtype), self.device_map)
        else:  # the family's entry loads it (families.Family.load)
            self._model, self.processor = families.family_of(self.family).load(
                self.pretrained, getattr(torch, dtype), self.device_map, self.trust_remote_code,
                attn_implementation=attn_implementation or None, max_memory=max_memory)
        self._tokenizer = getattr(self.processor, "tokenizer", self.processor)
        if self._device is None:
            self._device = self._input_device()

    def _input_device(self) -> torch.device:
        return (self.adapter or families).input_device(self._model)

    # --- the lmms interface lmms-eval reads -------------------------------------------------
    @property
    def model(self):
        return self._model

    @property
    def tokenizer(self):
        return self._tokenizer

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    @property
    def device(self):
        return self._device
    # rank and world_size: lmms' own properties over _rank and _world_size (set by _place)

    # --- prompts ------------------------------------------------------------------------------
    def _items(self, items: Sequence[tuple[str, list]]) -> list[tuple[str, list[Image.Image]]]:
        out = []
        for context, visuals in items:
            images = [v for v in visuals if isinstance(v, Image.Image)]
            if len(images) != len(visuals):
                kinds = sorted({type(v).__name__ for v in visuals if not isinstance(v, Image.Image)})
                raise ModelArgsError(f"hf_yesno scores images only; this request has visuals of type {kinds}")
            out.append((context.replace("<image>", "").strip(), images))
        return out

    def _inputs(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        inputs = families.chat_inputs(self.processor, self._items(items), self.system_prompt)
        return inputs.to(self._input_device())

    def yesno_prepare_inputs(self, context: str, visuals: list) -> Mapping[str, torch.Tensor]:
        if self.adapter is not None:
            (question, images), = self._items([(context, visuals)])
            return self.adapter.inputs(self.processor, question, images, self._input_device())
        return self._inputs([(context, visuals)])

    def yesno_prepare_batch(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        if len({len(visuals) == 0 for _, visuals in items}) > 1:
            raise PathUnavailable("a prompt without an image beside prompts with one (the processor pads them apart)")
        return self._inputs(items)

    def offered_paths(self) -> tuple[str, ...]:
        """The family's paths (``model_table``: every path hf_yesno implements generically, as the family
        allows them); a Hub-code adapter prepares one prompt at a time."""
        return (ONE_BY_ONE,) if self.adapter is not None else super().offered_paths()

    # --- the packed pipelines (spatial_tasks.models.packed) -----------------------------------------
    def packed_prompt(self, context: str, visuals: list) -> Prompt:
        (question, images), = self._items([(context, visuals)])
        messages = [families.chat_messages(question, images, self.system_prompt)]
        text = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)[0]
        return Prompt(text, images, question)

    def packed_load_image(self, image: Image.Image) -> np.ndarray:
        """The image as chat_inputs hands it to the processor (RGB), as uint8; the processor's own
        resize then runs on the device."""
        return np.array(image.convert("RGB"))

