"""DORI, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: DORI, object orientation in 7 tasks x coarse / granular (Table 2). Headline figures: the
coarse and granular averages over tasks (Table 2's Avg, computed from our task cells).
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Demo, distinct
from spatial_tasks.dori.metrics import SCORECARD
from spatial_tasks.dori.schema import check_prompt

NAME = "dori"


def records_from_samples(path: Path) -> list[dict]:
    from spatial_tasks.dori.rescore import records_from_samples as read

    return read(path)


def score(reference: dict, prediction: str) -> dict:
    from spatial_tasks.dori.records import LoggedRecord
    from spatial_tasks.dori.records import score as score_one

    LoggedRecord.model_validate(reference)
    return score_one(reference, prediction)


def summary(records: list[dict]) -> dict:
    from spatial_tasks.dori.rescore import summary as figures

    return figures(records)


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per run: Table 2's per-task coarse / granular accuracies."""
    records = [r for rows in per_task.values() for r in rows]
    return [("table2", "run (all DORI tasks)", summary(records))] if records else []


def report(entries: list, out: Path):
    from spatial_tasks.dori.report import dori_figures

    return dori_figures(entries, out)


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    """The generator's layout, or an official-release layout whose columns map by name (task and
    granularity may come from the file paths)."""
    from spatial_tasks.common.origin import Origin
    from spatial_tasks.common.validate import DataError
    from spatial_tasks.dori import load

    data = [f for f in files if f.endswith((".parquet", ".jsonl", ".json", ".csv", ".tsv", ".arrow"))]
    named = data and all(load.task_from_text(f) for f in data)
    origin = Origin(label=name, files=tuple((f, 0) for f in data) if named else (), root=root)
    try:
        if load.is_generated(ds):
            verdict = "accepted: DORI, spatial-tasks generator layout"
        else:
            load.map_columns(ds, origin, name)
            verdict = "accepted: DORI, an official-release layout (columns mapped by name)"
            if named and "task" not in load.resolve_columns(ds.column_names):
                # the rows read here are not tied to their files, so their tasks cannot be checked here
                return f"{verdict} (task and granularity from the file paths)"
    except DataError as err:
        return str(err)
    try:  # the rows themselves must load, not only the columns fit
        load.to_docs(ds, origin, hint=name)
    except DataError as err:
        return f"the columns fit, but the rows do not load: {err}"
    return verdict


def custom_data(request) -> dict:
    """DORI tasks read a whole source (its configs are discovered) and keep their own questions;
    a local folder must hold the task's questions."""
    from spatial_tasks.dori.load import check_folder

    metadata = request.base_cfg.get("metadata") or {}  # the task's slice (none: every question)
    wanted = [(metadata["task"], metadata["granularity"])] if metadata.get("task") else []
    return request.whole_source(lambda local: check_folder(local, wanted),
                                str(request.base_cfg.get("test_split") or "test"))


DEMO = Demo(
    tasks="dori_sample",
    rules=("oracle", "always_a"),
    sample_note="`tasks/dori/sample`: 52 questions on 96 px Blender renders and transforms of them, made by our DORI "
                "generators",
    notes=(
        "DORI `rule=oracle` (the recorded ground truth, written as letter + option text + a reason) → accuracy and "
        "soft accuracy 1 on every task: options, the seeded order, parsing and scoring agree.",
        "DORI `rule=always_a` → exactly the share of questions whose answer the seed-42 order shows first (the "
        "\"A first\" column), near chance = mean(1/number of options).",
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="DORI",
    default_source="appledora/DORI-Benchmark",
    source_env="SPATIAL_TASKS_DORI_SOURCE",
    source_note="configs discovered at load time",
    record="spatial_tasks.dori.records:LoggedRecord",
    records_from_samples=records_from_samples,
    score=score,
    summary=summary,
    scorecard=SCORECARD,
    paper=NAME,
    paper_figures=paper_figures,
    # DORI's printed Avg is not always the mean of its own task cells (Mantis-CLIP coarse: 23.8
    # printed, 26.5 the mean), so only the task cells are compared.
    not_checked=frozenset({"avg_coarse", "avg_granular"}),
    report=report,
    inspect_split=inspect_split,
    baselines="spatial_tasks.dori.baselines",
    prompt_kind=lambda doc: (doc["task"], doc["granularity"]),
    custom_data=custom_data,
    check_prompt=check_prompt,
    commands="spatial_tasks.dori.commands",
    demo=DEMO,
    settings=lambda records: distinct(records, "seed"),
)
