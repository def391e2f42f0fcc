"""``spatial-tasks verify``: our figures against the papers' published cells.

Two kinds of input:
- **lmms-eval output folders** (``--log_samples``) and ``spatial-tasks probe`` folders: every run's figures, re-scored from its samples,
  are matched to the paper row of the run's ``pretrained`` model (``paper.PaperResults.match``)
  and graded by |Δ| in points (percentage points; fractions x 100) as EASI grades its checks:
  ≤ 2.5 strong, ≤ 5 acceptable, > 5 a discrepancy.
- **O3-D's released raw outputs** (a file, as ``spatial-tasks rescore o3d`` reads it): the same
  outputs the paper scored, so every reproducible Table 12 cell must agree exactly at the printed
  precision (4 decimals); anything else is a mismatch.

Which of our figures is which paper cell (per benchmark):
- SpatialTunnel, per task: logit protocol on the phase variant -> Table 3 (v, v_cons, v_ctr, Δ);
  exact match on the phase variant -> Table 8; logit on the size variant -> Table 9.
- O3-D, per run (all its O3-D tasks pooled, as ``rescore o3d`` does): Table 12's cells.
- DORI, per run: Table 2's per-task coarse / granular accuracies (not its printed averages,
  which are not always the mean of its own task cells).
- VAGUE, per task ``vague_<vcr|ego4d>_<lm|sm|vlm>``: Table 1's MCQ accuracy.
- SpatialTunnel's re-splits of real benchmarks, per task: Table 2 (consistent / counter accuracy).
- ``spatial-tasks probe`` folders (their metrics.json): Table 5 at the reported layer.

The verdict passes when at least one cell was checked and every checked cell is strong,
acceptable or exact. A run whose model has no paper row is listed as unmatched, and a cell where
our figure is undefined (no questions of that kind, or a set the release lacks) is listed as
missing; neither is checked.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from spatial_tasks.benchmark import Benchmark, ReleasedOutputs, Study
from spatial_tasks.common.environment import mixed_warning
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.paper import paper_results
from spatial_tasks.common.runset import RunSet, software_of
from spatial_tasks.common.samples import Run, SamplesError
from spatial_tasks.common.yesno import label_mass_below_half, label_mass_median, label_mass_warning
from spatial_tasks.registry import get, offering

STRONG, ACCEPTABLE = 2.5, 5.0  # |Δ| in points (EASI's bands)
EXACT_DECIMALS = 4  # Table 12 prints 4 decimals


@dataclass(frozen=True)
class Cell:
    source: str  # the run folder or released file
    model: str  # as the run or file names it
    paper_model: str
    benchmark: str
    table: str
    column: str
    scope: str  # the task (or "run") the figure comes from
    ours: float | None
    paper: float
    delta_points: float | None
    grade: str  # strong | acceptable | discrepancy | exact | mismatch | missing

    @property
    def passed(self) -> bool:
        return self.grade in ("strong", "acceptable", "exact")


def grade_points(delta: float | None) -> str:
    """EASI's bands for |Δ| in points."""
    if delta is None:
        return "missing"
    return "strong" if delta <= STRONG else "acceptable" if delta <= ACCEPTABLE else "discrepancy"


def _cell(source: str, model: str, paper_model: str, benchmark: str, table_id: str, column: str, scope: str,
          ours: float | None, exact: bool) -> Cell | None:
    table = _paper(get(benchmark)).tables[table_id]
    if paper_model not in table.rows:
        return None
    published = table.fraction(paper_model, column)
    if published is None:
        return None
    defined = isinstance(ours, (int, float)) and math.isfinite(ours)
    delta = abs(ours - published) * 100 if defined else None
    if exact:
        grade = "missing" if not defined else (
            "exact" if round(ours, EXACT_DECIMALS) == round(published, EXACT_DECIMALS) else "mismatch")
    else:
        grade = grade_points(delta)
    return Cell(source, model, paper_model, benchmark, table_id, column, scope,
                float(ours) if defined else None, published, delta, grade)


def _paper(benchmark: Benchmark):
    """The paper tables a benchmark's figures are checked against (its ``paper``'s task folder)."""
    owner = get(benchmark.paper.name)
    return paper_results(owner.name, owner.tasks_folder())


def run_model(run: Run) -> str:
    """The model a run scored: its ``pretrained`` model_arg, else the lmms-eval model name."""
    config = run.results().get("config") or {}
    args = config.get("model_args")
    items = args.items() if isinstance(args, dict) else (a.partition("=")[::2] for a in str(args or "").split(","))
    for key, value in items:
        if str(key).strip() == "pretrained" and str(value).strip():
            return str(value).strip()
    return str(config.get("model") or run.folder.name)


