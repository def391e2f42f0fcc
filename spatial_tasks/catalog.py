"""Our task catalogue, read from the task YAMLs themselves (lmms-eval's own YAML loader), and
``custom-task``: a tiny YAML that runs one of our tasks on other data or prompt parameters.

A custom task is written safely: its name is a plain identifier, every value goes through a YAML
emitter (nothing is pasted into the text), the file stays inside ``--out``, an existing file is
replaced only if custom-task wrote it (or with ``overwrite``, the flag every command uses for this), and a local ``--data`` is checked to
exist and to hold the config and split the task will read before anything is written.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from spatial_tasks.common.validate import folder_link_problem
from spatial_tasks.common.owned import Ledger, owned
from spatial_tasks.benchmark import PromptCheck
from spatial_tasks.paths import output_folder
from spatial_tasks.registry import benchmarks, get

TASK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,99}$")
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
PROMPT_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER = "# Made by `spatial-tasks custom-task`; safe to edit. Run it with: lmms-eval --include_path <this folder>\n"


@dataclass(frozen=True)
class TaskEntry:
    name: str
    kind: str  # task | group
    source: str  # default data: Hub id [config] or the bundled sample
    path: Path
    benchmark: str  # the registered benchmark whose task folder holds it
    subtasks: tuple[str, ...] = ()  # a group's members, as its YAML lists them


def _config(path: Path) -> dict:
    from spatial_tasks.harness.yaml_reader import load_task_yaml  # as lmms-eval reads it, without torch

    return load_task_yaml(path, mode="simple")


def _source(cfg: dict, note: str | None = None) -> str:
    if cfg.get("dataset_path") == "parquet":
        return "bundled sample (offline)"
    kwargs = cfg.get("dataset_kwargs") or {}
    files = kwargs.get("data_files") or {}
    name = cfg.get("dataset_name")
    where = f"{cfg.get('dataset_path')}" + (f" [{name}]" if name else "")
    if files:
        where += " " + ",".join(str(f) for f in files.values())
    if note:
        return f"{where} ({note})"
    return where + f" split={cfg.get('test_split')}"


def task_catalog() -> list[TaskEntry]:
    """Our tasks and groups (read once per process: custom-task and dori-seeds look tasks up many times)."""
    return list(_read_catalog())


@cache
def _read_catalog() -> tuple[TaskEntry, ...]:
    entries = []
    folders: dict[Path, str] = {}  # a task folder belongs to the first benchmark that names it
    for benchmark in benchmarks().values():
        folders.setdefault(benchmark.tasks_folder().resolve(), benchmark.name)
    for folder, name in folders.items():
        source = get(name).source
        note = source.note if source else None
        for path in sorted(folder.rglob("*.yaml")):
            cfg = _config(path)
            if "group" in cfg:
                subtasks = cfg.get("task", [])
                entries.append(TaskEntry(cfg["group"], "group", "= " + " + ".join(map(str, subtasks)), path, name,
                                         tuple(map(str, subtasks))))
            elif "task" in cfg:
                entries.append(TaskEntry(cfg["task"], "task", _source(cfg, note), path, name))
    return tuple(entries)


def find_task(name: str) -> TaskEntry:
    for entry in task_catalog():
        if entry.name == name and entry.kind == "task":
            return entry
    raise KeyError(f"no spatial-tasks task named {name!r}; see `spatial-tasks list`")


@cache  # a task's YAML is loaded in full (its utils imported) once per process
def task_config(name: str) -> tuple[Path, dict]:
    """(path, config) of our task ``name``'s YAML, read in full by lmms-eval's own loader (its
    includes resolved, its ``!function`` hooks imported); KeyError when no task of ours has the name."""
    from spatial_tasks.harness.yaml_reader import load_task_yaml

    entry = find_task(name)
    return entry.path, load_task_yaml(entry.path, mode="full")


def scores_payloads(name: str) -> bool | None:
    """Whether our task ``name`` scores first-token payloads (its process_results is marked by
    ``common.yesno.scores_payloads``); None for a task that is not ours (custom or other tasks: not judged)."""
    try:
        _, config = task_config(name)
    except KeyError:
        return None
    return bool(getattr(config.get("process_results"), "scores_first_token_payload", False))


def parse_prompt_options(items: list[str], flag: str = "--prompt") -> dict[str, str]:
    """``["key=value", ...]`` from ``--prompt`` (or ``--metadata``) -> {key: value} (values are
    text, may be empty)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not PROMPT_KEY.match(key.strip()):
            raise ValueError(f"{flag} {item!r}: expected KEY=VALUE with KEY a plain name (e.g. answer_instruction=Answer:)")
        out[key.strip()] = value
    return out


