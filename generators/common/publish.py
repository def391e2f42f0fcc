"""Publishing a generated dataset folder to the Hugging Face Hub.

    spatial-tasks publish DIR --repo ORG/NAME [--private] [--dry-run]

Resumable: files go up in commits of at most ``batch_bytes`` (2 GB by default; the card last),
and before uploading, the repo's copies are compared with the local files (size and git/LFS
hash, huggingface_hub's ``get_paths_info``): what is already there is skipped. An upload cut off
halfway (network, Ctrl-C) is finished by running the same command again; nothing is sent twice.

Uploads exactly what the dataset declares -- an allowlist, not a denylist: the card
(``README.md``) and the data files its YAML header's ``configs:`` name (paths or globs, inside
the folder). Render work files, logs, locks, stray files and anything outside the folder stay
local whatever their names. The list is printed before anything is sent; ``--dry-run`` stops
there. The token comes from huggingface_hub's usual places (``HF_TOKEN``, ``hf auth login``) and
is never printed or logged. Authentication, permission, not-found and network failures become
one line saying what to do (``PublishError``).

Nothing on the Hub that this folder did not put there is replaced: each upload is recorded in the
folder's ``.spatial-tasks-published.json`` (repo, file, sha256 and git blob id), and a repo file
that differs from the local one is replaced only while the repo still holds what this folder
uploaded; anything else there (a card written on the Hub, another machine's upload) stops the
upload before anything is sent, naming the files -- ``replace=True`` (``--replace``) replaces them.
"""

from __future__ import annotations

import glob
import hashlib
import logging
from pathlib import Path

import yaml

from spatial_tasks.common.errors import UserError

log = logging.getLogger(__name__)

CARD = "README.md"
PUBLISHED = ".spatial-tasks-published.json"  # in the dataset folder: what it uploaded, per repo


class PublishError(UserError, ValueError):
    """An upload that cannot go ahead; the message says what to do."""


def card_header(path: Path) -> dict:
    """The YAML header of a dataset card (between the first two '---' lines)."""
    card = Path(path) / CARD
    if not card.is_file():
        raise PublishError(f"{card}: missing; publish a folder written by `spatial-tasks generate` (it writes the card)")
    text = card.read_text(encoding="utf-8")
    parts = text.split("---", 2)
    if not text.startswith("---") or len(parts) < 3:
        raise PublishError(f"{card}: no YAML header ('---' ... '---') declaring the dataset's configs")
    try:
        header = yaml.safe_load(parts[1])
    except yaml.YAMLError as err:
        raise PublishError(f"{card}: the YAML header does not parse ({str(err).splitlines()[0]})") from None
    if not isinstance(header, dict):
        raise PublishError(f"{card}: the YAML header is not a mapping")
    return header


def _data_file_patterns(config: dict, card: Path) -> list[str]:
    files = config.get("data_files")
    if isinstance(files, str):
        return [files]
    patterns: list[str] = []
    for item in files if isinstance(files, list) else []:
        paths = item.get("path") if isinstance(item, dict) else item
        patterns += [paths] if isinstance(paths, str) else list(paths or [])
    if not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise PublishError(f"{card}: config {config.get('config_name')!r} declares no data_files paths")
    return patterns


