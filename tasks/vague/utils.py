"""Thin lmms-eval hooks: everything lives in spatial_tasks.vague.tasks (nothing runs here)."""

from spatial_tasks.vague.tasks import (  # noqa: F401
    PROCESS_RESULTS,
    agg_acc,
    agg_bertscore_f1,
    agg_bleu1,
    agg_declined,
    agg_fs_rate,
    agg_ne_rate,
    agg_refused,
    agg_su_rate,
    agg_unparseable,
    doc_to_target,
    doc_to_target_freeform,
    doc_to_text_freeform,
    doc_to_text_freeform_cot,
    doc_to_text_lm,
    doc_to_text_sm,
    doc_to_text_sm_cot,
    doc_to_text_sm_gpt,
    doc_to_text_vlm,
    doc_to_text_vlm_cot,
    doc_to_visual,
    doc_to_visual_none,
    make_process_docs,
)

process_docs_vcr = make_process_docs("vcr")
process_docs_ego4d = make_process_docs("ego4d")
process_docs_all = make_process_docs(None)
process_results_lm = PROCESS_RESULTS["lm"]
process_results_sm = PROCESS_RESULTS["sm"]
process_results_sm_gpt = PROCESS_RESULTS["sm_gpt"]
process_results_vlm = PROCESS_RESULTS["vlm"]
process_results_vlm_cot = PROCESS_RESULTS["vlm_cot"]
process_results_sm_cot = PROCESS_RESULTS["sm_cot"]
process_results_freeform = PROCESS_RESULTS["freeform"]
process_results_freeform_cot = PROCESS_RESULTS["freeform_cot"]
