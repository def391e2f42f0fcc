"""Encoded images that must never reach a model: each is what a damaged or hostile file holds."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image


def png(size: tuple[int, int] = (32, 24), seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def jpeg(size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((size[1], size[0], 3), 120, np.uint8)).save(buffer, "JPEG")
    return buffer.getvalue()


def truncated_png() -> bytes:
    data = png((64, 64))
    return data[: len(data) // 2]  # PIL with LOAD_TRUNCATED_IMAGES=True shows the rest grey


def truncated_jpeg() -> bytes:
    data = jpeg((64, 64))
    return data[: len(data) - 40]


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_with_header(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height, with a tiny (valid) IDAT: a decompression bomb for
    large sizes, an impossible image for a zero side."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def bad_crc_png() -> bytes:
    data = bytearray(png((16, 16)))
    data[len(data) // 2] ^= 0xFF  # inside the IDAT payload: the chunk's CRC no longer matches
    return bytes(data)


GARBAGE = b"this is not an image at all"
