"""``spatial-tasks report``: lmms-eval outputs -> figures and a one-page index (report.md).

Figures come from the logged samples (run lmms-eval with ``--log_samples``), re-scored with the
same functions as the live run, so they always agree with the results table. Each benchmark
contributes a ``<benchmark>_figures(runs, out)`` function; runs are grouped per benchmark by
the ``benchmark`` field of the logged docs.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from spatial_tasks.common.samples import Run, find_runs, iter_samples
from spatial_tasks.paths import output_folder


def _benchmark(samples_path: Path) -> str | None:
    """The benchmark named by the first logged record (any metric key) or doc."""
    for sample in iter_samples(samples_path):
        for value in sample.values():
            if isinstance(value, dict) and value.get("benchmark"):
                return value["benchmark"]
        return None
    return None


def write_report(root: Path, out: Path) -> list[Path]:
    """Write every benchmark's figures and report.md under ``out``; returns the files written."""
    from spatial_tasks.spatialtunnel.report import spatialtunnel_figures

    figure_makers = {"spatialtunnel": spatialtunnel_figures}
    try:
        from spatial_tasks.o3d.report import o3d_figures
    except ImportError:  # O3-D report not available in this build
        pass
    else:
        figure_makers["o3d"] = o3d_figures

    out = output_folder(out)
    by_benchmark: dict[str, list[tuple[Run, str, Path]]] = defaultdict(list)
    for run in find_runs(root):
        for task, samples in run.samples.items():
            benchmark = _benchmark(samples)
            if benchmark in figure_makers:
                by_benchmark[benchmark].append((run, task, samples))
    if not by_benchmark:
        raise FileNotFoundError(f"{root}: no logged samples of our benchmarks; run lmms-eval with --log_samples")
    written: list[Path] = []
    sections = ["# spatial-tasks report", "", f"Source: `{root}`", ""]
    for benchmark, entries in sorted(by_benchmark.items()):
        files, lines = figure_makers[benchmark](entries, out)
        written += files
        sections += [f"## {benchmark}", "", *lines, ""]
        sections += [f"![{p.stem}]({p.name})" for p in files] + [""]
    index = out / "report.md"
    index.write_text("\n".join(sections), encoding="utf-8")
    return [*written, index]
