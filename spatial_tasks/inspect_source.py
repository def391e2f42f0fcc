"""``spatial-tasks inspect SOURCE``: what a dataset holds, and which of our readers takes it.

First contact with an unknown layout should teach something. For a local folder, one data file
(parquet, JSON lines, CSV, TSV), or a Hub id read from the local Hugging Face cache (nothing is
downloaded), this lists the files, then every config and split ``datasets`` finds there with its
columns and their types and one sample row (long values cut, images shown as their size), and says
for each split which benchmark reader takes it (each benchmark's ``inspect_split``) or, when none
does, the first reason each gives. A data file that cannot be read is named with the reason (no
rows, not parquet). Rows are read lazily (streaming), so a large release costs seconds.

A reader is listed as "accepted" only when the rows read here (the first ``SAMPLE_ROWS``) load
through its benchmark's own loader, not merely when the columns fit; a later row may still be
refused, with its number, when a task loads the whole split.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets

from spatial_tasks.benchmark import FolderInspection
from spatial_tasks.common.validate import DataError, data_file_problem, dataset_file_problem, folder_link_problem, kind_of
from spatial_tasks.registry import BenchmarkFailed, guarded, offering
from spatial_tasks.registry import benchmarks as all_benchmarks

SAMPLE_ROWS = 8  # rows read per split to try the readers on
MAX_FILES = 40
CUT = 80  # characters of a sample value shown
# One data file, read as datasets' builder for its suffix would read it (TSV: the csv builder).
FILE_BUILDERS = {".parquet": ("parquet", {}), ".jsonl": ("json", {}), ".json": ("json", {}),
                 ".csv": ("csv", {}), ".tsv": ("csv", {"delimiter": "\t"}), ".arrow": ("arrow", {})}


@dataclass
class SplitReport:
    config: str
    split: str
    columns: dict[str, str] = field(default_factory=dict)
    rows: int | None = None
    sample: dict[str, str] = field(default_factory=dict)
    readers: dict[str, str] = field(default_factory=dict)  # benchmark -> "accepted: ..." or the reason it refuses
    error: str | None = None


@dataclass
class Report:
    source: str
    folder: str | None
    files: list[str] = field(default_factory=list)
    more_files: int = 0
    splits: list[SplitReport] = field(default_factory=list)
    folder_readers: dict[str, str] = field(default_factory=dict)  # layouts read as a folder (VAGUE items ...)
    error: str | None = None

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


# ------------------------------------------------------------------------------------------
# Readers: each benchmark's ``inspect_split``, and ``FolderInspection`` where one offers it


def readers() -> dict[str, Callable[..., str]]:
    """benchmark -> its split reader ``(dataset, "config/split", files) -> verdict``."""
    return {name: b.inspect_split for name, b in all_benchmarks().items() if b.inspect_split is not None}


def _folder_readers(folder: Path, chosen: list[str]) -> dict[str, str]:
    """Layouts our loaders read as a whole folder, without ``datasets``."""
    return {b.name: _verdict(b, "its inspect capability", reader.inspect, folder)
            for b, reader in offering(FolderInspection) if b.name in chosen}


def _verdict(benchmark, what: str, reader, *args, **kwargs) -> str:
    """A reader's verdict; a reader that raises gets a verdict saying so, naming its module, and the
    other benchmarks' readers still judge (``registry.guarded``)."""
    try:
        return guarded(benchmark, what, reader, *args, **kwargs)
    except BenchmarkFailed as failed:
        return f"cannot judge: {failed}"


# ------------------------------------------------------------------------------------------
# Looking at a source