def verify_run(runs: RunSet, run: Run) -> tuple[list[Cell], list[str], dict[str, list[str]]]:
    """(cells, "model (benchmark)" for each benchmark of the run without a paper row for its model,
    notes: "censored", how many questions of each task were scored from a censored label -- a served
    run's top log-probabilities left a label out, so its figures rest on bounds there; "label_mass",
    each first-token task's median label mass and share under 1/2, with a warning under 1/2)."""
    by_benchmark: dict[str, dict[str, list[dict]]] = defaultdict(dict)
    for entry in runs.of_run(run):
        if entry.benchmark is not None:
            by_benchmark[entry.benchmark_name][entry.task] = entry.records()
    model, cells, unmatched = run_model(run), [], []
    notes = [f"{run.folder}: {task}: {n} of {len(records)} questions scored from a censored label (served "
             "top_logprobs; their p is a bound, see the report's legend)"
             for per_task in by_benchmark.values() for task, records in sorted(per_task.items())
             if (n := sum(bool(r.get("censored")) for r in records))]
    masses = [_mass_note(run.folder, task, records) for per_task in by_benchmark.values()
              for task, records in sorted(per_task.items()) if any("label_mass" in r for r in records)]
    for benchmark, per_task in by_benchmark.items():
        spec = runs.known[benchmark]
        paper = _paper(spec)
        paper_model = paper.match(model)
        if paper_model is None:
            unmatched.append(f"{model} ({benchmark})")
            continue
        for table_id, scope, figures in spec.paper.figures(per_task):
            for column in paper.tables[table_id].columns:
                if column in figures and column not in spec.paper.not_checked:
                    cell = _cell(str(run.folder), model, paper_model, spec.paper.name, table_id, column, scope,
                                 figures[column], exact=False)
                    if cell is not None:
                        cells.append(cell)
    return cells, unmatched, {"censored": notes, "label_mass": masses}


def _mass_note(folder: Path, task: str, records: list[dict]) -> str:
    """A task's label mass as verify prints it (common/yesno.py), with its warning where the median is under 1/2."""
    median = label_mass_median(records)
    note = f"{folder}: {task}: median {median:.3f}, {label_mass_below_half(records):.1%} of questions under 0.5"
    warning = label_mass_warning(median)
    return note + (f" -- WARNING: {warning}" if warning else "")


def verify_release(path: Path) -> tuple[list[Cell], list[str]]:
    """A file of released outputs (read by each benchmark that offers ``ReleasedOutputs``: O3-D's
    authors' outputs): every reproducible cell of every released model with a paper row, exactly.
    With several readers, the file is the release of those that read it; when none does, each
    reader's reason is named (one reader: its own error)."""
    readers = offering(ReleasedOutputs)
    if not readers:
        raise ValueError(f"{path}: a file, and no benchmark reads released outputs")
    cells: list[Cell] = []
    missing: list[str] = []
    reasons: list[str] = []
    for spec, release in readers:
        try:
            rows, models = release.cells(path, EXACT_DECIMALS)
        except (UserError, ValueError) as err:
            if len(readers) == 1:
                raise
            reasons.append(f"{spec.title}: {err}")
            continue
        found = [_cell(str(path), row["model"], row["paper_model"], spec.paper.name, row["table"], row["cell"],
                       "released outputs", row["ours"], exact=True) for row in rows]
        cells += [c for c in found if c is not None]
        matched = {row["model"] for row in rows}
        missing += [f"{m} ({spec.name} release)" for m in models if m not in matched]
    if reasons and len(reasons) == len(readers):
        raise UserError(f"{path}: no benchmark reads it as released outputs ({'; '.join(reasons)})")
    return cells, missing


def verify_studies(root: Path) -> tuple[list[Cell], list[str]]:
    """Results of studies that are not lmms-eval runs (each ``Study`` capability's ``figures``:
    SpatialTunnel's ``spatial-tasks probe`` folders, Table 5 at the reported layer) under ``root``."""
    cells: list[Cell] = []
    unmatched: list[str] = []
    for spec, study in offering(Study):
        paper = _paper(spec)
        for folder, model, table_id, scope, figures in study.figures(root):
            paper_model = paper.match(model)
            if paper_model is None:
                unmatched.append(f"{model} ({scope.split(',')[0]})")
                continue
            found = [_cell(str(folder), model, paper_model, spec.paper.name, table_id, column, scope, value,
                           exact=False) for column, value in figures.items()]
            cells += [c for c in found if c is not None]
    return cells, unmatched


