"""Checking a dataset where it enters: columns, their types, and values, one clear line per error.

Each benchmark's loader declares what it needs (``require_columns``) and checks its values with
the helpers here, so every later step sees only good docs. Errors are ``DataError`` (a
ValueError) whose message names the file (or split), the row and the field.
"""

from __future__ import annotations

import csv
import itertools
import math
import os
import reprlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import datasets

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.origin import Origin

# What a column may hold, by the kind the loader asks for (datasets feature dtypes).
_KINDS: dict[str, frozenset[str]] = {
    "string": frozenset({"string", "large_string"}),
    "int": frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}),
    "float": frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                        "uint32", "uint64"}),
    "bool": frozenset({"bool"}),
}


class DataError(UserError, ValueError):
    """Bad input data; the message is one line naming the file, row and field."""


class SourceError(DataError):
    """A benchmark source (a release, a folder, a generated dataset) that cannot be read as
    that benchmark's docs; every loader raises this one class."""


# Appended to errors about a source's layout (columns, files), which ``inspect`` explains.
INSPECT_HINT = " (`spatial-tasks inspect SOURCE` shows what a source holds and which reader takes it)"


def kind_of(feature: object) -> str:
    """A short name of a datasets feature: string, int64, float32, bool, image, list, struct, ..."""
    if isinstance(feature, datasets.Image):
        return "image"
    if isinstance(feature, datasets.Value):
        return str(feature.dtype)
    if isinstance(feature, (datasets.List, datasets.LargeList, list)):
        return "list"
    if isinstance(feature, datasets.Sequence):
        return "list"
    if isinstance(feature, dict):
        return "struct"
    return type(feature).__name__


def category(feature: object) -> str:
    """The kind ``require_columns`` asks for that a feature belongs to: string, int, float, bool,
    image, list or struct (int columns are "int", which also passes as "float")."""
    found = kind_of(feature)
    for kind in ("string", "bool", "int", "float"):
        if found in _KINDS[kind]:
            return kind
    return found


def has_kind(feature: object, kind: str) -> bool:
    """Whether a column's feature holds values of ``kind`` (string, int, float, bool, image, list,
    struct, or "any")."""
    if kind == "any":
        return True
    found = kind_of(feature)
    if kind in _KINDS:
        return found in _KINDS[kind]
    return found == kind


def require_columns(dataset: datasets.Dataset, needed: Mapping[str, str], origin: Origin, what: str,
                    error: type[DataError] = DataError) -> None:
    """Every column of ``needed`` (name -> kind) present with values of that kind; else ``error``."""
    features = dataset.features
    missing = [name for name in needed if name not in features]
    if missing:
        raise error(f"{origin.where}: missing column(s) {missing} needed for {what}; "
                    f"found columns {sorted(features)}{INSPECT_HINT}")
    for name, kind in needed.items():
        if not has_kind(features[name], kind):
            raise error(f"{origin.where}: column {name!r} holds {kind_of(features[name])} values, "
                        f"expected {kind} ({what}){INSPECT_HINT}")


def columns(dataset: datasets.Dataset, names: Sequence[str]) -> dict[str, list]:
    """Plain Python lists of some (non-image) columns, read through Arrow."""
    if not names:
        return {}
    return dataset.select_columns(list(names)).with_format("arrow")[:].to_pydict()


