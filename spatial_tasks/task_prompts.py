"""``spatial-tasks prompts BENCHMARK``: a benchmark's whole prompt space when it offers one (its
``PromptSpace``: O3-D's 1,026 questions), else the prompts a model is shown, rendered by
lmms-eval's own task objects (the same YAML, hooks and prompt parameters as a run) from the bundled
``*_sample`` tasks, offline -- one per kind of question (its ``prompt_kind``: DORI task x
granularity, SpatialTunnel question template; none: one per task)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from spatial_tasks.benchmark import PromptSpace
from spatial_tasks.catalog import task_catalog
from spatial_tasks.registry import benchmarks, get


def prompt_benchmarks() -> tuple[str, ...]:
    """The benchmarks with prompts to list: a prompt space, or task YAMLs of their own (the
    re-splits' tasks are listed with SpatialTunnel's, whose folder they share)."""
    return tuple(name for name, b in benchmarks().items()
                 if b.offers(PromptSpace) is not None or not isinstance(b.tasks_dir, str) or b.tasks_dir == name)


def prompts(benchmark: str) -> Iterator[dict]:
    """Every prompt line ``spatial-tasks prompts BENCHMARK`` prints."""
    space = get(benchmark).offers(PromptSpace)
    if space is not None:
        yield from space.prompts()
    else:
        yield from sample_prompts(benchmark)


def sample_tasks(benchmark: str) -> list[str]:
    """The benchmark's bundled-sample tasks (they need no network)."""
    return [e.name for e in task_catalog()
            if e.kind == "task" and e.benchmark == benchmark and e.source.startswith("bundled sample")]


def sample_prompts(benchmark: str) -> Iterator[dict]:
    """{"task", "id", "prompt"} for each kind of question of each bundled-sample task."""
    from spatial_tasks import harness

    harness.install()
    from lmms_eval.tasks import TaskManager, get_task_dict

    names = sample_tasks(benchmark)
    tasks = get_task_dict(names, TaskManager())
    kind = get(benchmark).prompt_kind
    for name in names:
        task = tasks[name]
        docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
        seen: set = set()
        for doc in docs:
            key = kind(doc) if kind else None
            if key in seen:
                continue
            seen.add(key)
            yield {"task": name, "id": _doc_id(doc), "prompt": task.doc_to_text(doc)}
            if kind is None:
                break


def _doc_id(doc: Mapping) -> str | None:
    for field in ("question_id", "item_id"):
        if doc.get(field) is not None:
            return str(doc[field])
    return None
