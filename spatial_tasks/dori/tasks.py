"""lmms-eval hooks for the DORI tasks (tasks/dori/*.yaml point here through tasks/dori/utils.py).

One task per (task, granularity). ``process_docs`` maps the task's data onto canonical docs
(``load.py``) and keeps that task's questions: the official release (a Hub id or a folder) is
discovered and read by ``load.load_source``; a data file the YAML names (the bundled sample, a
generated folder's parquet) is loaded by lmms-eval and mapped. The option order is shuffled there
with the task's ``seed`` (its ``lmms_eval_specific_kwargs`` entry, default 42), so the prompt and
the scoring see the same order. The record of every answer holds what the metrics and reports
need, so saved samples re-score without the dataset (``spatial-tasks rescore dori``).
"""

from __future__ import annotations

from collections.abc import Mapping

import datasets
from PIL import Image, ImageDraw

from spatial_tasks.common import images, prompts
from spatial_tasks.common.choice import LETTERS
from spatial_tasks.common.validate import reads_docs
from spatial_tasks.dori import load
from spatial_tasks.dori.records import answer_position, score, shown_options  # noqa: F401
from spatial_tasks.dori.schema import (
    BENCHMARK,
    DRAW_BOXES,
    GRANULARITIES,
    SOURCE,
    TASKS,
    TWO_IMAGE_TASKS,
    TWO_OBJECT_TASKS,
    check_prompt,
    prompt_seed,
)
from spatial_tasks.harness import DocsHook, ResultsHook, TaskData, pool_subtasks  # noqa: F401

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs(BENCHMARK, ("question_id", "task", "granularity", "options", "answer_index"))

DEFAULT_PROMPT_KWARGS = {
    "pre_prompt": "",
    "answer_format": "Give your selection first as the option's letter, then one or two sentences of reasoning "
                     "(for example: \"B. The front of the object points to the right.\").",
    "seed": load.DEFAULT_SEED,
    "draw_boxes": "auto",
}
BOX_COLOURS = {"A": (255, 40, 40), "B": (40, 110, 255)}


# ---------------------------------------------------------------------------------- docs


def reads_source(data: TaskData) -> bool:
    """A Hub id or a folder is discovered and read by ``load.load_source`` (the release declares no
    configs); a data file lmms-eval can load (``dataset_path: parquet``) is loaded by lmms-eval."""
    return not data.is_local_builder


def docs_for(dataset: datasets.Dataset | None, data: TaskData, task: str | None,
             granularity: str | None) -> datasets.Dataset:
    """The canonical docs of one DORI task (None: every task / granularity): from ``dataset`` (a
    split lmms-eval loaded), or from the source ``data`` names when ``dataset`` is None."""
    check_prompt({**DEFAULT_PROMPT_KWARGS, **data.prompt_kwargs})  # at the run's start, not at the first image
    seed = prompt_seed({**DEFAULT_PROMPT_KWARGS, **data.prompt_kwargs}["seed"])
    if dataset is None:
        docs = load.source_docs(data.path, seed, data.load_kwargs())
        where = data.label
    else:
        origin = data.origin(dataset)
        docs = load.to_docs(dataset, origin, hint=data.task, seed=seed)
        where = origin.label
    kept = load.select(docs, task, granularity)
    if not kept:
        found = sorted({f"{d['task']}_{d['granularity']}" for d in docs})
        wanted = " ".join(x for x in (task, granularity) if x) or "DORI"
        raise load.SourceError(f"{where}: no {wanted} questions (found: {found or 'no questions'})")
    return datasets.Dataset.from_list(kept)


def task_slice(data: TaskData) -> tuple[str | None, str | None]:
    """(task, granularity) the task's YAML ``metadata`` declares; absent: every task / granularity
    (the bundled sample's ``dori_sample``). A value that is neither is a clear error naming it."""
    task, granularity = data.metadata.get("task"), data.metadata.get("granularity")
    if task is not None and task not in TASKS:
        raise load.SourceError(f"{data.task}: metadata.task {task!r} is not a DORI task ({', '.join(TASKS)})")
    if granularity is not None and granularity not in GRANULARITIES:
        raise load.SourceError(f"{data.task}: metadata.granularity {granularity!r} is not one of {GRANULARITIES}")
    return task, granularity


