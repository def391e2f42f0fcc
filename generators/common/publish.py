"""Publishing a generated dataset folder to the Hugging Face Hub.

    spatial-tasks publish DIR --repo ORG/NAME [--private]

creates the dataset repository if needed (``exist_ok``) and uploads the card and the parquet
shards with ``huggingface_hub``. Render work files (``_work/``), logs and temporary files stay
local. The token comes from huggingface_hub's usual places (``HF_TOKEN``, ``hf auth login``)
and is never printed or logged.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)

# Never uploaded: render work files, generation logs, temporary and lock files, caches.
IGNORE_PATTERNS = [
    "_work/**", "**/_work/**",
    "*.log", "**/*.log",
    "*.tmp", "**/*.tmp", ".*.tmp", "**/.*.tmp",
    "*.lock", "**/*.lock",
    ".cache/**", "**/.cache/**",
    "__pycache__/**", "**/__pycache__/**",
]
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_dataset_dir(path: Path) -> list[Path]:
    """The parquet files under ``path``; raises if it is not a dataset folder we can publish."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"dataset folder {path} does not exist")
    if not (path / "README.md").is_file():
        raise FileNotFoundError(f"{path / 'README.md'} is missing: publish a folder written by "
                                "'spatial-tasks generate' (it writes the dataset card)")
    shards = sorted(p for p in path.rglob("*.parquet") if "_work" not in p.relative_to(path).parts)
    if not shards:
        raise FileNotFoundError(f"no parquet shards under {path} (outside _work/)")
    return shards


def publish(path: Path, repo: str, private: bool = False, *, endpoint: str | None = None,
            token: str | None = None, commit_message: str | None = None) -> str:
    """Upload the dataset folder ``path`` to the Hub dataset repo ``repo``; returns its URL.

    ``endpoint`` and ``token`` default to huggingface_hub's own configuration (``HF_ENDPOINT``,
    ``HF_TOKEN`` or the saved login).
    """
    from huggingface_hub import HfApi

    if not _REPO_ID.match(repo):
        raise ValueError(f"--repo must look like ORG/NAME, got {repo!r}")
    path = Path(path)
    shards = check_dataset_dir(path)
    api = HfApi(endpoint=endpoint, token=token)
    url = api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
    log.info("uploading %s (%d parquet files) to %s", path, len(shards), repo)
    api.upload_folder(repo_id=repo, repo_type="dataset", folder_path=str(path),
                      ignore_patterns=list(IGNORE_PATTERNS),
                      commit_message=commit_message or f"Upload {path.name} with spatial-tasks")
    return str(url)
