"""Reading lmms-eval outputs: results JSON and ``--log_samples`` JSONL files."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path


class SamplesError(ValueError):
    pass


def iter_json_lines(path: Path, error: type[ValueError] = SamplesError) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSON-lines file, plain or gzip; blank lines skipped.

    Anything that stops the file from being read -- a line that is not a JSON object, a
    truncated or corrupt gzip stream, bytes that are not UTF-8, JSON nested too deep -- raises
    ``error`` naming the file and line.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, expected a JSON-lines file")
    with open(path, "rb") as fh:
        gzipped = fh.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    number = 0
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise error(f"{path}:{number}: not a JSON object (invalid JSON: {err.msg})") from None
                except RecursionError:
                    raise error(f"{path}:{number}: JSON nested too deeply to read") from None
                if not isinstance(obj, dict):
                    raise error(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
                yield number, obj
    except UnicodeDecodeError as err:
        raise error(f"{path}:{number + 1}: not UTF-8 text (byte {err.object[err.start:err.start + 1]!r})") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        kind = "truncated" if isinstance(err, EOFError) else "corrupt"
        raise error(f"{path}: {kind} gzip file (stopped after line {number}: {err})") from None


def iter_samples(path: Path) -> Iterator[dict]:
    """Logged samples from one JSONL file; a bad line raises naming the file and line."""
    for number, sample in iter_json_lines(path):
        if "doc_id" not in sample or "filtered_resps" not in sample:
            raise SamplesError(f"{path}:{number}: not an lmms-eval logged sample (needs 'doc_id' and 'filtered_resps')")
        yield sample


def first_response(sample: dict) -> str:
    first = sample.get("filtered_resps")
    if first is None:
        return ""
    while isinstance(first, list):  # a list of responses, sometimes nested one level deeper
        first = first[0] if first else ""
    return first if isinstance(first, str) else str(first)


def sample_files(root: Path) -> list[Path]:
    """``*_samples_<task>.jsonl`` files under ``root`` (or ``root`` itself if it is a file)."""
    if root.is_file():
        return [root]
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    return sorted(root.rglob("*_samples_*.jsonl"))


def logged_record(sample: dict, metric: str, benchmark: str) -> dict | None:
    """Our per-doc record as logged under a metric's key (lmms-eval 0.7.3 does not log the doc),
    or the logged doc when present; None when the sample belongs to another benchmark."""
    for candidate in (sample.get(metric), sample.get("doc")):
        if isinstance(candidate, dict) and candidate.get("benchmark") == benchmark:
            return candidate
    return None


def task_of_samples_file(path: Path) -> str:
    return path.stem.split("_samples_", 1)[-1]


def results_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*results*.json"))


def load_results(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise SamplesError(f"{path}: not valid JSON ({err.msg})") from err
