"""How far SpatialTunnel's pixel reader moves on lossy or grey copies of a table (pixels.JPEG_LEVEL_PX,
JPEG_MIN_QUALITY and the grey rule come from these figures).

Each image of a dataset of our generator (its recorded projections are the truth) is re-encoded --
PNG as it is, JPEG at several qualities, grey PNG -- and read by ``pixels.locate_all`` with the
reader's own encoding check switched off (``--raw``, the default) or on. Prints per encoding: images,
those whose objects were not both found, and the row errors of the placed objects (largest, how
many past LEVEL_PX and past 5 px), in pixels scaled to a 128 px image.

    .venv/bin/python benchmarks/pixel_encodings.py                 # the bundled phase sample
    .venv/bin/python benchmarks/pixel_encodings.py --checked       # with the encoding check, as the loader reads
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from unittest import mock

import datasets
import numpy as np
from PIL import Image

from spatial_tasks.spatialtunnel import pixels

SAMPLE = Path(__file__).resolve().parent.parent / "tasks/spatialtunnel/sample/phase_variation"
ENCODINGS = ("png", "jpeg90", "jpeg75", "jpeg50", "jpeg30", "jpeg10", "grey")


def reencode(data: bytes, how: str) -> bytes:
    image = Image.open(io.BytesIO(data)).convert("RGB")
    buffer = io.BytesIO()
    if how == "grey":
        image.convert("L").save(buffer, "PNG")
    elif how.startswith("jpeg"):
        image.save(buffer, "JPEG", quality=int(how[4:]))
    else:
        image.save(buffer, "PNG")
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SAMPLE, help="a folder of our generator's parquet files")
    parser.add_argument("--checked", action="store_true", help="keep the reader's encoding check on")
    args = parser.parse_args()
    files = sorted(args.data.rglob("*.parquet"))
    table = datasets.load_dataset("parquet", data_files=[str(f) for f in files], split="train")
    table = table.cast_column("image", datasets.Image(decode=False))
    names = [(r["obj1"], r["obj2"]) for r in table]
    print(f"{args.data}: {len(table)} images; rows in px at 128 px; encoding check {'on' if args.checked else 'off'}")
    print("| encoding | images | not found | largest row error | > LEVEL_PX | > 5 px |\n|---|---:|---:|---:|---:|---:|")
    for how in ENCODINGS:
        data = [reencode(r["image"]["bytes"], how) for r in table]
        check = mock.patch.object(pixels, "encoding", lambda data, rgb: (pixels.LEVEL_PX, None)) if not args.checked else None
        if check is not None:
            check.start()
        try:
            located = pixels.locate_all(lambda k: data[k], names, variant=table[0]["variant"])
        finally:
            if check is not None:
                check.stop()
        errors, missing = [], 0
        for loc, row in zip(located, table, strict=True):
            if not loc.ok:
                missing += 1
                continue
            scale = 128.0 / row["height"]
            errors += [abs(loc.far.y - row["pixel1"][1]) * scale, abs(loc.near.y - row["pixel2"][1]) * scale]
        err = np.asarray(errors)
        largest = f"{err.max():.2f}" if err.size else "-"
        print(f"| {how} | {len(table)} | {missing} | {largest} | {(err > pixels.LEVEL_PX).sum()} | {(err > 5).sum()} |")


if __name__ == "__main__":
    main()
