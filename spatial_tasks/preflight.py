"""Before an lmms-eval run with our tasks loads its model: can it read the checkpoint and our data?

The lines and checks; ``spatial_tasks.harness`` (the seam) wraps lmms-eval's ``simple_evaluate``
with them.

lmms-eval loads the model first and the tasks' data after. Without network, a Hub checkpoint that is
not in the local cache fails inside transformers -- after the hub client's retries (46 s where the
host resolves but does not answer, as a tester measured) and with a traceback of a hundred lines --
and lmms-eval exits 0; our
one-line data message would come only after the model had loaded. So, when the run holds at least
one of our tasks (runs without them are left as they are), ``simple_evaluate`` is wrapped:

1. the checkpoint (``pretrained=`` in --model_args, else the model's own default) and each of our
   tasks' Hub datasets are looked up in the local caches first; where one is missing and the Hub
   cannot be reached (``HF_HUB_OFFLINE`` set, or its host does not resolve), the run stops at once
   with one line naming it and the fix, exit status 2;
2. a model that still fails to load for want of the Hub (the host resolves but does not answer) stops
   the same way, after the hub client's retries, instead of the traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

# How transformers and huggingface_hub say that the Hub was needed and could not be had.
HUB_FAILURES = ("couldn't connect", "could not connect", "offline mode", "outgoing traffic has been disabled",
                "not a local folder", "cannot find the requested files")
FIX = ("download it once where the Hub is reachable (HF_HUB_OFFLINE=1 then reads the cached copy), or pass a "
       "local folder")


def our_tasks(requested: Iterable[str]) -> list[str]:
    """The requested names that are our tasks, groups expanded into their tasks (others dropped)."""
    from spatial_tasks.catalog import task_catalog

    entries = {e.name: e for e in task_catalog()}
    found: list[str] = []
    pending = [str(name).strip() for name in requested]
    while pending:
        name = pending.pop(0)
        entry = entries.get(name)
        if entry is None or name in found:
            continue
        if entry.kind == "group":
            pending += list(entry.subtasks)
        else:
            found.append(name)
    return found


def closest_task(name: str) -> str | None:
    """The one of our task and group names closest to ``name`` when it is a near miss (difflib's
    similarity >= 0.8: a letter or two wrong, missing or swapped), else None."""
    import difflib

    from spatial_tasks.catalog import task_catalog

    close = difflib.get_close_matches(name, [e.name for e in task_catalog()], n=1, cutoff=0.8)
    return close[0] if close else None


def given_checkpoint(model_args: dict) -> str | None:
    """``pretrained=`` of a run's --model_args (parsed by lmms-eval's own parser: the harness), if given."""
    given = model_args.get("pretrained")
    return str(given).strip() if given else None


# What a checkpoint folder holds: (what, any of these names or patterns). Every checkpoint has the
# first two; a VLM family's lmms-eval class also reads the processor's (``VLM_PARTS``). Hub code
# (trust_remote_code) and other models (spatial_baseline's depth model) may keep theirs elsewhere.
CHECKPOINT_PARTS = (
    ("config.json", ("config.json",)),
    ("weights (*.safetensors or *.bin)", ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")),
)
VLM_PARTS = (
    ("processor files (preprocessor_config.json or processor_config.json)",
     ("preprocessor_config.json", "processor_config.json")),
    ("tokenizer files (tokenizer.json, tokenizer.model or tokenizer_config.json)",
     ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")),
)


def _looks_local(checkpoint: str) -> bool:
    """A path, not a Hub id: it exists, or starts like a path, or has more parts than ORG/NAME."""
    return (Path(checkpoint).expanduser().exists() or checkpoint.startswith(("/", ".", "~"))
            or checkpoint.count("/") > 1 or "\\" in checkpoint)


def expected_families(model: str) -> tuple[str, ...]:
    """The checkpoint families (config.json ``model_type``) lmms-eval's ``model`` (or its ``_yesno``
    twin) loads, from the model table (``models.model_table``: no torch); () when any family will do or we
    do not know the model.
    llava_hf loads every LLaVA variant, more than the families list, so it is not checked."""
    from spatial_tasks.models.model_table import MODEL_TABLE

    base = model.removesuffix("_yesno")
    if base == "llava_hf":
        return ()
    return next((entry.served() for entry in MODEL_TABLE.values() if entry.extends == base), ())


def local_checkpoint_problem(model: str, checkpoint: str | None) -> str | None:
    """The line for ``pretrained=`` a local path that does not exist, that is not a checkpoint folder
    (naming what it lacks), or that holds another family than ``model`` loads; None otherwise (a
    Hub id, or a good folder)."""
    if checkpoint is None or not _looks_local(checkpoint):
        return None
    path = Path(checkpoint).expanduser()
    head = f"spatial-tasks: --model {model}: pretrained={checkpoint}"
    if not path.exists():
        return f"{head}: no such folder (a local checkpoint folder, or a Hub id ORG/NAME)"
    if not path.is_dir():
        return f"{head}: is a file, not a checkpoint folder (config.json, weights and processor files)"
    expected = expected_families(model)
    parts = CHECKPOINT_PARTS + (VLM_PARTS if expected else ())
    lacks = [what for what, names in parts if not any(any(path.glob(name)) for name in names)]
    if lacks:
        return f"{head}: not a model checkpoint folder: it lacks {', '.join(lacks)}"
    try:
        model_type = json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return f"{head}: its config.json does not read as JSON"
    if expected and model_type not in expected:
        return (f"{head}: is a {model_type!r} checkpoint, but --model {model} loads {' or '.join(expected)}; "
                "--model hf_yesno reads the family from config.json")
    return None


def _is_cached(repo: str, repo_type: str) -> bool:
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(repo, repo_type=repo_type, local_files_only=True)
    except Exception:  # noqa: BLE001 - LocalEntryNotFoundError, or an id the cache cannot hold
        return False
    return True


def _hub_id(text: str) -> bool:
    from spatial_tasks.catalog import HUB_ID

    return bool(HUB_ID.match(text)) and not Path(text).expanduser().exists()


def missing_checkpoint(model: str, checkpoint: str | None, why: str) -> str | None:
    """The line for a checkpoint that is neither local nor cached while the Hub is unreachable."""
    if checkpoint is None or not _hub_id(checkpoint) or _is_cached(checkpoint, "model"):
        return None
    return (f"spatial-tasks: --model {model}: checkpoint {checkpoint!r} is not in the local Hugging Face cache and "
            f"the Hub cannot be reached ({why}): {FIX} (pretrained=/path/to/checkpoint in --model_args)")


def missing_dataset(task: str, path: str, source_env: str | None, why: str) -> str | None:
    """The line for one of our tasks whose Hub dataset ``path`` is not cached while the Hub is
    unreachable (None for local data or a cached copy); ``source_env``: its benchmark's override."""
    if not _hub_id(path) or _is_cached(path, "dataset") or _datasets_cache_has(path):
        return None
    local = f"${source_env}=DIR, or " if source_env else ""
    return (f"spatial-tasks: task {task}: dataset {path!r} is not in the local Hugging Face cache and the Hub "
            f"cannot be reached ({why}): {FIX} ({local}`spatial-tasks custom-task {task} --data DIR --out TASKS`, "
            "then --include_path TASKS)")


def hub_failure_line(model: str, checkpoint: str | None, error: OSError) -> str | None:
    """The line for a model that failed to load for want of the Hub (None for any other failure)."""
    text = " ".join(str(error).split())
    if checkpoint is None or not any(phrase in text.lower() for phrase in HUB_FAILURES):
        return None
    offline = "HF_HUB_OFFLINE is set" if os.environ.get("HF_HUB_OFFLINE") else "no reply from the Hub"
    return (f"spatial-tasks: --model {model}: checkpoint {checkpoint!r} could not be loaded ({offline}: "
            f"{type(error).__name__}: {text[:300]}): {FIX} (pretrained=/path/to/checkpoint in --model_args)")


def _datasets_cache_has(repo: str) -> bool:
    """Whether ``datasets`` has its own prepared copy (a folder per dataset in its cache)."""
    from datasets import config

    return any(Path(config.HF_DATASETS_CACHE).glob(repo.replace("/", "___") + "*"))
