"""O3-D, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: "Odd-one-out depth" (O3-D), Table 12 and Eqs. 1-2. Headline figures: accuracy on the marked
images, the near-far bias (Eq. 1), SDGM vision and SDGM language (Eq. 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Demo
from spatial_tasks.o3d.metrics import SCORECARD

NAME = "o3d"


def records_from_samples(path: Path) -> list[dict]:
    from spatial_tasks.o3d.rescore import records_from_samples as read

    return read(path)


def metric_names(path: Path) -> tuple[str, ...]:
    from spatial_tasks.o3d.rescore import metric_names as names

    return names(path)


def score(reference: dict, prediction: str) -> dict:
    """One question's record: a logged record, or a doc as the O3-D loader makes it."""
    from spatial_tasks.o3d.records import LoggedRecord, record, rescored

    if "released_family" in reference:  # a doc as the O3-D loader makes it
        return record(reference, prediction, icl=bool(reference.get("icl", False)))
    LoggedRecord.model_validate({**reference, "response": prediction})
    return rescored({**reference, "response": prediction})


def summary(records: list[dict], ddof: int = 0) -> dict:
    """Table 12's cells, the bias and the SDGMs (``ddof`` 0: the paper's population standard
    deviation; 1: the authors' pandas)."""
    from spatial_tasks.o3d.rescore import summary as figures

    return figures(records, ddof)


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per run (all its O3-D tasks pooled, as ``rescore o3d`` does): Table 12's cells."""
    records = [r for rows in per_task.values() for r in rows]
    return [("table12", "run (all O3-D tasks)", summary(records))] if records else []


def released_scopes(rows: list[dict]) -> dict[str, list[dict]]:
    """The scopes of the authors' released outputs (no lmms-eval run): the marked images (accuracy,
    bias, SDGM vision) and the synthetic rows at every clarity (SDGM language: Omega_L's 42 groups
    span clarity 3, 3.5 and the marked images' 4, as ``rescore o3d`` computes it)."""
    return {"released:marked": [r for r in rows if r.get("is_marked")],
            "released:language": [r for r in rows if not r.get("is_real")]}


def release_cells(path: Path, decimals: int) -> tuple[list[dict], list[str]]:
    """Every reproducible Table 12 cell of the released models with a paper row (``rescore.compare_to_paper``)."""
    from spatial_tasks.o3d.rescore import compare_to_paper, rescore_released

    result = rescore_released(path)
    rows = [{**row, "table": "table12"} for row in compare_to_paper(result, decimals)]
    return rows, list(result["models"])


def report(entries: list, out: Path):
    from spatial_tasks.o3d.report import o3d_figures

    return o3d_figures(entries, out)


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    import datasets

    from spatial_tasks.o3d import schema
    from spatial_tasks.o3d.load import QUESTION_KINDS

    missing = [c for c in QUESTION_KINDS if c not in ds.column_names]
    if not missing:
        return "accepted: O3-D visual_questions (the image subsets are read from the same source)"
    subset = [c for c in schema.REQUIRED_SUBSET_COLUMNS if c not in ds.column_names]
    images = [c for c, f in ds.features.items() if isinstance(f, datasets.Image)]
    if not subset and images:
        return f"accepted: an O3-D image subset (image columns {images})"
    lacking = subset or "an image column"
    return f"neither O3-D's visual_questions (missing {missing}) nor an image subset (missing {lacking})"


def prompt_space() -> Iterator[dict]:
    """O3-D's whole prompt space (1,026 questions) with their tags."""
    from spatial_tasks.o3d.prompts import prompt_space as space

    for prompt in space():
        yield {"prompt": prompt.text, "tags": prompt.tags.as_dict()}


def custom_data(request) -> dict | None:
    """The questions config (visual_questions) of a folder in the official layout, checked."""
    if request.local is not None:
        from spatial_tasks.o3d.custom_task import check_folder

        check_folder(request.local, request.base_cfg)
    return request.generic(request.config or "visual_questions")


DEMO = Demo(
    tasks="o3d_sample,o3d_sample_real",
    rules=("depth_oracle", "always_near"),
    sample_note="`tasks/o3d/sample`: 45 128 px renders of our O3-D generator plus 12 PIL-drawn stand-ins for the "
                "real crops, in the official O3-D layout",
    notes=(
        "O3-D `rule=depth_oracle` (ground-truth depth maps and masks, the median rule of the paper's depth "
        "baseline) → accuracy 1: ground truth, masks, markers and the paper's answer parser agree.",
        "O3-D `rule=always_near` → bias_nf = −1 (and acc_near = 1, acc_far = 0): the sign of Eq. 1.",
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="O3-D",
    default_source="liuyiqian/O3-D",
    source_env="SPATIAL_TASKS_O3D_SOURCE",
    record="spatial_tasks.o3d.records:LoggedRecord",
    records_from_samples=records_from_samples,
    metric_names=metric_names,
    score=score,
    summary=summary,
    options=("ddof",),
    option_values={"ddof": (0, 1)},
    scorecard=SCORECARD,
    paper=NAME,
    paper_figures=paper_figures,
    released_scopes=released_scopes,
    release_cells=release_cells,
    report=report,
    inspect_split=inspect_split,
    baselines="spatial_tasks.o3d.baselines",
    prompt_space=prompt_space,
    custom_data=custom_data,
    commands="spatial_tasks.o3d.commands",
    demo=DEMO,
)
