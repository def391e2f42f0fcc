"""ToyBench's spatial_baseline rules."""

from spatial_tasks.common.baseline_rules import rule


@rule("toybench", "oracle")
def oracle(doc: dict, **_) -> str:
    return doc["answer"]


@rule("toybench", "always_yes")
def always_yes(doc: dict, **_) -> str:
    return "Yes."
