"""Reading lmms-eval outputs: results JSON and ``--log_samples`` JSONL files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


class SamplesError(ValueError):
    pass


def iter_samples(path: Path) -> Iterator[dict]:
    """Logged samples from one JSONL file; a bad line raises naming the file and line."""
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except json.JSONDecodeError as err:
                raise SamplesError(f"{path}:{number}: not valid JSON ({err.msg})") from err
            if not isinstance(sample, dict) or "doc" not in sample or "filtered_resps" not in sample:
                raise SamplesError(f"{path}:{number}: not an lmms-eval logged sample (needs 'doc' and 'filtered_resps')")
            yield sample


def first_response(sample: dict) -> str:
    resps = sample.get("filtered_resps") or [""]
    first = resps[0]
    while isinstance(first, list):  # some lmms-eval versions nest one level deeper
        first = first[0] if first else ""
    return first if isinstance(first, str) else str(first)


def sample_files(root: Path, task_prefix: str = "") -> list[Path]:
    """``*_samples_<task>.jsonl`` files under ``root`` (or ``root`` itself if it is a file)."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*_samples_*.jsonl") if task_of_samples_file(p).startswith(task_prefix))


def task_of_samples_file(path: Path) -> str:
    return path.stem.split("_samples_", 1)[-1]


def results_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*results*.json"))


def load_results(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise SamplesError(f"{path}: not valid JSON ({err.msg})") from err
