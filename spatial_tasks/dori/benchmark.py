"""DORI, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: DORI, object orientation in 7 tasks x coarse / granular (Table 2). Headline figures: the
coarse and granular averages over tasks (Table 2's Avg, computed from our task cells).
"""

from __future__ import annotations

from spatial_tasks.benchmark import (
    Benchmark,
    Demo,
    Later,
    Paper,
    PromptCheck,
    Proof,
    Section,
    distinct,
)
from spatial_tasks.dori.metrics import SCORECARD
from spatial_tasks.dori.schema import SOURCE, check_prompt

NAME = "dori"


DEMO = Demo(
    tasks="dori_sample",
    rules=("oracle", "always_a"),
    sample_note="`tasks/dori/sample`: 52 questions on 96 px Blender renders and transforms of them, made by our DORI "
                "generators",
    proves=(
        Proof("oracle", "dori_sample", "soft", "soft accuracy", "the recorded ground truth, written as letter + "
              "option text + a reason: options, the seeded order, parsing and scoring agree"),
        Proof("always_a", "dori_sample", "acc", "accuracy", "the share of questions whose answer the seed-42 "
              "order shows first, near chance"),
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="DORI",
    source=SOURCE,
    metrics={NAME: Later("spatial_tasks.dori.metrics:TASK_METRICS")},
    record=Later("spatial_tasks.dori.records:LoggedRecord"),
    records_from_samples=Later("spatial_tasks.dori.rescore:records_from_samples"),
    summary=Later("spatial_tasks.dori.rescore:summary"),
    score=Later("spatial_tasks.dori.records:score_question"),
    scorecard=SCORECARD,
    # DORI's printed Avg is not always the mean of its own task cells (Mantis-CLIP coarse: 23.8
    # printed, 26.5 the mean), so only the task cells are compared.
    paper=Paper(NAME, Later("spatial_tasks.dori.rescore:paper_figures"),
                not_checked=frozenset({"avg_coarse", "avg_granular"})),
    report=Section(Later("spatial_tasks.dori.report:dori_figures")),
    inspect_split=Later("spatial_tasks.dori.inspect:inspect_split"),
    baselines=Later("spatial_tasks.dori.baselines"),
    prompt_kind=lambda doc: (doc["task"], doc["granularity"]),
    custom_data=Later("spatial_tasks.dori.custom_task:data_spec"),
    browse=Later("spatial_tasks.dori.records:sample_view"),
    commands=Later("spatial_tasks.dori.commands:COMMANDS"),
    demo=DEMO,
    settings=lambda records: distinct(records, "seed"),
    capabilities=(PromptCheck(check_prompt),),
)