def is_finite_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def finite_number(value: object, field: str, bad: Callable[[str, str], Exception]) -> float:
    """``value`` (a number or numeric text) as a finite float; otherwise ``bad(field, problem)``
    is raised (a loader's one-line error naming the row)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise bad(field, f"{short(value)} is not a number") from None
    if not math.isfinite(number):
        raise bad(field, f"{short(value)} is not a finite number")
    return number


def check_unique(values: Sequence[object], origin: Origin, field: str, error: type[DataError] = DataError) -> None:
    """No value twice: the error names both rows."""
    seen: dict[object, int] = {}
    for row, value in enumerate(values):
        if value in seen:
            raise error(f"{origin.locate(row)}, field {field!r}: duplicate {field} {short(value)} "
                        f"(also at {origin.locate(seen[value])})")
        seen[value] = row


_REPR = reprlib.Repr()  # its keyword arguments are Python 3.12+: set as attributes (3.11 is supported)
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 3, 8, 8, 6, 80, 80


def short(value: object, limit: int = 80) -> str:
    """A value as messages show it: at most ``limit`` characters, nesting cut at three levels (a
    value nested 100,000 deep, or whose repr fails, still prints)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a message must never fail on the value it names
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def flag(value: object, name: str) -> bool:
    """A boolean model arg as a bool or as lmms-eval's text ("true", "False", "1", "no"...)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}")


def http_url(value: object, name: str) -> str:
    """An http(s) URL with a host (a server's base URL), else ValueError naming ``name``."""
    from urllib.parse import urlsplit

    text = str(value or "").strip()
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok \
            or any(c.isspace() for c in text):
        raise ValueError(f"{name} {value!r}: not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)")
    return text


def safe_name(name: object, what: str) -> str:
    """``name`` when it can be one file or folder name inside an output folder: text, not empty,
    no path separator, not ``.`` or ``..``, no control characters. Every generator and command
    that turns a name from its input into a path checks it here, so nothing is written outside
    the folder it was given."""
    text = name if isinstance(name, str) else None
    if not text or text in (".", "..") or any(c in text for c in "/\\") or any(ord(c) < 32 for c in text):
        raise DataError(f"{what} {short(name)}: not usable as a file name (no '/', '\\', '..', control characters "
                        "or empty names)")
    return text


def safe_relative_path(path: object, what: str) -> str:
    """``path`` when it names a file INSIDE a given folder: relative, no ``..`` part, no control
    characters (subfolders are allowed)."""
    text = path if isinstance(path, str) else None
    parts = text.replace("\\", "/").split("/") if text else []
    if (not text or text.startswith(("/", "\\", "~")) or ":" in parts[0] or ".." in parts
            or any(ord(c) < 32 for c in text)):
        raise DataError(f"{what} {short(path)}: must be a path inside the folder (relative, no '..')")
    return text


def parquet_columns(path, error: type[DataError] = SourceError) -> list[str]:
    """The column names of a parquet file, read from its footer; an empty, truncated or foreign
    file is ``error`` naming the file."""
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise error(f"{path}: not a readable parquet file ({first[:160]})") from None


# The first bytes of what a data file's link may point at instead, and how to say it.
_MAGIC = ((b"PAR1", "a parquet file"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
          (b"\x1f\x8b", "a gzip file"), (b"PK\x03\x04", "a zip archive"), (b"GIF8", "a GIF image"))


def what_is_at(path: Path) -> str:
    """What ``path`` (a link's target) is, in words: missing, a folder, an empty file, or the kind
    its first bytes say (parquet, PNG, JPEG, gzip, zip, text, other bytes)."""
    if not path.exists():
        return "does not exist"
    if path.is_dir():
        return "is a folder"
    if not path.is_file():
        return "is not a regular file"
    with open(path, "rb") as handle:
        head = handle.read(512)
    if not head:
        return "is an empty file"
    kind = next((name for magic, name in _MAGIC if head.startswith(magic)), None)
    if kind is None:
        try:
            head.decode("utf-8")
            kind = "a text file"
        except UnicodeDecodeError:
            kind = "a file of other bytes"
    return f"is {kind}"


def link_problem(path: Path) -> str | None:
    """For a data file that is a symbolic link: the line naming the link, its target and what the
    target is, when the target is not what the link's name says (missing, a folder, not parquet);
    None for a plain file or a link to the right kind of file."""
    path = Path(path)
    if not path.is_symlink():
        return None
    target = Path(os.path.realpath(path))
    what = what_is_at(target)
    if path.suffix.lower() == ".parquet" and what == "is a parquet file":
        return None
    if path.suffix.lower() != ".parquet" and what.startswith("is a") and target.is_file():
        return None  # another suffix: its own reader judges the content
    return f"{path} is a link to {target}, which {what}" + (
        "" if what.startswith(("does not", "is a folder", "is not")) else f" (not a {path.suffix.lstrip('.')} file)")


def folder_link_problem(folder: str | Path) -> str | None:
    """The first data file under ``folder`` (hidden ones aside) that is a link to something other
    than its name says (``link_problem``); ``datasets`` skips a dangling link or fails on the whole
    folder, naming neither."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return None
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files) + [d for d in dirs if (Path(current) / d).is_symlink()]:
            if not name.startswith(".") and (problem := link_problem(Path(current) / name)):
                return problem
    return None


def data_file_problem(path: str | Path) -> str | None:
    """Why one local data file cannot be read as a table ("FILE: no rows", "FILE: not a readable
    parquet file (...)"), or None when it can. ``datasets`` reports either case as a bare
    DatasetGenerationError, so the loaders ask this to name the file."""
    import pyarrow.parquet as pq

    path = Path(path)
    if (problem := link_problem(path)) is not None:
        return problem
    shown = str(path)
    if not path.is_file():
        return f"{shown}: missing"
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            rows = pq.read_metadata(path).num_rows
        except Exception as err:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return f"{shown}: not a readable parquet file ({first[:160]})"
        return None if rows else f"{shown}: no rows (a parquet file with only its schema)"
    if suffix in (".csv", ".tsv", ".jsonl", ".json", ".txt"):
        try:
            with open(path, encoding="utf-8") as fh:
                lines = [line for line in itertools.islice(fh, 2) if line.strip()]
        except UnicodeDecodeError:
            return f"{shown}: not UTF-8 text (is it really a {suffix} file?)"
        header = 1 if suffix in (".csv", ".tsv") else 0
        if len(lines) <= header:
            return f"{shown}: no rows" + (" (only a header line)" if lines else " (the file is empty)")
        if header:
            return _table_shape_problem(path, shown, "\t" if suffix == ".tsv" else ",")
    return None


def _table_shape_problem(path: Path, shown: str, delimiter: str) -> str | None:
    """A CSV/TSV line with more cells than its header (datasets' reader stops there with a bare
    DatasetGenerationError; a line with fewer reads as empty cells, which the loaders name)."""
    tsv = delimiter == "\t"
    limit = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)  # a base64 image is one cell of megabytes
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            width = len(next(reader, []))
            for cells in reader:
                if len(cells) > width:
                    return (f"{shown}, line {reader.line_num}: {len(cells)} cells where the header has {width} "
                            f"(a stray {'tab' if tsv else 'comma'} or quote?)")
    except (csv.Error, UnicodeDecodeError) as err:
        return f"{shown}: not a readable {'TSV' if tsv else 'CSV'} table ({err})"
    finally:
        csv.field_size_limit(limit)
    return None


def dataset_file_problem(path: str, name: str | None = None, **load_kwargs) -> str | None:
    """The first problem (``data_file_problem``) among the local data files ``datasets`` would
    read for config ``name`` of ``path`` (a folder, or a builder such as "parquet" with
    ``data_files``); None when they all read, or they are not local (a Hub id is never resolved)."""
    # A builder name ("parquet", "csv" ...) has no slash; a Hub id has one and is never resolved here.
    named_builder = "data_files" in load_kwargs and "/" not in str(path)
    if not (Path(path).expanduser().is_dir() or named_builder):
        return None
    try:
        config = datasets.load_dataset_builder(str(path), name, **load_kwargs).config
        files = [f for split in (config.data_files or {}).values() for f in split]
    except Exception:  # noqa: BLE001 - the caller reports the loading error itself; a bad link it cannot see
        return folder_link_problem(path) if Path(path).expanduser().is_dir() else None
    found = next((problem for f in files if (problem := data_file_problem(f))), None)
    return found or (folder_link_problem(path) if Path(path).expanduser().is_dir() else None)


def reads_docs(benchmark: str, fields: Sequence[str]) -> Callable:
    """Decorator for an lmms-eval doc hook (doc_to_text, doc_to_visual, process_results ...): its
    first argument must be a canonical doc of ``benchmark`` -- one its loader made (the task's
    process_docs) -- else a DataError naming the missing fields, not a KeyError mid-run."""
    import functools

    needed = tuple(fields)

    def decorate(hook: Callable) -> Callable:
        @functools.wraps(hook)
        def checked(doc, *args, **kwargs):
            if not isinstance(doc, Mapping):
                raise DataError(f"{benchmark} {hook.__name__}: a doc is a mapping of fields, got {type(doc).__name__}")
            missing = [f for f in needed if f not in doc]
            if missing:
                raise DataError(f"{benchmark} {hook.__name__}: the doc lacks field(s) {missing[:8]}; docs come from "
                                f"the task's process_docs (the {benchmark} loader) -- keep it in a task that "
                                "includes ours")
            return hook(doc, *args, **kwargs)

        return checked

    return decorate
