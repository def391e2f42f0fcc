"""What spatial-tasks wrote, so that it never deletes or replaces anything else.

Every command that removes or replaces files (the demo, report, generate, probe, tiny-model,
the asset cache) keeps a ledger in the folder it writes, ``<folder>/.spatial-tasks-written.jsonl``:
one line per file it wrote (its path inside the folder, size and sha256, and which command),
appended as it writes. A file may be removed or replaced only when a ledger in its folder or one
above lists it with the same size and sha256 -- written by us and not changed since. A folder a
command made for its own scratch work (a generator's ``_work/``) is listed as such and goes
whole; so is a file a command made and keeps appending to (a probe's deltas), which has no final
hash until the command ends. Anything else (a file of the user's, or one of ours the user has since edited) is
refused before anything is touched, in one line naming it and what to do (``NotOurs``).

A ledger that is unreadable, or a line that does not parse, proves nothing: such files count as
not ours. Later lines win, so a ledger is append-only and safe to write from threads.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

from spatial_tasks.common.errors import UserError

LEDGER = ".spatial-tasks-written.jsonl"
# Files spatial-tasks keeps for its own bookkeeping: never the user's, never listed.
OWN_FILES = frozenset({LEDGER, ".spatial-tasks.lock"})


class NotOurs(UserError, FileExistsError):
    """A command would remove or replace a file it cannot prove it wrote."""


def digest(path: Path) -> tuple[int, str]:
    """(size, sha256) of a file."""
    sha, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


_READ: dict[str, tuple[tuple[int, int], dict[str, dict]]] = {}  # ledger file -> ((size, mtime), entries)


def _read(folder: Path) -> dict[str, dict]:
    """{relative path: its latest entry} of ``folder``'s ledger ({} when there is none); parsed once
    per version of the file (a folder of thousands of files asks it once per file)."""
    path = Path(folder) / LEDGER
    try:
        stat = path.stat()
    except OSError:
        return {}
    cached = _READ.get(str(path))
    if cached is not None and cached[0] == (stat.st_size, stat.st_mtime_ns):
        return cached[1]
    entries = _parse(path)
    _READ[str(path)] = ((stat.st_size, stat.st_mtime_ns), entries)
    return entries


def _parse(path: Path) -> dict[str, dict]:
    entries: dict[str, dict] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return entries
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            if entry.get("removed"):
                entries.pop(entry["path"], None)
            else:
                entries[entry["path"]] = entry
    return entries


def _relative(path: Path, folder: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(folder)).as_posix()
    except ValueError:
        return None


def owned(path: Path) -> bool:
    """``path`` is a file a ledger in its folder or one above lists with its current size and
    sha256, or lies in a scratch folder a ledger lists (see the module docstring)."""
    path = Path(os.path.abspath(path))
    if path.name in OWN_FILES:
        return True
    for folder in path.parents:
        if not (folder / LEDGER).is_file():
            continue
        entries = _read(folder)
        rel = _relative(path, folder)
        entry = entries.get(rel)
        if entry is not None and not entry.get("folder") and path.is_file() and not path.is_symlink():
            if entry.get("growing") or [entry.get("size"), entry.get("sha256")] == list(digest(path)):
                return True
        parts = rel.split("/")
        if any(entries.get("/".join(parts[:i]), {}).get("folder") for i in range(1, len(parts))):
            return True
    return False


def files_under(path: Path) -> list[Path]:
    """``path`` itself if it is a file (or a link), else every file and link below it."""
    path = Path(path)
    if path.is_symlink() or path.is_file():
        return [path]
    if not path.is_dir():
        return []
    return sorted(Path(root) / name for root, dirs, files in os.walk(path) for name in (*files, *[
        d for d in dirs if (Path(root) / d).is_symlink()]))


def not_ours(paths: Iterable[Path]) -> list[Path]:
    """The existing files among ``paths`` (folders: every file below) that are not ``owned``."""
    return [f for p in paths for f in files_under(Path(p)) if not owned(f)]


def refusal(command: str, folder: Path, foreign: list[Path], what_to_do: str) -> NotOurs:
    shown = ", ".join(str(_relative(f, folder) or f) for f in foreign[:3])
    more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
    return NotOurs(f"{command}: {folder} holds {shown}{more}, which spatial-tasks did not write (or which changed since); "
                   f"nothing was deleted or replaced. {what_to_do}")


class Ledger:
    """The ledger of one folder, written by one command."""

    def __init__(self, folder: Path, command: str) -> None:
        self.folder = Path(folder)
        self.command = command
        self._lock = threading.Lock()

    def check(self, paths: Iterable[Path], what_to_do: str = "Move them away, or choose another --out.") -> None:
        """Raise ``NotOurs`` unless every existing file among ``paths`` may be removed or replaced."""
        foreign = not_ours(paths)
        if foreign:
            raise refusal(self.command, self.folder, foreign, what_to_do)

    def record(self, *paths: Path) -> None:
        """List these files (folders: every file below) as written by this command."""
        lines = []
        for path in paths:
            for f in files_under(Path(path)):
                rel = _relative(f, self.folder)
                if rel is None or f.name in OWN_FILES or f.is_symlink() or not f.is_file():
                    continue
                size, sha = digest(f)
                lines.append({"path": rel, "size": size, "sha256": sha, "by": self.command})
        self._append(lines)

    def record_scratch(self, folder: Path) -> None:
        """List ``folder`` (made by this command for its own work files) as removable whole."""
        rel = _relative(folder, self.folder)
        if rel is None or rel == ".":
            raise ValueError(f"{folder} is not inside {self.folder}")
        self._append([{"path": rel, "folder": True, "by": self.command}])

    def record_growing(self, *paths: Path) -> None:
        """List files this command just made and keeps appending to (no final hash yet)."""
        self._append([{"path": rel, "growing": True, "by": self.command}
                      for rel in (_relative(p, self.folder) for p in paths) if rel is not None])

    def remove(self, *paths: Path, what_to_do: str = "Move them away, or choose another --out.") -> int:
        """Delete these files and folders, all or nothing: refused (``NotOurs``) if any file in them
        is not ours. Emptied folders go too. Returns how many files were removed."""
        self.check(paths, what_to_do)
        removed, gone = 0, []
        for path in paths:
            path = Path(path)
            if path.is_dir() and not path.is_symlink():
                removed += len(files_under(path))
                shutil.rmtree(path)
            elif path.is_symlink() or path.exists():
                path.unlink()
                removed += 1
            else:
                continue
            rel = _relative(path, self.folder)
            if rel is not None:
                gone.append(rel)
        self._append([{"path": rel, "removed": True} for rel in gone]
                     + [{"path": rel, "removed": True} for rel in self._listed_below(gone)])
        return removed

    def _listed_below(self, gone: list[str]) -> list[str]:
        if not gone:
            return []
        entries = _read(self.folder)
        return [rel for rel in entries if any(rel.startswith(g + "/") for g in gone)]

    def listed_with_writer(self) -> list[tuple[Path, str]]:
        """(file, the command that wrote it) for every file this folder's ledger lists now."""
        return [(self.folder / rel, str(entry.get("by"))) for rel, entry in _read(self.folder).items()
                if not entry.get("folder")]

    def _append(self, entries: list[dict]) -> None:
        if not entries:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries)
        with self._lock, open(self.folder / LEDGER, "a", encoding="utf-8") as handle:
            handle.write(text)
