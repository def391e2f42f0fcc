"""Thin lmms-eval hooks: everything lives in spatial_tasks.spatialtunnel.tasks (nothing runs here)."""

from spatial_tasks.spatialtunnel.tasks import (  # noqa: F401
    agg_delta,
    agg_delta_s,
    agg_unparseable,
    agg_v,
    agg_v_amb,
    agg_v_cons,
    agg_v_ctr,
    agg_v_s010,
    agg_v_s030,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    process_docs,
    process_results_logit_phase,
    process_results_logit_size,
    process_results_phase,
    process_results_size,
    pool_subtasks,
)
