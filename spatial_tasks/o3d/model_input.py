"""What an O3-D model is shown: ``doc_to_visual``, ``doc_to_text``, ``doc_to_messages`` (the ICL
task interleaves its images) and ``doc_to_target``; ``write_out`` renders them for a person to
check before a run."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
from PIL import Image

from spatial_tasks.common import prompts as templates
from spatial_tasks.common.validate import reads_docs
from spatial_tasks.o3d import load
from spatial_tasks.o3d.demonstrations import demonstration_answer, demonstration_doc
from spatial_tasks.o3d.prompts import with_answer_instruction
from spatial_tasks.o3d.schema import BENCHMARK

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs(BENCHMARK, ("question_id", "subset_name", "question", "gt_label"))

PROMPT_TEMPLATE = "prompt.jinja"
ICL_TEMPLATE = "icl_cot.jinja"
# answer_instruction: None keeps the dataset's "Answer A or B."; the authors gave Kosmos2 "Answer:".
DEFAULT_PROMPT_KWARGS = {"pre_prompt": "", "post_prompt": "", "answer_instruction": None}
IMAGE_PLACEHOLDER = re.compile(r"<image (\d+)>")


def _prompt_kwargs(lmms_eval_specific_kwargs: Mapping | None) -> dict:
    return {**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}


def _shown_question(doc: Mapping[str, Any], kwargs: Mapping) -> str:
    """The dataset's question with the task's answer instruction (``answer_instruction``)."""
    try:
        return with_answer_instruction(doc["question"], kwargs.get("answer_instruction"))
    except ValueError as err:
        raise ValueError(f"o3d question {doc['question_id']!r}: {err}") from None


@_canonical_doc
def doc_to_visual(doc: Mapping[str, Any]) -> list[Image.Image]:
    """The one image of the question (marked questions on synthetic images: markers drawn from masks)."""
    return [load.image_for(doc)]


@_canonical_doc
def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping | None = None) -> str:
    kwargs = _prompt_kwargs(lmms_eval_specific_kwargs)
    return templates.render(BENCHMARK, PROMPT_TEMPLATE, **{**kwargs, "question": _shown_question(doc, kwargs)})


@_canonical_doc
def doc_to_target(doc: Mapping[str, Any]) -> str:
    return doc["gt_label"]


@_canonical_doc
def doc_to_visual_icl(doc: Mapping[str, Any]) -> list[Image.Image]:
    """The demonstrations' images (in prompt order), then the query's: ``<image 1>`` ... ``<image 3>``."""
    return [*(load.image_for(demonstration_doc(doc, d)) for d in doc["icl_demos"]), load.image_for(doc)]


@_canonical_doc
def doc_to_text_icl(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping | None = None) -> str:
    """Demonstrations then the query, each image referred to by an ``<image N>`` placeholder at its
    place (N indexes ``doc_to_visual_icl``). Models that interleave at such placeholders (lmms-eval's
    simple qwen2_5_vl with ``interleave_visuals=True``) put every image there; others show the images
    first and keep the placeholders as labels. Chat models get ``doc_to_messages_icl`` instead."""
    kwargs = _prompt_kwargs(lmms_eval_specific_kwargs)
    question = _shown_question(doc, kwargs)
    demos = [{"question": with_answer_instruction(d["question"], kwargs.get("answer_instruction")),
              "answer": demonstration_answer(doc, d)} for d in doc["icl_demos"]]
    return templates.render(BENCHMARK, ICL_TEMPLATE, **{**kwargs, "demos": demos, "question": question})


def interleave(text: str, visuals: Sequence[Any]) -> list[dict]:
    """Chat content parts: the text split at its ``<image N>`` placeholders, image N at each place."""
    parts: list[dict] = []
    pieces = IMAGE_PLACEHOLDER.split(text)
    for k, piece in enumerate(pieces):
        if k % 2:  # a captured image number
            index = int(piece) - 1
            if not 0 <= index < len(visuals):
                raise ValueError(f"prompt refers to <image {piece}> but there are {len(visuals)} images")
            parts.append({"type": "image", "url": visuals[index]})
        elif piece.strip():
            parts.append({"type": "text", "text": piece.strip()})
    return parts


@_canonical_doc
def doc_to_messages_icl(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping | None = None) -> list[dict]:
    """Chat models (lmms-eval's default for qwen2_5_vl and openai): one user turn with every image
    interleaved at its place among the demonstrations' texts and the query."""
    text = doc_to_text_icl(doc, lmms_eval_specific_kwargs)
    return [{"role": "user", "content": interleave(text, doc_to_visual_icl(doc))}]


def write_out(docs: datasets.Dataset, out_dir: str | Path, n: int = 10, icl: bool = False) -> Path:
    """Write the first ``n`` docs' prompts (prompts.txt) and images (<k>_<i>.png) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for k in range(min(n, len(docs))):
        doc = docs[k]
        text = doc_to_text_icl(doc) if icl else doc_to_text(doc)
        visuals = doc_to_visual_icl(doc) if icl else doc_to_visual(doc)
        for i, image in enumerate(visuals, 1):
            image.save(out / f"{k:03d}_{i}.png")
        lines += [f"## {k:03d} {doc['question_id']} (gt {doc['gt_position']})", text, ""]
    (out / "prompts.txt").write_text("\n".join(lines), encoding="utf-8")
    return out
