"""ToyBench, as the shared layers see it: the one registry entry it needs is
``SPATIAL_TASKS_BENCHMARKS=toybench.benchmark``."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Later, Paper, Section
from toybench import core


def score(reference: dict, prediction: str) -> dict:
    return core.record(reference, prediction)


def summary(records: list[dict]) -> dict:
    return {"acc": core.accuracy(records), "n": len(records)}


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    records = [r for rows in per_task.values() for r in rows]
    return [("table1", "run", {"acc": core.accuracy(records)})] if records else []


def inspect_split(ds, name: str, files=()) -> str:
    missing = [c for c in core.COLUMNS if c not in ds.column_names]
    return f"not ToyBench: missing {missing}" if missing else "accepted: ToyBench questions"


BENCHMARK = Benchmark(
    name=core.NAME,
    title="ToyBench",
    tasks_dir=Path(__file__).parent / "tasks",
    record=Later("toybench.core:ToyRecord"),
    records_from_samples=core.records_from_samples,
    score=score,
    summary=summary,
    scorecard=core.SCORECARD,
    paper=Paper(core.NAME, paper_figures),
    report=Section(core.report),
    inspect_split=inspect_split,
    baselines=Later("toybench.baselines"),
)
