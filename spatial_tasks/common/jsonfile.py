"""Reading a JSON file a user hands us (a leaderboard, a probe's metrics.json, a results file):
whatever stops it from being read -- missing, empty, not UTF-8, not JSON, nested too deep, not
the expected shape -- is one error naming the file."""

from __future__ import annotations

import json
from pathlib import Path

from spatial_tasks.common.errors import UserError


class JsonFileError(UserError, ValueError):
    pass


def read_json(path: Path, what: str, error: type[Exception] = JsonFileError) -> object:
    """The JSON value of ``path``; ``what`` names the file's role in the error ("a leaderboard")."""
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, expected {what} (a JSON file)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: cannot be read as {what}: not UTF-8 text") from None
    if not text.strip():
        raise error(f"{path}: cannot be read as {what}: the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"{path}: cannot be read as {what}: not valid JSON ({err.msg} at line {err.lineno})") from None
    except RecursionError:
        raise error(f"{path}: cannot be read as {what}: JSON nested too deeply") from None


def read_json_object(path: Path, what: str, error: type[Exception] = JsonFileError) -> dict:
    """``read_json`` for a file that must hold one JSON object."""
    data = read_json(path, what, error)
    if not isinstance(data, dict):
        raise error(f"{path}: cannot be read as {what}: expected a JSON object, found {type(data).__name__}")
    return data