def write_custom_task(base_task: str, data: str | None, out: Path, name: str | None = None,
                      config: str | None = None, split: str | None = None, prompt: dict[str, str] | None = None,
                      overwrite: bool = False, metadata: dict[str, str] | None = None) -> Path:
    """Write ``<out>/<name>.yaml`` that includes ``base_task`` and points it at ``data`` (a Hub id
    or a local dataset folder, e.g. one written by ``spatial-tasks generate``; None keeps the base
    task's data) with the prompt parameters ``prompt`` changed. Run it with
    ``lmms-eval --include_path OUT --tasks NAME``. See the module docstring for the checks.
    """
    entry = find_task(base_task)
    base_cfg = _config(entry.path)
    name = name or f"{base_task}_custom"
    if not TASK_NAME.match(name):
        raise ValueError(f"--name {name!r}: a task name is a letter then letters, digits or '_' (at most 100)")
    if any(e.name == name for e in task_catalog()):
        raise ValueError(f"--name {name!r} is already one of our tasks; pick another name")
    spec: dict = {"include": str(entry.path), "task": name}
    if data is not None:
        spec.update(_data_spec(entry, base_cfg, data, config, split))
    elif config is not None or split is not None:
        raise ValueError("--config and --split need --data (they choose what to read from it)")
    if prompt:
        spec["lmms_eval_specific_kwargs"] = _prompt_spec(base_task, base_cfg, prompt)
    if metadata:
        spec["metadata"] = _metadata_spec(base_task, base_cfg, metadata)
    if data is None and not prompt and not metadata:
        raise ValueError("nothing to change: pass --data, --prompt KEY=VALUE and/or --metadata KEY=VALUE")
    return write_yaml(Path(out), name, spec, overwrite)


@dataclass(frozen=True)
class CustomData:
    """What ``custom-task --data`` asks for, handed to the benchmark's ``custom_data`` rule:
    ``local`` is the resolved local folder (None for a Hub id). ``generic(dataset_name)`` is the
    shared rule: the datasets folder or Hub repo in the layout ``spatial-tasks publish`` writes."""

    benchmark: str
    base_task: str
    base_cfg: dict
    data: str
    local: Path | None
    config: str | None
    split: str | None

    @property
    def repo(self) -> str:
        """``data`` as a Hub id (``hub:`` taken off)."""
        return self.data.removeprefix(HUB_PREFIX)

    def default_config(self) -> str | None:
        """The base task's config (for a bundled-sample task: the folder of its parquet file)."""
        if self.config is not None:
            return self.config
        if self.base_cfg.get("dataset_path") == "parquet":
            return _config_for_sample(self.base_cfg)
        return self.base_cfg.get("dataset_name")

    def generic(self, dataset_name: str | None) -> dict:
        if self.local is None:
            return {"dataset_path": self.repo, "dataset_name": dataset_name,
                    "test_split": self.split or str(self.base_cfg["test_split"]), "dataset_kwargs": {}}
        chosen = _choose_split(self.split, self.local, dataset_name, self.base_cfg)
        return {"dataset_path": str(self.local), "dataset_name": dataset_name, "test_split": chosen,
                "dataset_kwargs": {}}

    def whole_source(self, check: Callable[[Path], None], test_split: str) -> dict:
        """For tasks that read a whole source (every file, config and split) and keep their own
        questions: the custom task names the source; a local one is ``check``ed first."""
        if self.config is not None or self.split is not None:
            raise ValueError(f"--config/--split: {self.benchmark} tasks read the whole of --data and keep their own "
                             "questions; point --data at the data you want instead")
        if self.local is not None:
            check(self.local)
        return {"dataset_path": str(self.local) if self.local is not None else self.repo, "dataset_name": None,
                "test_split": test_split, "dataset_kwargs": {}}


