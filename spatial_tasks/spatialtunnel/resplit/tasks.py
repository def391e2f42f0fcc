"""lmms-eval hooks of the re-split tasks (tasks/spatialtunnel/spatialtunnel_*_split.yaml).

Prompts and images are lmms-eval's own ``embspatial`` and ``cv_bench`` task functions (called
through ``harness.upstream``, not re-implemented). Answers are read by lmms-eval's reader by default (the task's ``metadata:
answer_reader: lmms_eval``), so Acc over all depth questions is what lmms-eval's task reports on
them. That reader takes the first character when it is a letter: "The answer is (B)" reads as T
and "Answer: C" as A. ``answer_reader: spatial_tasks`` uses the project's one multiple-choice reader
(common/choice.py) instead. With either, a letter that names no option is counted unparseable
(and scored wrong, as lmms-eval scores it). Each record adds the question's relation
(resplit/docs.py).
"""

from __future__ import annotations

import datasets

from spatial_tasks.common.choice import LETTERS, SELECTED, read_choice
from spatial_tasks.common.validate import DataError
from spatial_tasks.harness import (  # noqa: F401 (the prompt and image functions: lmms-eval's own, for the YAMLs)
    DocsHook,
    ResultsHook,
    TaskData,
    cv_bench_answer_letter,
    cv_bench_doc_to_text,
    cv_bench_doc_to_visual,
    embspatial_answer_letter,
    embspatial_doc_to_messages,
    embspatial_doc_to_text,
    embspatial_doc_to_visual,
)
from spatial_tasks.spatialtunnel.resplit import docs, metrics

SOURCES = ("embspatial", "cv_bench_3d")


def task_docs(dataset: datasets.Dataset, data: TaskData) -> datasets.Dataset:
    """The re-split of the task's source benchmark (its YAML's ``metadata.source``), answers read
    with ``metadata.answer_reader``."""
    source = data.metadata.get("source")
    if source not in SOURCES:
        raise DataError(f"{data.task}: metadata.source {source!r} is not one of {list(SOURCES)}")
    reader = str(data.metadata.get("answer_reader", "lmms_eval"))
    return docs.resplit_docs(dataset, source, data.origin(dataset), answer_reader=reader)


# Every re-split task's process_docs.
process_docs = DocsHook("spatialtunnel_resplit.process_docs", task_docs)


def read_letter(doc: dict, response: str, options: list) -> str:
    """The option letter an answer gives, by the doc's ``answer_reader`` (module docstring); ""
    when none, or when the letter names no option."""
    if doc.get("answer_reader") == "spatial_tasks":
        choice = read_choice(response, [str(o) for o in options])
        return LETTERS[choice.index] if choice.outcome == SELECTED else ""
    reader = embspatial_answer_letter if doc["resplit_source"] == "embspatial" else cv_bench_answer_letter
    letter = reader(response)
    return letter if letter and LETTERS.index(letter) < len(options) else ""


def _record(doc: dict, question_id: object, gold: str, parsed: str, response: str) -> dict:
    return {"benchmark": metrics.BENCHMARK, "source": doc["resplit_source"], "question_id": str(question_id),
            "relation": doc["depth_split"], "dy": doc["dy"], "image_height": doc["image_height"], "answer": gold,
            "parsed": parsed or "unparseable", "score": float(parsed == gold), "response": response,
            "answer_reader": doc.get("answer_reader", "lmms_eval")}


def _embspatial_record(doc: dict, results: list[str]) -> dict:
    response = results[0] if results else ""
    parsed = read_letter(doc, response, doc["answer_options"])
    return _record(doc, doc["question_id"], LETTERS[doc["answer"]], parsed, response)


def _cv_bench_record(doc: dict, results: list[str]) -> dict:
    response = results[0] if results else ""
    parsed = read_letter(doc, response, doc["choices"])
    return _record(doc, doc["idx"], str(doc["answer"]).strip("()"), parsed, response)


# Each source's record, fanned out to the metrics its YAML declares (_resplit_metrics_yaml).
process_results_embspatial_depth = ResultsHook("spatialtunnel_resplit.process_results_embspatial_depth",
                                               _embspatial_record)
process_results_cv_bench_depth = ResultsHook("spatialtunnel_resplit.process_results_cv_bench_depth", _cv_bench_record)


