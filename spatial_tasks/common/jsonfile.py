"""Reading a JSON file a user hands us (a leaderboard, a probe's metrics.json, a results file):
whatever stops it from being read -- missing, empty, not UTF-8, not JSON, nested too deep, not
the expected shape -- is one error naming the file."""

from __future__ import annotations

import json
import re
import sys
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
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"{path}: cannot be read as {what}: not valid JSON ({err.msg} at line {err.lineno})") from None
    except RecursionError:
        raise error(f"{path}: cannot be read as {what}: JSON nested too deeply") from None
    if "\\ud" in text or "\\uD" in text:  # a JSON escape of a surrogate: perhaps a lone one
        value, replaced = writable_text(value)
        say_replaced(path, replaced)
    return value


def read_json_object(path: Path, what: str, error: type[Exception] = JsonFileError) -> dict:
    """``read_json`` for a file that must hold one JSON object."""
    data = read_json(path, what, error)
    if not isinstance(data, dict):
        raise error(f"{path}: cannot be read as {what}: expected a JSON object, found {type(data).__name__}")
    return data


_REPLACED_SAID: set[tuple[str, int]] = set()  # each file's line is said once per process
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a pair was joined by json.loads: what is left is alone


def writable_text(value: object) -> tuple[object, int]:
    """``value`` (parsed JSON) with every lone surrogate in its strings and keys replaced by U+FFFD,
    and how many were: text that no UTF-8 file, page or terminal can hold, which would stop a report
    naming nothing."""
    if isinstance(value, str):
        return _LONE_SURROGATE.subn("\ufffd", value)
    if isinstance(value, list):
        pairs = [writable_text(item) for item in value]
        return [item for item, _ in pairs], sum(count for _, count in pairs)
    if isinstance(value, dict):
        out, total = {}, 0
        for key, item in value.items():
            (key, key_count), (item, count) = writable_text(key), writable_text(item)
            out[key] = item
            total += key_count + count
        return out, total
    return value, 0


def say_replaced(path: Path, replaced: int) -> None:
    """The one line per file (per process) saying how many lone surrogates ``writable_text`` replaced."""
    if replaced and (str(path), replaced) not in _REPLACED_SAID:
        _REPLACED_SAID.add((str(path), replaced))
        print(f"spatial-tasks: {path}: {replaced} character(s) that UTF-8 cannot hold (lone surrogates) in its logged "
              "text, each read as U+FFFD", file=sys.stderr, flush=True)
