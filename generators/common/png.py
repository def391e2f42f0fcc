"""PNG helpers that need no image library.

Cycles stamps its render and synchronisation times into every PNG it saves (``cycles.*`` text
chunks), so two renders of the same image differ in their bytes. ``strip_text_chunks`` drops
text and time chunks and keeps the pixels byte for byte, so the same seed gives the same file.
"""

from __future__ import annotations

import struct

SIGNATURE = b"\x89PNG\r\n\x1a\n"
DROPPED_CHUNKS = frozenset({b"tEXt", b"zTXt", b"iTXt", b"tIME"})


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of every chunk, in order; raises ValueError on a malformed file."""
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file")
    out, pos = [], len(SIGNATURE)
    while pos < len(data):
        if pos + 12 > len(data):
            raise ValueError("truncated PNG chunk")
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        out.append((kind, data[pos + 8:pos + 8 + length]))
        pos += 12 + length
        if kind == b"IEND":
            break
    if not out or out[-1][0] != b"IEND":
        raise ValueError("PNG without IEND chunk")
    return out


def strip_text_chunks(data: bytes) -> bytes:
    """The PNG without tEXt/zTXt/iTXt/tIME chunks (pixels and colour information unchanged)."""
    pieces, pos = [SIGNATURE], len(SIGNATURE)
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        end = pos + 12 + length
        if kind not in DROPPED_CHUNKS:
            pieces.append(data[pos:end])
        pos = end
        if kind == b"IEND":
            break
    return b"".join(pieces)
