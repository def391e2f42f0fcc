"""What spatial-tasks wrote, so that it never deletes or replaces anything else.

Every command that removes or replaces files (the demo, report, generate, probe, tiny-model,
the asset cache) keeps a ledger in the folder it writes, ``<folder>/.spatial-tasks-written.jsonl``:
one line per file it wrote (its path inside the folder, size and sha256, and which command),
appended as it writes. A file may be removed or replaced only when a ledger in its folder or one
above lists it with the same size and sha256 -- written by us and not changed since. A folder a
command made for its own scratch work (a generator's ``_work/``) is listed as such, with its inode,
and goes whole while it is that same folder; so is a file a command made and keeps appending to (a probe's deltas), which has no final
hash until the command ends. Anything else (a file of the user's, or one of ours the user has since edited) is
refused before anything is touched, in one line naming it and what to do (``NotOurs``).

``Ledger`` is the one layer through which a command removes or replaces: before anything goes,
its path is resolved and must lie inside the folder the command was given with no link between
that folder and the file (a link is the user's; what lies behind it is never ours to touch). A
ledger line naming a path outside its folder (``..``, an absolute path) or that does not parse
proves nothing: it is named once, ``<ledger>:<line>: ... ; ignored``, and skipped. A ledger that
cannot be opened at all stops the command, named. Later lines win; ``remove`` compacts the ledger
to one line per file still there (under an flock, so appends from other threads and processes are
never lost), so a folder written a hundred times keeps a ledger of one write's length.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import threading
from stat import S_ISLNK, S_ISREG
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from spatial_tasks.common.errors import UserError

LEDGER = ".spatial-tasks-written.jsonl"
# Files spatial-tasks keeps for its own bookkeeping: never the user's, never listed.
OWN_FILES = frozenset({LEDGER, ".spatial-tasks.lock", ".spatial-tasks-published.json"})
SHOWN_PROBLEMS = 3  # bad lines named one by one per ledger; the rest counted


class NotOurs(UserError, FileExistsError):
    """A command would remove or replace a file it cannot prove it wrote, or reach one through a
    link or outside its folder."""


def digest(path: Path) -> tuple[int, str]:
    """(size, sha256) of a file."""
    sha, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


@dataclass
class _Parsed:
    entries: dict[str, dict] = field(default_factory=dict)  # relative path -> its latest entry
    problems: list[str] = field(default_factory=list)  # "<ledger>:<line>: why; ignored"


_READ: dict[str, tuple[tuple[int, int, int], _Parsed]] = {}  # ledger -> ((inode, size, mtime), parsed)
_WARNED: set[tuple[str, object]] = set()


def _read(folder: Path) -> dict[str, dict]:
    """{relative path: its latest entry} of ``folder``'s ledger ({} when there is none); parsed once
    per version of the file (a folder of thousands of files asks it once per file). Its bad lines
    are named on stderr once per version."""
    path = Path(folder) / LEDGER
    try:
        stat = path.lstat()
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise _unreadable(path, err) from None
    if S_ISLNK(stat.st_mode):  # a ledger is a file a command wrote here, never one it is pointed at
        if (str(path), "link") not in _WARNED:
            _WARNED.add((str(path), "link"))
            print(f"spatial-tasks: {path}: is a link (to {os.readlink(path)}), not a ledger spatial-tasks wrote; ignored",
                  file=sys.stderr, flush=True)
        return {}
    if not S_ISREG(stat.st_mode):  # a folder, a pipe (reading it would wait forever) ...
        raise _unreadable(path, OSError(0, "not a regular file"))
    version = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    cached = _READ.get(str(path))
    if cached is None or cached[0] != version:
        cached = (version, _parse(path))
        _READ[str(path)] = cached
    if cached[1].problems and (str(path), version) not in _WARNED:
        _WARNED.add((str(path), version))
        problems = cached[1].problems
        for line in problems[:SHOWN_PROBLEMS]:
            print(f"spatial-tasks: {line}", file=sys.stderr, flush=True)
        if len(problems) > SHOWN_PROBLEMS:
            print(f"spatial-tasks: {path}: {len(problems) - SHOWN_PROBLEMS} more lines like these ignored",
                  file=sys.stderr, flush=True)
    return cached[1].entries


def _unreadable(path: Path, err: OSError) -> UserError:
    return UserError(f"{path}: this ledger cannot be read ({err.strerror or err}), so spatial-tasks cannot tell which "
                     "files here it wrote and removes or replaces nothing; make it readable, or move the folder away")


def entry_problem(rel: object, folder: str) -> str | None:
    """Why a ledger line's ``path`` names no file inside its folder (None when it does): only a
    plain relative path, as ``record`` writes it, is ever joined to the folder."""
    if not isinstance(rel, str) or not rel:
        return "names no path"
    shown = json.dumps(rel, ensure_ascii=True)[1:-1]
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts:
        return f"{shown} lies outside {folder}"
    if "\x00" in rel or "\\" in rel or rel == "." or pure.as_posix() != rel:
        return f"{shown} is not a plain path inside {folder}"
    return None


def _parse(path: Path) -> _Parsed:
    parsed = _Parsed()
    try:
        data = path.read_bytes()
    except OSError as err:
        raise _unreadable(path, err) from None
    folder = str(path.parent)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            parsed.problems.append(f"{path}:{number}: not a ledger line (not UTF-8 JSON); ignored")
            continue
        if not isinstance(entry, dict):
            parsed.problems.append(f"{path}:{number}: not a ledger line (not a JSON object); ignored")
            continue
        problem = entry_problem(entry.get("path"), folder)
        if problem:
            parsed.problems.append(f"{path}:{number}: {problem}; ignored")
        elif entry.get("removed"):
            parsed.entries.pop(entry["path"], None)
        else:
            parsed.entries[entry["path"]] = entry
    return parsed


def _relative(path: Path, folder: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(folder)).as_posix()
    except ValueError:
        return None


def first_link(folder: Path, rel: str) -> Path | None:
    """The first component of ``folder/rel`` below ``folder`` that is a link (the file itself
    included), or None."""
    current = Path(folder)
    for part in PurePosixPath(rel).parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def owned(path: Path) -> bool:
    """``path`` is a file a ledger in its folder or one above lists with its current size and
    sha256, or lies in a scratch folder a ledger lists (see the module docstring); never a link,
    nor anything reached through one below the ledger's folder."""
    path = Path(os.path.abspath(path))
    if path.name in OWN_FILES and not path.is_symlink():
        return True
    for folder in path.parents:
        if not (folder / LEDGER).is_file():
            continue
        entries = _read(folder)
        rel = _relative(path, folder)
        if not entries or rel is None or first_link(folder, rel) is not None:
            continue
        entry = entries.get(rel)
        if entry is not None and not entry.get("folder") and path.is_file():
            if entry.get("growing") or [entry.get("size"), entry.get("sha256")] == list(digest(path)):
                return True
        parts = rel.split("/")
        if any(_made_here(folder, "/".join(parts[:i]), entries) for i in range(1, len(parts))):
            return True
    return False


