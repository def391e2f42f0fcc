"""O3-D's ``process_results``: one record per doc, holding what the metrics and
``spatial-tasks rescore o3d --format lmms-samples`` need, fanned out to the task's metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spatial_tasks.harness import fan_out
from spatial_tasks.o3d.parse import is_correct, parse_answer
from spatial_tasks.o3d.prompts import parse_prompt
from spatial_tasks.o3d.schema import BENCHMARK
from spatial_tasks.o3d.task_metrics import (
    BASIC_METRICS,
    ICL_METRICS,
    LANGUAGE_METRICS,
    MARKERS_METRICS,
    REAL_METRICS,
)

RECORD_FIELDS = (
    "benchmark", "question_id", "subset_name", "image_name", "image_family", "in_paper", "synthetic",
    "is_real", "is_marked", "icl", "question", "ques_clarity", "clarity_level", "query", "order",
    "formality", "vocabulary", "cues", "cue_strength", "gt_position", "response", "label", "correct",
)


def record(doc: Mapping[str, Any], response: str, *, icl: bool = False) -> dict:
    """The per-doc record (fields of ``spatial_tasks.o3d.metrics`` plus what re-scoring needs)."""
    response = response if isinstance(response, str) else ("" if response is None else str(response))
    label = parse_answer(response, doc["question"])
    tags = parse_prompt(doc["question"])
    return {
        "benchmark": BENCHMARK,
        "question_id": doc["question_id"],
        "subset_name": doc["subset_name"],
        "image_name": doc["image_name"],
        "image_family": doc["released_family"],  # the authors' family name (kb-1cue, o3dcf-real, ...)
        "in_paper": True,  # an official-layout row (rescore.summarise_model's Table 12 selection)
        "synthetic": bool(doc["synthetic"]),
        "is_real": not doc["synthetic"],
        "is_marked": bool(doc["is_marked"]),
        "icl": icl,
        "question": doc["question"],
        "ques_clarity": doc["ques_clarity"],
        "clarity_level": tags.clarity_level if tags else doc["clarity_level"],
        "query": tags.query if tags else None,
        "order": tags.order if tags else None,
        "formality": tags.formality if tags else None,
        "vocabulary": tags.vocabulary if tags else None,
        "cues": list(doc["cues"] or []),
        "cue_strength": doc["cue_strength"],
        "gt_position": doc["gt_position"],
        "response": response,
        "label": label,
        "correct": is_correct(label, doc["gt_position"]),
    }


def rescored(rec: Mapping[str, Any]) -> dict:
    """A logged record re-parsed from its own response and question (what rescoring does)."""
    label = parse_answer(rec.get("response"), rec.get("question"))
    return {**rec, "label": label, "correct": is_correct(label, rec.get("gt_position"))}


def _first(results: Sequence[Any]) -> str:
    first = results[0] if results else ""
    while isinstance(first, (list, tuple)):
        first = first[0] if first else ""
    return first if isinstance(first, str) else ("" if first is None else str(first))


def process_results_basic(doc, results):
    return fan_out(record(doc, _first(results)), BASIC_METRICS)


def process_results_language(doc, results):
    return fan_out(record(doc, _first(results)), LANGUAGE_METRICS)


def process_results_markers(doc, results):
    return fan_out(record(doc, _first(results)), MARKERS_METRICS)


def process_results_real(doc, results):
    return fan_out(record(doc, _first(results)), REAL_METRICS)


def process_results_icl(doc, results):
    return fan_out(record(doc, _first(results), icl=True), ICL_METRICS)
