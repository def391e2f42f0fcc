"""Checking a dataset where it enters: columns, their types, and values, one clear line per error.

Each benchmark's loader declares what it needs (``require_columns``) and checks its values with
the helpers here, so every later step sees only good docs. Errors are ``DataError`` (a
ValueError) whose message names the file (or split), the row and the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

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
                    f"found columns {sorted(features)}")
    for name, kind in needed.items():
        if not has_kind(features[name], kind):
            raise error(f"{origin.where}: column {name!r} holds {kind_of(features[name])} values, "
                        f"expected {kind} ({what})")


def require_rows(dataset: datasets.Dataset, origin: Origin) -> None:
    if len(dataset) == 0:
        raise DataError(f"{origin.where}: the dataset has no rows")


def columns(dataset: datasets.Dataset, names: Sequence[str]) -> dict[str, list]:
    """Plain Python lists of some (non-image) columns, read through Arrow."""
    if not names:
        return {}
    return dataset.select_columns(list(names)).with_format("arrow")[:].to_pydict()


def fail(origin: Origin, row: int, field: str, problem: str) -> DataError:
    """A DataError for one value: "FILE, row K, field F: problem"."""
    return DataError(f"{origin.locate(row)}, field {field!r}: {problem}")


def is_finite_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_values(values: Sequence[object], origin: Origin, field: str, ok, problem: str,
                 rows: Iterable[int] | None = None) -> None:
    """Raise for the first value (of ``rows``, default all) for which ``ok(value)`` is false;
    ``problem`` may use ``{value!r}``."""
    for row in range(len(values)) if rows is None else rows:
        value = values[row]
        if not ok(value):
            raise fail(origin, row, field, problem.format(value=_short(value)))


def check_unique(values: Sequence[object], origin: Origin, field: str) -> None:
    """No value twice: the error names both rows."""
    seen: dict[object, int] = {}
    for row, value in enumerate(values):
        if value in seen:
            raise DataError(f"{origin.locate(row)}, field {field!r}: duplicate value {_short(value)} "
                            f"(first at {origin.locate(seen[value])})")
        seen[value] = row


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
