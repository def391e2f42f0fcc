"""SpatialTunnel, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: Min et al., "Why Far Looks Up" (ECCV 2026). Headline figures: v and Δ = v_cons - v_ctr
(Tables 3 / 8 / 9), v_cons and v_ctr with intervals in its own tables.
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import (
    Benchmark,
    Demo,
    KnownModel,
    Later,
    Paper,
    Proof,
    Section,
    Source,
    Study,
    distinct,
)
from spatial_tasks.spatialtunnel.metrics import SCORECARD
from spatial_tasks.spatialtunnel.records import PROTOCOLS

NAME = "spatialtunnel"


KNOWN_MODELS = tuple(
    KnownModel(name, Path(__file__).parent / "known_models" / "checkpoints" / name, "spatialtunnel_logit_sample",
               "spatialtunnel_logit_sample_phase", metric, ("v_cons", "v_ctr"), claim)
    for name, metric, claim in (
        ("shortcut", "delta", "the planted shortcut (\"higher ⇒ farther\"), caught"),
        ("depth", "v", "true depth read from the pixels: no gap between consistent and counter pairs")))

DEMO = Demo(
    tasks="spatialtunnel_sample,spatialtunnel_logit_sample",
    rules=("vertical", "size", "always_yes", "oracle"),
    model_tasks="spatialtunnel_sample",
    logit_tasks="spatialtunnel_logit_sample",
    sample_note="`tasks/spatialtunnel/sample`: 64 phase + 22 size Blender renders at 128 px",
    proves=(
        Proof("oracle", "spatialtunnel_logit_sample", "v", "v", "right answers are scored right"),
        Proof("always_yes", "spatialtunnel_logit_sample", "v", "v", "the four questions per image are polarity "
              "balanced"),
        Proof("vertical", "spatialtunnel_logit_sample_phase", "delta", "Δ", "\"higher ⇒ farther\" by rule: the "
              "consistent/counter split is read from the real pixel positions"),
        Proof("size", "spatialtunnel_logit_sample_size", "delta_s", "Δ_s", "\"larger ⇒ nearer\" by rule: the size "
              "sweep is scored right"),
    ),
    known_models=KNOWN_MODELS,
    # the page opens on the two side by side, the counter pairs (where they differ) first
    view={"runs": ("known_shortcut", "known_depth"), "benchmark": NAME, "first": ("two-way", "counter")},
)

BENCHMARK = Benchmark(
    name=NAME,
    title="SpatialTunnel",
    source=Source("cubec/spatialtunnel"),  # the authors' tables (the task YAMLs' dataset_path)
    metrics={NAME: Later("spatial_tasks.spatialtunnel.metrics:TASK_METRICS"),
             f"{NAME}_resplit": Later("spatial_tasks.spatialtunnel.resplit.metrics:TASK_METRICS")},
    record=Later("spatial_tasks.spatialtunnel.records:LoggedRecord"),
    records_from_samples=Later("spatial_tasks.spatialtunnel.rescore:records_from_samples"),
    summary=Later("spatial_tasks.spatialtunnel.rescore:summary"),
    score=Later("spatial_tasks.spatialtunnel.records:score_question"),
    options=("protocol",),
    option_values={"protocol": PROTOCOLS},
    scorecard=SCORECARD,
    paper=Paper(NAME, Later("spatial_tasks.spatialtunnel.metrics:paper_figures")),
    report=Section(Later("spatial_tasks.spatialtunnel.report:spatialtunnel_figures")),
    inspect_split=Later("spatial_tasks.spatialtunnel.inspect:inspect_split"),
    baselines=Later("spatial_tasks.spatialtunnel.baselines"),
    prompt_kind=lambda doc: doc.get("template_id"),
    custom_data=Later("spatial_tasks.spatialtunnel.custom_task:data_spec"),
    browse=Later("spatial_tasks.spatialtunnel.records:sample_view"),
    commands=Later("spatial_tasks.spatialtunnel.commands:COMMANDS"),
    demo=DEMO,
    known_models=KNOWN_MODELS,
    settings=lambda records: distinct(records, "protocol"),
    capabilities=(
        Study(figures=Later("spatial_tasks.spatialtunnel.probe.report:study_figures"),
              section=Section(Later("spatial_tasks.spatialtunnel.probe.report:probe_section"),
                              title="SpatialTunnel: contrastive probing (§5)"),
              holds=lambda folder: (folder / "probe.json").is_file(),
              marks="a `spatial-tasks probe` folder holds probe.json",
              demo=Later("spatial_tasks.spatialtunnel.probe.commands:probe_bundled_pairs")),
    ),
)
