"""First-token Yes/No logit scoring for Hugging Face VLMs, as lmms-eval models.

SpatialTunnel's main protocol (specs/spatialtunnel.md) scores a yes/no question by
p = sigma(l_Yes - l_No), where l are the logits of the model's FIRST generated token. lmms-eval
0.7.3 can only score generated text, so a ``<family>_yesno`` model runs one forward pass on
exactly the prompt the family's lmms-eval model would build, reads the logits at the last
position (the distribution of the first generated token) and returns them serialised with
``spatial_tasks.common.yesno.encode_payload`` as its "response". Task code reads it back with
``decode_payload``/``parse_yes_no``.

Adding a family: subclass ``HFYesNoMixin`` together with the family's lmms-eval model class
(mixin first, so its ``generate_until``/``loglikelihood`` win) and implement
``_yesno_prepare_inputs(context, visuals)`` so it builds the model inputs exactly as the
family's ``generate_until`` does (system prompt, image entries, chat template with the
generation prompt). For speed, ``_yesno_prepare_batch`` (left-padded batches) and the grouping
hooks ``_yesno_image_parts`` / ``_yesno_encode_images`` / ``_yesno_forward_with_features`` (each
distinct image through the vision tower once, ``score_grouped``; ``QwenImageFeatures`` has them
for the Qwen families); without them requests are scored one by one, with the same results. The
packed pipeline (``spatial_tasks.models.packed``, ``packed=auto`` by default) needs two more hooks,
``_packed_prompt`` and ``_packed_load_image`` (``score_packed``).
Register it in ``spatial_tasks/harness/__init__.py`` (``MODELS["<id>_yesno"] = "<module>.<Class>"``). This
module holds ``qwen2_5_vl_yesno``; ``lmms_yesno`` the other twins; ``hf_auto`` the generic ``hf_yesno``.

    lmms-eval --model qwen2_5_vl_yesno --batch_size 8 --model_args pretrained=Qwen/Qwen2.5-VL-3B-Instruct ...
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from lmms_eval.api.instance import Instance
from loguru import logger as eval_logger
from PIL import Image
from tqdm import tqdm

from spatial_tasks.common.validate import flag
from spatial_tasks.common.yesno import YesNoLogits, encode_payload, label_mass, warn_on_label_mass
from spatial_tasks.harness import lmms_eval_qwen2_5_vl
from spatial_tasks.models import families as families
from spatial_tasks.models.answer_tokens import (  # noqa: F401  (re-exported: the rule's public names)
    AnswerTokens,
    YesNoTokenError,
    answer_tokens,
    single_token_id,
    yes_no_token_ids,
)
from spatial_tasks.models.lmms_requests import as_list, image_key, refuse_text_tasks, request_item
from spatial_tasks.models.packed import PREPARE, Prompt, Stages, packed_choice, stage

Qwen2_5_VL, process_vision_info = lmms_eval_qwen2_5_vl()  # the seam with lmms-eval's internals

_VIDEO_SUFFIXES = (".mp4", ".avi", ".mov")
GROUP_WINDOW = 256  # requests whose visuals are loaded and ordered by image at a time (group_images)


class HFYesNoMixin:
    """The family-agnostic part of a ``<family>_yesno`` lmms-eval model.

    The host class (an lmms-eval ``lmms`` subclass) provides ``model`` (a transformers causal
    VLM), ``tokenizer``, ``rank``, ``task_dict`` and ``cache_hook``; the family provides
    ``_yesno_prepare_inputs``. Set ``yes_text``/``no_text`` (instance or class attributes) to
    the answer words as the model's first generated token spells them.
    """

    yes_text: str = "Yes"
    no_text: str = "No"
    answer_rule: str = "exact"  # spatial_tasks.models.answer_tokens: "exact" (the paper's) or "variants"

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """How lmms-eval builds the model: every argument checked before it loads, one line and exit 2
        for a bad one (``models.arguments.create_checked``)."""
        from spatial_tasks.models.arguments import create_checked

        return create_checked(cls, arg_string, additional_config)

    def _yesno_options(self, yes_text: str = "Yes", no_text: str = "No", answer_rule: str = "exact",
                       group_images: bool | str = True, group_window: int | str = GROUP_WINDOW,
                       share_prefix: bool | str = False, dtype: str | None = None,
                       packed: bool | str = "auto") -> None:
        """The model_args every ``<family>_yesno`` adds to its lmms-eval class's (call after that
        class's __init__): answer words and rule, grouping, ``packed`` (true, false or auto: the
        measured choice for the device and dtype, ``packed_by_default``), and ``dtype`` (bfloat16 |
        float16 | float32), which casts the model after lmms-eval's own load (float32 for exact
        comparisons)."""
        self.yes_text, self.no_text, self.answer_rule = str(yes_text), str(no_text), str(answer_rule)
        self.group_images = flag(group_images, "group_images")
        self.share_prefix = flag(share_prefix, "share_prefix")
        self.group_window = int(group_window)
        if self.group_window < 1:
            raise ValueError(f"group_window must be >= 1, got {group_window!r}")
        if dtype is not None:
            if dtype not in ("bfloat16", "float16", "float32"):
                raise ValueError(f"dtype must be bfloat16, float16 or float32, not {dtype!r}")
            self.model.to(getattr(torch, dtype))
        self.packed = packed_choice(packed, self.model, self.group_images)
        self.answer_tokens()  # a tokenizer without single-token answers fails at load time

    # --- family hook -------------------------------------------------------------------
    def _yesno_prepare_inputs(self, context: str, visuals: list) -> Mapping[str, torch.Tensor]:
        """Model inputs (batch of one, unpadded, on the model's device) for one request, built
        exactly as the family's lmms-eval ``generate_until`` builds them, generation prompt
        included, so the last position predicts the first generated token."""
        raise NotImplementedError(f"{type(self).__name__} must implement _yesno_prepare_inputs")

    # --- family-agnostic part ------------------------------------------------------------
    def answer_tokens(self) -> AnswerTokens:
        """The Yes/No token ids under ``answer_rule``; a YesNoTokenError if a word is not a single token."""
        key = (self.yes_text, self.no_text, self.answer_rule)
        cached = getattr(self, "_answer_tokens_cache", None)
        if cached is None or cached[0] != key:
            cached = (key, answer_tokens(self.tokenizer, *key))
            self._answer_tokens_cache = cached
        return cached[1]

    def yes_no_ids(self) -> tuple[int, int]:
        """(id of yes_text, id of no_text): the given spellings' single tokens."""
        tokens = self.answer_tokens()
        return tokens.yes_ids[0], tokens.no_ids[0]

    def _yesno_prepare_batch(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor] | None:
        """Model inputs for several requests at once, LEFT-padded (so every row's last position
        predicts its first generated token), or None when the family cannot batch these items
        (they are then scored one by one). Default: no batching."""
        return None

    def _yesno_image_order(self, context: str, visuals: list) -> list:
        """The visuals in the order the prompt shows them (each occurrence once). Default: as given."""
        return visuals

    def _yesno_image_parts(self, inputs: Mapping[str, torch.Tensor]) -> list[dict[str, torch.Tensor]] | None:
        """The vision-encoder inputs of each image of a prepared batch, in the order the model
        consumes them (``_yesno_forward_with_features`` gets one feature object per part, same
        order), or None when the family cannot reuse image features (then nothing is grouped)."""
        return None

    def _yesno_encode_images(self, parts: Sequence[dict[str, torch.Tensor]]) -> list:
        """Run the vision encoder once over several images' parts; one feature object per part
        (whatever ``_yesno_forward_with_features`` takes back; the mixin only caches them)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _yesno_encode_images to group by image")

    def _yesno_forward_with_features(self, inputs: Mapping[str, torch.Tensor], features: Sequence) -> torch.Tensor:
        """(batch, vocabulary) float32 last-position logits of ``inputs`` with the given image
        features in place of the vision encoder's output."""
        raise NotImplementedError(f"{type(self).__name__} must implement _yesno_forward_with_features")

    def _packed_prompt(self, context: str, visuals: list) -> Prompt:
        """The packed pipeline's hook (``spatial_tasks.models.packed``): the chat text of one request
        with one unexpanded placeholder per image, its images in the order the prompt shows them, and
        the question as the text holds it. Families that do not define it are not packed."""
        raise NotImplementedError

    def _packed_load_image(self, image: Image.Image) -> np.ndarray:
        """The packed pipeline's hook: one image as the uint8 HxWx3 array the per-question path hands
        the processor (the same decode and resize), run in the image pool's worker threads."""
        raise NotImplementedError

    def _yesno_forward_shared_prefix(self, inputs: Mapping[str, torch.Tensor], features: Sequence[torch.Tensor],
                                     row_keys: Sequence[Sequence[str]]) -> torch.Tensor | None:
        """Like ``_yesno_forward_with_features``, but the rows on one image run the prompt up to
        and including the image once and only their own question suffixes in a batch (KV-cache
        reuse); None when the family or these rows do not allow it (then the plain path runs)."""
        return None

    def first_token_logits(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Logits (1-D, float32, over the vocabulary) of the first token the model would generate."""
        input_ids = inputs.get("input_ids")
        if input_ids is not None and input_ids.shape[0] != 1:
            raise ValueError(f"first_token_logits expects a batch of one, got {input_ids.shape[0]} sequences")
        return self.first_token_logits_batch(inputs)[0]

    def first_token_logits_batch(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """(batch, vocabulary) float32 logits at the last position of left-padded inputs."""
        kwargs: dict[str, Any] = {"use_cache": False}
        if "logits_to_keep" in inspect.signature(self.model.forward).parameters:
            kwargs["logits_to_keep"] = 1  # only the last position is needed
        with torch.inference_mode():
            outputs = self.model(**inputs, **kwargs)
        return outputs.logits[:, -1].float().cpu()

    def _to_yes_no_rows(self, logits: torch.Tensor) -> list[YesNoLogits]:
        with stage(self, "results (host)"):
            return [self._to_yes_no(row) for row in logits]

    def _to_yes_no(self, logits: torch.Tensor) -> YesNoLogits:
        """l_Yes, l_No, the argmax token and the label mass (from the full softmax) of one logit row."""
        logit_yes, logit_no = self.answer_tokens().logits(logits)
        top = int(torch.argmax(logits))
        text = self.tokenizer.decode([top], skip_special_tokens=False)
        normaliser = float(torch.logsumexp(logits.float(), 0))
        return YesNoLogits(logit_yes=logit_yes, logit_no=logit_no, text=text,
                           label_mass=label_mass(logit_yes - normaliser, logit_no - normaliser))

    def score_yes_no_batch(self, items: Sequence[tuple[str, Sequence | None]]) -> list[YesNoLogits]:
        """``score_yes_no`` for several (context, visuals) at once: one padded forward pass when
        the family can batch them, else one by one. Same results as one by one (to float
        rounding: padding changes the shapes of the matrix products)."""
        items = [(context, as_list(visuals)) for context, visuals in items]
        with stage(self, PREPARE):
            inputs = self._yesno_prepare_batch(items) if len(items) > 1 else None
        if inputs is None:
            return [self.score_yes_no(context, visuals) for context, visuals in items]
        with stage(self, "vision + language model", Stages.DEVICE):
            logits = self.first_token_logits_batch(inputs)
        return self._to_yes_no_rows(logits)

    def score_yes_no(self, context: str, visuals: Sequence | None) -> YesNoLogits:
        """l_Yes, l_No and the decoded argmax first token for one prompt and its visuals."""
        with stage(self, PREPARE):
            inputs = self._yesno_prepare_inputs(context, as_list(visuals))
        with stage(self, "vision + language model", Stages.DEVICE):
            logits = self.first_token_logits(inputs)
        return self._to_yes_no_rows(logits[None])[0]

    def score_grouped(self, items: Sequence[tuple[str, Sequence | None]], batch_size: int,
                      on_batch=None) -> list[YesNoLogits]:
        """``score_yes_no`` for every item, in item order, with each distinct image encoded ONCE.

        Items are ordered by the content of their images (``image_key``: a hash of the decoded
        pixels, so one image reached through two docs counts once) and scored in padded batches of
        ``batch_size``; the vision encoder runs only on images whose features are not cached, and
        a feature is dropped after the last item of ``items`` that uses it -- memory holds the
        features of at most the images of the current batch plus those shared with later ones.
        Items with a video, and families without the grouping hooks, are scored ungrouped.
        ``on_batch(n)`` is called after each batch (progress)."""
        items = [(context, as_list(visuals)) for context, visuals in items]
        results: list[YesNoLogits | None] = [None] * len(items)
        keys = self._image_keys(items, results, on_batch)
        groupable = [i for i, k in enumerate(keys) if k is not None]
        # one-image requests apart from the others, so that a batch can share prompt prefixes
        order = sorted(groupable, key=lambda i: (len(keys[i]) != 1, keys[i], i))
        batches: list[list[int]] = []
        for i in order:
            if not batches or len(batches[-1]) == batch_size or (len(keys[i]) == 1) != (len(keys[batches[-1][0]]) == 1):
                batches.append([])
            batches[-1].append(i)
        remaining = Counter(key for i in order for key in keys[i])
        cache: dict[str, torch.Tensor] = {}
        for rows in batches:
            batch = [items[i] for i in rows]
            with stage(self, PREPARE):
                inputs = self._yesno_prepare_batch(batch) if len(batch) > 1 else self._yesno_prepare_inputs(*batch[0])
                parts = self._yesno_image_parts(inputs) if inputs is not None else None
            batch_keys = [key for i in rows for key in keys[i]]
            if parts is None or len(parts) != len(batch_keys):
                scored = self.score_yes_no_batch(batch)
            else:
                new = {key: part for key, part in zip(batch_keys, parts) if key not in cache}
                if new:
                    with stage(self, "vision", Stages.DEVICE):
                        cache.update(zip(new, self._yesno_encode_images(list(new.values()))))
                features = [cache[key] for key in batch_keys]
                logits = None
                with stage(self, "language model", Stages.DEVICE):
                    if getattr(self, "share_prefix", False):
                        logits = self._yesno_forward_shared_prefix(inputs, features, [keys[i] for i in rows])
                    if logits is None:
                        logits = self._yesno_forward_with_features(inputs, features)
                scored = self._to_yes_no_rows(logits)
            for key in batch_keys:  # a feature goes after its last use
                remaining[key] -= 1
                if remaining[key] == 0:
                    cache.pop(key, None)
            for i, result in zip(rows, scored, strict=True):
                results[i] = result
            if on_batch:
                on_batch(len(rows))
        return results  # type: ignore[return-value]

    def _image_keys(self, items: Sequence[tuple[str, list]], results: list, on_batch) -> list[list[str] | None]:
        """Each item's image keys in prompt order; items with a video or another visual that is not an
        image are scored one by one here (``results`` filled) and get None."""
        keys: list[list[str] | None] = []
        for i, (context, visuals) in enumerate(items):
            ordered = self._yesno_image_order(context, visuals)
            if all(isinstance(v, Image.Image) for v in ordered):
                keys.append([image_key(v) for v in ordered])
                continue
            keys.append(None)
            results[i] = self.score_yes_no(*items[i])
            if on_batch:
                on_batch(1)
        return keys

    def packable(self) -> bool:
        """Whether this model scores through the packed pipeline: asked for (``packed``, or its
        default for the device and dtype) and ``can_pack``."""
        return bool(getattr(self, "packed", False)) and self.can_pack()

    def can_pack(self) -> bool:
        """Whether a pipeline of ``spatial_tasks.models.packed`` serves this model (``_packed_pipeline``)
        and it has not turned out unable to (``Unpackable``)."""
        return self._packed_pipeline() is not None and not getattr(self, "_unpackable", "")

    def _packed_pipeline(self) -> type | None:
        """The pipeline class for this model, or None: ``QwenPacked`` where the family has the packed
        hooks and an attention implementation that takes a block mask (sdpa or eager)."""
        from spatial_tasks.models.packed import QwenPacked

        own = type(self)._packed_prompt is not HFYesNoMixin._packed_prompt
        return QwenPacked if own and self.model.config._attn_implementation in ("sdpa", "eager") else None

    def score_packed(self, items: Sequence[tuple[str, Sequence | None]], batch_size: int,
                     on_batch=None) -> list[YesNoLogits]:
        """``score_yes_no`` for every item, in item order, through the packed pipeline
        (``spatial_tasks.models.packed``: each distinct image prepared and encoded once, one
        language-model forward per ``batch_size`` questions, each prefix once under a block mask).
        Items with a visual that is not an image are scored one by one."""
        from spatial_tasks.models.packed import Unpackable

        items = [(context, as_list(visuals)) for context, visuals in items]
        results: list[YesNoLogits | None] = [None] * len(items)
        keys = self._image_keys(items, results, on_batch)
        pipeline = self._packed_pipeline()
        for i, k in enumerate(keys):
            if k == [] and not pipeline.text_only:  # a prompt without an image: the per-question path
                results[i], keys[i] = self.score_yes_no(*items[i]), None
                if on_batch:
                    on_batch(1)
        packable = [i for i, k in enumerate(keys) if k is not None]
        if packable:
            scorer = getattr(self, "_packed_scorer", None)
            if not isinstance(scorer, pipeline):
                scorer = self._packed_scorer = pipeline(self)
            subset = [items[i] for i in packable]
            try:
                scored = scorer.score(subset, [tuple(keys[i]) for i in packable], batch_size, on_batch)
            except Unpackable as error:  # found on the first window, before any result was reported
                self._unpackable = str(error)
                eval_logger.warning(f"{type(self).__name__}: the packed pipeline does not fit this family ({error}); "
                                    "scoring with the per-question path instead")
                scored = self.score_grouped(subset, batch_size, on_batch=on_batch)
            for i, result in zip(packable, scored, strict=True):
                results[i] = result
        return results  # type: ignore[return-value]

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """One ``encode_payload`` string per request, in request order (gen_kwargs are ignored:
        nothing is generated beyond the first token's distribution). Requests are scored in
        batches of the model's ``batch_size`` (lmms-eval's --batch_size; 1 = one by one); with
        ``group_images`` (default on) they are taken ``group_window`` at a time, ordered by image
        within the window, and each distinct image of a window is encoded once (``score_grouped``;
        with ``share_prefix`` the prompt up to the image is also run once per image and batch).
        The window bounds memory: only its requests' visuals are held."""
        refuse_text_tasks(type(self).__name__, requests)  # before anything is scored
        answer_fields = self.answer_tokens().log_fields()  # fails before the loop if a word is not one token
        size = max(1, int(getattr(self, "batch_size", 1) or 1))
        packed = self.packable()
        grouped = bool(getattr(self, "group_images", False)) or packed
        window = max(size, int(getattr(self, "group_window", GROUP_WINDOW) or GROUP_WINDOW)) if grouped else size
        responses: list[str] = []
        scored_all: list[YesNoLogits] = []
        pbar = tqdm(total=len(requests), disable=(self.rank != 0), desc="Yes/No first-token logits")
        for start in range(0, len(requests), window):
            chunk = requests[start:start + window]
            items = [self._request_item(request) for request in chunk]
            if packed:
                scores = self.score_packed(items, size, on_batch=pbar.update)
            elif grouped:
                scores = self.score_grouped(items, size, on_batch=pbar.update)
            else:
                scores = []
                for first in range(0, len(items), size):
                    scores += self.score_yes_no_batch(items[first:first + size])
                    pbar.update(len(items[first:first + size]))
            for request, scored in zip(chunk, scores, strict=True):
                context, gen_kwargs = request.args[0], request.args[1]
                payload = encode_payload(scored, **answer_fields)
                self.cache_hook.add_partial("generate_until", (context, gen_kwargs), payload)
                responses.append(payload)
            scored_all += scores
        pbar.close()
        warn_on_label_mass(scored_all, type(self).__name__)
        return responses

    def _request_item(self, request: Instance) -> tuple[str, Sequence | None]:
        return request_item(type(self).__name__, request, self.task_dict)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError(
            f"{type(self).__name__} scores yes/no questions through generate_until (first-token Yes/No "
            "logits returned as a payload string); it has no loglikelihood. Use output_type: generate_until."
        )

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} scores single-turn yes/no questions only")


class QwenImageFeatures:
    """Grouping hooks for the Qwen families: each distinct image through the vision tower once,
    its features (and Qwen3-VL's deepstack features) passed back as ``mm_encoder_outputs``."""

    def _yesno_image_parts(self, inputs: Mapping[str, torch.Tensor]) -> list[dict[str, torch.Tensor]] | None:
        return families.qwen_image_parts(inputs)

    def _yesno_encode_images(self, parts: Sequence[dict[str, torch.Tensor]]) -> list:
        return families.qwen_encode_images(self.model, parts)

    def _yesno_forward_with_features(self, inputs: Mapping[str, torch.Tensor], features: Sequence) -> torch.Tensor:
        kept = {k: v for k, v in inputs.items() if k != "pixel_values"}
        if features:
            kept["mm_encoder_outputs"] = families.qwen_encoder_outputs(features)
        return self.first_token_logits_batch(kept)


class Qwen2_5_VLYesNo(QwenImageFeatures, HFYesNoMixin, Qwen2_5_VL):
    """lmms-eval's ``qwen2_5_vl`` (same loading, same model_args) answering with first-token
    Yes/No logits. Extra model_args (``HFYesNoMixin._yesno_options``): ``yes_text``/``no_text``/
    ``answer_rule``, ``group_images``, ``group_window``, ``share_prefix``, ``packed``, ``dtype``.
    lmms-eval's ``--batch_size`` scores that many requests per forward pass (left-padded, as
    qwen2_5_vl batches); ``packed`` (default auto: on wherever it was measured faster, with
    grouping) runs the packed pipeline (``score_packed``: each distinct image prepared and encoded
    once, one language-model forward per ``--batch_size`` questions with each prompt prefix once);
    without it, ``group_images`` (default true) encodes each distinct image once per
    ``group_window`` requests (``score_grouped``) and ``share_prefix`` (default true, with
    grouping) runs the prompt up to the image once per image and batches only the question
    suffixes on its KV cache (``_yesno_forward_shared_prefix``).

    The prompt is built as ``Qwen2_5_VL.generate_until`` builds it: system prompt, one image
    entry per visual (JPEG data URL with min/max_pixels) before the text, ``<image>`` removed,
    optional reasoning prompt and interleaving, chat template with the generation prompt.
    """

    def __init__(
        self,
        pretrained: str = "Qwen/Qwen2.5-VL-3B-Instruct",
        yes_text: str = "Yes",
        no_text: str = "No",
        answer_rule: str = "exact",
        group_images: bool | str = True,
        group_window: int | str = GROUP_WINDOW,
        share_prefix: bool | str = True,
        dtype: str | None = None,
        packed: bool | str = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(pretrained=pretrained, **kwargs)
        self._yesno_options(yes_text, no_text, answer_rule, group_images, group_window, share_prefix, dtype, packed)

    def _image_entry(self, image: Image.Image | None) -> dict:
        """A chat message's image part as ``Qwen2_5_VL.generate_until`` writes it (JPEG data URL, pixel
        bounds); None writes the part without the image (the chat template reads only its type)."""
        entry: dict = {"type": "image", "max_pixels": self.max_pixels, "min_pixels": self.min_pixels}
        if image is not None:
            entry["image"] = self._encode_image_data_url(image)
        return entry

    def _packed_prompt(self, context: str, visuals: list) -> Prompt:
        messages = self._yesno_messages(context, visuals, encode=False)
        text = self.processor.apply_chat_template([messages], tokenize=False, add_generation_prompt=True)[0]
        return Prompt(text, self._yesno_image_order(context, visuals), context)

    def _packed_load_image(self, image: Image.Image) -> np.ndarray:
        """lmms-eval's JPEG data URL of the image, decoded and resized by qwen_vl_utils, as uint8."""
        resized = process_vision_info([[{"role": "user", "content": [self._image_entry(image)]}]])[0][0]
        return np.array(resized.convert("RGB"))

    def _yesno_messages(self, context: str, visuals: list, encode: bool = True) -> list[dict]:
        context = context.replace("<image>", "")
        if self.reasoning_prompt:
            context = context.strip() + self.reasoning_prompt
        parts = []
        for visual in visuals:
            if isinstance(visual, str) and visual.endswith(_VIDEO_SUFFIXES):
                parts.append(
                    {
                        "type": "video",
                        "video": visual,
                        "max_pixels": self.max_pixels,
                        "min_pixels": self.min_pixels,
                    }
                )
            elif isinstance(visual, Image.Image):
                parts.append(self._image_entry(visual if encode else None))
            else:  # Qwen2_5_VL skips these too; say so instead of scoring a blind prompt silently
                eval_logger.warning(f"qwen2_5_vl_yesno: ignoring visual of type {type(visual).__name__}")
        if self.interleave_visuals:
            content = _interleave(context, parts)
        else:
            content = parts + [{"type": "text", "text": context}]
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": content}]

    def _yesno_prepare_batch(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor] | None:
        """Left-padded inputs for several prompts, built as ``Qwen2_5_VL.generate_until`` builds a
        batch (it pads left when batch_size > 1); None when a request has a video (scored alone)."""
        if any(isinstance(v, str) and v.endswith(_VIDEO_SUFFIXES) for _, visuals in items for v in visuals):
            return None
        messages = [self._yesno_messages(context, visuals) for context, visuals in items]
        texts = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        image_inputs, _ = process_vision_info(messages)
        inputs = self.processor(text=texts, images=image_inputs, videos=None, padding=True, padding_side="left",
                                return_tensors="pt")
        return inputs.to("cuda" if self.device_map == "auto" else self.device)

    def _yesno_image_order(self, context: str, visuals: list) -> list:
        if not self.interleave_visuals or not visuals:
            return visuals
        numbers = re.findall(r"<image (\d+)>", context)
        return [visuals[min(int(n) - 1, len(visuals) - 1)] for n in numbers]

    def _yesno_forward_shared_prefix(self, inputs: Mapping[str, torch.Tensor], features: Sequence,
                                     row_keys: Sequence[Sequence[str]]) -> torch.Tensor | None:
        """Per image asked about by several rows: one pass over the tokens up to ``<|vision_end|>``
        (system turn, image) with its KV cache kept, then the rows' question suffixes in one batch
        on a copy of that cache, left-padded after the prefix, with Qwen2.5-VL's M-RoPE positions
        continued from the full prompt's own (text positions after the image are equal on the
        three axes). Rows whose image is asked about once in the batch run one plain batched pass;
        a batch without repeated images returns None (the plain path)."""
        if (self.interleave_visuals or any(len(k) != 1 for k in row_keys) or "pixel_values_videos" in inputs
                or "mm_token_type_ids" not in inputs):
            return None
        ids, mask, grids = inputs["input_ids"], inputs["attention_mask"].bool(), inputs["image_grid_thw"]
        types = inputs["mm_token_type_ids"]
        end_id = self.model.config.vision_end_token_id
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        rows_of: dict[str, list[int]] = {}
        for row, (key,) in enumerate(row_keys):
            rows_of.setdefault(key, []).append(row)
        if all(len(rows) == 1 for rows in rows_of.values()):
            return None  # nothing to share: one batched pass is cheaper than a prefix per row
        out: list[tuple[list[int], torch.Tensor]] = []
        alone = sorted(rows[0] for rows in rows_of.values() if len(rows) == 1)
        if alone:  # images asked about once in this batch: the plain batched pass over those rows
            subset = {k: (v[alone] if k != "pixel_values" else v) for k, v in inputs.items()}
            out.append((alone, self._yesno_forward_with_features(subset, [features[r] for r in alone])))
        for key, rows in rows_of.items():
            if len(rows) == 1:
                continue
            reals = [ids[r][mask[r]] for r in rows]
            ends = (reals[0] == end_id).nonzero()
            if len(ends) != 1:
                return None
            cut = int(ends[0, 0]) + 1
            prefix = reals[0][:cut]
            if any(len(r) <= cut or not torch.equal(r[:cut], prefix) for r in reals):
                return None
            grid = grids[rows[0]:rows[0] + 1]
            image = families.qwen_encoder_outputs([features[rows[0]]])
            full, full_types = reals[0][None], types[rows[0]][mask[rows[0]]][None]
            with torch.inference_mode():
                first = self.model(input_ids=prefix[None], attention_mask=torch.ones_like(prefix[None]),
                                   mm_token_type_ids=full_types[:, :cut], image_grid_thw=grid,
                                   mm_encoder_outputs=image, use_cache=True, logits_to_keep=1)
                positions, _ = self.model.model.get_rope_index(full, mm_token_type_ids=full_types, image_grid_thw=grid,
                                                               attention_mask=torch.ones_like(full))
                start = positions[:, 0, cut]  # (3,): the first suffix token's position
                suffixes = [r[cut:] for r in reals]
                width, n = max(len(x) for x in suffixes), len(rows)
                suffix_ids = torch.full((n, width), pad_id, dtype=ids.dtype, device=ids.device)
                suffix_mask = torch.zeros((n, width), dtype=inputs["attention_mask"].dtype, device=ids.device)
                offsets = torch.zeros((n, width), dtype=torch.long, device=ids.device)
                for j, x in enumerate(suffixes):
                    suffix_ids[j, width - len(x):] = x
                    suffix_mask[j, width - len(x):] = 1
                    offsets[j, width - len(x):] = torch.arange(len(x), device=ids.device)
                cache = first.past_key_values
                cache.batch_repeat_interleave(n)
                position_ids = start.view(3, 1, 1).to(ids.device) + offsets.unsqueeze(0)
                attention = torch.cat([torch.ones((n, cut), dtype=suffix_mask.dtype, device=ids.device), suffix_mask], 1)
                last = self.model(input_ids=suffix_ids, attention_mask=attention, position_ids=position_ids,
                                  past_key_values=cache, use_cache=True, logits_to_keep=1)
            out.append((rows, last.logits[:, -1].float().cpu()))
        logits = torch.empty((len(row_keys), out[0][1].shape[-1]), dtype=torch.float32)
        for rows, values in out:
            logits[rows] = values
        return logits

    def _yesno_prepare_inputs(self, context: str, visuals: list) -> Mapping[str, torch.Tensor]:
        messages = [self._yesno_messages(context, visuals)]
        texts = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        image_inputs, video_inputs = process_vision_info(messages)
        if video_inputs is not None:  # same frame subsampling as Qwen2_5_VL.generate_until
            total = video_inputs[0].shape[0]
            indices = np.unique(np.linspace(0, total - 1, self.max_num_frames, dtype=int))
            if total - 1 not in indices:
                indices = np.unique(np.append(indices, total - 1))
            video_inputs[0] = video_inputs[0][indices]
        inputs = self.processor(
            text=texts,
            images=image_inputs,
            videos=video_inputs,
            padding=True,
            padding_side="right",
            return_tensors="pt",
        )
        return inputs.to("cuda" if self.device_map == "auto" else self.device)


def _interleave(context: str, visual_parts: list[dict]) -> list[dict]:
    """Content parts for ``interleave_visuals=True``: "<image N>" markers in the text are
    replaced by the N-th visual (clamped to the last one), as Qwen2_5_VL does."""
    pieces = re.split(r"<image (\d+)>", context)
    content: list[dict] = []
    if pieces[0]:
        content.append({"type": "text", "text": pieces[0]})
    for number, text in zip(pieces[1::2], pieces[2::2], strict=True):
        if visual_parts:
            content.append(visual_parts[min(int(number) - 1, len(visual_parts) - 1)])
        if text:
            content.append({"type": "text", "text": text})
    return content
