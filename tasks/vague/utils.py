"""Thin lmms-eval hooks: nothing runs here. Where VAGUE lives:

- hooks the YAMLs name: spatial_tasks/vague/tasks.py
- data enters, checked once: spatial_tasks/vague/load.py (the Hub parquet and the GitHub JSON)
- prompts: tasks/vague/prompts/*.jinja (the authors' exact lines)
- answer parser: spatial_tasks/common/choice.py, after vague/parse.py's CoT "answer2" split
- metrics: spatial_tasks/vague/metrics.py
- generator: generators/vague/ (the paper's construction stages against a chat endpoint)
"""

from spatial_tasks.vague.tasks import (  # noqa: F401
    PROCESS_RESULTS,
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
    process_docs,
)

process_results_lm = PROCESS_RESULTS["lm"]
process_results_sm = PROCESS_RESULTS["sm"]
process_results_sm_gpt = PROCESS_RESULTS["sm_gpt"]
process_results_vlm = PROCESS_RESULTS["vlm"]
process_results_vlm_cot = PROCESS_RESULTS["vlm_cot"]
process_results_sm_cot = PROCESS_RESULTS["sm_cot"]
process_results_freeform = PROCESS_RESULTS["freeform"]
process_results_freeform_cot = PROCESS_RESULTS["freeform_cot"]