def _data_spec(entry: TaskEntry, base_cfg: dict, data: str, config: str | None, split: str | None) -> dict:
    request = CustomData(entry.benchmark, entry.name, base_cfg, data, local_folder(data), config, split)
    rule = get(entry.benchmark).custom_data
    special = rule(request) if rule is not None else None
    return special if special is not None else request.generic(request.default_config())


HUB_PREFIX = "hub:"  # --data hub:ORG/NAME: a Hub dataset this machine cannot see (offline), taken as given


def local_folder(data: str) -> Path | None:
    """The local dataset folder ``data`` names, None for a Hub id, an error for anything else.

    "data/st" and "org/name" look alike, so a missing folder is never silently taken for a Hub
    repo: ORG/NAME is a Hub dataset when it is in the local Hugging Face cache or the Hub says it
    exists; ``hub:ORG/NAME`` takes it as given (for a machine that cannot reach the Hub)."""
    if data.startswith(HUB_PREFIX):
        repo = data[len(HUB_PREFIX):]
        if not HUB_ID.match(repo):
            raise ValueError(f"--data {data}: after hub:, a Hub dataset id ORG/NAME")
        return None
    path = Path(data).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"--data {data}: a local dataset must be a folder (one config per sub-folder)")
        return path.resolve()
    if data in _released_datasets():
        return None  # a release our own tasks read: known to exist
    looks_local = data.startswith((".", "/", "~")) or os.sep + os.sep in data or data.count("/") != 1
    if looks_local or not HUB_ID.match(data) or (path.parent != Path(".") and path.parent.is_dir()):
        raise FileNotFoundError(f"--data {data}: no such dataset folder (a Hub dataset is given as ORG/NAME)")
    _check_hub_dataset(data)
    return None


@cache
def _released_datasets() -> frozenset[str]:
    """The Hub datasets our task YAMLs read (the official releases)."""
    return frozenset(str(_config(e.path).get("dataset_path")) for e in task_catalog() if e.kind == "task")


def _check_hub_dataset(repo: str) -> None:
    """``repo`` is a Hub dataset: in the local cache, or known to the Hub; else a one-line error
    (it may be a local folder that does not exist yet)."""
    from huggingface_hub import constants

    if (Path(constants.HF_HUB_CACHE) / f"datasets--{repo.replace('/', '--')}").is_dir():
        return
    from spatial_tasks.common.hub import hub_unreachable

    where = f"--data {repo}: no such folder here"
    why = hub_unreachable()
    if why:
        raise FileNotFoundError(f"{where}, and no Hub dataset of that name in the local cache (the Hub cannot be "
                                f"reached: {why}); for a Hub dataset this machine cannot see, write {HUB_PREFIX}{repo}")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        HfApi().dataset_info(repo, timeout=10)
    except RepositoryNotFoundError:
        raise FileNotFoundError(f"{where}, and the Hub has no dataset {repo!r} (or it is private: log in with "
                                "`hf auth login`)") from None
    except (HfHubHTTPError, OSError) as err:
        raise FileNotFoundError(f"{where}, and the Hub could not say whether dataset {repo!r} exists "
                                f"({type(err).__name__}); for a Hub dataset, write {HUB_PREFIX}{repo}") from None


def _prompt_spec(base_task: str, base_cfg: dict, prompt: dict[str, str]) -> dict:
    """The base task's prompt parameters with ``prompt`` applied (the whole block: an including
    YAML replaces it)."""
    current = dict((base_cfg.get("lmms_eval_specific_kwargs") or {}).get("default") or {})
    unknown = sorted(set(prompt) - set(current))
    if unknown:
        raise ValueError(f"--prompt {unknown[0]}: {base_task} has no such prompt parameter "
                         f"(it has: {', '.join(sorted(current)) or 'none'})")
    typed = {key: _like(current[key], value, f"--prompt {key}={value}") for key, value in prompt.items()}
    merged = {**current, **typed}
    check = get(find_task(base_task).benchmark).offers(PromptCheck)
    if check is not None:
        try:
            check.check(merged)
        except ValueError as err:
            raise ValueError(f"--prompt: {err}") from None
    return {"default": merged}


