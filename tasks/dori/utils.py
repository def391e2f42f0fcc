"""Thin lmms-eval hooks: nothing runs here. Where DORI lives:

- hooks the YAMLs name: spatial_tasks/dori/tasks.py (process_docs, doc_to_*, process_results, agg_*)
- data enters, checked once: spatial_tasks/dori/load.py (every layout read; schema.py the doc)
- prompts: tasks/dori/prompts/*.jinja
- answer parser: spatial_tasks/common/choice.py (the project's one multiple-choice reader)
- metrics: spatial_tasks/dori/metrics.py, soft accuracy spatial_tasks/dori/soft.py
- generator: generators/dori/ (scene.py, sampling.py, generate.py)
"""

from spatial_tasks.dori.tasks import (  # noqa: F401
    agg_acc,
    agg_declined,
    agg_refused,
    agg_soft,
    agg_unparseable,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    make_process_docs,
    pool_subtasks,
    process_docs_sample,
    process_results_any,
    process_results_coarse,
    process_results_granular,
)

process_docs_view_parallelism_coarse = make_process_docs("view_parallelism", "coarse")
process_docs_view_parallelism_granular = make_process_docs("view_parallelism", "granular")
process_docs_directional_facing_coarse = make_process_docs("directional_facing", "coarse")
process_docs_directional_facing_granular = make_process_docs("directional_facing", "granular")
process_docs_single_axis_rotation_coarse = make_process_docs("single_axis_rotation", "coarse")
process_docs_single_axis_rotation_granular = make_process_docs("single_axis_rotation", "granular")
process_docs_compound_rotation_coarse = make_process_docs("compound_rotation", "coarse")
process_docs_compound_rotation_granular = make_process_docs("compound_rotation", "granular")
process_docs_inter_object_direction_coarse = make_process_docs("inter_object_direction", "coarse")
process_docs_inter_object_direction_granular = make_process_docs("inter_object_direction", "granular")
process_docs_viewer_scene_direction_coarse = make_process_docs("viewer_scene_direction", "coarse")
process_docs_viewer_scene_direction_granular = make_process_docs("viewer_scene_direction", "granular")
process_docs_canonical_orientation_coarse = make_process_docs("canonical_orientation", "coarse")
process_docs_canonical_orientation_granular = make_process_docs("canonical_orientation", "granular")
