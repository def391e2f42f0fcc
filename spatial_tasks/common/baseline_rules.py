"""The ``spatial_baseline`` rules, by benchmark: each benchmark's baselines module registers its own
with ``@rule(benchmark, name)``; ``spatial_tasks.models.baseline`` (the lmms-eval model) imports those
modules and answers with the rule asked for. Kept apart from the model so that registering a rule
imports nothing heavy and nothing imports back."""

from __future__ import annotations

from collections.abc import Callable

RuleFn = Callable[..., str]
RULES: dict[str, dict[str, RuleFn]] = {}


def rule(benchmark: str, name: str) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        RULES.setdefault(benchmark, {})[name] = fn
        return fn

    return register