def _like(default: object, value: str, flag_text: str) -> object:
    """``value`` (text from the command line) as the type of the parameter's default: a number or
    a boolean stays one in the YAML, and text that is neither is refused here, not mid-run."""
    from spatial_tasks.common.validate import flag

    try:
        if isinstance(default, bool):
            return flag(value, flag_text)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        kind = {bool: "true or false", int: "an integer", float: "a number"}[type(default)]
        raise ValueError(f"{flag_text}: the base task's value is {default!r}; give {kind}") from None
    return value


def _metadata_spec(base_task: str, base_cfg: dict, metadata: dict[str, str]) -> dict:
    """The base task's metadata with ``metadata`` applied, each value read as a YAML scalar (so
    grid=32 is a number); only the parameters the task already has, never its version."""
    current = dict(base_cfg.get("metadata") or {})
    settable = sorted(set(current) - {"version"})
    unknown = sorted(set(metadata) - set(settable))
    if unknown:
        raise ValueError(f"--metadata {unknown[0]}: {base_task} has no such setting (it has: {', '.join(settable) or 'none'})")
    values = {}
    for key, text in metadata.items():
        value = yaml.safe_load(text) if text.strip() else ""
        if not isinstance(value, (str, int, float, bool)):
            raise ValueError(f"--metadata {key}={text!r}: a plain value (text, number, true/false)")
        values[key] = value
    return {**current, **values}


def _choose_split(split: str | None, local: Path, dataset_name: str | None, base_cfg: dict) -> str:
    """The split to evaluate: the one asked for, checked against what the local dataset declares;
    by default the base task's split if the data has it, else the data's first."""
    import datasets

    try:
        configs = datasets.get_dataset_config_names(str(local))
    except Exception as err:  # noqa: BLE001 - datasets raises many kinds here; report them all alike
        raise ValueError(f"--data {local}: " + (folder_link_problem(local) or "not a dataset folder datasets can "
                                                f"read ({_first_line(err)})")) from None
    if dataset_name is not None and configs != ["default"] and dataset_name not in configs:
        raise ValueError(f"--data {local}: has no config {dataset_name!r} (it has: {configs}); pass --config")
    try:
        names = datasets.get_dataset_split_names(str(local), dataset_name)
    except Exception as err:  # noqa: BLE001
        from spatial_tasks.common.validate import dataset_file_problem

        problem = dataset_file_problem(str(local), dataset_name)
        raise ValueError(f"--data {local}: " + (problem or f"cannot read the splits of config {dataset_name!r} "
                                                            f"({_first_line(err)})")) from None
    if split is not None:
        if split not in names:
            raise ValueError(f"--split {split}: {local} [{dataset_name}] declares only the split(s) {names}")
        return split
    return str(base_cfg.get("test_split")) if base_cfg.get("test_split") in names else names[0]


def write_yaml(out: Path, name: str, spec: dict, overwrite: bool) -> Path:
    out = output_folder(out)
    path = (out / f"{name}.yaml").resolve()
    if path.parent != out.resolve():  # the name is an identifier; this guards the rule itself
        raise ValueError(f"--name {name!r} would write outside --out {out}")
    ledger = Ledger(out, "spatial-tasks custom-task")
    if path.exists() and not overwrite and not owned(path):  # ours and unchanged since, by the folder's ledger
        raise FileExistsError(f"{path}: already exists and was not written by custom-task (or was edited since); "
                              "pass --overwrite to replace it")
    ledger.inside(path)  # never through a link
    text = HEADER + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)
    descriptor, tmp = tempfile.mkstemp(dir=out, prefix=f".{path.name}.", suffix=".tmp")  # a fresh name: never a link's
    umask = os.umask(0o022)
    os.umask(umask)
    os.fchmod(descriptor, 0o666 & ~umask)  # as an ordinary write would make it, not mkstemp's 0600
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    ledger.record(path)
    return path


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _config_for_sample(cfg: dict) -> str | None:
    """Sample tasks read one parquet file; the equivalent dataset config is its folder name."""
    files = (cfg.get("dataset_kwargs") or {}).get("data_files") or {}
    for file in files.values():
        return Path(str(file)).parent.name or None
    return None
