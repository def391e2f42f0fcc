"""Thin lmms-eval hooks: nothing runs here. Where DORI lives:

- hooks the YAMLs name: spatial_tasks/dori/tasks.py (process_docs, doc_to_*, process_results); the aggregations are
  the metric table dori/metrics.py TASK_METRICS, registered with lmms-eval as dori_<metric>
- data enters, checked once: spatial_tasks/dori/load.py (every layout read; schema.py the doc)
- prompts: tasks/dori/prompts/*.jinja
- answer parser: spatial_tasks/common/choice.py (the project's one multiple-choice reader)
- metrics: spatial_tasks/dori/metrics.py, soft accuracy spatial_tasks/dori/soft.py
- generator: generators/dori/ (scene.py, sampling.py, generate.py)
"""

from spatial_tasks.dori.tasks import (  # noqa: F401
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    pool_subtasks,
    process_docs,
    process_results,
)
