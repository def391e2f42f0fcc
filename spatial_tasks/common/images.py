"""Images shared by many docs, stored once and resolved lazily by (source key, row).

Several questions ask about one image. Docs therefore carry ``image_source`` (a key) and
``image_row`` (a row index) instead of the image; ``process_docs`` registers the per-image
table here and ``doc_to_visual`` decodes one row on demand. Nothing is copied per question.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass

import datasets
from PIL import Image, UnidentifiedImageError


@dataclass
class ImageTable:
    dataset: datasets.Dataset
    column: str
    label: str  # what to name in errors, e.g. "cubec/spatialtunnel phase_variation"
    decode: Callable[[object], Image.Image]

    def __post_init__(self) -> None:
        if self.column not in self.dataset.column_names:
            raise ValueError(f"{self.label}: no image column {self.column!r} (columns: {self.dataset.column_names})")
        # Index only the image column so a lookup decodes nothing else (no copy is made).
        self.dataset = self.dataset.select_columns([self.column])

    def image(self, row: int) -> Image.Image:
        value = self.dataset[row][self.column]
        try:
            return self.decode(value).convert("RGB")
        except (UnidentifiedImageError, ValueError, TypeError, OSError) as err:
            raise ValueError(f"{self.label}: row {row}, column {self.column!r}: image does not decode ({err})") from err


_TABLES: dict[str, ImageTable] = {}


def register(table: ImageTable) -> str:
    """Register a per-image table; returns its key (the dataset fingerprint: stable per content)."""
    key = f"{table.label}@{table.dataset._fingerprint}"
    _TABLES[key] = table
    return key


def image_for(source: str, row: int) -> Image.Image:
    table = _TABLES.get(source)
    if table is None:
        raise KeyError(
            f"image source {source!r} is not loaded in this process; docs must come from this "
            "package's process_docs in the same process"
        )
    return table.image(int(row))


def decode_pil(value: object) -> Image.Image:
    """A datasets Image value (already PIL, or {'bytes','path'}) as a PIL image."""
    if isinstance(value, Image.Image):
        return value
    if isinstance(value, dict) and value.get("bytes") is not None:
        return Image.open(io.BytesIO(value["bytes"]))
    if isinstance(value, dict) and value.get("path"):
        return Image.open(value["path"])
    raise ValueError(f"not an image value: {type(value).__name__}")


def decode_base64(value: object) -> Image.Image:
    """A base64-encoded image string, as in TSV benchmark releases."""
    if not isinstance(value, str) or not value:
        raise ValueError("empty or non-string base64 image")
    return Image.open(io.BytesIO(base64.b64decode(value, validate=False)))
