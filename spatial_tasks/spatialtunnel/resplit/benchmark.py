"""SpatialTunnel's re-splits of real depth benchmarks (EmbSpatial-Bench, CV-Bench 3D) into
consistent / counter questions, as the shared layers see them (``spatial_tasks.benchmark``).

Their tasks sit in SpatialTunnel's task folder and their cells in its paper (Tables 1 and 2);
they have no scorecard column.
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Demo, distinct

NAME = "spatialtunnel_resplit"
PAPER = "spatialtunnel"  # the SpatialTunnel paper's Table 2


def records_from_samples(path: Path) -> list[dict]:
    from spatial_tasks.spatialtunnel.resplit.records import records_from_samples as read

    return read(path)


def summary(records: list[dict]) -> dict:
    from spatial_tasks.spatialtunnel.resplit.metrics import summary as figures

    return figures(records)


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per task: Table 2's consistent / counter accuracy of its source benchmark."""
    out = []
    for task, records in per_task.items():
        sources = {r.get("source") for r in records}
        if len(sources) == 1 and records:
            figures = summary(records)
            source = sources.pop()
            out.append(("table2", task, {f"{source}_consistent": figures["acc_cons"],
                                         f"{source}_counter": figures["acc_ctr"]}))
    return out


def report(entries: list, out: Path):
    from spatial_tasks.spatialtunnel.resplit.report import resplit_figures

    return resplit_figures(entries, out)


DEMO = Demo(
    tasks="spatialtunnel_embspatial_depth_split_sample,spatialtunnel_cv_bench_3d_split_sample",
    rules=("vertical", "oracle"),
    model_gen_kwargs="max_new_tokens=16",
    notes=(
        "SpatialTunnel re-splits of real benchmarks (`tasks/spatialtunnel/sample/{embspatial,cv_bench_3d}_depth`: "
        "drawn stand-ins in EmbSpatial-Bench's and CV-Bench's schemas) `rule=vertical` (the shortcut: the highest "
        "option for \"farthest\", the lowest for \"closest\") → Acc_con = 1, Acc_ctr = 0, Δ = +1: the split is read "
        "from the boxes; `rule=oracle` → Acc = 1.",
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="SpatialTunnel re-splits",
    default_source="FlagEval/EmbSpatial-Bench, nyu-visionx/CV-Bench",  # the two benchmarks it re-splits
    report_title="SpatialTunnel: consistent / counter re-splits of real benchmarks",
    task_folder=PAPER,  # its tasks sit in SpatialTunnel's folder
    record="spatial_tasks.spatialtunnel.resplit.records:LoggedRecord",
    records_from_samples=records_from_samples,
    summary=summary,
    paper=PAPER,
    paper_figures=paper_figures,
    report=report,
    baselines="spatial_tasks.spatialtunnel.resplit.baselines",
    demo=DEMO,
    settings=lambda records: distinct(records, "answer_reader"),
)
