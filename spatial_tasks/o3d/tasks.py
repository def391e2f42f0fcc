"""lmms-eval hooks for the O3-D tasks (tasks/o3d/*.yaml point here through tasks/o3d/utils.py).

One canonical doc per ``visual_questions`` row (``spatial_tasks.o3d.load``); each task keeps a
slice of it:

=================== ================================================================= ====================
task                questions                                                         metrics (its YAML)
=================== ================================================================= ====================
o3d_markers         marked (clarity 4), synthetic kb-0cue / kb-1cue / kb-2cue         _markers_metrics_yaml
o3d_clarity_low     unmarked, clarity 2, same subsets                                 _basic_metrics_yaml
o3d_clarity_med     unmarked, clarity 3                                               _language_metrics_yaml
o3d_clarity_high    unmarked, clarity 3.5                                             _language_metrics_yaml
o3d_real            marked, clarity 4, real-012cue-cropped (Table 12's real columns)  _real_metrics_yaml
o3d_icl_cot         marked kb-1cue / kb-2cue questions with 2 ICL+CoT demonstrations  _icl_metrics_yaml
=================== ================================================================= ====================

Where each concern lives (this module only gathers what the YAMLs name):

* ``task_docs`` -- ``process_docs``: each task's slice of the docs (its metadata), its image source;
* ``demonstrations`` -- the ICL + CoT task's worked demonstrations;
* ``model_input`` -- ``doc_to_visual`` / ``doc_to_text`` / ``doc_to_messages_icl`` / ``doc_to_target``;
* ``records`` / ``task_results`` -- ``process_results``: ONE per-doc record (``record``) fanned out to the
  metrics the task's YAML declares;
* ``metric_sets`` -- the metric table (``METRICS``; lmms-eval aggregates each entry by the name
  ``o3d_<metric>``, ``Benchmark.metrics``). The record carries everything those functions and
``spatial-tasks rescore o3d --format lmms-samples`` need (question, response, ground truth, cues,
strength, clarity, the question's language tags), so saved samples can be re-scored.

Group metrics (``o3d``) are the metrics of the subtasks' pooled records, never means of means
(``spatial_tasks.harness``): exactly what ``spatial-tasks rescore o3d`` recomputes from
the saved samples.

Data source: the image subsets come from the same place as the task's ``visual_questions``: its
``dataset_path`` (a Hub id or a folder in the official layout), or for a task that names a parquet
file (the bundled sample), the dataset root above ``<root>/visual_questions/<file>``
(``task_docs.subset_source``). The task's TaskData carries both (spatial_tasks.harness).
"""

from __future__ import annotations

from spatial_tasks.harness import pool_subtasks  # noqa: F401
from spatial_tasks.o3d.model_input import (  # noqa: F401
    doc_to_messages_icl,
    doc_to_target,
    doc_to_text,
    doc_to_text_icl,
    doc_to_visual,
    doc_to_visual_icl,
)
from spatial_tasks.o3d.task_docs import process_docs  # noqa: F401
from spatial_tasks.o3d.task_results import process_results, process_results_icl  # noqa: F401
