"""Thin lmms-eval hooks: nothing runs here. Where O3-D lives:

- hooks the YAMLs name: spatial_tasks/o3d/tasks.py, which gathers task_docs.py (process_docs),
  model_input.py (doc_to_*) and task_results.py (process_results); the aggregations are the metric table
  metric_sets.py METRICS, registered with lmms-eval as o3d_<metric>
- data enters, checked once: spatial_tasks/o3d/load.py (schema.py the official layout and the doc)
- prompts: tasks/o3d/prompts/*.jinja; the question space: spatial_tasks/o3d/prompts.py
- answer parser: spatial_tasks/o3d/parse.py (the authors' evaluator, rule for rule)
- metrics: spatial_tasks/o3d/metrics.py
- generator: generators/o3d/ (scene.py, layout.py, sampling.py, generate.py)
"""

from spatial_tasks.o3d.tasks import (  # noqa: F401
    doc_to_messages_icl,
    doc_to_target,
    doc_to_text,
    doc_to_text_icl,
    doc_to_visual,
    doc_to_visual_icl,
    pool_subtasks,
    process_docs,
    process_results,
    process_results_icl,
)
