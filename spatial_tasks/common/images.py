"""Images from datasets, checked for real: every decode is strict, every error names its place.

lmms-eval sets ``PIL.ImageFile.LOAD_TRUNCATED_IMAGES = True`` for the whole process, so PIL turns
a truncated PNG into an image whose lower part is grey, without a word. Every image this package
shows a model or reads a mask from goes through ``open_image``, which decodes with that flag off
(``strict_decoding``), refuses images larger than ``MAX_IMAGE_PIXELS`` before decoding them
(decompression bombs) and images with a zero side, and raises ``ImageError`` naming the file,
row and column.

``check_image`` is the cheap test the loaders run over every image cell when data enters: the
header (format, size) and, for PNG, every chunk's CRC up to IEND (PIL's ``verify``, ~1 ms for a
2 MB file, no pixel decoding); other formats are decoded in full (JPEG decodes fast).

Shared images (SpatialTunnel's per-image table) are registered once (``ImageTable``) and looked
up by (source key, row); nothing is copied per question.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import os
import threading
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from PIL import Image, ImageFile, UnidentifiedImageError

from spatial_tasks.common.origin import Origin
from spatial_tasks.common.validate import DataError

# 8192 x 8192: far above every benchmark image (512-1024 px), far below what exhausts memory.
MAX_IMAGE_PIXELS = int(os.environ.get("SPATIAL_TASKS_MAX_IMAGE_PIXELS", 8192 * 8192))
CHECK_PROGRESS_FROM = 2000  # show a progress bar when checking at least this many cells


class ImageError(DataError):
    """An image cell that cannot be shown: the message names the file, row and column."""


_STRICT_LOCK = threading.RLock()


@contextlib.contextmanager
def strict_decoding() -> Iterator[None]:
    """PIL with ``LOAD_TRUNCATED_IMAGES`` off, whatever the process set (restored afterwards).

    The flag is a module global of PIL; the lock keeps two of our decodes from restoring it
    under each other. PIL's own pixel limit (another global, which some lmms-eval tasks raise) is
    replaced by ours, ``MAX_IMAGE_PIXELS``, checked in ``_open_header``.
    """
    with _STRICT_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        saved = ImageFile.LOAD_TRUNCATED_IMAGES, Image.MAX_IMAGE_PIXELS
        ImageFile.LOAD_TRUNCATED_IMAGES, Image.MAX_IMAGE_PIXELS = False, None
        try:
            yield
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES, Image.MAX_IMAGE_PIXELS = saved


def _open_header(data: bytes, where: str) -> Image.Image:
    if not isinstance(data, (bytes, bytearray, memoryview)) or not data:
        raise ImageError(f"{where}: empty image (no bytes)")
    try:
        image = Image.open(io.BytesIO(bytes(data)))
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as err:
        raise ImageError(f"{where}: not a readable image ({_reason(err)})") from None
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ImageError(f"{where}: image has a zero side ({width} x {height} px)")
    if width * height > MAX_IMAGE_PIXELS:
        raise ImageError(f"{where}: image of {width} x {height} px is larger than the limit of "
                         f"{MAX_IMAGE_PIXELS} pixels (a decompression bomb?); raise "
                         "SPATIAL_TASKS_MAX_IMAGE_PIXELS if it is genuine")
    return image


def _reason(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    if "cannot identify image file" in text:
        return "unknown or damaged format"
    return text.splitlines()[0][:200]


def check_image(data: bytes, where: str) -> tuple[str, tuple[int, int]]:
    """(format, (width, height)) of an encoded image, checked without trusting PIL's truncation
    flag: PNG by its chunk CRCs through IEND, other formats by a full decode."""
    with strict_decoding():
        image = _open_header(data, where)
        fmt, size = image.format or "?", image.size
        try:
            if fmt == "PNG":
                image.verify()
            else:
                image.load()
        except Exception as err:  # noqa: BLE001 - every decoder error is a damaged image
            raise ImageError(f"{where}: damaged or truncated {fmt} image ({_reason(err)})") from None
    return fmt, size


def open_image(data: bytes, where: str) -> Image.Image:
    """The fully decoded image (strict, see the module docstring), mode as stored."""
    with strict_decoding():
        image = _open_header(data, where)
        try:
            image.load()
        except Exception as err:  # noqa: BLE001 - every decoder error is a damaged image
            raise ImageError(f"{where}: damaged or truncated {image.format or ''} image ({_reason(err)})") from None
    return image


# ------------------------------------------------------------------------------------------
# Cells: what a dataset column holds


def cell_bytes(value: object, where: str, origin: Origin | None = None, row: int | None = None) -> bytes:
    """The encoded bytes of one image cell: a datasets Image value ({"bytes", "path"}), raw bytes,
    or a PIL image (re-encoded as PNG).

    A cell with only a ``path`` is read only from inside the dataset's own local folder
    (``origin.root``): relative to the data file that holds the row, never outside the folder.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Image.Image):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return buffer.getvalue()
    if isinstance(value, dict):
        if value.get("bytes"):
            return bytes(value["bytes"])
        if value.get("path"):
            return resolve_image_path(str(value["path"]), where, origin, row).read_bytes()
        raise ImageError(f"{where}: empty image cell (no bytes and no path)")
    if value is None:
        raise ImageError(f"{where}: missing image (null)")
    raise ImageError(f"{where}: not an image cell ({type(value).__name__})")