def _made_here(folder: Path, rel: str, entries: dict[str, dict]) -> bool:
    """``folder/rel`` is a scratch folder a command listed when it made it: the same folder, by
    its inode (a line naming a folder of the user's, or one put in its place since, proves nothing)."""
    entry = entries.get(rel, {})
    if not entry.get("folder"):
        return False
    try:
        return entry.get("inode") == os.lstat(folder / rel).st_ino
    except OSError:
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
    """The ledger of one folder, written by one command: the one layer through which that command
    removes (``remove``) or replaces (``replace``, or ``check`` before its own write) a file."""

    def __init__(self, folder: Path, command: str) -> None:
        self.folder = Path(folder)
        self.command = command
        self._lock = threading.Lock()

    def inside(self, path: Path, what_to_do: str = "Move it away, or choose another --out.") -> Path:
        """``path`` with ``..`` resolved, when it lies inside this folder with no link between the
        folder and it (the path itself may be a link: removing or replacing a link leaves its
        target alone); else ``NotOurs`` naming the link or the escape, before anything is touched."""
        resolved = Path(os.path.abspath(path))
        rel = _relative(resolved, self.folder)
        if rel is None:
            real = Path(os.path.realpath(self.folder))
            rel = _relative(resolved, real)
            resolved = real / rel if rel is not None else resolved
        if rel is None:
            raise NotOurs(f"{self.command}: {path} lies outside {self.folder}; nothing was deleted or replaced. "
                          f"{what_to_do}")
        if rel != ".":
            link = first_link(self.folder, PurePosixPath(rel).parent.as_posix())
            if link is not None:
                raise NotOurs(f"{self.command}: {link} is a link (to {os.readlink(link)}); spatial-tasks never removes "
                              f"or replaces anything through a link, so nothing was deleted or replaced. {what_to_do}")
        return Path(os.path.abspath(self.folder)) / rel if rel != "." else Path(os.path.abspath(self.folder))

    def check(self, paths: Iterable[Path], what_to_do: str = "Move them away, or choose another --out.") -> list[Path]:
        """Raise ``NotOurs`` unless every existing file among ``paths`` lies inside this folder (no
        link between) and may be removed or replaced; returns the paths as ``inside`` resolves them."""
        placed = [self.inside(p, what_to_do) for p in paths]
        foreign = not_ours(placed)
        if foreign:
            raise refusal(self.command, self.folder, foreign, what_to_do)
        return placed

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
        self._append([{"path": rel, "folder": True, "by": self.command, "pid": os.getpid(),
                       "inode": os.lstat(folder).st_ino}])

    def record_growing(self, *paths: Path) -> None:
        """List files this command just made and keeps appending to (no final hash yet)."""
        self._append([{"path": rel, "growing": True, "by": self.command}
                      for rel in (_relative(p, self.folder) for p in paths) if rel is not None])

    def remove(self, *paths: Path, what_to_do: str = "Move them away, or choose another --out.") -> int:
        """Delete these files and folders, all or nothing: refused (``NotOurs``) if any lies outside
        this folder, behind a link, or holds a file that is not ours. Returns how many files were
        removed; the ledger is then compacted."""
        placed = self.check(paths, what_to_do)
        removed, gone = 0, []
        for path in placed:
            if path.is_dir() and not path.is_symlink():
                removed += len(files_under(path))
                shutil.rmtree(path)
            elif path.is_symlink() or path.exists():
                path.unlink()
                removed += 1
            else:
                continue
            gone.append(_relative(path, self.folder))
        self._append([{"path": rel, "removed": True} for rel in gone]
                     + [{"path": rel, "removed": True} for rel in self._listed_below(gone)])
        self.compact()
        return removed

    def replace(self, source: Path, target: Path, what_to_do: str = "Move it away, or choose another --out.") -> Path:
        """Move ``source`` (a file or folder this command made) onto ``target`` inside this folder,
        refused unless whatever ``target`` holds now is ours; records what it moved there."""
        [target] = self.check([target], what_to_do)
        if target.is_dir() and not target.is_symlink():  # a folder of ours goes whole (check saw every file)
            self.remove(target, what_to_do=what_to_do)
        below = Path(os.path.abspath(self.folder))
        blocking = next((p for p in (target.parent, *target.parent.parents) if below in p.parents and p.exists()
                         and not p.is_dir()), None)
        if blocking is not None:
            raise NotOurs(f"{self.command}: {blocking} is a file where {target} needs a folder; nothing was deleted or "
                          f"replaced. {what_to_do}")
        target.parent.mkdir(parents=True, exist_ok=True)  # no link on the way: inside() saw to that
        os.replace(source, target)
        self.record(target)
        return target

    def remove_leftover_scratch(self, prefix: str) -> int:
        """Remove the scratch folders named ``prefix*`` that this command listed and whose process
        has ended (killed before its cleanup: ``kill -9``); a live run's folder is left alone.
        Returns how many folders went."""
        entries = _read(self.folder)
        left = [self.folder / rel for rel, entry in entries.items()
                if entry.get("by") == self.command and "/" not in rel and rel.startswith(prefix)
                and _made_here(self.folder, rel, entries) and not _alive(entry.get("pid"))]
        if left:
            self.remove(*left)
        return len(left)

    def _listed_below(self, gone: list[str]) -> list[str]:
        if not gone:
            return []
        entries = _read(self.folder)
        return [rel for rel in entries if any(rel.startswith(g + "/") for g in gone)]

    def listed_with_writer(self) -> list[tuple[Path, str]]:
        """(file, the command that wrote it) for every file this folder's ledger lists now."""
        return [(self.folder / rel, str(entry.get("by"))) for rel, entry in _read(self.folder).items()
                if not entry.get("folder")]

    def compact(self) -> None:
        """Rewrite the ledger as one line per listed path that is still there (the latest wins;
        lines that name nothing inside the folder, or do not parse, go)."""
        path = self.folder / LEDGER
        if not path.is_file() or path.is_symlink():
            return
        with self._lock, _locked(path) as handle:
            entries = _parse(path).entries
            live = [entry for rel, entry in entries.items() if os.path.lexists(self.folder / rel)]
            text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in live)
            if len(text.encode("utf-8")) == os.fstat(handle.fileno()).st_size:
                return
            temporary = path.with_name(f"{LEDGER}.{os.getpid()}.tmp")
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(descriptor, "wb") as written:
                written.write(text.encode("utf-8"))
            os.replace(temporary, path)

    def _append(self, entries: list[dict]) -> None:
        if not entries:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries)
        with self._lock, _locked(self.folder / LEDGER) as handle:
            end = handle.seek(0, os.SEEK_END)
            if end:  # a line of someone else's without its newline must not swallow ours
                handle.seek(end - 1)
                if handle.read(1) != b"\n":
                    text = "\n" + text
            handle.seek(0, os.SEEK_END)
            handle.write(text.encode("utf-8"))


