"""ToyBench's lmms-eval hooks."""

from spatial_tasks.toybench import core

from spatial_tasks.harness import DocsHook

process_docs = DocsHook("toybench.process_docs", core.docs)


def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return f"{doc['question']} Answer Yes or No."


def process_results(doc, results):
    return {"acc": core.record(doc, results[0] if results else "")}


def agg_acc(items):
    return core.accuracy(items)
