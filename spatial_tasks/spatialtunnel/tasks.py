"""lmms-eval hooks for the SpatialTunnel tasks (tasks/spatialtunnel/*.yaml point here).

Two protocols share docs and metrics:
* exact match (``spatialtunnel``): parse Yes/No from generated text, score 1/0 (paper Table 8);
* first-token logits (``spatialtunnel_logit``): p = sigma(l_Yes - l_No), score p or 1 - p
  (paper Table 3); needs a ``*_yesno`` model, which returns its logits in the response.
"""

from __future__ import annotations

import functools

import datasets
from PIL import Image

from spatial_tasks.common import images, prompts
from spatial_tasks.common.errors import stop_run
from spatial_tasks.common.validate import DataError, reads_docs
from spatial_tasks.common.yesno import scores_payloads
from spatial_tasks.harness import DocsHook, ResultsHook, TaskData, pool_subtasks  # noqa: F401
from spatial_tasks.spatialtunnel import load
from spatial_tasks.spatialtunnel.records import (  # noqa: F401
    LogitsMissingError,
    exact_match_record,
    logit_record,
)

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs("spatialtunnel", ("question_id", "question", "answer", "image"))

DEFAULT_PROMPT_KWARGS = {"pre_prompt": "", "answer_suffix": " Answer with yes or no."}



def task_docs(dataset: datasets.Dataset, data: TaskData) -> datasets.Dataset:
    """The loaded split, checked and mapped onto canonical docs of the task's variant (its YAML's
    ``metadata.variant``: the official tables do not say it); an official table's grid is the task's
    ``metadata.grid`` (the paper's 16)."""
    variant = data.metadata.get("variant")
    if variant not in load.VARIANTS:
        raise DataError(f"{data.task}: metadata.variant {variant!r} is not one of {list(load.VARIANTS)}")
    return load.to_docs(dataset, data.origin(dataset), variant, grid=data.metadata.get("grid", 16))


# Every SpatialTunnel task's process_docs (the re-splits have theirs: resplit/tasks.py).
process_docs = DocsHook("spatialtunnel.process_docs", task_docs)


@_canonical_doc
def doc_to_visual(doc: dict) -> list[Image.Image]:
    return [images.open_ref(doc["image"])]


@_canonical_doc
def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = {**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}
    return prompts.render("spatialtunnel", "question.jinja", question=doc["question"], **kwargs)


@_canonical_doc
def doc_to_target(doc: dict) -> str:
    return doc["answer"]


# lmms-eval calls process_results once per doc; the record is logged once (under "v") and every metric
# the task's YAML declares gets it (spatial_tasks.harness.ResultsHook). Per-cell grids are not metrics
# (they would fill lmms-eval's table): the records carry the cells, and `rescore` / `report` draw the grid.
process_results = ResultsHook("spatialtunnel.process_results", _canonical_doc(exact_match_record))


def _stop_on_text(record):
    """A logit task scored with a model that returns text fails the same way on every doc: the run
    stops at the first one, in one line (exit 2), instead of lmms-eval retrying each doc for 16 s
    and exiting 0 after a traceback."""
    @functools.wraps(record)
    def checked(doc, results):
        try:
            return record(doc, results)
        except LogitsMissingError as error:
            stop_run(f"spatial-tasks: {error}")
    return checked


process_results_logit = ResultsHook("spatialtunnel.process_results_logit",
                                    scores_payloads(_stop_on_text(_canonical_doc(logit_record))))


