"""One command's in-memory set of what it read (issue 53, item 3).

``report``, ``verify``, ``results`` and ``rescore`` run inside ``read_once()``. Within it:

* each samples file is parsed once (``lines``): the logged lines, and the error that stopped the
  reading if one did, replayed to every later reader exactly as the first saw them;
* each benchmark's records of a file are made once (``per_file``), and every consumer -- the tidy
  rows, the checks, the scoring settings, each benchmark's section, the page -- receives the same
  records (a new list each time, the same dicts: consumers read records, never change them);
* each figure's interval over the same rows is computed once (``remember``).

A file is known by its path and its stat (size, modification time, inode), so a file that changes
in between is read again; that stat is the only other look at it. Outside the block nothing is kept,
and every function reads as it always did.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class ReadSet:
    lines: dict[tuple, tuple[list, BaseException | None]] = field(default_factory=dict)
    made: dict[tuple, tuple[Any, BaseException | None]] = field(default_factory=dict)
    remembered: dict[tuple, tuple[Any, Any]] = field(default_factory=dict)  # key -> (what it keeps alive, value)


_ACTIVE: ContextVar[ReadSet | None] = ContextVar("spatial_tasks_read_once", default=None)


@contextmanager
def read_once() -> Iterator[ReadSet]:
    """Within this block each samples file is read once (module docstring); nested blocks share the
    outer one's set."""
    outer = _ACTIVE.get()
    if outer is not None:
        yield outer
        return
    token = _ACTIVE.set(ReadSet())
    try:
        yield _ACTIVE.get()
    finally:
        _ACTIVE.reset(token)


def file_key(path: Path) -> tuple | None:
    """(resolved path, size, mtime, inode), or None when the path cannot be looked at (then it is
    read as usual, and the reader names the problem)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def lines(path: Path, read: Callable[[], Iterable[T]]) -> Iterator[T]:
    """``read()``'s items for this file, read once per ``read_once`` block."""
    scope, key = _ACTIVE.get(), file_key(path)
    if scope is None or key is None:
        yield from read()
        return
    if key not in scope.lines:
        items, error = [], None
        try:
            for item in read():
                items.append(item)
        except Exception as err:  # noqa: BLE001 - kept and raised again, at the same line, to every reader
            error = err
        scope.lines[key] = (items, error)
    items, error = scope.lines[key]
    yield from items
    if error is not None:
        raise error


def per_file(function: Callable[..., T]) -> Callable[..., T]:
    """``function(path, *args, **kwargs)`` made once per file and arguments within a ``read_once``
    block; a list result is handed out as a new list of the same items."""

    @functools.wraps(function)
    def once(path: Path, *args, **kwargs):
        scope, key = _ACTIVE.get(), file_key(path)
        if scope is None or key is None:
            return function(path, *args, **kwargs)
        memo = (function.__module__, function.__qualname__, key, args, tuple(sorted(kwargs.items())))
        if memo not in scope.made:
            try:
                scope.made[memo] = (function(path, *args, **kwargs), None)
            except Exception as err:  # noqa: BLE001 - raised again to every caller
                scope.made[memo] = (None, err)
        result, error = scope.made[memo]
        if error is not None:
            raise error
        return list(result) if isinstance(result, list) else result

    return once


def remember(key: Hashable, keep: Any, compute: Callable[[], T]) -> T:
    """``compute()`` once per ``key`` within a ``read_once`` block. ``keep`` (the rows a key names by
    identity) stays alive with the value, so no other object can take their ids meanwhile."""
    scope = _ACTIVE.get()
    if scope is None:
        return compute()
    if key not in scope.remembered:
        scope.remembered[key] = (keep, compute())
    return scope.remembered[key][1]
