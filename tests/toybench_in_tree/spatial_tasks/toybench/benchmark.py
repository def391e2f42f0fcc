"""ToyBench, as the shared layers see it (``spatial_tasks.benchmark``)."""

from __future__ import annotations

from spatial_tasks.toybench import core

from spatial_tasks.benchmark import Benchmark, Later, Paper, Section, Source


def summary(records: list[dict]) -> dict:
    return {"acc": core.accuracy(records), "n": len(records)}


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    records = [r for rows in per_task.values() for r in rows]
    return [("table1", "run", {"acc": core.accuracy(records)})] if records else []


def inspect_split(ds, name: str, files=(), root=None) -> str:
    missing = [c for c in core.COLUMNS if c not in ds.column_names]
    return f"not ToyBench: missing {missing}" if missing else "accepted: ToyBench questions"


BENCHMARK = Benchmark(
    name=core.NAME,
    title="ToyBench",
    source=Source("toy/toybench"),
    record=Later("spatial_tasks.toybench.core:ToyRecord"),
    records_from_samples=core.records_from_samples,
    score=lambda reference, prediction: core.record(reference, prediction),
    summary=summary,
    scorecard=core.SCORECARD,
    paper=Paper(core.NAME, paper_figures),
    report=Section(core.report),
    inspect_split=inspect_split,
    baselines=Later("spatial_tasks.toybench.baselines"),
    commands=Later("spatial_tasks.toybench.commands:COMMANDS"),
)