def _alive(pid: object) -> bool:
    """Whether a process with this id runs on this machine (no id: it cannot be told, so not)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _locked:
    """The ledger file opened for appending and held under an exclusive flock: appends (from
    threads or processes) and ``compact``'s rewrite never interleave. A ledger replaced by a
    compaction while we waited is opened anew."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self):
        while True:
            if self.path.is_symlink():  # never written through: that would write wherever it points
                raise NotOurs(f"{self.path}: is a link (to {os.readlink(self.path)}), and spatial-tasks never writes "
                              "through a link; nothing was deleted or replaced. Move it away, or choose another --out.")
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                                     0o644)
            except OSError as err:
                raise NotOurs(f"{self.path}: cannot be written as spatial-tasks' ledger ({err.strerror}); "
                              "nothing was deleted or replaced. Move it away, or choose another --out.") from None
            if not S_ISREG(os.fstat(descriptor).st_mode):
                os.close(descriptor)
                raise NotOurs(f"{self.path}: is not a regular file, so it cannot be spatial-tasks' ledger; nothing was "
                              "deleted or replaced. Move it away, or choose another --out.")
            handle = os.fdopen(descriptor, "a+b")
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                if os.fstat(handle.fileno()).st_ino == os.stat(self.path).st_ino:
                    self.handle = handle
                    return handle
            except FileNotFoundError:
                pass
            handle.close()

    def __exit__(self, *exc: object) -> None:
        self.handle.flush()
        self.handle.close()
