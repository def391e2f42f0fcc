"""ToyBench's commands: spatial-tasks preview toybench."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import Command
from spatial_tasks.cli_helpers import doc_preview


def preview_docs(folder: Path) -> list[tuple[dict, object]]:
    """A folder's questions (its parquet files) with the image a model gets."""
    from types import SimpleNamespace

    import datasets
    from spatial_tasks.toybench import core

    files = sorted(str(p) for p in Path(folder).rglob("*.parquet"))
    rows = datasets.load_dataset("parquet", data_files=files, split="train")
    return [(doc, lambda d: [d["image"]]) for doc in core.docs(rows, SimpleNamespace(label=str(folder)))]


COMMANDS = [Command("preview", "toybench", doc_preview("toybench", "ToyBench", preview_docs))]
