"""O3-D's process_results hooks: each doc's record (``records.record``), logged once and fanned out to
the metrics its task's YAML declares (``spatial_tasks.harness.ResultsHook``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spatial_tasks.common.validate import reads_docs
from spatial_tasks.harness import ResultsHook
from spatial_tasks.o3d.records import record
from spatial_tasks.o3d.schema import BENCHMARK

# Every doc hook reads a doc our loader made (a clear error otherwise, not a KeyError mid-run).
_canonical_doc = reads_docs(BENCHMARK, ("question_id", "subset_name", "question", "gt_label"))


def _first(results: Sequence[Any]) -> str:
    first = results[0] if results else ""
    while isinstance(first, (list, tuple)):
        first = first[0] if first else ""
    return first if isinstance(first, str) else ("" if first is None else str(first))


# Every task's record; the ICL task's also says which demonstrations it saw.
process_results = ResultsHook("o3d.process_results", _canonical_doc(lambda doc, results: record(doc, _first(results))))
process_results_icl = ResultsHook("o3d.process_results_icl",
                                  _canonical_doc(lambda doc, results: record(doc, _first(results), icl=True)))
