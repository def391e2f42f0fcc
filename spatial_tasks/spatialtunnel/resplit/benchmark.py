"""SpatialTunnel's re-splits of real depth benchmarks (EmbSpatial-Bench, CV-Bench 3D) into
consistent / counter questions, as the shared layers see them (``spatial_tasks.benchmark``).

Their tasks sit in SpatialTunnel's task folder and their cells in its paper (Tables 1 and 2);
they have no scorecard column.
"""

from __future__ import annotations

from spatial_tasks.benchmark import Benchmark, Demo, Later, Paper, Proof, Section, Source, distinct

NAME = "spatialtunnel_resplit"
PAPER = "spatialtunnel"  # the SpatialTunnel paper's Table 2


DEMO = Demo(
    tasks="spatialtunnel_embspatial_depth_split_sample,spatialtunnel_cv_bench_3d_split_sample",
    rules=("vertical", "oracle"),
    model_gen_kwargs="max_new_tokens=16",
    proves=(
        Proof("vertical", "spatialtunnel_embspatial_depth_split_sample", "delta", "Δ", "the shortcut (the highest "
              "option for \"farthest\", the lowest for \"closest\") on drawn stand-ins in EmbSpatial-Bench's schema: "
              "the split is read from the boxes"),
        Proof("vertical", "spatialtunnel_cv_bench_3d_split_sample", "delta", "Δ", "the same in CV-Bench's schema"),
        Proof("oracle", "spatialtunnel_embspatial_depth_split_sample", "acc_all", "accuracy", "right answers are "
              "scored right"),
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="SpatialTunnel re-splits",
    source=Source("FlagEval/EmbSpatial-Bench, nyu-visionx/CV-Bench"),  # the two benchmarks it re-splits
    tasks_dir=PAPER,  # its tasks sit in SpatialTunnel's folder
    record=Later("spatial_tasks.spatialtunnel.resplit.records:LoggedRecord"),
    records_from_samples=Later("spatial_tasks.spatialtunnel.resplit.records:records_from_samples"),
    summary=Later("spatial_tasks.spatialtunnel.resplit.metrics:summary"),
    paper=Paper(PAPER, Later("spatial_tasks.spatialtunnel.resplit.metrics:paper_figures")),
    report=Section(Later("spatial_tasks.spatialtunnel.resplit.report:resplit_figures"),
                   title="SpatialTunnel: consistent / counter re-splits of real benchmarks"),
    baselines=Later("spatial_tasks.spatialtunnel.resplit.baselines"),
    browse=Later("spatial_tasks.spatialtunnel.resplit.records:sample_view"),
    demo=DEMO,
    settings=lambda records: distinct(records, "answer_reader"),
)
