"""Writing Hub-ready dataset folders: parquet shards with ``datasets`` features, and cards.

Layout written by the generators (what ``datasets.load_dataset(DIR, CONFIG)`` and the Hub read):

    DIR/README.md                                   card: YAML ``configs:`` header + text
    DIR/<config>/<split>-00000-of-0000N.parquet     one row per image, images stored once
    DIR/_work/                                      render work files; never published

Each parquet file carries the ``datasets`` features in its schema metadata (so the Image
column decodes to PIL images) plus a ``spatial_tasks.generation`` entry with the flags, seed,
Blender version and git commit of the run that wrote it, from which the card is rendered.
Files are written to a temporary name and renamed, so a reader never sees half a shard. A file
is replaced or removed only when the folder's ledger proves a generator wrote it
(``folder.dataset_ledger``): a user's ``README.md`` or parquet file in the way is refused, named.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import jinja2
import pyarrow.parquet as pq

from .folder import dataset_ledger
from .jobs import _unlink_quietly, atomic_write_text, temporary_sibling

GENERATION_KEY = b"spatial_tasks.generation"
ROW_GROUP_SIZE = 100  # rows per parquet row group (the Hub's viewer reads row groups)
_SHARD_NAME = re.compile(r"^(?P<split>[a-z0-9_]+)-(?P<index>\d{5})-of-(?P<total>\d{5})\.parquet$")


def parquet_name(split: str, index: int, total: int) -> str:
    """``test-00003-of-00010.parquet`` (the Hub's naming)."""
    if not 0 <= index < total:
        raise ValueError(f"parquet file index {index} out of range for {total} files")
    return f"{split}-{index:05d}-of-{total:05d}.parquet"


def file_layout(shard_sizes: Sequence[int], max_rows_per_file: int) -> list[list[int]]:
    """Rows per parquet file for every shard: shard k's rows fill ``ceil(n_k / max)`` files.

    File numbers run over all shards in order, so N machines that each write their own shard
    produce disjoint, consistently numbered files that can simply be copied into one folder.
    """
    if max_rows_per_file < 1:
        raise ValueError("max_rows_per_file must be >= 1")
    layout = []
    for n in shard_sizes:
        files = max(1, -(-n // max_rows_per_file)) if n else 0
        base, extra = divmod(n, files) if files else (0, 0)
        layout.append([base + (1 if i < extra else 0) for i in range(files)])
    return layout


def write_parquet(rows: Sequence[dict], features: datasets.Features, path: Path,
                  generation: dict[str, Any] | None = None) -> Path:
    """Encode ``rows`` with ``features`` and write them atomically as one parquet file."""
    table = datasets.Dataset.from_list(list(rows), features=features).data.table
    metadata = dict(table.schema.metadata or {})
    if generation is not None:
        metadata[GENERATION_KEY] = json.dumps(generation, sort_keys=True).encode()
    table = table.replace_schema_metadata(metadata)
    ledger = dataset_ledger(Path(path).parent.parent)  # DIR/<config>/<file>: DIR's ledger
    ledger.check([Path(path)], what_to_do="Move it away, or use another --out.")
    tmp = temporary_sibling(path)
    try:
        pq.write_table(table, tmp, row_group_size=ROW_GROUP_SIZE, compression="zstd")
        tmp.replace(path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    ledger.record(Path(path))
    return Path(path)


def write_card(out: Path, text: str) -> Path:
    """``out/README.md``, the dataset card; a card the ledger does not prove ours is refused."""
    card = Path(out) / "README.md"
    ledger = dataset_ledger(Path(out))
    ledger.check([card], what_to_do="Move it away, or use another --out: a generated dataset's card is its README.md.")
    atomic_write_text(card, text)
    ledger.record(card)
    return card


def read_generation(path: Path) -> dict[str, Any] | None:
    """The ``spatial_tasks.generation`` record a parquet file was written with (None if absent)."""
    metadata = pq.read_schema(path).metadata or {}
    raw = metadata.get(GENERATION_KEY)
    return json.loads(raw) if raw else None


def parquet_files(config_dir: Path, split: str) -> list[Path]:
    return sorted(p for p in Path(config_dir).glob(f"{split}-*-of-*.parquet") if _SHARD_NAME.match(p.name))


def remove_other_layouts(config_dir: Path, split: str, total: int) -> list[Path]:
    """Delete ``split`` parquet files numbered for a different file count (an older layout), all of
    them the generators' own (else refused, naming them, before any is deleted)."""
    removed = [path for path in parquet_files(config_dir, split)
               if (match := _SHARD_NAME.match(path.name)) and int(match["total"]) != total]
    dataset_ledger(Path(config_dir).parent).remove(*removed, what_to_do="Move them away, or use another --out.")
    return removed


def count_rows(paths: Sequence[Path]) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)


def size_category(n: int) -> str:
    """The Hub card's ``size_categories`` value for ``n`` rows."""
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < bound:
            return label
    return "100K<n<1M"


def render_template(template: Path, **context: Any) -> str:
    """Render a Jinja template file; a missing field is an error, never an empty string."""
    # the template's own folder, then this one (provenance.md.jinja, the block every card shares)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(Path(template).parent), str(Path(__file__).parent)]),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    text = env.get_template(Path(template).name).render(**context)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
