"""lmms-eval hooks for the O3-D tasks (tasks/o3d/*.yaml point here through tasks/o3d/utils.py).

One canonical doc per ``visual_questions`` row (``spatial_tasks.o3d.load``); each task keeps a
slice of it:

=================== ================================================================= ==============
task                questions                                                         metric set
=================== ================================================================= ==============
o3d_markers         marked (clarity 4), synthetic kb-0cue / kb-1cue / kb-2cue         MARKERS_METRICS
o3d_clarity_low     unmarked, clarity 2, same subsets                                 BASIC_METRICS
o3d_clarity_med     unmarked, clarity 3                                               LANGUAGE_METRICS
o3d_clarity_high    unmarked, clarity 3.5                                             LANGUAGE_METRICS
o3d_real            marked, clarity 4, real-012cue-cropped (Table 12's real columns)  REAL_METRICS
o3d_icl_cot         marked kb-1cue / kb-2cue questions with 2 ICL+CoT demonstrations  ICL_METRICS
=================== ================================================================= ==============

Where each concern lives (this module only gathers what the YAMLs name):

* ``task_docs`` -- ``process_docs``: each task's slice of the docs (its metadata), its image source;
* ``demonstrations`` -- the ICL + CoT task's worked demonstrations;
* ``model_input`` -- ``doc_to_visual`` / ``doc_to_text`` / ``doc_to_messages_icl`` / ``doc_to_target``;
* ``records`` / ``task_results`` -- ``process_results_*``: ONE per-doc record (``record``) fanned out to every metric
  key of the task;
* ``task_metrics`` -- each aggregation (``agg_<metric>``), a thin wrapper over a pure function of
  ``spatial_tasks.o3d.metrics`` (``METRICS``), and the metric sets. The record carries everything those functions and
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

from spatial_tasks.harness import PooledValue, RecordRef, TaskData, pool_subtasks  # noqa: F401
from spatial_tasks.o3d.demonstrations import (  # noqa: F401
    DEMO_TYPE,
    attach_demonstrations,
    demonstration_answer,
    demonstration_doc,
)
from spatial_tasks.o3d.model_input import (  # noqa: F401
    DEFAULT_PROMPT_KWARGS,
    IMAGE_PLACEHOLDER,
    doc_to_messages_icl,
    doc_to_target,
    doc_to_text,
    doc_to_text_icl,
    doc_to_visual,
    doc_to_visual_icl,
    interleave,
    write_out,
)
from spatial_tasks.o3d.records import RECORD_FIELDS, record, rescored  # noqa: F401
from spatial_tasks.o3d.schema import BENCHMARK  # noqa: F401
from spatial_tasks.o3d.task_docs import (  # noqa: F401
    CLARITY,
    ICL_SUBSETS,
    REAL_TASK_SUBSETS,
    SUBSET_GROUPS,
    SYNTHETIC_TASK_SUBSETS,
    Slice,
    build_task_docs,
    process_docs,
    subset_source,
)
from spatial_tasks.o3d.task_metrics import (  # noqa: F401
    BASIC_METRICS,
    ICL_METRICS,
    LANGUAGE_METRICS,
    MARKERS_METRICS,
    METRIC_SETS,
    METRICS,
    REAL_METRICS,
    agg_acc,
    agg_acc_0cue,
    agg_acc_1cue,
    agg_acc_2cue,
    agg_acc_far,
    agg_acc_FO,
    agg_acc_FS,
    agg_acc_HP,
    agg_acc_LS,
    agg_acc_near,
    agg_acc_OC,
    agg_acc_RS,
    agg_acc_SA,
    agg_acc_TG,
    agg_bias_nf,
    agg_consistency,
    agg_msdgm_clarity_level,
    agg_msdgm_formality,
    agg_msdgm_order,
    agg_msdgm_query,
    agg_msdgm_vocabulary,
    agg_sdgm_language,
    agg_sdgm_vision,
    agg_unparseable,
    aggregate,
    unparseable_share,
)
from spatial_tasks.o3d.task_results import (  # noqa: F401
    process_results_basic,
    process_results_icl,
    process_results_language,
    process_results_markers,
    process_results_real,
)