def verify(runs: RunSet, released: Sequence[Path] = ()) -> dict:
    """Every checked cell of the lmms-eval runs and study folders under the run set's folders and of the
    ``released`` outputs files, the unmatched models, and the verdict."""
    cells: list[Cell] = []
    unmatched: list[str] = []
    software: dict[str, dict] = {}  # run -> the software it recorded
    notes: dict[str, list[str]] = {"censored": [], "label_mass": []}
    for path in runs.roots:
        found, missing = verify_studies(path)
        cells += found
        unmatched += missing
        under = runs.by_root.get(path, [])
        if not under and not found and not missing:  # say what the folder lacks, not that no model matched
            raise SamplesError(f"{path}: holds no lmms-eval samples (<stamp>_samples_<task>.jsonl: run lmms-eval "
                               "with --log_samples) and no `spatial-tasks probe` folder; nothing to verify")
        for run in under:
            software[f"{run.folder}:{run.stamp}"] = software_of(run)
            found, missing, said = verify_run(runs, run)
            cells += found
            unmatched += missing
            for kind, said_here in said.items():
                notes[kind] += said_here
    for path in released:
        found, missing = verify_release(Path(path))
        cells += found
        unmatched += missing
    grades = defaultdict(int)
    for cell in cells:
        grades[cell.grade] += 1
    checked = [c for c in cells if c.grade != "missing"]  # our figure undefined there: nothing to compare
    return {"cells": [asdict(c) for c in cells], "grades": dict(grades),
            "unmatched_models": sorted(set(unmatched)), "checked": len(checked),
            "software": software, **{kind: lines for kind, lines in notes.items() if lines}, "software_warning": mixed_warning(list(software.values()), "runs verified here"),
            "passed": bool(checked) and all(c.passed for c in checked)}


def verify_lines(result: dict) -> list[str]:
    """The report a person reads: one line per cell, then the counts and the verdict."""
    lines = [f"{'model':34} {'paper row':22} {'table':8} {'cell':32} {'ours':>8} {'paper':>8} {'|Δ| pts':>8}  grade"]
    for c in result["cells"]:
        ours = "-" if c["ours"] is None else f"{c['ours']:.4f}"
        delta = "-" if c["delta_points"] is None else f"{c['delta_points']:.2f}"
        lines.append(f"{c['model'][-34:]:34} {c['paper_model'][:22]:22} {c['table']:8} {c['column'][:32]:32} "
                     f"{ours:>8} {c['paper']:>8.4f} {delta:>8}  {c['grade']}")
    order = ("exact", "strong", "acceptable", "discrepancy", "mismatch")
    counts = ", ".join(f"{result['grades'][g]} {g}" for g in order if result["grades"].get(g)) or "none"
    missing = result["grades"].get("missing", 0)
    lines += ["", f"{result['checked']} cells checked: {counts}."
              + (f" {missing} not checked: our figure is undefined there (no such questions)." if missing else "")]
    if result["unmatched_models"]:
        lines.append("No paper row for: " + ", ".join(result["unmatched_models"]) +
                     " (tasks/<benchmark>/paper_results.yaml lists each paper's models, Hub ids and aliases).")
    lines += [f"Censored: {note}" for note in result.get("censored", [])]
    lines += [f"Label mass p(Yes) + p(No): {note}" for note in result.get("label_mass", [])]
    if result.get("software_warning"):
        lines.append(result["software_warning"])
    if not result["checked"]:
        lines.append("Nothing verified: no run or released file matched a paper model. A run is compared with a "
                     "paper row when its model (pretrained=...) is that row's Hub id or one of its names in "
                     "tasks/<benchmark>/paper_results.yaml (add yours there to map a run to a paper model); "
                     "--strict makes this exit 1.")
    else:
        lines.append("PASSED: every checked cell is within 5 points (or exact where the paper's own outputs were "
                     "scored)." if result["passed"] else
                     "FAILED: some cells differ by more than 5 points, or (released outputs) are not exact.")
    return lines


def paper_cells(runs: RunSet) -> list[Cell]:
    """Every paper cell of the runs whose model has a paper row (the report's "Beside the papers")."""
    return [cell for run in runs.runs for cell in verify_run(runs, run)[0]]


def paper_rows_lines(cells: list[Cell]) -> list[str]:
    """The report's "Beside the papers" section: ``paper_cells`` as a table."""
    if not cells:
        return ["No run's model has a row in the papers' tables (`tasks/<benchmark>/paper_results.yaml` lists "
                "each paper's models with their Hub ids and other names)."]
    lines = ["Our figure beside the paper's printed cell for the same model; |Δ| in points, graded as EASI "
             f"grades (≤ {STRONG} strong, ≤ {ACCEPTABLE:g} acceptable, more: discrepancy). "
             "`spatial-tasks verify` prints the same cells and exits 1 on a discrepancy.", "",
             "| model | paper row | table | cell | from | ours | paper | abs(Δ) pts | grade |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        ours = "-" if c.ours is None else f"{c.ours:.3f}"
        delta = "-" if c.delta_points is None else f"{c.delta_points:.1f}"
        lines.append(f"| {Path(c.model).name} | {c.paper_model} | {c.benchmark} {c.table} | {c.column} | {c.scope} | "
                     f"{ours} | {c.paper:.3f} | {delta} | {c.grade} |")
    return lines