def check_repo_id(repo: str) -> None:
    """ORG/NAME as the Hub accepts it (huggingface_hub's own rules: characters, length, no '--'
    or '..'), checked before anything is read or uploaded -- a dry run too."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo, str) or repo.count("/") != 1:
        raise ValueError(f"--repo must be ORG/NAME (a dataset repo under your user or organisation), got {repo!r}")
    try:
        validate_repo_id(repo)
    except HFValidationError as err:
        raise ValueError(f"--repo {repo!r} is not a valid Hub repo id: {str(err).split(chr(10))[0]}") from None


def upload_plan(path: Path, repo: str) -> list[str]:
    """What ``publish(path, repo)`` would upload (``upload_list``), after checking the repo id."""
    check_repo_id(repo)
    return upload_list(path)


def upload_list(path: Path) -> list[str]:
    """The files ``publish`` uploads, relative to ``path``: the card, then every data file the
    card's configs declare, sorted. A pattern matching nothing, or a path leaving the folder, is
    an error."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such dataset folder")
    card = root / CARD
    configs = card_header(root).get("configs")
    if not isinstance(configs, list) or not configs:
        raise PublishError(f"{card}: the YAML header declares no configs (configs: - config_name: ... data_files: ...)")
    files: set[str] = set()
    resolved_root = root.resolve()
    for config in configs:
        if not isinstance(config, dict):
            raise PublishError(f"{card}: a configs entry is not a mapping: {config!r}")
        for pattern in _data_file_patterns(config, card):
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise PublishError(f"{card}: data file path {pattern!r} points outside the dataset folder")
            matches = [Path(m) for m in glob.glob(str(root / pattern), recursive=True)]
            matches = [m for m in matches if m.is_file() and m.resolve().is_relative_to(resolved_root)]
            if not matches:
                raise PublishError(f"{card}: config {config.get('config_name')!r} declares {pattern!r}, which matches "
                                   f"no file in {root}")
            files.update(m.relative_to(root).as_posix() for m in matches)
    return [CARD, *sorted(files)]


DEFAULT_BATCH_BYTES = 2 * 1024**3


def publish(path: Path, repo: str, private: bool = False, *, files: list[str] | None = None,
            endpoint: str | None = None, token: str | None = None, commit_message: str | None = None,
            batch_bytes: int = DEFAULT_BATCH_BYTES, replace: bool = False) -> str:
    """Upload the allowlisted files of the dataset folder ``path`` (``upload_list``; or ``files``,
    already computed) to the Hub dataset repo ``repo``; returns the repo URL.

    Files already in the repo with the same content are skipped; the rest go up in commits of at
    most ``batch_bytes`` (a single file larger than that gets a commit of its own), data files
    first and the card last, so a repo never shows a card whose files are missing.
    ``endpoint`` and ``token`` default to huggingface_hub's own configuration (``HF_ENDPOINT``,
    ``HF_TOKEN`` or the saved login).
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    check_repo_id(repo)
    if batch_bytes < 1:
        raise ValueError(f"batch_bytes must be >= 1, got {batch_bytes}")
    root = Path(path)
    files = upload_list(root) if files is None else files
    from .folder import dataset_ledger

    # What this folder uploaded is written here afterwards: never through a link, never over a file of the user's.
    dataset_ledger(root).check([root / PUBLISHED], what_to_do=f"Move {PUBLISHED} away, or publish a copy of the folder.")
    api = HfApi(endpoint=endpoint, token=token)
    with hub_errors(repo, api.endpoint):
        url = api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        remote = remote_files(api, repo, files)
        todo = [name for name in files if not same_as_remote(root / name, remote.get(name))]
        uploaded = _published(root).get(repo, {})
        theirs = [name for name in todo if name in remote and not _uploaded_here(uploaded.get(name), remote[name])]
        if theirs and not replace:
            shown = ", ".join(theirs[:3]) + (f" and {len(theirs) - 3} more" if len(theirs) > 3 else "")
            raise PublishError(f"{repo} holds {shown}, which this folder did not upload (or which changed on the Hub "
                               "since), and differs from the local copy; nothing was uploaded. Pass --replace to "
                               "replace it with the local copy, or publish to another --repo")
        batches = _batches(root, sorted(todo, key=lambda n: n == CARD), batch_bytes)
        skipped = len(files) - len(todo)
        log.info("uploading %d file(s) of %s to %s in %d commit(s); %d already there", len(todo), root, repo,
                 len(batches), skipped)
        message = commit_message or f"Upload {root.name} with spatial-tasks"
        for i, batch in enumerate(batches, 1):
            operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(root / name)) for name in batch]
            api.create_commit(repo_id=repo, repo_type="dataset", operations=operations,
                              commit_message=message if len(batches) == 1 else f"{message} (part {i}/{len(batches)})")
            _record_published(root, repo, batch)
    return str(url)


def _published(root: Path) -> dict[str, dict[str, dict]]:
    """{repo: {file: {"sha256", "blob"}}} this folder uploaded ({} when none, or unreadable)."""
    import json

    try:
        data = json.loads((root / PUBLISHED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record_published(root: Path, repo: str, names: list[str]) -> None:
    import json

    from .jobs import atomic_write_text

    data = _published(root)
    data.setdefault(repo, {}).update({name: {"sha256": _sha256(root / name), "blob": _git_blob_sha1(root / name)}
                                      for name in names})
    atomic_write_text(root / PUBLISHED, json.dumps(data, indent=1, sort_keys=True) + "\n")


def _uploaded_here(record: dict | None, remote: object) -> bool:
    """The repo's file is still the one this folder uploaded (its LFS sha256 or git blob id)."""
    if not isinstance(record, dict):
        return False
    lfs = getattr(remote, "lfs", None)
    return (lfs.sha256 == record.get("sha256")) if lfs is not None else getattr(remote, "blob_id", None) == record.get("blob")


