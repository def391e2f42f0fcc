"""Checking a dataset where it enters: columns, their types, and values, one clear line per error.

Each benchmark's loader declares what it needs (``require_columns``) and checks its values with
the helpers here, so every later step sees only good docs. Errors are ``DataError`` (a
ValueError) whose message names the file (or split), the row and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import datasets

from spatial_tasks.common.origin import Origin

# What a column may hold, by the kind the loader asks for (datasets feature dtypes).
_KINDS: dict[str, frozenset[str]] = {
    "string": frozenset({"string", "large_string"}),
    "int": frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}),
    "float": frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                        "uint32", "uint64"}),
    "bool": frozenset({"bool"}),
}


class DataError(ValueError):
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


def short(value: object, limit: int = 80) -> str:
    text = repr(value)
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
