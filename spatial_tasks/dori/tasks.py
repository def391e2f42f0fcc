"""lmms-eval hooks for the DORI tasks (tasks/dori/*.yaml point here through tasks/dori/utils.py).

One task per (task, granularity). ``process_docs`` maps the loaded split onto canonical docs
(``load.py``) and keeps that task's questions; the option order is shuffled there with the
task's ``seed`` (a ``lmms_eval_specific_kwargs`` entry, default 42), so the prompt and the
scoring see the same order. The record of every answer holds what the metrics and reports need,
so saved samples re-score without the dataset (``spatial-tasks rescore dori``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

import datasets
from PIL import Image, ImageDraw

from spatial_tasks.common import images, prompts
from spatial_tasks.common.origin import calling_task, origin_of
from spatial_tasks.common.pooling import aggregation, fan_out, pool_subtasks  # noqa: F401
from spatial_tasks.dori import load, metrics, soft
from spatial_tasks.dori.parse import LETTERS, SELECTED, parse_selection
from spatial_tasks.dori.schema import BENCHMARK, GRANULARITIES, TASKS, TWO_IMAGE_TASKS, TWO_OBJECT_TASKS

DEFAULT_PROMPT_KWARGS = {
    "pre_prompt": "",
    "answer_format": "Give your selection first as the option's letter, then one or two sentences of reasoning "
                     "(for example: \"B. The front of the object points to the right.\").",
    "seed": load.DEFAULT_SEED,
    "draw_boxes": "auto",
}
BOX_COLOURS = {"A": (255, 40, 40), "B": (40, 110, 255)}


# ---------------------------------------------------------------------------------- docs


def _seed(value: object) -> int:
    try:
        seed = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"DORI: the task argument seed must be an integer, got {value!r}") from None
    if seed < 0:
        raise ValueError(f"DORI: the task argument seed must be >= 0, got {seed}")
    return seed


def docs_for(dataset: datasets.Dataset, task: str | None, granularity: str | None,
             seed: int | None = None) -> datasets.Dataset:
    """The canonical docs of one DORI task (None: every task / granularity) from a loaded split.

    A split with a ``dori_source`` column (tasks/dori/source.json) names where the official data
    is: that source ($SPATIAL_TASKS_DORI_SOURCE overrides it) is discovered and loaded
    (``load.load_source``). Any other split is the data itself, in any layout ``load`` supports.
    """
    caller = calling_task(dataset) or {}
    if seed is None:
        seed = _seed({**DEFAULT_PROMPT_KWARGS, **caller.get("prompt_kwargs", {})}["seed"])
    if load.SOURCE_COLUMN in dataset.column_names:
        sources = {str(s) for s in dataset[load.SOURCE_COLUMN] if s}
        path = os.environ.get(load.SOURCE_ENV) or (sorted(sources) or [load.HUB_ID])[0]
        docs = load.source_docs(path, seed)
        where = path
    else:
        origin = origin_of(dataset, "dori")
        docs = load.to_docs(dataset, origin, hint=caller.get("task") or "", seed=seed)
        where = origin.label
    kept = load.select(docs, task, granularity)
    if not kept:
        found = sorted({f"{d['task']}_{d['granularity']}" for d in docs})
        wanted = " ".join(x for x in (task, granularity) if x) or "DORI"
        raise load.SourceError(f"{where}: no {wanted} questions (found: {found or 'no questions'})")
    return datasets.Dataset.from_list(kept)


def make_process_docs(task: str, granularity: str) -> Callable[[datasets.Dataset], datasets.Dataset]:
    def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
        return docs_for(dataset, task, granularity)

    process_docs.__name__ = f"process_docs_{task}_{granularity}"
    return process_docs


def process_docs_sample(dataset: datasets.Dataset) -> datasets.Dataset:
    """Every question of a split, both granularities (the bundled sample's ``dori_sample``)."""
    return docs_for(dataset, None, None)


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


DRAW_BOXES = ("auto", "always", "never")


def doc_to_visual(doc: Mapping, lmms_eval_specific_kwargs: Mapping | None = None) -> list[Image.Image]:
    """The question's image(s); the boxes are drawn on the first when the source image has none
    (``draw_boxes``: "auto" trusts the source -- the official images show them, our renders do
    not; "always" / "never" override it, e.g. for a release copy whose images lack them)."""
    mode = str({**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}["draw_boxes"])
    if mode not in DRAW_BOXES:
        raise ValueError(f"DORI: the task argument draw_boxes must be one of {DRAW_BOXES}, got {mode!r}")
    first = images.image_for(doc["image_source"], doc["image_row"])
    if doc["boxes"] and (mode == "always" or (mode == "auto" and not doc["boxes_drawn"])):
        first = draw_boxes(first, doc["boxes"])
    shown = [first]
    if doc.get("image2_source") is not None:
        shown.append(images.image_for(doc["image2_source"], doc["image2_row"]))
    return shown


def shown_options(doc: Mapping) -> list[str]:
    return [doc["options"][k] for k in doc["shown_order"]]


def answer_position(doc: Mapping) -> int:
    """Where the correct option is shown (0 = A)."""
    return list(doc["shown_order"]).index(doc["answer_index"])


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


def doc_to_text(doc: Mapping, lmms_eval_specific_kwargs: Mapping | None = None) -> str:
    kwargs = {**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}
    return prompts.render(BENCHMARK, f"{doc['task']}.jinja", granularity=doc["granularity"],
                          objects=_object_lines(doc), two_images=doc["task"] in TWO_IMAGE_TASKS,
                          options=shown_options(doc), letters=LETTERS, pre_prompt=kwargs["pre_prompt"],
                          answer_format=kwargs["answer_format"])


def doc_to_target(doc: Mapping) -> str:
    position = answer_position(doc)
    return f"{LETTERS[position]}. {doc['options'][doc['answer_index']]}"


# ------------------------------------------------------------------------------- scoring

# The record keeps what scoring reads from the doc (options, order, values), so `rescore dori`
# re-parses saved responses without the dataset.
_RECORD_FIELDS = ("benchmark", "question_id", "task", "granularity", "seed", "source", "category", "broad_classes",
                  "natural", "n_options", "options", "shown_order", "option_values", "answer_index")


def score(doc: Mapping, response: object) -> dict:
    """The per-answer record: what was chosen, hard and soft credit, and the breakdown keys."""
    shown = shown_options(doc)
    parsed = parse_selection(response, shown)
    values = json.loads(doc["option_values"]) if doc.get("option_values") else [None] * len(shown)
    chosen = doc["shown_order"][parsed.index] if parsed.index is not None else None
    correct = parsed.outcome == SELECTED and chosen == doc["answer_index"]
    truth = values[doc["answer_index"]]
    predicted = values[chosen] if chosen is not None and parsed.outcome == SELECTED else None
    return {
        **{k: doc.get(k) for k in _RECORD_FIELDS},
        "response": response if isinstance(response, str) else str(response),
        "outcome": parsed.outcome,
        "chosen": chosen,
        "chosen_text": doc["options"][chosen] if chosen is not None else None,
        "answer": doc["options"][doc["answer_index"]],
        "answer_shown": answer_position(doc),
        "predicted_value": predicted,
        "truth_value": truth,
        "correct": int(correct),
        "soft": soft.soft_credit(doc["task"], doc["granularity"], correct, predicted, truth),
    }


COARSE_METRICS = ("acc", "unparseable", "declined")
GRANULAR_METRICS = ("acc", "soft", "unparseable", "declined")


def process_results_coarse(doc, results):
    return fan_out(score(doc, results[0] if results else ""), COARSE_METRICS)


def process_results_granular(doc, results):
    return fan_out(score(doc, results[0] if results else ""), GRANULAR_METRICS)


def process_results_any(doc, results):
    """dori_sample mixes both granularities: every metric (soft = acc on coarse questions)."""
    return fan_out(score(doc, results[0] if results else ""), GRANULAR_METRICS)


agg_acc = aggregation("acc", metrics.accuracy)
agg_soft = aggregation("soft", metrics.soft_accuracy)
agg_unparseable = aggregation("unparseable", metrics.unparseable_share)
agg_declined = aggregation("declined", metrics.declined_share)


TASK_NAMES = tuple(f"{t}_{g}" for t in TASKS for g in GRANULARITIES)
