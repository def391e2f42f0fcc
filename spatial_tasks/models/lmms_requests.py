"""What one simple lmms-eval ``generate_until`` request asks: its prompt and its visuals.

Shared by every first-token scorer (``hf_yesno`` and its twins in-process, ``openai_yesno``
against a server), so that all of them read a request the same way."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image


def request_item(model_name: str, request: Any, task_dict: Mapping) -> tuple[str, list]:
    """(context, visuals) of a simple-model request ``(context, gen_kwargs, doc_to_visual,
    doc_id, task, split)``; a TypeError naming ``model_name`` for a chat-model request."""
    context, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
    if callable(gen_kwargs) or not (doc_to_visual is None or callable(doc_to_visual)):
        raise TypeError(
            f"{model_name} is a simple lmms-eval model: it expects requests "
            "(context, gen_kwargs, doc_to_visual, doc_id, task, split), not chat-model requests"
        )
    visuals = doc_to_visual(task_dict[task][split][doc_id]) if doc_to_visual is not None else None
    return context, as_list(visuals)


def request_name(request: Any) -> str:
    """How an error names a request: its task and doc id."""
    args = request.args
    return f"task {args[4]}, doc {args[3]}" if len(args) >= 6 else f"request {getattr(request, 'idx', '?')}"


def as_list(visuals: Sequence | Image.Image | str | None) -> list:
    if visuals is None:
        return []
    if isinstance(visuals, (Image.Image, str)):
        return [visuals]
    return list(visuals)


def refuse_text_tasks(model_name: str, requests: Sequence[Any]) -> None:
    """Stop the run, before anything is scored or sent, when a request belongs to one of our tasks that
    scores generated text (``catalog.scores_payloads`` False): a first-token scorer's payload would
    score 0 there on every question."""
    from spatial_tasks.catalog import scores_payloads
    from spatial_tasks.common.errors import stop_run

    tasks = sorted({request.args[4] for request in requests if len(request.args) >= 6})
    text = [task for task in tasks if scores_payloads(task) is False]
    if text:
        stop_run(f"spatial-tasks: {model_name} returns first-token Yes/No logits, which only the tasks that score "
                 f"them take (`spatial-tasks list`: scores first-token logits); {', '.join(text)} score(s) generated "
                 "text: run them with a model that generates (for example qwen2_5_vl, or lmms-eval's openai for a "
                 "served model)")


def image_key(image: Image.Image) -> str:
    """What makes two images the same input: mode, size and the decoded pixels (BLAKE2b)."""
    digest = hashlib.blake2b(image.tobytes(), digest_size=16)
    digest.update(f"{image.mode}:{image.size}".encode())
    return digest.hexdigest()


def lmms_eval_image(image: Image.Image, min_pixels: int = 3136, max_pixels: int = 50176) -> Image.Image:
    """The image as lmms-eval's qwen2_5_vl hands it to the processor: JPEG data URL (quality 85),
    then ``qwen_vl_utils``' resizing within the pixel bounds."""
    from lmms_eval.models.model_utils.media_encoder import encode_image_to_data_url
    from qwen_vl_utils import fetch_image

    url = encode_image_to_data_url(image, image_format="JPEG", mime_type="image/jpeg", convert_rgb=True, quality=85)
    return fetch_image({"image": url, "min_pixels": min_pixels, "max_pixels": max_pixels})
