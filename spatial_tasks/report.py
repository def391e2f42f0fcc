"""``spatial-tasks report``: lmms-eval outputs -> figures and a one-page index (report.md).

Figures come from the logged samples (run lmms-eval with ``--log_samples``), re-scored with the
same functions as the live run, so they always agree with the results table. The command reads its
folder once (``registry.read_runs``: a ``common.runset.RunSet``) and hands that set down: each
benchmark's section (``Benchmark.report``: ``write(runs, out)``, its files and markdown, tables with a
legend under each) gets the part its records logged (``RunSet.by_benchmark``). The report opens with the scorecard (``spatial_tasks.results``: one row per
model, each benchmark's headline figures with 95 % intervals) and writes the same rows to
leaderboard.json / leaderboard.csv, merged into the leaderboard it replaces. "Beside the papers"
follows: the published cells of every run whose model has a paper row (``results.verify``).

Writing into a folder that holds an earlier report replaces it, but only once the new one is
complete: it is drawn in a hidden staging folder inside ``out``, and only then are the files the
earlier report wrote deleted and the new ones moved in. What the report wrote is in the folder's
ledger (``common.owned``): a file it would replace or drop that the ledger does not prove is ours
(a user's ``report.md``, a figure edited since) stops it before anything is touched, naming the
file. A report that fails leaves the earlier one as it was.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Study
from spatial_tasks.common.environment import describe, mixed_warning, software
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.owned import Ledger
from spatial_tasks.common.runset import RunSet, software_of
from spatial_tasks.common.samples import Run, only_empty
from spatial_tasks.page import PAGE, write_page
from spatial_tasks.paths import output_folder
from spatial_tasks.registry import MODULES, BenchmarkFailed, benchmark_module, guarded, offering
from spatial_tasks.results.scorecard import (
    LEADERBOARD_CSV,
    LEADERBOARD_JSON,
    scorecard_lines,
    write_leaderboard,
)
from spatial_tasks.results.tidy import collect

REPORT = "spatial-tasks report"
STAGING = ".report-"  # the hidden folder a report is drawn in before it replaces the earlier one


def _previous_report(ledger: Ledger) -> list[Path]:
    """The files an earlier report wrote here (the folder's ledger lists them as the report's)."""
    return [path for path, by in ledger.listed_with_writer() if by == REPORT]


def _studies_of(folders: Sequence[Path]) -> list[tuple[Benchmark, Study]]:
    """The studies (``Study`` capability) that hold these folders, in registry order; a folder that
    none holds is named with what each study's folders hold."""
    studies = offering(Study)
    for folder in folders:
        if not any(study.holds(Path(folder)) for _, study in studies):
            needs = "; ".join(f"{b.title}: {study.marks}" for b, study in studies) or "no benchmark offers a study"
            raise UserError(f"{folder}: not a study folder ({needs})")
    return [(b, study) for b, study in studies if any(study.holds(Path(f)) for f in folders)]


def write_report(runs: RunSet | None, out: Path, intro: Sequence[str] = (), probes: Sequence[Path] = (),
                 view: Mapping | None = None) -> list[Path]:
    """Write every benchmark's figures and report.md under ``out`` (an earlier report there is
    replaced) from ``runs`` (``registry.read_runs``; None: probe folders only); ``intro`` lines go under
    the title; ``probes`` are ``spatial-tasks probe`` folders (their section is redrawn from the saved
    deltas); ``view``: what the page's sample browser opens on (``page.page_data``). Returns the files
    written."""
    out = output_folder(out)
    empty = runs.empty() if runs is not None else []
    ours = runs.by_benchmark() if runs is not None else {}
    if empty and (ours or probes):
        for samples in empty:
            print(f"spatial-tasks: {samples}: empty, 0 lines; left out of the report", file=sys.stderr, flush=True)
    if not ours and not probes:
        if empty:
            raise only_empty(empty, "nothing to report")
        where = runs.source if runs is not None else "no runs and no probe folders"
        raise FileNotFoundError(f"{where}: no logged samples of our benchmarks; run lmms-eval with --log_samples")
    ledger = Ledger(out, REPORT)
    ledger.remove_leftover_scratch(STAGING)  # a report killed midway (kill -9) left its staging folder
    staging = Path(tempfile.mkdtemp(prefix=STAGING, dir=out))
    try:
        ledger.record_scratch(staging)
    except BaseException:
        staging.rmdir()  # made a moment ago and still empty: the ledger could not list it
        raise
    try:
        return _replace_report(runs, out, ledger, staging, intro, probes, view)
    finally:
        ledger.remove(staging)