def resolve(source: str) -> Path:
    """A local folder, or a Hub id's snapshot in the local Hugging Face cache (never downloaded)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists():
        if path.suffix.lower() not in FILE_BUILDERS:
            raise DataError(f"{source}: inspect reads a dataset folder, a Hub id, or one data file "
                            f"({', '.join(FILE_BUILDERS)}); this file is none of them")
        return path.absolute()  # a link keeps its own name (and suffix); the report names its target
    if source.count("/") == 1 and not source.startswith((".", "/", "~")):
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(source, repo_type="dataset", local_files_only=True))
        except Exception as err:  # noqa: BLE001 - not cached, or no such repo: say what to do
            raise DataError(f"{source}: not in the local Hugging Face cache ({type(err).__name__}); inspect never "
                            "downloads -- fetch it once online (huggingface-cli download --repo-type dataset "
                            f"{source}) or point at a local copy") from None
    raise DataError(f"{source}: no such folder (a Hub dataset is given as ORG/NAME)")


def _show(value: Any) -> str:
    if isinstance(value, dict) and ("bytes" in value or "path" in value) and set(value) <= {"bytes", "path"}:
        data = value.get("bytes")
        return f"<image: {len(data)} bytes>" if data else f"<image path {value.get('path')!r}>"
    if hasattr(value, "size") and hasattr(value, "mode"):  # a PIL image
        return f"<image {value.size[0]}x{value.size[1]} {value.mode}>"
    text = repr(value)
    return text if len(text) <= CUT else text[: CUT - 1] + "…"


def split_of_file(path: Path) -> str:
    """The split ``datasets`` gives a data file in its folder by the file's name (``test-00000-of-00001
    .parquet`` -> test), as a task that loads the folder sees it; "train" where the name says none."""
    from datasets.data_files import get_data_patterns, resolve_pattern

    try:
        patterns = get_data_patterns(str(path.parent))
    except Exception:  # noqa: BLE001 -- no recognisable layout there: one file, one split
        return "train"
    for split, split_patterns in patterns.items():
        for pattern in split_patterns:
            try:
                found = resolve_pattern(pattern, str(path.parent))
            except FileNotFoundError:
                continue
            if any(Path(f.removeprefix("file://")).resolve() == path.resolve() for f in found):
                return str(split)
    return "train"


def _split_report(folder: Path, config: str, split: str, benchmarks: list[str], files: list[str]) -> SplitReport:
    report = SplitReport(config=config, split=split)
    try:
        if folder.is_file():
            builder, options = FILE_BUILDERS[folder.suffix.lower()]
            stream = datasets.load_dataset(builder, data_files=str(folder), split="train", streaming=True, **options)
        else:
            stream = datasets.load_dataset(str(folder), config, split=split, streaming=True)
        stream = stream.cast_column("image", datasets.Image(decode=False)) if isinstance(
            (stream.features or {}).get("image"), datasets.Image) else stream
        rows = list(itertools.islice(iter(stream), SAMPLE_ROWS))
    except Exception as err:  # noqa: BLE001 - whatever datasets says, reported
        problem = dataset_file_problem(str(folder), config)
        report.error = problem or f"datasets cannot read it: {type(err).__name__}: {' '.join(str(err).split())[:300]}"
        return report
    features = stream.features or (datasets.Dataset.from_list(rows).features if rows else datasets.Features())
    report.columns = {name: kind_of(feature) for name, feature in features.items()}
    info = getattr(stream, "info", None)
    splits = getattr(info, "splits", None) or {}
    report.rows = splits[split].num_examples if split in splits and splits[split].num_examples else None
    if rows:
        report.sample = {k: _show(v) for k, v in rows[0].items()}
    sample = datasets.Dataset.from_list(rows, features=features) if rows else datasets.Dataset.from_dict(
        {k: [] for k in features}, features=features)
    every, described = readers(), all_benchmarks()
    root = folder.parent if folder.is_file() else folder
    for benchmark in benchmarks:
        reader = every[benchmark]

        def judge(reader=reader):
            # ``root`` (the local folder, for image paths) goes to readers that take it
            where = {"root": root} if "root" in inspect.signature(reader).parameters else {}
            return reader(sample, f"{config}/{split}", files, **where)

        judge.module = getattr(reader, "module", None) or getattr(reader, "__module__", None)
        report.readers[benchmark] = _verdict(described[benchmark], "its split reader", judge)
    return report


def inspect_source(source: str, benchmark: str | None = None) -> Report:
    """The report of ``source`` (see the module docstring); ``benchmark`` limits the readers tried."""
    if benchmark is not None and benchmark not in readers():
        raise ValueError(f"--benchmark {benchmark!r}: one of {', '.join(readers())}")
    chosen = [benchmark] if benchmark else list(readers())
    folder = resolve(source)
    report = Report(source=source, folder=str(folder))
    if folder.is_file():  # one data file: itself, as one split
        report.files = [folder.name]
        problem = data_file_problem(folder)
        if problem:
            report.error = problem
        else:
            report.splits.append(_split_report(folder, "(the file)", split_of_file(folder), chosen, [folder.name]))
        return report
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    report.files, report.more_files = files[:MAX_FILES], max(0, len(files) - MAX_FILES)
    report.folder_readers = _folder_readers(folder, chosen)
    try:
        configs = datasets.get_dataset_config_names(str(folder))
    except Exception as err:  # noqa: BLE001
        report.error = folder_link_problem(folder) or (
            f"datasets finds no configs here: {type(err).__name__}: {' '.join(str(err).split())[:300]}")
        return report
    for config in configs:
        try:
            splits = datasets.get_dataset_split_names(str(folder), config)
        except Exception as err:  # noqa: BLE001
            problem = dataset_file_problem(str(folder), config)
            report.splits.append(SplitReport(config=config, split="?", error=problem or f"cannot list its splits: {err}"))
            continue
        for split in splits:
            report.splits.append(_split_report(folder, config, split, chosen, files))
    return report


def render(report: Report) -> str:
    """The report as text for a person."""
    lines = [f"{report.source}" + (f"  ({report.folder})" if report.folder != report.source else "")]
    lines.append(f"files ({len(report.files) + report.more_files}):")
    lines += [f"  {f}" for f in report.files] + ([f"  ... and {report.more_files} more"] if report.more_files else [])
    for benchmark, verdict in report.folder_readers.items():
        if verdict.startswith(("accepted", "cannot judge")) or report.error or not report.splits:
            lines.append(f"as a folder, {benchmark}: {verdict}")
    if report.error:
        lines.append(report.error)
    for split in report.splits:
        size = f", {split.rows} rows" if split.rows is not None else ""
        lines.append(f"config {split.config!r}, split {split.split!r}{size}:")
        if split.error:
            lines.append(f"  {split.error}")
            continue
        lines += [f"  {name}: {kind}" for name, kind in split.columns.items()]
        if split.sample:
            lines.append("  first row: " + ", ".join(f"{k}={v}" for k, v in split.sample.items()))
        for benchmark, verdict in split.readers.items():
            lines.append(f"  {benchmark}: {verdict}")
    accepted = [b for s in report.splits for b, v in s.readers.items() if v.startswith("accepted")]
    accepted += [b for b, v in report.folder_readers.items() if v.startswith("accepted")]
    lines.append("read by: " + (", ".join(sorted(set(accepted))) if accepted else
                                "none of our readers (the reasons are above)"))
    return "\n".join(lines)
