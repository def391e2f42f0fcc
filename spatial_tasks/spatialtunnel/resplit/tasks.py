"""lmms-eval hooks of the re-split tasks (tasks/spatialtunnel/spatialtunnel_*_split.yaml).

Prompts, images and answer reading are lmms-eval's own ``embspatial`` and ``cv_bench`` task
functions (imported, not re-implemented), so Acc over all depth questions is what lmms-eval's
task reports on them; each record adds the question's relation (resplit/docs.py).
"""

from __future__ import annotations

import datasets
from lmms_eval.tasks.cv_bench.utils import cv_bench_doc_to_text, cv_bench_doc_to_visual  # noqa: F401
from lmms_eval.tasks.embspatial.utils import (  # noqa: F401
    embspatial_doc_to_messages,
    embspatial_doc_to_text,
    embspatial_doc_to_visual,
)

from spatial_tasks.harness import (
    DocsHook,
    TaskData,
    aggregation,
    cv_bench_answer_letter,
    embspatial_answer_letter,
    fan_out,
)
from spatial_tasks.spatialtunnel.resplit import docs, metrics

METRICS = ("acc_all", "acc_cons", "acc_ctr", "delta", "acc_amb", "n_cons", "n_ctr", "n_amb", "unparseable")


def _docs(source: str):
    def build(dataset: datasets.Dataset, data: TaskData) -> datasets.Dataset:
        return docs.resplit_docs(dataset, source, data.origin(dataset))

    return build


process_docs_embspatial_depth = DocsHook("spatialtunnel.process_docs_embspatial_depth", _docs("embspatial"))
process_docs_cv_bench_depth = DocsHook("spatialtunnel.process_docs_cv_bench_depth", _docs("cv_bench_3d"))


def _record(doc: dict, question_id: object, gold: str, parsed: str, response: str) -> dict:
    return {"benchmark": metrics.BENCHMARK, "source": doc["resplit_source"], "question_id": str(question_id),
            "relation": doc["depth_split"], "dy": doc["dy"], "image_height": doc["image_height"], "answer": gold,
            "parsed": parsed or "unparseable", "score": float(parsed == gold), "response": response}


def process_results_embspatial_depth(doc: dict, results: list[str]) -> dict:
    response = results[0] if results else ""
    record = _record(doc, doc["question_id"], "ABCDEF"[doc["answer"]], embspatial_answer_letter(response), response)
    return fan_out(record, METRICS)


def process_results_cv_bench_depth(doc: dict, results: list[str]) -> dict:
    response = results[0] if results else ""
    record = _record(doc, doc["idx"], str(doc["answer"]).strip("()"), cv_bench_answer_letter(response), response)
    return fan_out(record, METRICS)


agg_acc_all = aggregation("acc_all", metrics.accuracy)
agg_acc_cons = aggregation("acc_cons", metrics.acc_consistent)
agg_acc_ctr = aggregation("acc_ctr", metrics.acc_counter)
agg_delta = aggregation("delta", metrics.gap)
agg_acc_amb = aggregation("acc_amb", metrics.acc_ambiguous)
agg_n_cons = aggregation("n_cons", metrics.n_consistent)
agg_n_ctr = aggregation("n_ctr", metrics.n_counter)
agg_n_amb = aggregation("n_amb", metrics.n_ambiguous)
agg_unparseable = aggregation("unparseable", metrics.unparseable_share)
