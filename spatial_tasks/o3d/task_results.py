"""O3-D's process_results hooks: each task's record (``records.record``) logged once and fanned
out to its metric set (``spatial_tasks.harness.fan_out``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spatial_tasks.common.validate import reads_docs
from spatial_tasks.harness import fan_out
from spatial_tasks.o3d.records import record
from spatial_tasks.o3d.schema import BENCHMARK
from spatial_tasks.o3d.metric_sets import (
    BASIC_METRICS,
    ICL_METRICS,
    LANGUAGE_METRICS,
    MARKERS_METRICS,
    REAL_METRICS,
)

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs(BENCHMARK, ("question_id", "subset_name", "question", "gt_label"))


def _first(results: Sequence[Any]) -> str:
    first = results[0] if results else ""
    while isinstance(first, (list, tuple)):
        first = first[0] if first else ""
    return first if isinstance(first, str) else ("" if first is None else str(first))


@_canonical_doc
def process_results_basic(doc, results):
    return fan_out(record(doc, _first(results)), BASIC_METRICS)


@_canonical_doc
def process_results_language(doc, results):
    return fan_out(record(doc, _first(results)), LANGUAGE_METRICS)


@_canonical_doc
def process_results_markers(doc, results):
    return fan_out(record(doc, _first(results)), MARKERS_METRICS)


@_canonical_doc
def process_results_real(doc, results):
    return fan_out(record(doc, _first(results)), REAL_METRICS)


@_canonical_doc
def process_results_icl(doc, results):
    return fan_out(record(doc, _first(results), icl=True), ICL_METRICS)