def _replace_report(runs: RunSet | None, out: Path, ledger: Ledger, staging: Path, intro: Sequence[str],
                    probes: Sequence[Path], view: Mapping | None) -> list[Path]:
    """Draw the report into ``staging``, then, once it is whole, drop the earlier report's files
    and move the new ones in, all through the ledger (nothing of the user's, nothing behind a link)."""
    records = collect(runs) if runs is not None else []  # the tidy headline records
    staged, page = _draw(runs, intro, probes, staging, records)
    page["view"] = view
    # The leaderboard keeps the rows of the one it replaces (same key: the newer row), also
    # when this report adds none (a probe-only report must not drop it).
    leaderboard: list[dict] = []
    if records or (out / LEADERBOARD_JSON).exists() or (out / LEADERBOARD_CSV).exists():
        staged += write_leaderboard(records, staging, previous=out)
        leaderboard = json.loads((staging / LEADERBOARD_JSON).read_text(encoding="utf-8"))["records"]
    staged += write_page(staging, leaderboard=leaderboard, **page)  # the page shows the leaderboard as written
    # Nothing of the user's is replaced: every file this report replaces, and every one the
    # earlier report wrote that this one drops, must be in the ledger, unchanged since.
    staged = list(dict.fromkeys(staged))  # a file drawn twice (a run and its copy: one label) is moved once
    targets = [out / path.name for path in staged]
    stale = [path for path in _previous_report(ledger) if path not in targets]
    what_to_do = "Move them away, or write the report to another --out."
    ledger.check([*targets, *stale], what_to_do=what_to_do)
    ledger.remove(*stale, what_to_do=what_to_do)
    return [ledger.replace(path, out / path.name, what_to_do=what_to_do) for path in staged]


def _section(benchmark: Benchmark, runs: RunSet, out: Path) -> tuple[list[Path], list[str]]:
    """A benchmark's report section over its part of the run set; one added by ``$SPATIAL_TASKS_BENCHMARKS``
    whose code raises is contained (``registry.guarded``: ``BenchmarkFailed``), ours raise as the bugs
    they would be."""
    if benchmark_module(benchmark.name) in MODULES:
        return benchmark.report.write(runs, out)
    return guarded(benchmark, "its report section", benchmark.report.write, runs, out)


def software_rows(runs: Sequence[Run]) -> list[tuple[str, dict]]:
    """(run, the software it recorded) per run."""
    return [(run.label, software_of(run)) for run in runs]


