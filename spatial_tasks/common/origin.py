"""Where a loaded split came from, so that errors name the file and row a user can open.

A loaded ``datasets.Dataset`` does not say which files it was read from (``info`` keeps only
snake-cased names, ``cache_files`` point into the datasets cache). The task's own data description
does (``harness.TaskData``: dataset_path, dataset_name, dataset_kwargs), so ``origin_for`` asks
``datasets`` which data files that description reads, in order
(``load_dataset_builder(...).config.data_files``). Row counts come from the parquet footers, so
"row 1234 of the split" becomes "FILE, row 17" (0-based, as pandas and pyarrow count).

Where the files cannot be known (a Hub id, an in-memory dataset, a split of several non-parquet
files) the row is the split's row and the label says which split. Nothing here reads images.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets

LOCAL_BUILDERS = frozenset({"parquet", "arrow", "json", "csv", "text", "pandas"})  # datasets' packaged builders
_BUILDER_KWARGS = ("data_files", "data_dir")  # what decides which files a builder reads


@dataclass(frozen=True)
class Origin:
    """A loaded split: its label, its data files (in load order, with row counts) and the local
    folder it lives in (``root``; None for a Hub id or an in-memory dataset)."""

    label: str
    files: tuple[tuple[str, int], ...] = ()
    root: Path | None = None
    path: str | None = None  # dataset_path as given to datasets.load_dataset
    name: str | None = None  # config
    split: str | None = None
    load_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def locate(self, row: int) -> str:
        """Where row ``row`` of the split is: "FILE, row K" (K counted within that file, 0-based;
        text files add the line number), else "LABEL, row K"."""
        start = 0
        for path, count in self.files:
            if row < start + count:
                local = row - start
                line = f" (line {local + 2})" if path.endswith((".csv", ".tsv")) else ""
                line = f" (line {local + 1})" if path.endswith(".jsonl") else line
                return f"{path}, row {local}{line}"
            start += count
        return f"{self.label}, row {row}"

    def file_of(self, row: int) -> Path | None:
        """The data file holding ``row`` (None when the files are not known)."""
        start = 0
        for path, count in self.files:
            if row < start + count:
                return Path(path)
            start += count
        return None

    @property
    def where(self) -> str:
        """The file (one file) or the label (several, or unknown) for messages about the whole split."""
        return self.files[0][0] if len(self.files) == 1 else self.label


def fingerprint(dataset: object) -> str:
    """A datasets.Dataset's fingerprint (what its cache keys on), else the object's id. datasets keeps it
    in the private ``_fingerprint`` and offers no public reader: this is the one place that reads it."""
    value = getattr(dataset, "_fingerprint", None)
    return str(value) if value else f"id-{id(dataset)}"


def in_memory(label: str) -> Origin:
    return Origin(label=label)


def origin_for(dataset: datasets.Dataset | None, path: str, name: str | None, split: str | None,
               kwargs: Mapping[str, Any] | None = None) -> Origin:
    """The origin of ``load_dataset(path, name, split=split, **kwargs)`` (``dataset`` is what it
    returned: its length checks the file row counts)."""
    kwargs = dict(kwargs or {})
    label = f"{path}" + (f" [{name}]" if name else "") + (f" split {split}" if split else "")
    local = os.path.isdir(path) or path in LOCAL_BUILDERS
    if not local or kwargs.get("load_from_disk"):
        return Origin(label=label, path=path, name=name, split=split, load_kwargs=kwargs)
    files = _data_files(path, name, split, kwargs)
    counted = _row_counts(files, None if dataset is None else len(dataset))
    root = Path(path).resolve() if os.path.isdir(path) else _common_folder(files)
    return Origin(label=label, files=counted, root=root, path=path, name=name, split=split, load_kwargs=kwargs)


def _data_files(path: str, name: str | None, split: str | None, kwargs: Mapping[str, Any]) -> list[str]:
    builder_kwargs = {k: kwargs[k] for k in _BUILDER_KWARGS if k in kwargs}
    try:
        builder = datasets.load_dataset_builder(path, name, **builder_kwargs)
        data_files = builder.config.data_files or {}
    except Exception:  # noqa: BLE001 - locating files is best effort; the load itself already worked
        return []
    if split is None:
        return [str(f) for files in data_files.values() for f in files] if len(data_files) == 1 else []
    return [str(f) for f in data_files.get(split, [])]


def _row_counts(files: Sequence[str], expected: int | None) -> tuple[tuple[str, int], ...]:
    """(file, rows) for every file, when the counts are known and add up to the split's length."""
    if not files:
        return ()
    if len(files) == 1 and expected is not None:
        return ((files[0], expected),)
    counts = []
    for file in files:
        if not file.endswith(".parquet"):
            return ()
        try:
            import pyarrow.parquet as pq

            counts.append((file, pq.ParquetFile(file).metadata.num_rows))
        except Exception:  # noqa: BLE001 - an unreadable footer: fall back to split rows
            return ()
    if expected is not None and sum(n for _, n in counts) != expected:
        return ()
    return tuple(counts)


def _common_folder(files: Sequence[str]) -> Path | None:
    if not files:
        return None
    return Path(os.path.commonpath([str(Path(f).resolve().parent) for f in files]))


def folder_cache(path: str | os.PathLike, load_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``load_kwargs`` for ``datasets.load_dataset(path, ...)``, with a cache of its own when ``path`` is a
    local folder.

    datasets keeps a local folder's configs under the folder's *name* and the config's
    (``<cache>/<folder name>/<config>/0.0.0/<module hash>``), not under its files: a second folder of the
    same name, or the same folder generated again, silently reads the first one's rows. So each version of
    a folder's files (paths, sizes, modification times; the folder's own path) gets its own cache_dir.
    """
    kwargs = dict(load_kwargs or {})
    folder = Path(path).expanduser()
    if "cache_dir" in kwargs or not folder.is_dir():
        return kwargs
    import hashlib

    digest = hashlib.sha256(str(folder.resolve()).encode())
    for file in sorted(folder.rglob("*")):
        relative = file.relative_to(folder)
        if file.is_file() and not any(part.startswith((".", "_")) for part in relative.parts):
            stat = file.stat()
            digest.update(f"\n{relative}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    kwargs["cache_dir"] = str(Path(datasets.config.HF_DATASETS_CACHE) / "spatial-tasks-folders" / digest.hexdigest()[:20])
    return kwargs
