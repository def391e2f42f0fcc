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

Docs never hold pixels: they carry an image *reference* (``ImageTable.ref``, a small dict) that
any process can open (``open_ref``): the row of a datasets Arrow cache file (images that many
questions share are stored once), a file inside the dataset's folder, or -- for a dataset built in
memory -- the encoded bytes themselves. Cache files are memory-mapped once per process.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import io
import os
import re
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
# Image references: what a doc carries instead of pixels


REF_FIELDS = ("file", "row", "column", "item", "encoding", "bytes", "path", "where")
REF_FEATURE = datasets.Features({  # a doc's image reference, as a datasets struct
    "file": datasets.Value("string"), "row": datasets.Value("int64"), "column": datasets.Value("string"),
    "item": datasets.Value("int64"), "encoding": datasets.Value("string"), "bytes": datasets.Value("binary"),
    "path": datasets.Value("string"), "where": datasets.Value("string"),
})


def ref_of_bytes(data: bytes, where: str) -> dict:
    """A reference that carries the encoded image itself."""
    return {**dict.fromkeys(REF_FIELDS), "encoding": "bytes", "bytes": bytes(data), "where": where}


def ref_of_file(path: Path, where: str) -> dict:
    """A reference to an image file on disk (read when shown)."""
    return {**dict.fromkeys(REF_FIELDS), "encoding": "file", "path": str(Path(path).resolve()), "where": where}


@functools.lru_cache(maxsize=64)
def _arrow_table(file: str):
    """A datasets Arrow cache file, memory-mapped once per process (the speed cache)."""
    from datasets.table import MemoryMappedTable

    return MemoryMappedTable.from_file(file)


def ref_bytes(ref) -> bytes:
    """The encoded image a reference names, in any process (see ``ImageTable.ref``)."""
    if not isinstance(ref, dict) or "encoding" not in ref:
        raise ImageError(f"not an image reference: {type(ref).__name__}")
    where = ref.get("where") or "image"
    kind = ref["encoding"]
    if kind == "bytes":
        return bytes(ref["bytes"] or b"")
    if kind == "file":
        try:
            return Path(ref["path"]).read_bytes()
        except OSError as err:
            raise ImageError(f"{where}: cannot read {ref['path']} ({err.strerror or err})") from None
    try:
        table = _arrow_table(ref["file"])
    except (OSError, ValueError) as err:
        raise ImageError(f"{where}: the dataset's cache file {ref['file']} is gone ({err}); load the task again")
    value = table.column(ref["column"])[int(ref["row"])].as_py()
    if ref.get("item") is not None:
        if not isinstance(value, list) or len(value) <= int(ref["item"]):
            raise ImageError(f"{where}: no image {int(ref['item']) + 1} in this list")
        value = value[int(ref["item"])]
        if isinstance(value, str) and not _BASE64.fullmatch(value):
            raise ImageError(f"{where}: a path-only image in a list cell ({value!r})")
    if kind == "base64" or (ref.get("item") is not None and isinstance(value, str)):
        return base64_bytes(value, where)
    return cell_bytes(value, where)


def open_ref(ref) -> Image.Image:
    """The RGB image a reference names (strict decode)."""
    return open_image(ref_bytes(ref), (ref or {}).get("where") or "image").convert("RGB")


_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]{200,}")


# ------------------------------------------------------------------------------------------
# A per-image table shared by many docs


@dataclass
class ImageTable:
    """One image column of a dataset, read cell by cell as raw bytes (never datasets' decoder).

    ``encoding`` is "image" (a datasets Image column), "base64" (a text column of encoded images)
    or "path" (a text column of paths, read only inside the dataset's folder). ``item``: read
    element ``item`` of a list column (two images in one cell).
    """

    dataset: datasets.Dataset
    column: str
    origin: Origin
    encoding: str = "image"
    item: int | None = None
    _cells: datasets.Dataset = field(init=False, repr=False)
    _files: list = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.column not in self.dataset.column_names:
            raise ImageError(f"{self.origin.where}: no image column {self.column!r} "
                             f"(columns: {self.dataset.column_names})")
        # Arrow format: a cell is the stored {bytes, path} (or string), not datasets' PIL decode.
        self._cells = self.dataset.select_columns([self.column]).with_format("arrow")
        start = 0
        for cache in self.dataset.cache_files or []:
            count = _arrow_table(cache["filename"]).num_rows
            self._files.append((cache["filename"], start, count))
            start += count
        if start != len(self.dataset.data):  # not exactly its cache files: refs carry bytes
            self._files = []

    @property
    def name(self) -> str:
        return self.column if self.item is None else f"{self.column}[{self.item}]"

    def where(self, row: int) -> str:
        return f"{self.origin.locate(row)}, column {self.name!r}"

    def _cell(self, row: int):
        value = self._cells[int(row)].column(self.column)[0].as_py()
        if self.item is None:
            return value
        if not isinstance(value, list) or len(value) <= self.item:
            raise ImageError(f"{self.where(row)}: no image {self.item + 1} in this list")
        return value[self.item]

    def encoded(self, row: int) -> bytes:
        value = self._cell(row)
        where = self.where(row)
        encoding = self.encoding
        if self.item is not None and isinstance(value, str):
            encoding = "base64" if _BASE64.fullmatch(value) else "path"
        if encoding == "base64":
            return base64_bytes(value, where)
        if encoding == "path":
            if not isinstance(value, str) or not value.strip():
                raise ImageError(f"{where}: empty image path {value!r}")
            return cell_bytes({"bytes": None, "path": value}, where, self.origin, row)
        return cell_bytes(value, where, self.origin, row)

    def ref(self, row: int) -> dict:
        """A self-contained reference to the image in ``row``: its Arrow cache file and row when
        the dataset lives in the datasets cache (any process on this machine can open it), the
        file for a path cell, else the encoded bytes themselves."""
        where = self.where(row)
        value = self._cell(row)
        if self.encoding == "path" or (self.item is not None and isinstance(value, str)
                                       and not _BASE64.fullmatch(value)):
            return ref_of_file(resolve_image_path(str(value), where, self.origin, row), where)
        if isinstance(value, dict) and not value.get("bytes") and value.get("path"):
            return ref_of_file(resolve_image_path(str(value["path"]), where, self.origin, row), where)
        stored = int(row)
        if self.dataset._indices is not None:
            stored = int(self.dataset._indices.column(0)[stored].as_py())
        for file, start, count in self._files:
            if start <= stored < start + count:
                return {**dict.fromkeys(REF_FIELDS), "file": file, "row": stored - start, "column": self.column,
                        "item": self.item, "encoding": "base64" if self.encoding == "base64" else "image",
                        "where": where}
        return ref_of_bytes(self.encoded(row), where)

    def image(self, row: int) -> Image.Image:
        """The RGB image in ``row`` (strict decode)."""
        return open_image(self.encoded(row), self.where(row)).convert("RGB")

    def lengths(self) -> list[int]:
        """How many images each row's list holds (read from Arrow, without the image bytes)."""
        import pyarrow.compute as pc

        column = self.dataset.data.column(self.column)
        return [0 if n is None else n for n in pc.list_value_length(column).to_pylist()]

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
