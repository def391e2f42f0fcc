"""lmms-eval hooks for the SpatialTunnel tasks (tasks/spatialtunnel/*.yaml point here).

Two protocols share docs and metrics:
* exact match (``spatialtunnel``): parse Yes/No from generated text, score 1/0 (paper Table 8);
* first-token logits (``spatialtunnel_logit``): p = sigma(l_Yes - l_No), score p or 1 - p
  (paper Table 3); needs a ``*_yesno`` model, which returns its logits in the response.
"""

from __future__ import annotations

import math

import datasets
from PIL import Image

from spatial_tasks.common import images, prompts
from spatial_tasks.common.origin import origin_of
from spatial_tasks.common.yesno import UNPARSEABLE, decode_payload, parse_yes_no
from spatial_tasks.spatialtunnel import load, metrics

DEFAULT_PROMPT_KWARGS = {"pre_prompt": "", "answer_suffix": " Answer with yes or no."}
_RECORD_FIELDS = ("benchmark", "question_id", "image_id", "variant", "template_id", "answer", "relation",
                  "relation_two_way", "theta1_index", "theta2_index", "grid", "size1_nominal")


class LogitsMissingError(RuntimeError):
    pass


def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """lmms-eval ``process_docs``: the loaded split, checked and mapped onto canonical docs."""
    return load.to_docs(dataset, origin_of(dataset, "spatialtunnel"))


def doc_to_visual(doc: dict) -> list[Image.Image]:
    return [images.image_for(doc["image_source"], doc["image_row"])]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = {**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}
    return prompts.render("spatialtunnel", "question.jinja", question=doc["question"], **kwargs)


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
    response = results[0] if results else ""
    payload = decode_payload(response)
    if payload is None:
        raise LogitsMissingError(
            "spatialtunnel_logit scores first-token Yes/No logits, but the model returned plain text "
            f"({response[:60]!r}). Run it with a model that returns logits, e.g. --model qwen2_5_vl_yesno "
            "(or spatial_baseline); use the exact-match task 'spatialtunnel' for any other model."
        )
    p = payload.p_yes
    score = p if doc["answer"] == "Yes" else 1.0 - p
    parsed = payload.answer if math.isfinite(p) else UNPARSEABLE
    return {**_record(doc, response), "protocol": "logit", "parsed": parsed, "p_yes": p, "score": score}


# lmms-eval calls process_results once per doc and passes the same record to every metric.
PHASE_METRICS = ("v", "v_cons", "v_ctr", "delta", "v_amb", "cell_grid")
SIZE_METRICS = ("v", "v_cons", "v_ctr", "delta", "v_s010", "v_s030", "delta_s")


def _fan_out(record: dict, names: tuple[str, ...]) -> dict:
    return {name: record for name in names}


def process_results_phase(doc, results):
    return _fan_out(exact_match_record(doc, results), PHASE_METRICS + ("unparseable",))


def process_results_size(doc, results):
    return _fan_out(exact_match_record(doc, results), SIZE_METRICS + ("unparseable",))


def process_results_logit_phase(doc, results):
    return _fan_out(logit_record(doc, results), PHASE_METRICS)


def process_results_logit_size(doc, results):
    return _fan_out(logit_record(doc, results), SIZE_METRICS)


# Aggregations: thin wrappers over spatial_tasks.spatialtunnel.metrics.
def agg_v(records):
    return metrics.mean_score(records)


def agg_v_cons(records):
    return metrics.mean_by_relation(records, "consistent")


def agg_v_ctr(records):
    return metrics.mean_by_relation(records, "counter")


def agg_delta(records):
    return metrics.consistency_gap(records)


def agg_v_amb(records):
    return metrics.mean_by_relation(records, "ambiguous", two_way=False)


def agg_cell_grid(records):
    return [[None if v is None else round(v, 4) for v in row] for row in metrics.cell_grid(records)]


def agg_v_s010(records):
    return metrics.mean_at_size(records, metrics.SIZE_SMALL_FAR)


def agg_v_s030(records):
    return metrics.mean_at_size(records, metrics.SIZE_LARGE_FAR)


def agg_delta_s(records):
    return metrics.size_gap(records)


def agg_unparseable(records):
    return metrics.unparseable_share(records)
