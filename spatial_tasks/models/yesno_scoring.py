"""First-token Yes/No logit scoring for Hugging Face VLMs, as lmms-eval models.

SpatialTunnel's main protocol (specs/spatialtunnel.md) scores a yes/no question by
p = sigma(l_Yes - l_No), where l are the logits of the model's FIRST generated token. lmms-eval
0.7.3 can only score generated text, so a ``<family>_yesno`` model runs one forward pass on
exactly the prompt the family's lmms-eval model would build, reads the logits at the last
position (the distribution of the first generated token) and returns them serialised with
``spatial_tasks.common.yesno.encode_payload`` as its "response". Task code reads it back with
``decode_payload``/``parse_yes_no``.

Adding a twin: subclass ``HFYesNoMixin`` together with the family's lmms-eval model class
(mixin first, so its ``generate_until``/``loglikelihood`` win), implement
``yesno_prepare_inputs(context, visuals)`` so it builds the model inputs exactly as the
family's ``generate_until`` does (system prompt, image entries, chat template with the
generation prompt) and ``yesno_prepare_batch`` (left-padded), and the hooks of the scoring paths
it offers (``spatial_tasks.models.scoring_paths``: each strategy's ``needs``; ``ImageFeatureHooks`` has
the grouping hooks, over the family's image features). Register it with one entry in
``models/model_table.py``: its id, this class, the families it serves and the paths it implements. The
family's row (``family_table``) says which paths the model itself allows; the run takes the first path
both allow that its arguments leave, and falls back along the rest, with the same results. This
module holds ``qwen2_5_vl_yesno``; ``lmms_yesno`` the other twins; ``hf_yesno`` the generic ``hf_yesno``.

    lmms-eval --model qwen2_5_vl_yesno --batch_size 8 --model_args pretrained=Qwen/Qwen2.5-VL-3B-Instruct ...
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from lmms_eval.api.instance import Instance
from loguru import logger as eval_logger
from PIL import Image
from tqdm import tqdm

from spatial_tasks.common.yesno import YesNoLogits, encode_payload, label_mass, warn_on_label_mass
from spatial_tasks.harness import lmms_eval_qwen2_5_vl
from spatial_tasks.models import families as families
from spatial_tasks.models.answer_tokens import AnswerTokens, answer_tokens
from spatial_tasks.models.arguments import ScoringOptions, model_id
from spatial_tasks.models.lmms_requests import as_list, refuse_text_tasks, request_item
from spatial_tasks.models.model_table import entry_of
from spatial_tasks.models.packed import PREPARE, Prompt, Stages, stage
from spatial_tasks.models.scoring_paths import (
    ONE_BY_ONE,
    PACKED,
    PADDED,
    PREPARED_ONCE,
    NothingToShare,
    PathChoice,
    PathRuns,
    PathUnavailable,
    choose,
    score_items,
)

Qwen2_5_VL, process_vision_info = lmms_eval_qwen2_5_vl()  # the seam with lmms-eval's internals

_VIDEO_SUFFIXES = (".mp4", ".avi", ".mov")


class HFYesNoMixin:
    """The family-agnostic part of a ``<family>_yesno`` lmms-eval model.

    The host class (an lmms-eval ``lmms`` subclass) provides ``model`` (a transformers causal
    VLM), ``tokenizer``, ``rank``, ``task_dict`` and ``cache_hook``; the family provides
    ``yesno_prepare_inputs`` and the hooks of the scoring paths its entry lists (``model_table``)
    (``scoring_paths``: each strategy's ``needs``). ``_scoring_setup`` (call it after the host's
    __init__) reads the options, chooses the path once, logs and records the choice.
    """

    options = ScoringOptions()

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """How lmms-eval builds the model: every argument checked before it loads, one line and exit 2
        for a bad one (``models.arguments.create_checked``)."""
        from spatial_tasks.models.arguments import create_checked

        return create_checked(cls, arg_string, additional_config)

    def _scoring_setup(self, options: ScoringOptions, cast: bool = True, pretrained: str | None = None) -> None:
        """The options every ``<family>_yesno`` adds (``ScoringOptions``), after the host loaded the
        model: ``dtype`` cast (float32 for exact comparisons; ``cast=False`` where the host loaded in
        it), the answer tokens checked (a tokenizer without single-token answers fails here), and the
        scoring path chosen once for the run, logged in one line and recorded in its config.

        A host that loads in bfloat16 (lmms-eval's qwen2_5_vl, qwen3_vl, gemma3) has rounded the weights:
        casting up alone keeps them rounded, so for a wider ``dtype`` the weights are read again from
        ``pretrained`` in it (a float32 checkpoint then scores as ``hf_yesno`` loads it) -- only where
        the checkpoint holds more bits than were loaded (a bfloat16 checkpoint is not read twice)."""
        self.options = options
        if cast and options.dtype is not None:
            wanted = getattr(torch, options.dtype)
            loaded = next(self.model.parameters()).dtype
            self.model.to(wanted)
            if pretrained is not None and wanted.itemsize > loaded.itemsize and _stored_wider(pretrained, loaded):
                fresh = type(self.model).from_pretrained(pretrained, dtype=wanted)
                self.model.load_state_dict(fresh.state_dict())
                del fresh
        self.answer_tokens()
        self.scoring = self.choose_path()
        eval_logger.info(self.scoring.line(model_id(type(self))))
        # what the run's results record (the seam hands it to each task: harness.before_run)
        self.scoring_record = self.scoring.recorded(model_id(type(self)))

    def offered_paths(self) -> tuple[str, ...]:
        """The paths this model's family allows that its ``--model`` id implements (``model_table``)."""
        return entry_of(type(self)).offered(self.model.config.model_type)

    def choose_path(self) -> PathChoice:
        """``scoring_paths.choose`` over the offered paths, with this model's options, device and dtype."""
        from spatial_tasks.models.packed import packed_by_default, unmeasured_packing

        options = self.options
        device = next(self.model.parameters()).device
        chosen = choose(self.offered_paths(), packed=options.packed, group_images=options.group_images,
                        share_prefix=options.share_prefix, packs_by_default=packed_by_default(device, self.model.dtype),
                        block_mask=getattr(self.model.config, "_attn_implementation", None) in ("sdpa", "eager"))
        unmeasured = unmeasured_packing(device, self.model.dtype)
        if chosen.path in (PACKED, PREPARED_ONCE) and options.packed is True and unmeasured:
            eval_logger.warning(f"{model_id(type(self))}: {unmeasured}")
        return chosen

    def drop_path(self, path: str, why: str) -> None:
        """A path that turned out not to fit this model: gone for the rest of the run, logged, recorded."""
        self.scoring = self.scoring.without(path, why)
        eval_logger.warning(f"{model_id(type(self))}: the {path} path does not fit this model ({why}); "
                            f"scoring with {self.scoring.path} instead")
        self.scoring_record.clear()  # in place: the tasks hold this dict, so the results show the final choice
        self.scoring_record.update(self.scoring.recorded(model_id(type(self))))

    def answer_tokens(self) -> AnswerTokens:
        """The Yes/No token ids under ``answer_rule``; a YesNoTokenError if a word is not a single token."""
        key = (self.options.yes_text, self.options.no_text, self.options.answer_rule)
        cached = getattr(self, "_answer_tokens_cache", None)
        if cached is None or cached[0] != key:
            cached = (key, answer_tokens(self.tokenizer, *key))
            self._answer_tokens_cache = cached
        return cached[1]

    def yesno_image_order(self, context: str, visuals: list) -> list:
        """The visuals in the order the prompt shows them (each occurrence once). Default: as given."""
        return visuals

    def first_token_logits_batch(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """(batch, vocabulary) float32 logits at the last position of left-padded inputs."""
        kwargs: dict[str, Any] = {"use_cache": False}
        if "logits_to_keep" in inspect.signature(self.model.forward).parameters:
            kwargs["logits_to_keep"] = 1  # only the last position is needed
        with torch.inference_mode():
            outputs = self.model(**inputs, **kwargs)
        return outputs.logits[:, -1].float().cpu()

    def to_yes_no_rows(self, logits: torch.Tensor) -> list[YesNoLogits]:
        """l_Yes, l_No, the argmax token and the label mass (from the full softmax) of each logit row."""
        rows = []
        with stage(self, "results (host)"):
            for row in logits:
                logit_yes, logit_no = self.answer_tokens().logits(row)
                normaliser = float(torch.logsumexp(row.float(), 0))
                rows.append(YesNoLogits(logit_yes=logit_yes, logit_no=logit_no,
                                        text=self.tokenizer.decode([int(torch.argmax(row))], skip_special_tokens=False),
                                        label_mass=label_mass(logit_yes - normaliser, logit_no - normaliser)))
        return rows

    def score_yes_no(self, context: str, visuals: Sequence | None) -> YesNoLogits:
        """l_Yes, l_No and the decoded argmax first token for one prompt and its visuals."""
        with stage(self, PREPARE):
            inputs = self.yesno_prepare_inputs(context, as_list(visuals))
        with stage(self, "vision + language model", Stages.DEVICE):
            logits = self.first_token_logits_batch(inputs)
        return self.to_yes_no_rows(logits[-1:])[0]

    def score_items(self, items: Sequence[tuple[str, Sequence | None]], batch_size: int,
                    paths: Sequence[str] | None = None, on_batch=None) -> list[YesNoLogits]:
        """Every (context, visuals) scored, in order, by the run's path and its fallbacks (``paths``:
        these instead, e.g. one path alone to compare it), ``batch_size`` questions per forward."""
        items = [(context, as_list(visuals)) for context, visuals in items]
        return score_items(self, items, max(1, int(batch_size)), self.scoring.order if paths is None else paths,
                           self.path_runs, on_batch)

    @functools.cached_property
    def path_runs(self) -> PathRuns:
        """This run's strategies and what its paths logged (``scoring_paths.PathRuns``)."""
        return PathRuns()

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """One ``encode_payload`` string per request, in request order (gen_kwargs are ignored:
        nothing is generated beyond the first token's distribution). Requests are scored by the run's
        path (``scoring``), ``batch_size`` (lmms-eval's --batch_size) per forward; a path that
        groups by image takes them ``group_window`` at a time, ordered by image within the window,
        each distinct image encoded once. The window bounds memory: only its requests' visuals are held."""
        refuse_text_tasks(type(self).__name__, requests)  # before anything is scored
        answer_fields = self.answer_tokens().log_fields()  # fails before the loop if a word is not one token
        size = max(1, int(getattr(self, "batch_size", 1) or 1))
        window = max(size, self.options.group_window) if self.scoring.path not in (PADDED, ONE_BY_ONE) else size
        responses: list[str] = []
        scored_all: list[YesNoLogits] = []
        pbar = tqdm(total=len(requests), disable=(self.rank != 0), desc="Yes/No first-token logits")
        for start in range(0, len(requests), window):
            chunk = requests[start:start + window]
            scores = self.score_items([request_item(type(self).__name__, r, self.task_dict) for r in chunk], size,
                                      on_batch=pbar.update)
            for request, scored in zip(chunk, scores, strict=True):
                context, gen_kwargs = request.args[0], request.args[1]
                payload = encode_payload(scored, **answer_fields)
                self.cache_hook.add_partial("generate_until", (context, gen_kwargs), payload)
                responses.append(payload)
            scored_all += scores
        pbar.close()
        warn_on_label_mass(scored_all, type(self).__name__)
        return responses

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError(
            f"{type(self).__name__} scores yes/no questions through generate_until (first-token Yes/No "
            "logits returned as a payload string); it has no loglikelihood. Use output_type: generate_until."
        )

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} scores single-turn yes/no questions only")


class ImageFeatureHooks:
    """The grouping hooks, over the family's ``image_features`` (``families.ImageFeatures``; the
    Qwen families): each distinct image through the vision tower once, its features passed back
    to the forward as ``mm_encoder_outputs``."""

    def _image_features(self) -> families.ImageFeatures:
        features = families.family_of(self.model.config.model_type).image_features
        if features is None:  # not offered then (families.Family checks its paths): a forced path
            raise PathUnavailable("this family's forward takes no precomputed image features", lasting=True)
        return features

    def yesno_image_parts(self, inputs: Mapping[str, torch.Tensor]) -> list[dict[str, torch.Tensor]] | None:
        return self._image_features().parts(inputs)

    def yesno_encode_images(self, parts: Sequence[dict[str, torch.Tensor]]) -> list:
        return self._image_features().encode(self.model, parts)

    def yesno_forward_with_features(self, inputs: Mapping[str, torch.Tensor], features: Sequence) -> torch.Tensor:
        kept = {k: v for k, v in inputs.items() if k != "pixel_values"}
        if features:
            kept["mm_encoder_outputs"] = self._image_features().encoder_outputs(features)
        return self.first_token_logits_batch(kept)


class Qwen2_5_VLYesNo(ImageFeatureHooks, HFYesNoMixin, Qwen2_5_VL):
    """lmms-eval's ``qwen2_5_vl`` (same loading, same model_args) answering with first-token
    Yes/No logits. Extra model_args (``arguments.ScoringOptions``): ``yes_text``/``no_text``/
    ``answer_rule``, ``group_images``, ``group_window``, ``share_prefix``, ``packed``, ``dtype``.
    lmms-eval's ``--batch_size`` scores that many requests per forward pass (left-padded, as
    qwen2_5_vl batches). It offers every path but ``prepared_once`` (``scoring_paths``): packed
    (default auto: where it was measured faster, with grouping), shared prefix (the prompt up to
    the image once per image and batch, the question suffixes on its KV cache:
    ``yesno_forward_shared_prefix``), grouped (each distinct image encoded once per
    ``group_window`` requests), padded, one by one.

    The prompt is built as ``Qwen2_5_VL.generate_until`` builds it: system prompt, one image
    entry per visual (JPEG data URL with min/max_pixels) before the text, ``<image>`` removed,
    optional reasoning prompt and interleaving, chat template with the generation prompt.
    """

    def __init__(self, pretrained: str = "Qwen/Qwen2.5-VL-3B-Instruct", **kwargs: Any) -> None:
        options = ScoringOptions.take(model_id(type(self)), kwargs)
        super().__init__(pretrained=pretrained, **kwargs)
        self._scoring_setup(options, pretrained=pretrained)

    def _image_entry(self, image: Image.Image | None) -> dict:
        """A chat message's image part as ``Qwen2_5_VL.generate_until`` writes it (JPEG data URL, pixel
        bounds); None writes the part without the image (the chat template reads only its type)."""
        entry: dict = {"type": "image", "max_pixels": self.max_pixels, "min_pixels": self.min_pixels}
        if image is not None:
            entry["image"] = self._encode_image_data_url(image)
        return entry

    def packed_prompt(self, context: str, visuals: list) -> Prompt:
        messages = self._yesno_messages(context, visuals, encode=False)
        text = self.processor.apply_chat_template([messages], tokenize=False, add_generation_prompt=True)[0]
        return Prompt(text, self.yesno_image_order(context, visuals), context)

    def packed_load_image(self, image: Image.Image) -> np.ndarray:
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

    def yesno_prepare_batch(self, items: Sequence[tuple[str, list]]) -> Mapping[str, torch.Tensor]:
        """Left-padded inputs for several prompts, built as ``Qwen2_5_VL.generate_until`` builds a
        batch (it pads left when batch_size > 1); a request with a video is scored alone."""
        if any(isinstance(v, str) and v.endswith(_VIDEO_SUFFIXES) for _, visuals in items for v in visuals):
            raise PathUnavailable("a video (scored alone, as Qwen2_5_VL samples its frames)")
        messages = [self._yesno_messages(context, visuals) for context, visuals in items]
        texts = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        image_inputs, _ = process_vision_info(messages)
        inputs = self.processor(text=texts, images=image_inputs, videos=None, padding=True, padding_side="left",
                                return_tensors="pt")
        return inputs.to("cuda" if self.device_map == "auto" else self.device)

    def yesno_image_order(self, context: str, visuals: list) -> list:
        if not self.interleave_visuals or not visuals:
            return visuals
        numbers = re.findall(r"<image (\d+)>", context)
        return [visuals[min(int(n) - 1, len(visuals) - 1)] for n in numbers]

    def yesno_forward_shared_prefix(self, inputs: Mapping[str, torch.Tensor], features: Sequence,
                                     row_keys: Sequence[Sequence[str]]) -> torch.Tensor:
        """Per image asked about by several rows: one pass over the tokens up to ``<|vision_end|>``
        (system turn, image) with its KV cache kept, then the rows' question suffixes in one batch
        on a copy of that cache, left-padded after the prefix, with Qwen2.5-VL's M-RoPE positions
        continued from the full prompt's own (text positions after the image are equal on the
        three axes). Rows whose image is asked about once in the batch run one plain batched pass;
        a batch with nothing to share (no image asked about twice, several images to a prompt,
        interleaved images) raises ``NothingToShare``: the plain grouped forward runs it."""
        if (self.interleave_visuals or any(len(k) != 1 for k in row_keys) or "pixel_values_videos" in inputs
                or "mm_token_type_ids" not in inputs):
            raise NothingToShare
        ids, mask, grids = inputs["input_ids"], inputs["attention_mask"].bool(), inputs["image_grid_thw"]
        types = inputs["mm_token_type_ids"]
        end_id = self.model.config.vision_end_token_id
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        rows_of: dict[str, list[int]] = {}
        for row, (key,) in enumerate(row_keys):
            rows_of.setdefault(key, []).append(row)
        if all(len(rows) == 1 for rows in rows_of.values()):
            raise NothingToShare  # one batched pass is cheaper than a prefix per row
        out: list[tuple[list[int], torch.Tensor]] = []
        alone = sorted(rows[0] for rows in rows_of.values() if len(rows) == 1)
        if alone:  # images asked about once in this batch: the plain batched pass over those rows
            subset = {k: (v[alone] if k != "pixel_values" else v) for k, v in inputs.items()}
            out.append((alone, self.yesno_forward_with_features(subset, [features[r] for r in alone])))
        for key, rows in rows_of.items():
            if len(rows) == 1:
                continue
            reals = [ids[r][mask[r]] for r in rows]
            ends = (reals[0] == end_id).nonzero()
            if len(ends) != 1:
                raise NothingToShare
            cut = int(ends[0, 0]) + 1
            prefix = reals[0][:cut]
            if any(len(r) <= cut or not torch.equal(r[:cut], prefix) for r in reals):
                raise NothingToShare
            grid = grids[rows[0]:rows[0] + 1]
            image = self._image_features().encoder_outputs([features[rows[0]]])
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

    def yesno_prepare_inputs(self, context: str, visuals: list) -> Mapping[str, torch.Tensor]:
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


def _stored_wider(pretrained: str, loaded: torch.dtype) -> bool:
    """Whether the checkpoint's config says its weights are stored wider than ``loaded`` (unknown: yes)."""
    from transformers import AutoConfig

    stored = getattr(AutoConfig.from_pretrained(pretrained), "dtype", None)
    if isinstance(stored, str):
        stored = getattr(torch, stored, None)
    return not isinstance(stored, torch.dtype) or stored.itemsize > loaded.itemsize


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
