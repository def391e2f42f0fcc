"""lmms-eval hooks for the VAGUE tasks (tasks/vague/*.yaml point here through tasks/vague/utils.py).

One task per (subset, setting). Settings (the paper's, plus the code's SM_gpt):

* ``vlm`` / ``vlm_cot``: the image and the MCQ prompt (± zero-shot CoT);
* ``lm``: the MCQ prompt only, no image;
* ``sm`` / ``sm_cot`` (Socratic): the SAME model first captions the image (``caption_prompt``),
  then answers text-only from its own caption. Both stages run inside one lmms-eval request with
  lmms-eval's ``generate_until_agentic`` output type, which drives any ``generate_until`` model
  (``doc_to_text_sm``: round 0 asks for the caption with the image, round 1 gives the MCQ prompt
  without it, round 2 stops). The response is JSON {"caption", "answer"}, so the caption is logged;
* ``sm_gpt``: the MCQ prompt with the stored caption (meta.caption) instead;
* ``freeform`` / ``freeform_cot``: the image and the free-form prompt, scored with BLEU-1 and
  BERTScore F1 against the correct intention.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache

import datasets
from PIL import Image

from spatial_tasks.common import images, prompts
from spatial_tasks.common.origin import fingerprint
from spatial_tasks.common.validate import reads_docs
from spatial_tasks.harness import DocsHook, ResultsHook, TaskData
from spatial_tasks.vague import load, metrics
from spatial_tasks.vague.person_tags import draw_person_tags
from spatial_tasks.vague.records import score_freeform, score_mcq
from spatial_tasks.vague.schema import (
    BENCHMARK,
    SOURCE,
    SUBSETS,
)

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs(BENCHMARK, ("item_id", "subset", "indirect", "letters", "option_texts", "answer"))


CAPTION_PROMPT = "Describe the provided image in 2~3 sentences."  # the authors' CAP_PROMPT
DEFAULT_PROMPT_KWARGS = {"pre_prompt": "", "post_prompt": "", "caption_prompt": CAPTION_PROMPT}
MCQ_TEMPLATES = {"vlm": "mcq_vlm.jinja", "lm": "mcq_lm.jinja", "sm": "mcq_sm.jinja", "sm_gpt": "mcq_sm.jinja",
                 "vlm_cot": "mcq_vlm_cot.jinja", "sm_cot": "mcq_sm_cot.jinja"}
FREEFORM_TEMPLATES = {"freeform": "freeform_vlm.jinja", "freeform_cot": "freeform_vlm_cot.jinja"}


# ---------------------------------------------------------------------------------- docs


def reads_source(data: TaskData) -> bool:
    """A local folder in the GitHub layout (JSON item files and images) is read by
    ``load.docs_from_folder``; the Hub release (or a copy of it) is loaded by lmms-eval."""
    return data.local_folder is not None and load.is_item_folder(data.local_folder)


_TABLE_DOCS: dict[str, tuple[dict, ...]] = {}  # dataset fingerprint -> docs (16 tasks, one release)


def _table_docs(dataset: datasets.Dataset, data: TaskData) -> tuple[dict, ...]:
    key = fingerprint(dataset)
    if key not in _TABLE_DOCS:
        _TABLE_DOCS.clear()  # one release at a time
        _TABLE_DOCS[key] = tuple(load.docs_from_table(dataset, data.origin(dataset)))
    return _TABLE_DOCS[key]


@lru_cache(maxsize=4)
def _folder_docs(folder: str) -> tuple[dict, ...]:
    return tuple(load.docs_from_folder(folder))


def docs_for(dataset: datasets.Dataset | None, data: TaskData, subset: str | None) -> datasets.Dataset:
    """The docs of one subset (None: both): the table lmms-eval loaded, or the GitHub-layout
    folder ``data`` names. 16 tasks read one release, so the docs are built once per process.
    A task that scores BERTScore checks its settings here, before any answer is generated."""
    if "bertscore_f1" in data.metrics:
        metrics.bertscore_backbone()
    if dataset is None:
        docs = _folder_docs(str(data.local_folder))
        where = str(data.local_folder)
    else:
        docs = _table_docs(dataset, data)
        where = data.origin(dataset).where
    kept = load.select(docs, subset)
    if not kept:
        raise load.SourceError(f"{where}: no {subset or 'VAGUE'} items (found subsets "
                               f"{sorted({d['subset'] for d in docs})})")
    return datasets.Dataset.from_list(kept)


def task_subset(data: TaskData) -> str | None:
    """The subset (vcr, ego4d) the task's YAML ``metadata`` declares; absent: both (the sample tasks)."""
    subset = data.metadata.get("subset")
    if subset is not None and subset not in SUBSETS:
        raise load.SourceError(f"{data.task}: metadata.subset {subset!r} is not one of {list(SUBSETS)}")
    return subset


# Every VAGUE task's process_docs: its subset (metadata) of the source's items.
process_docs = DocsHook("vague.process_docs", lambda dataset, data: docs_for(dataset, data, task_subset(data)),
                        reads_source=reads_source, source=SOURCE)


# ------------------------------------------------------------------------------- showing


def image(doc: Mapping) -> Image.Image:
    """The item's image as the model sees it: with the person tags, drawn here when the image has
    none (``tags`` == "drawn", load.has_person_tags)."""
    if doc["image"] is None:
        raise load.SourceError(f"item {doc['item_id']} ({doc['image_name']!r}) has no image")
    shown = images.open_ref(doc["image"])
    if doc["tags"] == "drawn":
        shown, _ = draw_person_tags(shown, doc["person_boxes"])
    return shown