# Every DORI task's process_docs: its slice (metadata task x granularity) of the source's questions.
process_docs = DocsHook("dori.process_docs", lambda dataset, data: docs_for(dataset, data, *task_slice(data)),
                        reads_source=reads_source, source=SOURCE)


# ------------------------------------------------------------------------------- showing


def draw_boxes(image: Image.Image, boxes: list[dict]) -> Image.Image:
    """A copy of ``image`` with each box outlined and labelled (A red, B blue, others green)."""
    image = image.copy()
    draw = ImageDraw.Draw(image)
    width = max(2, round(min(image.size) / 120))
    for item in boxes:
        colour = BOX_COLOURS.get(item["label"], (30, 200, 60))
        x0, y0, x1, y1 = item["box"]
        draw.rectangle([x0, y0, x1, y1], outline=colour, width=width)
        tx, ty = x0 + width, max(0, y0 - 12) if y0 >= 12 else y0 + width
        draw.rectangle([tx - 1, ty - 1, tx + 8, ty + 11], fill=colour)
        draw.text((tx + 1, ty), item["label"], fill=(255, 255, 255))
    return image


@_canonical_doc
def doc_to_visual(doc: Mapping, lmms_eval_specific_kwargs: Mapping | None = None) -> list[Image.Image]:
    """The question's image(s); the boxes are drawn on the first when the source image has none
    (``draw_boxes``: "auto" trusts the source -- the official images show them, our renders do
    not; "always" / "never" override it, e.g. for a release copy whose images lack them)."""
    mode = str({**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}["draw_boxes"])
    if mode not in DRAW_BOXES:
        raise ValueError(f"DORI: the task argument draw_boxes must be one of {DRAW_BOXES}, got {mode!r}")
    first = images.open_ref(doc["image"])
    if doc["boxes"] and (mode == "always" or (mode == "auto" and not doc["boxes_drawn"])):
        first = draw_boxes(first, doc["boxes"])
    shown = [first]
    if doc.get("image2") is not None:
        shown.append(images.open_ref(doc["image2"]))
    return shown


def _object_lines(doc: Mapping) -> list[str]:
    labels = [b["label"] for b in doc["boxes"] or []]
    if not labels and doc["boxes_drawn"]:  # the official images show the boxes; their labels are A (and B)
        labels = ["A", "B"] if doc["task"] in TWO_OBJECT_TASKS else ["A"]
    names = {"A": doc.get("object_a"), "B": doc.get("object_b")}
    where = " in the first image" if doc["task"] in TWO_IMAGE_TASKS else ""
    lines = []
    for label in labels:
        name = names.get(label)
        lines.append(f"Object {label} is the {name + ' ' if name else 'object '}in the box labelled {label}{where}.")
    return lines


@_canonical_doc
def doc_to_text(doc: Mapping, lmms_eval_specific_kwargs: Mapping | None = None) -> str:
    kwargs = {**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}
    return prompts.render(BENCHMARK, f"{doc['task']}.jinja", granularity=doc["granularity"],
                          objects=_object_lines(doc), two_images=doc["task"] in TWO_IMAGE_TASKS,
                          options=shown_options(doc), letters=LETTERS, pre_prompt=kwargs["pre_prompt"],
                          answer_format=kwargs["answer_format"])


@_canonical_doc
def doc_to_target(doc: Mapping) -> str:
    position = answer_position(doc)
    return f"{LETTERS[position]}. {doc['options'][doc['answer_index']]}"


# ------------------------------------------------------------------------------- scoring

# Every task's record (soft accuracy equals accuracy on a coarse question), fanned out to its YAML's metrics.
process_results = ResultsHook("dori.process_results",
                              _canonical_doc(lambda doc, results: score(doc, results[0] if results else "")))