def software_lines(runs: Sequence[Run]) -> list[str]:
    """The "Software" section: each run's recorded versions, a warning when runs compared in this
    report differ in torch or transformers, and what scored them (this spatial-tasks)."""
    rows = software_rows(runs)
    lines = ["| run | python | torch | transformers | lmms-eval | datasets | spatial-tasks | commit | lock |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, env in rows:
        cells = [env.get(k) for k in ("python", "torch", "transformers", "lmms_eval", "datasets", "spatial_tasks")]
        commit, lock = env.get("spatial_tasks_commit"), env.get("lock")
        lines.append("| " + " | ".join([f"`{label}`", *(c or "?" for c in cells), (commit or "?")[:12],
                                       (lock[:12] if lock else "none")]) + " |")
    lines += ["", "As each run recorded them (\"?\": the run predates this record, or its tasks are not ours); "
              "lock: the sha256 of the requirements.lock its environment was installed from (none: installed without it). "
              f"Figures recomputed here with {describe(software())}."]
    warning = mixed_warning([env for _, env in rows], "runs compared in this report")
    return lines + (["", f"**{warning}**"] if warning else [])


def settings_rows(runs: RunSet) -> list[tuple[str, str, dict[str, str]]]:
    """(run, benchmark title, settings) per run and benchmark: the settings its figures depend on (each
    benchmark's ``settings`` of its records: BERTScore backbone, option-order seed, answer reader,
    protocol), as the result records carry them."""
    rows = []
    for part in runs.by_benchmark().values():
        spec = part.tasks[0].benchmark
        if spec.settings is None:
            continue
        per_run: dict[str, list[dict]] = defaultdict(list)
        for entry in part.tasks:
            per_run[entry.run.label] += entry.records()
        for label, records in per_run.items():
            found = spec.settings(records)
            if found:
                rows.append((label, spec.title, found))
    return rows


def settings_lines(rows: Sequence[tuple[str, str, dict[str, str]]]) -> list[str]:
    """The "Scoring settings" section: ``settings_rows`` as a table."""
    if not rows:
        return ["No run recorded a setting its figures depend on."]
    return ["| run | benchmark | settings |", "|---|---|---|",
            *(f"| `{label}` | {title} | " + "; ".join(f"{k} = `{v}`" for k, v in found.items()) + " |"
              for label, title, found in rows), "",
            "What each figure was scored with; the same settings are in every result record (`settings`)."]


def _draw(runs: RunSet | None, intro: Sequence[str], probes: Sequence[Path], out: Path, records: Sequence = ()
          ) -> tuple[list[Path], dict]:
    """Every figure and report.md, drawn into ``out`` (the staging folder): (the files written, what
    the report page shows besides the leaderboard)."""
    written: list[Path] = []
    source = (f"Source: `{runs.source}` ({len(runs.runs)} lmms-eval run(s)). Every figure is recomputed from the "
              "logged samples with the functions of the live run.") if runs is not None else (
              "Source: probe folders only (no lmms-eval results).")
    sections = ["# spatial-tasks report", "", *intro, "" if intro else "", source, "",
                f"The same report as a page to look at, with every sample and its image: `{PAGE}` (open it in a "
                "browser; it fetches nothing).", ""]
    card = scorecard_lines(records)
    if card:
        sections += ["## Scorecard", "", *card, "", f"The same rows are in `{LEADERBOARD_JSON}` / `{LEADERBOARD_CSV}` "
                     "(schema: `spatial_tasks/results/record.schema.json`).", ""]
    cells, settings = [], []
    ours = runs.by_benchmark() if runs is not None else {}
    if runs is not None and runs.runs:
        from spatial_tasks.results.verify import paper_cells, paper_rows_lines

        cells, settings = paper_cells(runs), settings_rows(runs)
        sections += ["## Beside the papers", "", *paper_rows_lines(cells), ""]
        sections += ["## Software", "", *software_lines(runs.runs), ""]
        sections += ["## Scoring settings", "", *settings_lines(settings), ""]
    figures: list[tuple[str, list[Path]]] = []  # (section title, its figures) in the report's order
    for name, part in ours.items():  # in registry order
        benchmark = runs.known[name]
        try:
            files, lines = _section(benchmark, part, out)
        except BenchmarkFailed as failed:  # an added benchmark's section: named, the others still drawn
            print(f"spatial-tasks: {failed}; its section is left out", file=sys.stderr)
            files, lines = [], [f"**Not drawn**: {failed}."]
        written += files
        figures.append((benchmark.title_for_report(), files))
        sections += [f"## {benchmark.title_for_report()}", "", *lines, ""]
        sections += [f"![{p.stem}]({p.name})" for p in files] + [""]
    for benchmark, study in _studies_of(probes):
        files, lines = study.section.write([f for f in probes if study.holds(Path(f))], out)
        written += files
        figures.append((study.section.title or benchmark.title, files))
        sections += [f"## {study.section.title or benchmark.title}", "", *lines, ""]
        sections += [f"![{p.stem}]({p.name})" for p in files] + [""]
    index = out / "report.md"
    index.write_text("\n".join(sections), encoding="utf-8")
    page = {"intro": intro, "source": source, "papers": cells, "runs": runs,
            "versions": software_rows(runs.runs if runs is not None else []), "settings": settings, "figures": figures}
    return [*written, index], page
