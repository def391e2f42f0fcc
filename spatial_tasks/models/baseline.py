"""``spatial_baseline``: a reference model that answers from the doc's ground-truth geometry.

For sanity checks and demos: ``--model spatial_baseline --model_args rule=vertical``. Each
benchmark registers its own rules with ``@rule(benchmark, name)`` in the module its description
names (``Benchmark.baselines``, e.g. spatial_tasks/spatialtunnel/baselines.py); the benchmark is
the doc's ``benchmark`` field, else the task name's prefix.
A rule receives the canonical doc and the extra model_args (and the task name, if it has a ``task``
parameter) and returns the response text.
"""

from __future__ import annotations

import importlib
import inspect

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from tqdm import tqdm

from spatial_tasks.common.baseline_rules import RULES, RuleFn


def rule_modules() -> dict[str, str]:
    """benchmark -> the module that registers its rules (imported on first use: it may be heavy)."""
    from spatial_tasks.registry import benchmarks

    return {name: b.baselines.module for name, b in benchmarks().items() if b.baselines is not None}


def benchmark_of(doc: dict, task_name: str) -> str:
    """The doc's ``benchmark`` field (every canonical doc has one), else the task-name prefix."""
    modules = rule_modules()
    if doc.get("benchmark") in modules:
        return doc["benchmark"]
    for benchmark in sorted(modules, key=len, reverse=True):
        if task_name.startswith(benchmark):
            return benchmark
    raise ValueError(f"spatial_baseline: task {task_name!r} belongs to no benchmark with baseline rules "
                     f"({', '.join(sorted(modules))})")


def rules_for(benchmark: str) -> dict[str, RuleFn]:
    importlib.import_module(rule_modules()[benchmark])
    return RULES.get(benchmark, {})


class SpatialBaseline(lmms):
    # batch_size/device/max_batch_size are passed by lmms-eval to every model; a rule needs none.
    def __init__(self, rule: str = "oracle", batch_size=1, device=None, max_batch_size=None, **rule_args) -> None:
        super().__init__()
        self.rule_name = rule
        self.rule_args = rule_args  # e.g. pretrained=PATH for O3-D's depth_model rule

    def _rule(self, doc: dict, task: str) -> RuleFn:
        benchmark = benchmark_of(doc, task)
        available = rules_for(benchmark)
        if self.rule_name not in available:
            raise ValueError(f"spatial_baseline: unknown rule {self.rule_name!r} for {benchmark}; "
                             f"choose one of {sorted(available)}")
        return available[self.rule_name]

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for request in tqdm(requests, desc=f"spatial_baseline[{self.rule_name}]", disable=len(requests) < 50):
            _context, _gen_kwargs, _doc_to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            fn = self._rule(doc, task)
            # A rule that answers differently per task (VAGUE: MCQ vs free-form) takes ``task``.
            extra = {"task": task} if "task" in inspect.signature(fn).parameters else {}
            out.append(fn(doc, **extra, **self.rule_args))
        return out

    def loglikelihood(self, requests):
        raise NotImplementedError("spatial_baseline answers generation requests only")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("spatial_baseline answers single-round requests only")