@_canonical_doc
def doc_to_visual(doc: Mapping) -> list[Image.Image]:
    return [image(doc)]


@_canonical_doc
def doc_to_visual_none(doc: Mapping) -> list:
    """LM and SM_gpt settings: text only."""
    return []


def choices(doc: Mapping) -> str:
    """The choices as the authors show them: sorted lines "A: ..."."""
    return "\n".join(f"{letter}: {text}" for letter, text in zip(doc["letters"], doc["option_texts"]))


def _kwargs(given: Mapping | None) -> dict:
    return prompts.text_arguments("vague", {**DEFAULT_PROMPT_KWARGS, **(given or {})}, ("pre_prompt", "post_prompt"))


def _wrap(text: str, kwargs: Mapping) -> str:
    return f"{kwargs['pre_prompt']}{text}{kwargs['post_prompt']}"


def mcq_prompt(doc: Mapping, setting: str, caption: str | None = None, kwargs: Mapping | None = None) -> str:
    kwargs = _kwargs(kwargs)
    if setting == "sm_gpt":
        caption = doc["caption"]
        if caption is None:
            raise load.SourceError(f"item {doc['item_id']} ({doc['image_name']!r}): the SM_gpt setting needs the "
                                   "stored caption meta.caption, and this item has none")
    elif setting in ("sm", "sm_cot") and not isinstance(caption, str):
        raise ValueError(f"item {doc['item_id']}: the {setting} setting answers from the model's own caption "
                         f"(round 1), and none was given ({caption!r})")
    text = prompts.render(BENCHMARK, MCQ_TEMPLATES[setting], utterance=doc["indirect"], choices=choices(doc),
                          caption=caption or "")
    return _wrap(text, kwargs)


def freeform_prompt(doc: Mapping, setting: str, kwargs: Mapping | None = None) -> str:
    text = prompts.render(BENCHMARK, FREEFORM_TEMPLATES[setting], utterance=doc["indirect"], listener=doc["listener"])
    return _wrap(text, _kwargs(kwargs))


@_canonical_doc
def doc_to_text_vlm(doc, lmms_eval_specific_kwargs=None):
    return mcq_prompt(doc, "vlm", kwargs=lmms_eval_specific_kwargs)


@_canonical_doc
def doc_to_text_lm(doc, lmms_eval_specific_kwargs=None):
    return mcq_prompt(doc, "lm", kwargs=lmms_eval_specific_kwargs)


@_canonical_doc
def doc_to_text_sm_gpt(doc, lmms_eval_specific_kwargs=None):
    return mcq_prompt(doc, "sm_gpt", kwargs=lmms_eval_specific_kwargs)


@_canonical_doc
def doc_to_text_vlm_cot(doc, lmms_eval_specific_kwargs=None):
    return mcq_prompt(doc, "vlm_cot", kwargs=lmms_eval_specific_kwargs)


@_canonical_doc
def doc_to_text_freeform(doc, lmms_eval_specific_kwargs=None):
    return freeform_prompt(doc, "freeform", lmms_eval_specific_kwargs)


@_canonical_doc
def doc_to_text_freeform_cot(doc, lmms_eval_specific_kwargs=None):
    return freeform_prompt(doc, "freeform_cot", lmms_eval_specific_kwargs)


def _socratic(setting: str, doc, kwargs, previous_output, round_idx):
    """The two Socratic rounds (see the module docstring)."""
    kwargs = _kwargs(kwargs)
    if not round_idx:  # round 0: caption the image
        return kwargs["caption_prompt"]
    outputs = list(previous_output or [])
    if round_idx == 1:  # the caption is in: answer from it, without the image
        # A model that returned nothing (None, or no output at all) captioned nothing: the answer
        # round sees an empty description, as an empty caption would give; the record keeps "".
        caption = outputs[-1] if outputs and isinstance(outputs[-1], str) else ""
        return [], mcq_prompt(doc, setting, caption=caption, kwargs=kwargs), False, None, None
    caption = outputs[0] if outputs and isinstance(outputs[0], str) else ""
    answer = outputs[-1] if len(outputs) > 1 and isinstance(outputs[-1], str) else ""
    return None, None, True, [*outputs, json.dumps({"caption": caption, "answer": answer})], None


@_canonical_doc
def doc_to_text_sm(doc, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None, previous_round_info=None):
    return _socratic("sm", doc, lmms_eval_specific_kwargs, previous_output, round_idx)


@_canonical_doc
def doc_to_text_sm_cot(doc, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None,
                       previous_round_info=None):
    return _socratic("sm_cot", doc, lmms_eval_specific_kwargs, previous_output, round_idx)


@_canonical_doc
def doc_to_target(doc: Mapping) -> str:
    return doc["answer"]


@_canonical_doc
def doc_to_target_freeform(doc: Mapping) -> str:
    return doc["correct_intention"]


# ------------------------------------------------------------------------------- scoring

# Each setting's record, fanned out to its YAML's metrics (metric names are never substrings of one another:
# lmms-eval matches group entries as substrings).
def _results(setting: str, score) -> ResultsHook:
    return ResultsHook(f"vague.process_results_{setting}",
                       lambda doc, results: score(doc, results[0] if results else "", setting))


PROCESS_RESULTS = {**{s: _results(s, score_mcq) for s in ("lm", "sm", "sm_gpt", "vlm", "vlm_cot", "sm_cot")},
                   **{s: _results(s, score_freeform) for s in ("freeform", "freeform_cot")}}


