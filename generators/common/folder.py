"""The dataset folder a generator writes: one writer at a time, one dataset per folder, no
scratch left behind -- so a long render is never lost to a second command.

* ``OutputFolder`` holds an exclusive lock on ``<out>/.spatial-tasks.lock`` (filelock; the
  operating system releases it when the process dies, even on ``kill -9``) for the whole run. A
  second run on the same folder stops at once with a message instead of racing the first.
* ``claim`` records, per config, the flags that decide which images the folder holds (seed,
  grid, resolution, samples, shard count, ...) in ``<out>/_work/<config>/dataset.json``. A later
  run with other such flags would re-render over finished work or delete the other layout's
  shards, so it is refused -- unless ``overwrite`` asks to replace that config. Running the
  other shards of the same layout (``--shard 2/4`` next to ``1/4``) or more workers is fine.
* ``clean_scratch`` removes what killed renders leave: ``.scratch/`` folders and our temporary
  files (``jobs.TEMP_TAG`` in their names), only while holding the lock, so no live run's files
  are touched.
* Nothing else is deleted or replaced unless the folder's ledger (``common.owned``) proves a
  generator wrote it: ``_work/`` is listed as the generator's scratch when it makes it, and every
  shard and card as it is written. A user's file in the way is refused, named, and kept.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.owned import Ledger, owned

from .jobs import TEMP_TAG, atomic_write_json

LOCK_NAME = ".spatial-tasks.lock"
MANIFEST_NAME = "dataset.json"
GENERATE = "spatial-tasks generate"  # the writer named in a dataset folder's ledger


def dataset_ledger(root: Path) -> Ledger:
    """The ledger of a dataset folder: what the generators wrote there."""
    return Ledger(root, GENERATE)


class FolderBusyError(UserError, RuntimeError):
    """Another generator process holds the folder."""


class OutputFolder:
    """``with OutputFolder(out) as folder:`` -- the lock is held inside the block."""

    def __init__(self, root: Path, work_dir: str = "_work") -> None:
        self.root = Path(root)
        self.work = self.root / work_dir
        self.ledger = dataset_ledger(self.root)
        self._lock: FileLock | None = None

    def __enter__(self) -> OutputFolder:
        if self.root.exists() and not self.root.is_dir():
            raise FileExistsError(f"--out {self.root}: is a file, expected a dataset folder")
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.root / LOCK_NAME))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise FolderBusyError(f"{self.root} is being written by another `spatial-tasks generate` (it holds "
                                  f"{self.root / LOCK_NAME}); wait for it to finish, or use another --out") from None
        # Every generator writes the card README.md here: a user's is refused now, not after the render;
        # and its work files in _work/, never through a link (they would land, and be removed, elsewhere).
        try:
            self.ledger.check([self.root / "README.md"], what_to_do="Move it away, or use another --out: a generated "
                                                                    "dataset's card is its README.md.")
            self.ledger.inside(self.work / MANIFEST_NAME, what_to_do="Move it away, or use another --out.")
        except BaseException:
            self._lock.release()
            raise
        if not self.work.exists():  # made here: the generators' own scratch, removable whole
            self.work.mkdir()
            self.ledger.record_scratch(self.work)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.release()

    # ------------------------------------------------------------------------------------

    def claim(self, config: str, identity: Mapping[str, Any], outputs: Iterable[Path], overwrite: bool) -> None:
        """Make ``config`` of this folder hold the dataset ``identity`` describes (see the module
        docstring). ``outputs`` are the config's finished files outside ``_work`` (its parquet
        shards), deleted together with its work files when ``overwrite`` replaces it."""
        work = self.work / config
        manifest = work / MANIFEST_NAME
        recorded = _read_json(manifest)
        outputs = list(outputs)
        started = recorded is not None or any(work.glob("*.json")) or bool(outputs)
        if recorded is None and started:
            recorded = _identity_from_runs(work)
        # A folder from before manifests existed records fewer keys: compare what it records.
        differs = {k: (recorded[k], v) for k, v in identity.items()
                   if recorded is not None and recorded.get(k) is not None and recorded[k] != v}
        if started and differs:
            if not overwrite:
                changes = ", ".join(f"{_flag(k)} {old!r} (this run: {new!r})" for k, (old, new) in differs.items())
                raise FileExistsError(f"{self.root} already holds {config} made with {changes}; rerun with the "
                                      "same flags to resume, use another --out, or pass --overwrite to replace it")
            self.ledger.remove(work, *outputs, what_to_do="Move them away, or use another --out.")
        work.mkdir(parents=True, exist_ok=True)
        atomic_write_json(manifest, dict(identity))

    def clean_scratch(self, folders: Iterable[Path]) -> int:
        """Remove killed renders' leftovers in ``folders``: ``.scratch/`` where the ledger proves it
        ours (inside ``_work``), and our temporary files; returns how many were removed."""
        count = 0
        for folder in folders:
            folder = self.ledger.inside(folder)  # never through a link: what lies behind one is not ours
            scratch = Path(folder) / ".scratch"
            if scratch.is_dir() and owned(scratch / "."):
                count += sum(1 for _ in scratch.iterdir())
                shutil.rmtree(scratch, ignore_errors=True)
            for tmp in Path(folder).glob(f".*{TEMP_TAG}*.tmp") if Path(folder).is_dir() else ():
                tmp.unlink(missing_ok=True)
                count += 1
        return count


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _identity_from_runs(work: Path) -> dict | None:
    """Flags of a folder written before manifests existed, from its run records."""
    for run in sorted(work.glob("*.run.json")):
        data = _read_json(run)
        if data and isinstance(data.get("flags"), dict):
            flags = dict(data["flags"])
            flags["shards"] = int(str(flags.get("shard", "1/1")).split("/")[-1])
            flags["renderer_version"] = data.get("renderer_version")
            flags["generator"] = data.get("generator")
            return flags
    return None


def _flag(key: str) -> str:
    return {"shards": "shard count", "renderer_version": "renderer version"}.get(key, "--" + key.replace("_", "-"))
