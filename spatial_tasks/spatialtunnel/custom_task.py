"""``spatial-tasks custom-task`` for SpatialTunnel tasks: besides the shared layout (one config per
table, as ``spatial-tasks publish`` writes it), the official release's own layout -- its tables
``phase_variation.parquet`` / ``size_variation.parquet`` (or ``.tsv``) at the top of the folder or
repo, one of them named with ``--config FILE``."""

from __future__ import annotations

from pathlib import Path

TABLE_SUFFIXES = (".parquet", ".tsv")


def table_config(base_cfg: dict) -> str | None:
    """The table a SpatialTunnel task reads (phase_variation, size_variation), from its data_files."""
    files = (base_cfg.get("dataset_kwargs") or {}).get("data_files") or {}
    for file in files.values():
        stem = Path(str(file)).stem
        return Path(str(file)).parent.name if stem.startswith("test-") else stem
    return None


def official_table(local: Path, config: str | None) -> Path | None:
    """``<config>.parquet`` (else ``.tsv``) at the top of a folder in the official release's layout."""
    for suffix in TABLE_SUFFIXES:
        if config and (local / f"{config}{suffix}").is_file():
            return local / f"{config}{suffix}"
    return None


def check_table(table: Path) -> None:
    """An official-layout table must be readable, have rows, and have columns the loader recognises
    (its header only: the rows are checked when the task loads them)."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spatial_tasks.common.origin import in_memory
    from spatial_tasks.spatialtunnel.load import detect_format

    try:
        if table.suffix == ".parquet":
            meta = pq.read_metadata(table)
            schema, rows = meta.schema.to_arrow_schema(), meta.num_rows
        else:
            import pandas as pd

            head = pd.read_csv(table, sep="\t", nrows=2)
            schema, rows = pa.Schema.from_pandas(head, preserve_index=False), len(head)
    except Exception as err:  # noqa: BLE001 - any unreadable file is reported with its path
        text = str(err).strip()
        raise ValueError(f"--data {table}: cannot read this table "
                         f"({text.splitlines()[0] if text else type(err).__name__})") from None
    if rows == 0:
        raise ValueError(f"--data {table}: the table has no rows")
    detect_format(datasets.Dataset(schema.empty_table()), in_memory(str(table)))


def data_spec(request) -> dict | None:
    """The data fields of a custom SpatialTunnel task (``catalog.CustomData``); None: the shared rule."""
    config, split, local = request.config, request.split, request.local
    dataset_name = request.default_config() or table_config(request.base_cfg)
    if config is not None and config.endswith(TABLE_SUFFIXES):
        # one table of the official layout, named as a file (--config phase_variation.parquet)
        return {"dataset_path": str(local) if local is not None else request.repo, "dataset_name": None,
                "test_split": split or "train", "dataset_kwargs": {"data_files": {split or "train": config}}}
    if local is None and config is None and request.repo == request.base_cfg.get("dataset_path"):
        # the official release itself (another revision, say): its tables, as the base task reads them
        kwargs = {k: v for k, v in (request.base_cfg.get("dataset_kwargs") or {}).items() if k == "revision"}
        return {"dataset_path": request.repo, "dataset_name": None, "test_split": split or "train",
                "dataset_kwargs": {**kwargs, "data_files": {split or "train": f"{dataset_name}.parquet"}}}
    if local is not None and config is None:
        table = official_table(local, dataset_name)
        if table is not None:  # the official layout: <config>.parquet / .tsv at the top of the folder
            check_table(table)
            return {"dataset_path": str(local), "dataset_name": None, "test_split": split or "train",
                    "dataset_kwargs": {"data_files": {split or "train": table.name}}}
    return request.generic(dataset_name)
