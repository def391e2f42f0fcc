"""O3-D, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: "Odd-one-out depth" (O3-D), Table 12 and Eqs. 1-2. Headline figures: accuracy on the marked
images, the near-far bias (Eq. 1), SDGM vision and SDGM language (Eq. 2).
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import (
    Benchmark,
    DeclaredMetrics,
    Demo,
    KnownModel,
    Later,
    Paper,
    PromptSpace,
    Proof,
    ReleasedOutputs,
    Section,
)
from spatial_tasks.o3d.metrics import SCORECARD
from spatial_tasks.o3d.schema import SOURCE

NAME = "o3d"


def released_scopes(rows: list[dict]) -> dict[str, list[dict]]:
    """The scopes of the authors' released outputs (no lmms-eval run): the marked images (accuracy,
    bias, SDGM vision) and the synthetic rows at every clarity (SDGM language: Omega_L's 42 groups
    span clarity 3, 3.5 and the marked images' 4, as ``rescore o3d`` computes it)."""
    return {"released:marked": [r for r in rows if r.get("is_marked")],
            "released:language": [r for r in rows if not r.get("is_real")]}


# Trained on renders where height in the plane is the one cue: right on HP, at chance on every other cue.
KNOWN_MODELS = (
    KnownModel("height", Path(__file__).parent / "known_models" / "checkpoints" / "height",
               "o3d_sample_clarity_low,o3d_sample_clarity_med,o3d_sample_clarity_high", "o3d_sample_clarity_high",
               "acc", ("acc_near", "acc_far"), "height in the plane learned, and no other cue"),
)

DEMO = Demo(
    tasks="o3d_sample,o3d_sample_real",
    rules=("depth_oracle", "always_near"),
    sample_note="`tasks/o3d/sample`: 45 128 px renders of our O3-D generator plus 12 PIL-drawn stand-ins for the "
                "real crops, in the official O3-D layout",
    proves=(
        Proof("depth_oracle", "o3d_sample", "acc", "accuracy", "the median rule on ground-truth depth maps and "
              "masks: ground truth, masks, markers and the paper's answer parser agree"),
        Proof("always_near", "o3d_sample", "bias_nf", "bias_nf", "always \"near\": the sign of Eq. 1"),
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="O3-D",
    source=SOURCE,
    metrics={NAME: Later("spatial_tasks.o3d.metric_sets:METRICS")},
    record=Later("spatial_tasks.o3d.records:LoggedRecord"),
    records_from_samples=Later("spatial_tasks.o3d.rescore:records_from_samples"),
    # ddof 0: the paper's population standard deviation; 1: the authors' pandas
    summary=Later("spatial_tasks.o3d.rescore:summary"),
    score=Later("spatial_tasks.o3d.records:score_question"),
    options=("ddof",),
    option_values={"ddof": (0, 1)},
    scorecard=SCORECARD,
    paper=Paper(NAME, Later("spatial_tasks.o3d.rescore:paper_figures")),
    report=Section(Later("spatial_tasks.o3d.report:o3d_figures")),
    inspect_split=Later("spatial_tasks.o3d.inspect:inspect_split"),
    baselines=Later("spatial_tasks.o3d.baselines"),
    custom_data=Later("spatial_tasks.o3d.custom_task:data_spec"),
    browse=Later("spatial_tasks.o3d.records:sample_view"),
    commands=Later("spatial_tasks.o3d.commands:COMMANDS"),
    demo=DEMO,
    known_models=KNOWN_MODELS,
    capabilities=(
        ReleasedOutputs(scopes=released_scopes, cells=Later("spatial_tasks.o3d.rescore:release_cells")),
        PromptSpace(Later("spatial_tasks.o3d.prompts:tagged_prompt_space")),
        DeclaredMetrics(Later("spatial_tasks.o3d.rescore:metric_names")),
    ),
)
