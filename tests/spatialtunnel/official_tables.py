"""Stand-ins of the official SpatialTunnel tables, built from the issue's published facts (no
download): ``cubec/spatialtunnel``'s ``<config>.parquet`` holds exactly ``index, image, question,
answer`` -- an embedded image, one question per row, no positions, angles or depths -- and its
``<config>.tsv`` the same rows with base64 images. Made here from our own generated rows, so the
recorded geometry of every image is known and the pixel-derived split can be checked against it.
"""

from __future__ import annotations

import base64
from pathlib import Path

import datasets

OFFICIAL_FEATURES = datasets.Features({"index": datasets.Value("int64"), "image": datasets.Image(),
                                       "question": datasets.Value("string"), "answer": datasets.Value("string")})


def official_rows(generated: datasets.Dataset, questions_per_image: int = 4) -> tuple[list[dict], list[dict]]:
    """(rows in the official layout, the recorded generated row of each) from a dataset in our
    generator's layout; each image's first ``questions_per_image`` questions become rows."""
    cells = generated.cast_column("image", datasets.Image(decode=False))
    rows, recorded = [], []
    for source in cells:
        for q in source["questions"][:questions_per_image]:
            rows.append({"index": len(rows), "image": {"bytes": source["image"]["bytes"], "path": None},
                         "question": q["question"], "answer": q["answer"]})
            recorded.append(source)
    return rows, recorded


def write_official(folder: Path, config: str, rows: list[dict], tsv: bool = False) -> Path:
    """``<folder>/<config>.parquet`` (or ``.tsv`` with base64 images), as the release stores a table."""
    folder.mkdir(parents=True, exist_ok=True)
    if not tsv:
        path = folder / f"{config}.parquet"
        datasets.Dataset.from_list(rows, features=OFFICIAL_FEATURES).to_parquet(str(path))
        return path
    path = folder / f"{config}.tsv"
    lines = ["index\timage\tquestion\tanswer"]
    for row in rows:
        image = base64.b64encode(row["image"]["bytes"]).decode()
        lines.append(f"{row['index']}\t{image}\t{row['question']}\t{row['answer']}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
