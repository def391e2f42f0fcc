"""Hugging Face ``evaluate`` modules of the registered benchmarks, made on demand.

``evaluate.load`` takes a module as a file; each benchmark's is the same few lines naming it
(``module_file``), written once into a cache folder, so a benchmark added to the registry has its
module with no file of its own. The metric class is ``base.BenchmarkMetric``.
"""

from __future__ import annotations

import os
from pathlib import Path

from spatial_tasks.paths import cache_folder

TEMPLATE = '''"""{title} metrics as a local, offline Hugging Face ``evaluate`` module:

    import evaluate, spatial_tasks
    metric = evaluate.load(spatial_tasks.metric_module("{name}"))
    metric.compute(predictions=[...], references=[...])

The figures are those of ``spatial-tasks rescore {name}`` (``spatial_tasks.results.hf_evaluate``).
Written by spatial_tasks.metric_modules.module_file.
"""

# a module, not the class: evaluate takes the first Metric class it finds in this namespace
from spatial_tasks.metric_modules import base


class {cls}(base.BenchmarkMetric):
    benchmark = "{name}"
'''


def module_file(benchmark: str) -> Path:
    """The ``evaluate`` module of a registered benchmark that scores questions (written if absent
    or stale; an unknown name is a ValueError listing the known ones)."""
    from spatial_tasks.registry import get
    from spatial_tasks.results.hf_evaluate import scoring_benchmarks

    if benchmark not in scoring_benchmarks():
        raise ValueError(f"no metric module for {benchmark!r}; choose one of {', '.join(scoring_benchmarks())}")
    spec = get(benchmark)
    cls = "".join(ch for ch in spec.title.title() if ch.isalnum()) + "Metrics"
    text = TEMPLATE.format(title=spec.title, name=spec.name, cls=cls)
    path = cache_folder() / "evaluate" / spec.name / f"{spec.name}.py"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)  # two processes writing the same text: either one wins whole
    return path