def resolve_image_path(path: str, where: str, origin: Origin | None, row: int | None) -> Path:
    """The file a path-only image cell names, inside the dataset's folder (else ImageError)."""
    root = origin.root if origin is not None else None
    if root is None:
        raise ImageError(f"{where}: the image cell holds only a path ({path!r}); such paths are read only "
                         "from inside a local dataset folder, and this dataset has none")
    base = origin.file_of(row).parent if (row is not None and origin.file_of(row) is not None) else root
    candidate = (base / path).resolve()
    if not candidate.is_relative_to(root.resolve()):
        raise ImageError(f"{where}: image path {path!r} points outside the dataset folder {root}")
    if not candidate.is_file():
        raise ImageError(f"{where}: image file {candidate} does not exist")
    return candidate


def base64_bytes(value: object, where: str) -> bytes:
    """The bytes of a base64-encoded image string (TSV benchmark releases)."""
    if not isinstance(value, str) or not value.strip():
        raise ImageError(f"{where}: empty or non-text base64 image")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"{where}: not valid base64") from None


# ------------------------------------------------------------------------------------------
# A per-image table shared by many docs


@dataclass
class ImageTable:
    """One image column of a dataset, read cell by cell as raw bytes (never datasets' decoder).

    ``encoding`` is "image" (a datasets Image column), "base64" (a text column of encoded images)
    or "path" (a text column of paths, read only inside the dataset's folder).
    """

    dataset: datasets.Dataset
    column: str
    origin: Origin
    encoding: str = "image"
    _cells: datasets.Dataset = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.column not in self.dataset.column_names:
            raise ImageError(f"{self.origin.where}: no image column {self.column!r} "
                             f"(columns: {self.dataset.column_names})")
        # Arrow format: a cell is the stored {bytes, path} (or string), not datasets' PIL decode.
        self._cells = self.dataset.select_columns([self.column]).with_format("arrow")

    @property
    def name(self) -> str:
        """What this table reads, unique within its dataset (the registry key's last part)."""
        return self.column

    def where(self, row: int) -> str:
        return f"{self.origin.locate(row)}, column {self.column!r}"

    def encoded(self, row: int) -> bytes:
        value = self._cells[int(row)].column(self.column)[0].as_py()
        where = self.where(row)
        if self.encoding == "base64":
            return base64_bytes(value, where)
        if self.encoding == "path":
            if not isinstance(value, str) or not value.strip():
                raise ImageError(f"{where}: empty image path {value!r}")
            return cell_bytes({"bytes": None, "path": value}, where, self.origin, row)
        return cell_bytes(value, where, self.origin, row)

    def image(self, row: int) -> Image.Image:
        """The RGB image in ``row`` (strict decode)."""
        return open_image(self.encoded(row), self.where(row)).convert("RGB")

    def check(self, rows: Iterable[int] | None = None, description: str = "checking images") -> int:
        """``check_image`` on every cell (or ``rows``); returns how many were checked."""
        rows = range(len(self._cells)) if rows is None else list(rows)
        for row in progress(rows, description):
            check_image(self.encoded(row), self.where(row))
        return len(rows)


def progress(rows, description: str):
    """``rows`` with a progress bar when there are many (checking a full dataset takes a while)."""
    if len(rows) < CHECK_PROGRESS_FROM:
        return rows
    from tqdm import tqdm

    return tqdm(rows, desc=description, unit="img")


_TABLES: dict[str, ImageTable] = {}


def register(table: ImageTable) -> str:
    """Register a per-image table; returns its key (the dataset fingerprint: stable per content)."""
    key = f"{table.origin.label}@{table.dataset._fingerprint}#{table.name}"
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