def remote_files(api, repo: str, names: list[str]) -> dict[str, object]:
    """{path: RepoFile} for the listed paths that exist in the repo's main branch ({} for a new repo)."""
    from huggingface_hub import errors

    try:
        infos = api.get_paths_info(repo, names, repo_type="dataset")
    except (errors.RevisionNotFoundError, errors.EntryNotFoundError):
        infos = []
    return {info.path: info for info in infos if hasattr(info, "size")}


def same_as_remote(local: Path, remote: object) -> bool:
    """The repo's copy has this content: same size and the same LFS sha256 (or git blob sha1)."""
    if remote is None or getattr(remote, "size", None) != local.stat().st_size:
        return False
    lfs = getattr(remote, "lfs", None)
    if lfs is not None:
        return _sha256(local) == lfs.sha256
    return _git_blob_sha1(local) == getattr(remote, "blob_id", None)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _git_blob_sha1(path: Path) -> str:
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())  # noqa: S324 - git's object id
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _batches(root: Path, names: list[str], limit: int) -> list[list[str]]:
    batches: list[list[str]] = []
    size = 0
    for name in names:
        n = (root / name).stat().st_size
        if not batches or size + n > limit:
            batches.append([])
            size = 0
        batches[-1].append(name)
        size += n
    return batches


class hub_errors:
    """Turns huggingface_hub / HTTP failures into a PublishError saying what to do."""

    def __init__(self, repo: str, endpoint: str) -> None:
        self.repo, self.endpoint = repo, endpoint

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, err, tb) -> bool:
        if err is None or isinstance(err, PublishError):
            return False
        raise PublishError(self.explain(err)) from err

    def explain(self, err: BaseException) -> str:
        from huggingface_hub import errors

        status = getattr(getattr(err, "response", None), "status_code", None)
        name = type(err).__name__
        login = "run `hf auth login`, or set HF_TOKEN to a token with write access"
        if isinstance(err, errors.LocalTokenNotFoundError) or status == 401:
            return f"the Hub refused the credentials for {self.repo}: {login}"
        if status == 403:
            return (f"the token may not write to {self.repo}: check its write scope and your membership of "
                    f"'{self.repo.split('/')[0]}' ({login})")
        if isinstance(err, errors.RepositoryNotFoundError) or status == 404:
            return (f"{self.repo} was not found on {self.endpoint}: check the name; the organisation must exist and "
                    f"you must belong to it ({login})")
        if isinstance(err, errors.OfflineModeIsEnabled):
            return "huggingface_hub is in offline mode (HF_HUB_OFFLINE=1): unset it to publish"
        if status is None and ("Connect" in name or "Timeout" in name or isinstance(err, (OSError, ConnectionError))):
            return (f"cannot reach the Hub at {self.endpoint} ({name}): check the network, a proxy (HTTPS_PROXY) "
                    "or HF_ENDPOINT, then run the same command again")
        first = str(err).strip().splitlines()[0] if str(err).strip() else name
        return f"the upload to {self.repo} failed ({status or name}: {first})"
