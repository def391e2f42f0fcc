"""lmms-eval hooks for the SpatialTunnel tasks (tasks/spatialtunnel/*.yaml point here).

Two protocols share docs and metrics:
* exact match (``spatialtunnel``): parse Yes/No from generated text, score 1/0 (paper Table 8);
* first-token logits (``spatialtunnel_logit``): p = sigma(l_Yes - l_No), score p or 1 - p
  (paper Table 3); needs a ``*_yesno`` model, which returns its logits in the response.
"""

from __future__ import annotations

from typing import Literal

import datasets
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from spatial_tasks.common import images, prompts
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.validate import reads_docs
from spatial_tasks.common.yesno import UNPARSEABLE, decode_payload, is_payload, parse_yes_no
from spatial_tasks.harness import DocsHook, TaskData, aggregation, fan_out, pool_subtasks  # noqa: F401
from spatial_tasks.spatialtunnel import load, metrics

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs("spatialtunnel", ("question_id", "question", "answer", "image"))

DEFAULT_PROMPT_KWARGS = {"pre_prompt": "", "answer_suffix": " Answer with yes or no."}
_RECORD_FIELDS = ("benchmark", "question_id", "image_id", "variant", "template_id", "answer", "relation",
                  "relation_two_way", "theta1_index", "theta2_index", "grid", "size1_nominal")


class LogitsMissingError(UserError, RuntimeError):
    pass


class LoggedQuestion(BaseModel):
    """What re-scoring reads of a logged record (``_RECORD_FIELDS`` + response), checked by
    ``spatial-tasks rescore`` so that an edited or foreign record is an error, never a score."""

    model_config = ConfigDict(extra="allow")
    question_id: str
    variant: Literal["phase", "size"]
    template_id: int = Field(ge=1, le=4)
    answer: Literal["Yes", "No"]
    relation: Literal["consistent", "counter", "ambiguous", "unknown"]
    relation_two_way: Literal["consistent", "counter", "unknown"]
    grid: int | None = Field(default=None, ge=2)
    theta1_index: int | None = Field(default=None, ge=0)
    theta2_index: int | None = Field(default=None, ge=0)
    size1_nominal: float | None = Field(default=None, allow_inf_nan=False)
    protocol: Literal["exact", "logit"] | None = None
    response: str | None = None


def _docs(variant: str):
    def build(dataset: datasets.Dataset, data: TaskData) -> datasets.Dataset:
        """The loaded split, checked and mapped onto canonical docs of the task's variant; an
        official table's grid is the task's ``metadata.grid`` (the paper's 16)."""
        return load.to_docs(dataset, data.origin(dataset), variant, grid=data.metadata.get("grid", 16))

    return build


# lmms-eval ``process_docs`` of the phase and size tasks (the variant is the task's: the official
# tables do not say it).
process_docs_phase = DocsHook("spatialtunnel.process_docs_phase", _docs("phase"))
process_docs_size = DocsHook("spatialtunnel.process_docs_size", _docs("size"))


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


def _record(doc: dict, response: str) -> dict:
    """Everything the metrics need, so saved samples can be re-scored without the dataset."""
    return {**{k: doc.get(k) for k in _RECORD_FIELDS}, "response": response}


def exact_match_record(doc: dict, results: list[str]) -> dict:
    response = results[0] if results else ""
    parsed = parse_yes_no(response)
    return {**_record(doc, response), "protocol": "exact", "parsed": parsed, "score": float(parsed == doc["answer"])}


def logit_record(doc: dict, results: list[str]) -> dict:
    """The first-token record: score = p (answer Yes) or 1 - p (answer No). A payload whose logits
    are NaN, or that is malformed, is unparseable and scores 0 (wrong), like unparseable text."""
    response = results[0] if results else ""
    if not is_payload(response):
        raise LogitsMissingError(
            "spatialtunnel_logit scores first-token Yes/No logits, but the model returned plain text "
            f"({str(response)[:60]!r}). Run it with a model that returns logits: --model hf_yesno (any "
            "transformers image-text model), qwen2_5_vl_yesno (or spatial_baseline); use the exact-match task 'spatialtunnel' for any other model."
        )
    payload = decode_payload(response)
    if payload is None or not payload.finite:
        return {**_record(doc, response), "protocol": "logit", "parsed": UNPARSEABLE, "p_yes": None, "score": 0.0}
    p = payload.p_yes
    score = p if doc["answer"] == "Yes" else 1.0 - p
    return {**_record(doc, response), "protocol": "logit", "parsed": payload.answer, "p_yes": p, "score": score}


# lmms-eval calls process_results once per doc; the record is logged once (under "v") and every
# metric gets it (spatial_tasks.harness). Per-cell grids are not metrics (they would fill
# lmms-eval's table): the records carry the cells, and `rescore` / `report` draw the grid.
PHASE_METRICS = ("v", "v_cons", "v_ctr", "delta", "v_amb", "unparseable")
SIZE_METRICS = ("v", "v_cons", "v_ctr", "delta", "v_s010", "v_s030", "delta_s", "unparseable")


@_canonical_doc
def process_results_phase(doc, results):
    return fan_out(exact_match_record(doc, results), PHASE_METRICS)


@_canonical_doc
def process_results_size(doc, results):
    return fan_out(exact_match_record(doc, results), SIZE_METRICS)


@_canonical_doc
def process_results_logit_phase(doc, results):
    return fan_out(logit_record(doc, results), PHASE_METRICS)


@_canonical_doc
def process_results_logit_size(doc, results):
    return fan_out(logit_record(doc, results), SIZE_METRICS)


def _v_cons(records):
    """v_cons (Table 3) / Acc_con (Table 8): consistent pairs (the farther object higher)."""
    return metrics.mean_by_relation(records, "consistent")


def _v_ctr(records):
    """v_ctr (Table 3) / Acc_ctr (Table 8): counter pairs (the farther object lower)."""
    return metrics.mean_by_relation(records, "counter")


def _v_amb(records):
    """v over the ambiguous pairs (|dy| < 5% of the image height), reported separately."""
    return metrics.mean_by_relation(records, "ambiguous", two_way=False)


def _v_s010(records):
    """v(s1 = 0.1) (Table 9): the far object small, size consistent with depth."""
    return metrics.mean_at_size(records, metrics.SIZE_SMALL_FAR)


def _v_s030(records):
    """v(s1 = 0.3) (Table 9): the far object large, size conflicting with depth."""
    return metrics.mean_at_size(records, metrics.SIZE_LARGE_FAR)


# Aggregations: thin wrappers over spatial_tasks.spatialtunnel.metrics (groups pool the records).
agg_v = aggregation("v", metrics.mean_score)
agg_v_cons = aggregation("v_cons", _v_cons)
agg_v_ctr = aggregation("v_ctr", _v_ctr)
agg_delta = aggregation("delta", metrics.consistency_gap)
agg_v_amb = aggregation("v_amb", _v_amb)
agg_v_s010 = aggregation("v_s010", _v_s010)
agg_v_s030 = aggregation("v_s030", _v_s030)
agg_delta_s = aggregation("delta_s", metrics.size_gap)
agg_unparseable = aggregation("unparseable", metrics.unparseable_share)
