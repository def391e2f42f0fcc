"""``spatial-tasks prompts BENCHMARK`` for the benchmarks without an enumerable prompt space: the
prompts a model is shown, rendered by lmms-eval's own task objects (the same YAML, hooks and
prompt parameters as a run) from the bundled ``*_sample`` tasks, offline -- one per kind of
question (DORI: task x granularity; SpatialTunnel: question template; VAGUE: setting).
O3-D's 1,026 prompts are enumerated by ``o3d.prompts.prompt_space`` instead."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from spatial_tasks.catalog import task_catalog

# What makes two docs show a different kind of prompt (None: the task's first doc stands for all).
KIND: dict[str, Callable[[Mapping], object] | None] = {
    "dori": lambda d: (d["task"], d["granularity"]),
    "spatialtunnel": lambda d: d.get("template_id"),
    "vague": None,
}


def sample_tasks(benchmark: str) -> list[str]:
    """The benchmark's bundled-sample tasks (they need no network)."""
    return [e.name for e in task_catalog()
            if e.kind == "task" and e.path.parent.name == benchmark and e.source.startswith("bundled sample")]


def sample_prompts(benchmark: str) -> Iterator[dict]:
    """{"task", "id", "prompt"} for each kind of question of each bundled-sample task."""
    from spatial_tasks import harness

    harness.install()
    from lmms_eval.tasks import TaskManager, get_task_dict

    names = sample_tasks(benchmark)
    tasks = get_task_dict(names, TaskManager())
    kind = KIND[benchmark]
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
