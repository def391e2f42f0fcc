"""``<lmms-eval id>_yesno`` twins of lmms-eval's own transformers-native model classes.

Each twin extends the lmms-eval class (same loading, same model_args) with ``HFYesNoMixin``, so
the first-token Yes/No logits are read from exactly the inputs that class's ``generate_until``
hands to ``model.generate`` (tests/models/test_lmms_yesno.py checks this tensor for tensor).
Families without an lmms-eval class of their own (InternVL-hf, Molmo2, ...) use ``hf_yesno``.

    lmms-eval --model qwen3_vl_yesno --model_args pretrained=Qwen/Qwen3-VL-4B-Instruct --tasks spatialtunnel_logit
    lmms-eval --model gemma3_yesno   --model_args pretrained=google/gemma-3-4b-it ...
    lmms-eval --model llava_hf_yesno --model_args pretrained=llava-hf/llava-onevision-qwen2-7b-ov-hf ...

Extra model_args on top of the lmms-eval class's: ``arguments.ScoringOptions`` (the answer
words and rule, ``group_images``/``group_window``: Qwen3-VL encodes each distinct image once,
``dtype``). Each twin's entry in ``model_table`` lists the scoring paths whose hooks it implements.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from PIL import Image

from spatial_tasks.harness import lmms_eval_model_module
from spatial_tasks.models import families
from spatial_tasks.models.arguments import ScoringOptions, model_id
from spatial_tasks.models.families import ModelFamilyError
from spatial_tasks.models.scoring_paths import PathUnavailable
from spatial_tasks.models.yesno_scoring import HFYesNoMixin, ImageFeatureHooks

_qwen3_vl = lmms_eval_model_module("qwen3_vl")
_gemma3 = lmms_eval_model_module("gemma3")
_llava_hf = lmms_eval_model_module("llava_hf")


# --- Qwen3-VL and Qwen3-VL-MoE -----------------------------------------------------------------

_OWN_ITEMS = "__spatial_tasks_yesno_items__"  # task/split key of the requests handed to _preprocess_chunk


class Qwen3_VLYesNo(ImageFeatureHooks, HFYesNoMixin, _qwen3_vl.Qwen3_VL):
    """lmms-eval's ``qwen3_vl`` answering with first-token Yes/No logits.

    Inputs come from ``Qwen3_VL._preprocess_chunk`` itself, the function its generate_until
    tokenises every batch with (system prompt "You are a helpful assistant.", qwen_vl_utils
    resizing with 16-pixel patches, ``do_resize=False``, left padding when batch_size > 1).
    lmms-eval picks the MoE class from the checkpoint NAME (``A<n>B``, as in Qwen3-VL-235B-A22B);
    a qwen3_vl_moe checkpoint whose name lacks it is refused here instead of loading wrongly."""

    def __init__(self, pretrained: str = "Qwen/Qwen3-VL-4B-Instruct", **kwargs: Any) -> None:
        options = ScoringOptions.take(model_id(type(self)), kwargs)
        model_type = families.read_model_type(pretrained, trust_remote_code=False)
        if model_type == "qwen3_vl_moe" and not re.search(r"A\d+B", pretrained):
            raise ModelFamilyError(
                f"{pretrained}: config.json says qwen3_vl_moe, but lmms-eval's qwen3_vl loads the MoE class only "
                "when the name carries the active size (e.g. Qwen3-VL-235B-A22B). Rename the folder to include "
                "A<n>B, or use --model hf_yesno (it reads the family from config.json).")
        super().__init__(pretrained=pretrained, **kwargs)
        self._scoring_setup(options, pretrained=pretrained)

    def yesno_prepare_inputs(self, context: str, visuals: list) -> Mapping[str, torch.Tensor]:
        return self._chunk_inputs([(context, visuals)])

    def yesno_prepare_batch(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        return self._chunk_inputs(items)  # left-padded, as Qwen3_VL pads when its batch_size > 1

    def _chunk_inputs(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        """``_preprocess_chunk`` over these (context, visuals): it looks visuals up as
        ``doc_to_visual(task_dict[task][split][doc_id])``, so the items are lent to it as a task
        of their own for the duration of the call."""
        chunk = [(context, {"until": []}, _same, i, _OWN_ITEMS, _OWN_ITEMS) for i, (context, _) in enumerate(items)]
        saved = self.task_dict
        self.task_dict = {**saved, _OWN_ITEMS: {_OWN_ITEMS: [visuals for _, visuals in items]}}
        try:
            inputs, _contexts, _gen_kwargs, _until = self._preprocess_chunk(chunk)
        finally:
            self.task_dict = saved
        return inputs.to("cuda" if self.device_map == "auto" else self.device)


def _same(visuals: list) -> list:
    return visuals


class _BatchedInputs:
    """The prepare hooks of a twin whose ``_inputs(items)`` builds one padded batch of (context, visuals)."""

    def yesno_prepare_inputs(self, context: str, visuals: list) -> Mapping[str, torch.Tensor]:
        return self._inputs([(context, visuals)])

    def yesno_prepare_batch(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        if len({len(visuals) == 0 for _, visuals in items}) > 1:
            raise PathUnavailable("a prompt without an image beside prompts with one")
        return self._inputs(items)


# --- Gemma 3 -----------------------------------------------------------------------------------

class Gemma3YesNo(_BatchedInputs, HFYesNoMixin, _gemma3.Gemma3):
    """lmms-eval's ``gemma3`` answering with first-token Yes/No logits.

    The conversation is built as ``Gemma3.generate_until`` builds it: a system turn with
    ``system_prompt`` (default "You are a helpful assistant."), each image as a JPEG data URL
    (quality 85) before the text, or at its ``<image N>`` marker with ``interleave_visuals``;
    ``<image>`` removed; optional ``reasoning_prompt``; ``processor.apply_chat_template`` with the
    generation prompt, padded to a multiple of 8 on the LEFT (the Gemma 3 tokenizer's side, so the
    last position predicts the first generated token in every row); floating tensors cast to the
    model's dtype (lmms-eval casts to bfloat16, its load dtype). Images only: a video visual is an
    error (lmms-eval's gemma3 samples frames from it)."""

    def __init__(self, pretrained: str = "google/gemma-3-27b-it", **kwargs: Any) -> None:
        options = ScoringOptions.take(model_id(type(self)), kwargs)
        super().__init__(pretrained=pretrained, **kwargs)
        self._scoring_setup(options, pretrained=pretrained)

    def _messages(self, context: str, visuals: list) -> list[dict]:
        context = context.replace("<image>", "")
        if self.reasoning_prompt:
            context = context.strip() + self.reasoning_prompt
        groups = [[self._image_part(v)] for v in visuals]
        if self.interleave_visuals and re.findall(r"<image (\d+)>", context):
            numbers = re.findall(r"<image (\d+)>", context)
            texts = re.split(r"<image \d+>", context)
            content = [{"type": "text", "text": texts[0]}] if texts[0] else []
            for number, text in zip(numbers, texts[1:], strict=True):
                if 0 <= int(number) - 1 < len(groups):
                    content += groups[int(number) - 1]
                if text:
                    content.append({"type": "text", "text": text})
        else:
            if not self.interleave_visuals:
                context = re.sub(r"<image \d+>", "", context)
            content = [part for group in groups for part in group] + [{"type": "text", "text": context}]
        return [{"role": "system", "content": [{"type": "text", "text": self.system_prompt}]},
                {"role": "user", "content": content}]

    def _image_part(self, visual: Any) -> dict:
        if not isinstance(visual, Image.Image):
            raise TypeError(f"gemma3_yesno scores images; got a visual of type {type(visual).__name__} "
                            f"({str(visual)[:80]!r})")
        return {"type": "image", "image": self._encode_image_data_url(visual),
                "max_pixels": self.max_pixels, "min_pixels": self.min_pixels}

    def _inputs(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        inputs = self.processor.apply_chat_template(
            [self._messages(context, visuals) for context, visuals in items], add_generation_prompt=True,
            tokenize=True, return_dict=True, return_tensors="pt",
            processor_kwargs={"padding": True, "pad_to_multiple_of": 8, "padding_side": "left"})
        return inputs.to("cuda" if self.device_map == "auto" else self.device, dtype=self.model.dtype)



# --- LLaVA, LLaVA-NeXT, LLaVA-OneVision (llava-hf checkpoints) -----------------------------------

class LlavaHfYesNo(_BatchedInputs, HFYesNoMixin, _llava_hf.LlavaHf):
    """lmms-eval's ``llava_hf`` answering with first-token Yes/No logits.

    The prompt is built as ``LlavaHf.generate_until`` builds it: one ``<image>`` per image, joined
    by spaces, then a newline and the context (unless the context already holds ``<image>``), as
    ONE user message with string content through the tokenizer's chat template (``chat_template``
    model_arg, else the tokenizer's, else lmms-eval's Vicuna template for llava-1.5), then the
    processor over the images and that text, floating tensors in the model's dtype. lmms-eval's
    llava_hf generates one request at a time; batches here are left-padded (it sets the
    tokenizer's padding side to left for that). Images only."""

    def __init__(self, pretrained: str = "llava-hf/llava-1.5-7b-hf", **kwargs: Any) -> None:
        options = ScoringOptions.take(model_id(type(self)), kwargs)
        if options.dtype is not None:
            kwargs["dtype"] = options.dtype  # LlavaHf loads in this dtype itself
        if not kwargs.get("device_map"):
            # LlavaHf's default device_map "" (its data-parallel switch) is refused by transformers 5's
            # from_pretrained, so its single-process default cannot load; load onto ``device`` instead.
            from accelerate import Accelerator

            if Accelerator().num_processes > 1:
                raise ModelFamilyError("llava_hf_yesno: lmms-eval's llava_hf runs data parallel through device_map='', "
                                       "which transformers 5 refuses; under accelerate launch use --model hf_yesno")
            kwargs["device_map"] = kwargs.get("device", "cuda")
        super().__init__(pretrained=pretrained, **kwargs)
        self._scoring_setup(options, cast=False)

    def _text(self, context: str, images: list) -> str:
        if _llava_hf.DEFAULT_IMAGE_TOKEN not in context and images:
            context = " ".join([_llava_hf.DEFAULT_IMAGE_TOKEN] * len(images)) + "\n" + context
        if self.chat_template is not None:
            self.tokenizer.chat_template = self.chat_template
        elif self.tokenizer.chat_template is None:
            self.tokenizer.chat_template = _llava_hf.VICUNA_CHAT_TEMPLATE
        return self.tokenizer.apply_chat_template([{"role": "user", "content": context}], tokenize=False,
                                                  add_generation_prompt=True)

    def _inputs(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        for _, visuals in items:
            for visual in visuals:
                if not isinstance(visual, Image.Image):
                    raise TypeError(f"llava_hf_yesno scores images; got a visual of type {type(visual).__name__}")
        texts = [self._text(context, visuals) for context, visuals in items]
        kwargs: dict[str, Any] = {"text": texts if len(texts) > 1 else texts[0], "return_tensors": "pt"}
        if len(texts) > 1:
            kwargs["padding"] = True
        if any(visuals for _, visuals in items):
            images = [v for _, visuals in items for v in visuals]
            kwargs["images"] = images
        return self._image_processor(**kwargs).to(self._device, self.model.dtype)
