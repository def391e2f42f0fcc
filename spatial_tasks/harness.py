"""The one seam between spatial-tasks and lmms-eval: everything here relies on lmms-eval internals
or on behaviour it does not document. Nothing else in the package imports a private lmms-eval
name or patches lmms-eval. Supported: lmms-eval ``SUPPORTED`` (checked when this module is
imported); ``contract_problems`` lists every assumption that no longer holds (tests/test_harness.py
runs it, so an lmms-eval upgrade fails there first, naming what broke).

What lives here, and why:

1. **Task discovery.** lmms-eval has no entry point for tasks, and its ``LMMS_EVAL_PLUGINS`` task
   path is added after the TaskManager is built. It does load the ``lmms_eval.models`` entry-point
   group before any TaskManager exists; ``model_manifests`` (that entry point) therefore installs
   our patches, and ``TaskManager.initialize_tasks`` gets our task folder appended to its include
   paths (user paths first, so built-in tasks still win a name clash; ours are all prefixed).
2. **Where a task's data comes from, passed explicitly.** lmms-eval calls ``process_docs(dataset)``
   with the loaded split only. Our ``process_docs`` hooks are ``DocsHook`` objects taking
   ``(dataset, data)``: ``data`` is a ``TaskData`` built from the task's own YAML fields
   (dataset_path, dataset_name, dataset_kwargs, test_split, lmms_eval_specific_kwargs, metadata)
   and one documented override, the benchmark's ``$SPATIAL_TASKS_<BENCH>_SOURCE``. The patched
   ``ConfigurableTask.download`` binds it. A hook whose source ``datasets`` cannot read as it is (a
   VAGUE folder of JSON items, DORI's undeclared release) loads it itself (``DocsHook.reads_source``).
   The same path runs outside lmms-eval: ``TaskData.from_yaml`` + ``load_docs``.
3. **Load failures are final and end in one line.** lmms-eval retries ``download`` for up to 60 s
   and then exits 0 after a long traceback. For our tasks the download runs once; any failure
   raises ``TaskDataFailed`` (a ``SystemExit``, which lmms-eval's CLI does not catch), so the
   terminal ends with our line -- what failed, what to do -- and the exit status is 2.
4. **Group metrics from pooled records.** A group's ``aggregate_metric_list`` aggregation receives
   only the subtasks' final values and sizes, so a weighted mean is all it could compute: wrong for
   an SDGM, a bias, Delta = v_cons - v_ctr or any accuracy on a subset. ``aggregation`` returns a
   ``PooledValue``, a float that also carries the records and the metric function inside the
   evaluating process; ``pool_subtasks`` recomputes the metric on the union of the subtasks'
   records. lmms-eval matches an entry's metric name as a SUBSTRING of the subtask metric names.
5. **One logged record per doc.** ``--log_samples`` writes every metric key's value for every doc;
   ``fan_out`` logs the record once, under the first metric, and a short ``RecordRef`` pointer
   elsewhere (lmms-eval writes unknown objects with ``str``).
6. **Logits as text.** lmms-eval 0.7.3 scores generated text only (its loglikelihood path is
   broken), so a ``*_yesno`` model returns its first-token logits as a JSON payload in the response
   string (``encode_payload`` / ``decode_payload``); generate_until responses reach
   ``process_results`` untouched.
7. **lmms-eval's own answer readers** for the re-split tasks (``_extract_answer_letter`` of its
   ``embspatial`` and ``cv_bench`` tasks), so their accuracy is exactly lmms-eval's.
8. **lmms-eval's Qwen2.5-VL model**, which ``qwen2_5_vl_yesno`` extends to score first-token
   logits with the very prompt ``qwen2_5_vl`` generates from (``lmms_eval_qwen2_5_vl``).
9. **lmms-eval's Qwen3-VL, Gemma 3 and LLaVA-HF models**, which ``qwen3_vl_yesno``,
   ``gemma3_yesno`` and ``llava_hf_yesno`` extend the same way (``lmms_eval_model_module``).
10. **What lmms-eval needs at run time but does not pin** (``RUNTIME_NEEDS``): checked before any
   task or model loads, in the ``lmms-eval`` CLI (``model_manifests``) and in ``spatial-tasks``
   commands that start lmms-eval (``check_runtime``). A mismatch is one line naming the package,
   its installed version, the working range and the fix, with exit status 2 -- never a traceback
   after the model loaded. We name the break rather than patch around it: the fix is the user's
   one pip command, and the lock (requirements.lock) already holds a working version.
11. **The software of a run** (``common.environment.software()``) goes into each of our tasks'
   config metadata when its data loads, so lmms-eval's results file names the versions that made
   it (lmms-eval itself records only "branch@commit" of its own checkout).
12. **Task YAMLs read by libyaml.** lmms-eval parses every task YAML it ships (~3,450) with PyYAML's
   pure-Python ``full_load`` each time it starts: ~3.9 s here. ``yaml.full_load`` is replaced by the
   same loader on PyYAML's C parser (0.5 s), with lmms-eval's own constructors.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any

from spatial_tasks.common.errors import UserError, stop_run
from spatial_tasks.common.origin import LOCAL_BUILDERS
from spatial_tasks.common.validate import DataError
from spatial_tasks.paths import tasks_dir

SUPPORTED = ("0.7.3", "0.8")  # lmms-eval >= 0.7.3, < 0.8
# Set to "0" to keep lmms-eval's index free of our tasks (then use --include_path explicitly).
AUTO_INCLUDE_ENV = "SPATIAL_TASKS_AUTO_INCLUDE"
MODELS = {
    "spatial_baseline": "spatial_tasks.models.baseline.SpatialBaseline",
    "qwen2_5_vl_yesno": "spatial_tasks.models.hf_yesno.Qwen2_5_VLYesNo",
    "hf_yesno": "spatial_tasks.models.hf_auto.HFYesNo",
    "qwen3_vl_yesno": "spatial_tasks.models.lmms_yesno.Qwen3_VLYesNo",
    "gemma3_yesno": "spatial_tasks.models.lmms_yesno.Gemma3YesNo",
    "llava_hf_yesno": "spatial_tasks.models.lmms_yesno.LlavaHfYesNo",
    "openai_yesno": "spatial_tasks.models.openai_yesno.OpenAIYesNo",
}


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def check_version(found: str | None = None) -> str:
    """The installed lmms-eval version, if supported; else ImportError naming the range."""
    if found is None:
        try:
            found = _metadata.version("lmms_eval")
        except _metadata.PackageNotFoundError:
            raise ImportError("spatial-tasks needs lmms-eval (pip install 'lmms-eval==0.7.3')") from None
    low, high = SUPPORTED
    if not _version_tuple(low) <= _version_tuple(found) < _version_tuple(high):
        raise ImportError(f"spatial-tasks supports lmms-eval >={low},<{high}; found {found}. Install "
                          f"'lmms-eval=={low}' (spatial_tasks/harness.py holds every assumption about lmms-eval)")
    return found


LMMS_EVAL_VERSION = check_version()


# ------------------------------------------------------------------------------------------
# 10. What lmms-eval needs at run time but does not pin


@dataclass(frozen=True)
class RuntimeNeed:
    """A module lmms-eval imports at run time from a package whose versions it does not bound."""

    package: str
    module: str
    works: str  # the versions known to work, as a pip specifier
    why: str


RUNTIME_NEEDS = (
    RuntimeNeed("filelock", "filelock._api", ">=3.16,<4.3",
                "lmms-eval 0.7.3's simple_evaluate imports filelock._api (filelock 4.3 removed it)"),
)


class UpstreamBreak(UserError):
    """An installed package lacks what lmms-eval needs at run time."""


def runtime_problems(needs: Sequence[RuntimeNeed] = RUNTIME_NEEDS) -> list[str]:
    """One line per unmet need: package, installed version, working range, the fix."""
    import importlib

    out = []
    for need in needs:
        try:
            importlib.import_module(need.module)
        except ImportError:
            try:
                found = _metadata.version(need.package)
            except _metadata.PackageNotFoundError:
                found = "not installed"
            out.append(f"{need.package} {found} breaks lmms-eval: {need.why}; {need.package}{need.works} works. "
                       f"Fix: pip install '{need.package}{need.works}' (or, in a checkout, the tested set: bash .ci/setup)")
    return out


def check_runtime() -> None:
    """Raise ``UpstreamBreak`` naming the first unmet runtime need (see ``runtime_problems``)."""
    problems = runtime_problems()
    if problems:
        raise UpstreamBreak(problems[0])


# ------------------------------------------------------------------------------------------
# 2. Where a task's data comes from


@dataclass(frozen=True)
class TaskData:
    """Where one task's docs come from, as its YAML says (plus the documented source override).

    ``path`` / ``name`` / ``split`` / ``kwargs`` are lmms-eval's dataset_path, dataset_name,
    test_split and dataset_kwargs (data_files already absolute); ``prompt_kwargs`` the task's
    lmms_eval_specific_kwargs (its "default" entry); ``metrics`` the names in its metric_list (so a
    hook can check a metric's settings before any answer is generated); ``override`` names the
    environment variable that replaced the YAML's dataset_path, if one did.
    """

    task: str
    path: str
    name: str | None = None
    split: str = "test"
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    prompt_kwargs: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    override: str | None = None

    @property
    def label(self) -> str:
        """How messages name this data: "PATH [CONFIG] split SPLIT" (and the override)."""
        text = self.path + (f" [{self.name}]" if self.name else "") + f" split {self.split}"
        return text + (f" (from ${self.override})" if self.override else "")

    @property
    def is_local_builder(self) -> bool:
        """dataset_path is a datasets builder reading ``data_files`` (parquet, json, csv ...)."""
        return self.path in LOCAL_BUILDERS

    @property
    def local_folder(self) -> Path | None:
        """The local folder dataset_path names (None for a Hub id or a builder)."""
        path = Path(self.path).expanduser()
        return path.resolve() if not self.is_local_builder and path.is_dir() else None

    def load_kwargs(self) -> dict:
        """What ``datasets.load_dataset`` gets besides path and name (lmms-eval's own options
        removed)."""
        return {k: v for k, v in self.kwargs.items() if k not in LMMS_ONLY_KWARGS}

    def origin(self, dataset=None):
        """Where the loaded split's rows live, for messages naming file and row."""
        from spatial_tasks.common.origin import origin_for

        return origin_for(dataset, self.path, self.name, self.split, self.load_kwargs())

    def with_source(self, env: str | None, default: str | None) -> TaskData:
        """This data with ``$env`` in place of the benchmark's default release ``default`` (only
        tasks that read that release are redirected; a path is taken relative to the working
        directory)."""
        value = os.environ.get(env or "", "").strip() if env else ""
        if not value or self.path != default:
            return self
        path = Path(value).expanduser()
        resolved = str(path.resolve()) if path.exists() or value.startswith((".", "/", "~")) else value
        kwargs = {k: v for k, v in self.kwargs.items() if k not in ("revision", "data_files", "data_dir")}
        return replace(self, path=resolved, kwargs=kwargs, override=env)

    @classmethod
    def of_task(cls, task) -> TaskData:
        """The TaskData of an lmms-eval ConfigurableTask (its config, as lmms-eval resolved it)."""
        config = task.config
        specific = getattr(task, "lmms_eval_specific_kwargs", None) or {}
        return cls(task=str(config.task), path=str(config.dataset_path), name=config.dataset_name,
                   split=str(config.test_split), kwargs=dict(config.dataset_kwargs or {}),
                   prompt_kwargs=dict(specific) if isinstance(specific, Mapping) else {},
                   metadata=dict(config.metadata) if isinstance(config.metadata, Mapping) else {},
                   metrics=_metric_names(config.metric_list))

    @classmethod
    def from_yaml(cls, path: str | Path) -> tuple[TaskData, DocsHook]:
        """(TaskData, its process_docs hook) of a task YAML, read with lmms-eval's own YAML loader
        (includes and relative data_files resolved as lmms-eval does), outside any lmms-eval run."""
        from lmms_eval.utils import load_yaml_config

        config = load_yaml_config(str(path), mode="full")
        specific = config.get("lmms_eval_specific_kwargs") or {}
        data = cls(task=str(config.get("task")), path=str(config.get("dataset_path")),
                   name=config.get("dataset_name"), split=str(config.get("test_split")),
                   kwargs=dict(config.get("dataset_kwargs") or {}),
                   prompt_kwargs=dict(specific.get("default") or {}) if isinstance(specific, Mapping) else {},
                   metadata=dict(config.get("metadata") or {}), metrics=_metric_names(config.get("metric_list")))
        hook = config.get("process_docs")
        if not isinstance(hook, DocsHook):
            raise DataError(f"{path}: process_docs is not a spatial-tasks hook ({hook!r})")
        return hook.resolve(data), hook


def _metric_names(metric_list: object) -> tuple[str, ...]:
    return tuple(str(m["metric"]) for m in metric_list or () if isinstance(m, Mapping) and "metric" in m)


LMMS_ONLY_KWARGS = frozenset({"load_from_disk", "From_YouTube", "video", "builder_script", "force_download",
                              "force_unzip", "local_files_only", "create_link", "max_retries", "num_proc", "cache_dir"})


class DocsHook:
    """A task's ``process_docs``: ``hook(dataset, data)`` -> canonical docs.

    ``build(dataset, data)`` maps a loaded split onto the benchmark's docs. ``reads_source(data)``
    says whether the hook reads ``data`` itself (``build`` then gets ``dataset=None``): a layout
    ``datasets`` cannot load as is. ``source_env`` / ``default_source``: the documented override of
    the benchmark's default release.
    """

    def __init__(self, name: str, build: Callable[..., Any], *, reads_source: Callable[[TaskData], bool] | None = None,
                 source_env: str | None = None, default_source: str | None = None):
        self.__name__ = self.__qualname__ = name
        self.build = build
        self.reads_source = reads_source or (lambda data: False)
        self.source_env = source_env
        self.default_source = default_source

    def resolve(self, data: TaskData) -> TaskData:
        return data.with_source(self.source_env, self.default_source)

    def __call__(self, dataset, data: TaskData | None = None):
        if data is None:
            raise DataError(f"{self.__name__}: called without its TaskData -- spatial-tasks' lmms-eval seam is not "
                            "installed (spatial_tasks.harness.install), or the hook was called by hand; use "
                            "spatial_tasks.harness.load_docs(TaskData.from_yaml(...)) outside lmms-eval")
        return self.build(dataset, data)

    def __repr__(self) -> str:
        return f"<spatial-tasks process_docs {self.__name__}>"


def load_docs(data: TaskData, hook: DocsHook):
    """A task's docs outside lmms-eval, through the same steps as inside it."""
    import datasets

    if hook.reads_source(data):
        return hook(None, data)
    if data.kwargs.get("load_from_disk"):
        loaded = datasets.load_from_disk(data.path)
        raw = loaded[data.split] if isinstance(loaded, datasets.DatasetDict) else loaded
    else:
        raw = datasets.load_dataset(data.path, data.name, split=data.split, **data.load_kwargs())
    return hook(raw, data)


class TaskDataFailed(SystemExit):
    """One of our tasks could not load its data: final (no retries), one line, exit status 2.

    A SystemExit so that lmms-eval's CLI, which catches every Exception and exits 0, lets it end
    the run; Python prints the message as the terminal's last line."""

    def __init__(self, data: TaskData, error: BaseException):
        self.data = data
        self.error = error
        super().__init__(2)
        self.message = failure_line(data, error)

    def __str__(self) -> str:
        return self.message


def failure_line(data: TaskData, error: BaseException) -> str:
    """What failed and what to do, in one line."""
    reason = " ".join(str(error).split()) or type(error).__name__
    if len(reason) > 900:
        reason = reason[:899] + "…"
    if isinstance(error, UserError):  # bad data or a bad setting: its message says what and where
        return f"spatial-tasks: task {data.task}: {reason}"
    from spatial_tasks.common.validate import dataset_file_problem

    problem = dataset_file_problem(data.path, data.name, **data.load_kwargs())
    if problem:  # datasets says only "DatasetGenerationError": name the file that stopped it
        return f"spatial-tasks: task {data.task} cannot load {data.label}: {problem}"
    hint = (f"point ${data.override} at a local copy" if data.override else
            "check the path, or run `spatial-tasks inspect " + data.path + "` to see what it holds")
    if any(word in reason.lower() for word in ("offline", "connect", "resolve", "reach")):
        hint = ("the Hugging Face Hub is unreachable or HF_HUB_OFFLINE is set: download the dataset once online "
                "(HF_HUB_OFFLINE=1 then uses the cached copy), or point the task at a local copy "
                "(`spatial-tasks custom-task`)")
    return f"spatial-tasks: task {data.task} cannot load {data.label}: {type(error).__name__}: {reason} ({hint})"


class HubUnreachable(ConnectionError):
    pass


def check_hub_reachable(data: TaskData) -> None:
    """Fail at once when ``data`` is on the Hub and the Hub's host does not resolve (no proxy set):
    huggingface_hub would otherwise retry for ~30 s before datasets gives up."""
    if data.is_local_builder or data.local_folder is not None or Path(data.path).expanduser().exists():
        return
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return
    why = hub_unreachable()
    if why:
        raise HubUnreachable(f"Couldn't reach {data.path!r} on the Hub: {why}")


from spatial_tasks.common.hub import hub_unreachable

# ------------------------------------------------------------------------------------------
# 1 + 3. Installing into lmms-eval


def _our_task_folders() -> list[str]:
    """This package's task folder and those of registered benchmarks that live outside it."""
    from spatial_tasks.registry import benchmarks

    ours = os.path.realpath(tasks_dir())
    folders = [str(tasks_dir())]
    for benchmark in benchmarks().values():
        folder = os.path.realpath(benchmark.tasks_folder())
        if not (folder + os.sep).startswith(ours + os.sep) and folder not in map(os.path.realpath, folders):
            folders.append(folder)
    return folders


def _with_our_tasks(include_path):
    ours = _our_task_folders()
    if include_path is None:
        return ours
    paths = [include_path] if isinstance(include_path, str) else list(include_path)
    normalised = {os.path.realpath(p) for p in paths}
    return [*paths, *(p for p in ours if os.path.realpath(p) not in normalised)]


def _install_task_discovery() -> None:
    from lmms_eval.tasks import TaskManager

    original = TaskManager.initialize_tasks
    if getattr(original, "_spatial_tasks", False):
        return

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, *args, **kwargs):
        _install_preflight()
        if os.environ.get(AUTO_INCLUDE_ENV, "1") == "0":  # read when the index is built, not at import
            return original(self, include_path, *args, **kwargs)
        return original(self, _with_our_tasks(include_path), *args, **kwargs)

    initialize_tasks._spatial_tasks = True
    TaskManager.initialize_tasks = initialize_tasks


def _install_preflight() -> None:
    """Wrap ``simple_evaluate`` with ``spatial_tasks.preflight``'s checks (idempotent): a run that
    holds our tasks and whose checkpoint or Hub data cannot be had stops in one line before its model
    loads. ``lmms_eval.__main__`` calls ``evaluator.simple_evaluate``, so the module attribute is the
    one replaced; while that module is still being imported (our entry point runs then) there is
    nothing to wrap yet, so this runs when the task index is built."""
    from spatial_tasks import preflight

    evaluator = sys.modules.get("lmms_eval.evaluator")
    original = getattr(evaluator, "simple_evaluate", None)
    if original is None or getattr(original, "_spatial_tasks", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        model, model_args, tasks = bound.get("model"), bound.get("model_args"), bound.get("tasks") or []
        ours = preflight.our_tasks(tasks if isinstance(tasks, list | tuple) else str(tasks).split(","))
        if not ours or not isinstance(model, str):
            return original(*args, **kwargs)
        if not isinstance(model_args, dict):  # a --model_args string, read as lmms-eval reads it
            from lmms_eval.utils import simple_parse_args_string

            model_args = simple_parse_args_string(model_args or "")
        checkpoint = preflight.given_checkpoint(model_args) or _default_checkpoint(model)
        why = hub_unreachable()
        if why:
            line = preflight.missing_checkpoint(model, checkpoint, why)
            for task in ours if line is None else ():
                data, hook = TaskData.from_yaml(_task_yaml(task))
                if not (data.is_local_builder or data.local_folder is not None):
                    line = preflight.missing_dataset(task, data.path, hook.source_env, why)
                if line:
                    break
            if line:
                stop_run(line)
        try:
            return original(*args, **kwargs)
        except OSError as err:
            line = preflight.hub_failure_line(model, checkpoint, err)
            if line is None:
                raise
            stop_run(line)

    simple_evaluate._spatial_tasks = True
    evaluator.simple_evaluate = simple_evaluate


def _default_checkpoint(model: str) -> str | None:
    """The default of a model class's ``pretrained`` parameter (lmms-eval's qwen2_5_vl: Qwen2.5-VL-3B)."""
    from lmms_eval.models import get_model

    try:
        parameter = inspect.signature(get_model(model).__init__).parameters.get("pretrained")
    except Exception:  # noqa: BLE001 - an unknown model: lmms-eval says so itself
        return None
    default = getattr(parameter, "default", None)
    return default if isinstance(default, str) and default else None


def _task_yaml(task: str) -> Path:
    from spatial_tasks.catalog import find_task

    return find_task(task).path


def _install_download() -> None:
    from lmms_eval.api.task import ConfigurableTask
    from tenacity import stop_after_attempt

    original = ConfigurableTask.download
    if getattr(original, "_spatial_tasks", False):
        return
    once = original.retry_with(stop=stop_after_attempt(1), reraise=True)

    @functools.wraps(original)
    def download(self, dataset_kwargs=None):
        hook = self.config.process_docs
        if not isinstance(hook, DocsHook):
            return original(self, dataset_kwargs)
        data = hook.resolve(TaskData.of_task(self))
        _record_software(self.config)
        try:
            check_hub_reachable(data)
            if hook.reads_source(data):
                import datasets

                docs = hook(None, data)
                self.dataset = datasets.DatasetDict({data.split: docs})
                self.dataset_no_image = self.dataset  # docs hold image references, never image columns
                return None
            self.DATASET_PATH, self.DATASET_NAME = data.path, data.name
            self.config.process_docs = functools.partial(hook, data=data)
            try:
                return once(self, dict(data.kwargs))
            finally:
                self.config.process_docs = hook
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:
            failed = TaskDataFailed(data, err)
            print(failed.message, file=sys.stderr, flush=True)  # the terminal's last line; exit status 2
            raise failed from err

    download._spatial_tasks = True
    ConfigurableTask.download = download


def _record_software(config) -> None:
    """11. The run's software into the task's config metadata, which lmms-eval writes to the
    results file (``configs.<task>.metadata``); results.tidy copies it into every record."""
    from spatial_tasks.common.environment import ENVIRONMENT_KEY, software

    metadata = dict(config.metadata) if isinstance(config.metadata, Mapping) else {}
    metadata[ENVIRONMENT_KEY] = software()
    config.metadata = metadata


def _install_fast_yaml() -> None:
    """12. ``yaml.full_load`` on libyaml. lmms-eval reads all of its ~3,450 task YAMLs with
    ``yaml.full_load`` (pure Python) whenever it builds a TaskManager: 3.9 s of every lmms-eval start
    on a 2-core machine, against 0.5 s with PyYAML's C parser. Same constructors and resolver, so
    the same configs (``yaml_loads_as_pure_python`` is tested): lmms-eval registers its ``!function``
    constructor on ``FullLoader`` before each load, so each load reads ``FullLoader``'s tables."""
    import yaml

    if not getattr(yaml, "__with_libyaml__", False) or getattr(yaml.full_load, "_spatial_tasks", False):
        return

    def full_load(stream):
        loader = yaml.CFullLoader(stream)
        # what the pure-Python reader names the stream: lmms-eval's !function finds the task's
        # utils.py next to loader.name
        loader.name = ("<unicode string>" if isinstance(stream, str) else "<byte string>" if isinstance(stream, bytes)
                       else getattr(stream, "name", "<file>"))
        loader.yaml_constructors = yaml.FullLoader.yaml_constructors
        loader.yaml_multi_constructors = yaml.FullLoader.yaml_multi_constructors
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()

    full_load._spatial_tasks = True
    full_load.pure_python = yaml.full_load
    yaml.full_load = full_load


def install() -> None:
    """Install the patches (idempotent): task discovery, our tasks' data loading, fast YAML; the
    check that a run with our tasks can have its checkpoint and data (``preflight``) is installed
    when the task index is built, once lmms-eval's evaluator module has finished importing (this
    entry point runs while it is still being imported)."""
    _install_task_discovery()
    _install_download()
    _install_fast_yaml()


def model_manifests():
    """Entry point ``lmms_eval.models``: our model ids (and, on the way, ``install``)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    problems = runtime_problems()
    if problems:  # before lmms-eval builds a task or loads a model; SystemExit passes its `except Exception`
        print(f"spatial-tasks: {problems[0]}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    install()
    return [ModelManifest(model_id=name, simple_class_path=path) for name, path in MODELS.items()]


# ------------------------------------------------------------------------------------------
# 4 + 5. Records and pooled group metrics

MetricFunction = Callable[[Sequence[dict]], "float | None"]


class PooledValue(float):
    """A metric value that also remembers the records it was computed from and the function.

    Behaves as a float everywhere (printing, JSON, arithmetic). Copying or pickling gives a plain
    float, so the records never leave the process that evaluated them; only ``pool_subtasks``,
    which lmms-eval calls right after the subtasks' aggregations, reads them. An undefined metric
    (None) is NaN.
    """

    records: list
    metric: str
    function: MetricFunction

    def __new__(cls, value: float | None, records: list, metric: str, function: MetricFunction):
        obj = super().__new__(cls, math.nan if value is None else float(value))
        obj.records = records
        obj.metric = metric
        obj.function = function
        return obj

    def __reduce__(self):
        return float, (float(self),)

    def __copy__(self):
        return float(self)

    def __deepcopy__(self, memo):
        return float(self)


class RecordRef:
    """Stands for the per-doc record under another metric key of the same doc; lmms-eval's JSON
    fallback writes it as ``<BENCH record: see 'KEY'>``."""

    __slots__ = ("key", "record")

    def __init__(self, record: dict, key: str):
        self.record = record
        self.key = key

    def __str__(self) -> str:
        return f"<{self.record.get('benchmark', 'spatial-tasks')} record: see {self.key!r}>"

    __repr__ = __str__


# Reading the pointer back is the samples reader's job: common/samples.py, is_record_ref.
from spatial_tasks.common.samples import is_record_ref  # noqa: F401


def fan_out(record: dict, names: Sequence[str]) -> dict:
    """``process_results``' return: the record under the first metric, a RecordRef elsewhere."""
    return {name: record if k == 0 else RecordRef(record, names[0]) for k, name in enumerate(names)}


def unwrap(items: Iterable[Any]) -> list:
    return [item.record if isinstance(item, RecordRef) else item for item in items]


def aggregation(name: str, function: MetricFunction) -> Callable[[list], PooledValue]:
    """An lmms-eval aggregation for metric ``name``: ``function`` of the records, pooled-able.

    A metric that fails here must not take the run with it: lmms-eval computes every aggregation
    before it writes results or samples, so an exception would discard the whole run. The
    failure is logged as one line and the metric is NaN ("n/a"); ``spatial-tasks rescore``
    recomputes it from the samples once the cause is fixed."""

    def agg(items: list) -> PooledValue:
        records = unwrap(items)
        return PooledValue(_computed(name, function, records), records, name, function)

    agg.__name__ = agg.__qualname__ = f"agg_{name}"
    agg.__doc__ = function.__doc__
    return agg


def _computed(name: str, function: MetricFunction, records: list) -> float | None:
    from loguru import logger as log

    try:
        return function(records)
    except Exception as err:  # noqa: BLE001 - any failure: keep the run, report n/a (see aggregation)
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        log.error(f"metric {name}: could not be computed ({type(err).__name__}: {first[:300]}); reporting n/a. "
                  "The samples are kept: fix the cause and run `spatial-tasks rescore` on them")
        return None


def pool_subtasks(values: list, sizes: list, weight_by_size: bool = True) -> float:
    """Group aggregation (``aggregate_metric_list: aggregation: !function ...pool_subtasks``): the
    metric recomputed on the union of the subtasks' records -- never a mean of means."""
    from loguru import logger as log

    pooled = [v for v in values if isinstance(v, PooledValue)]
    if len(pooled) != len(values) or not pooled:
        log.warning("group metric: a subtask value carries no records (not made by spatial_tasks); reporting "
                    "NaN. `spatial-tasks rescore` recomputes it from the samples.")
        return math.nan
    names = {v.metric for v in pooled}
    if len(names) != 1:
        log.warning(f"group metric: subtask values of different metrics {sorted(names)}; reporting NaN")
        return math.nan
    records = [r for v in pooled for r in v.records]
    function = pooled[0].function
    name = names.pop()
    return PooledValue(_computed(name, function, records), records, name, function)


# ------------------------------------------------------------------------------------------
# 6. First-token logits carried in the response text

# The format itself is ours, not lmms-eval's: common/yesno.py (the task and model code read it
# there too); the seam's part is that a generate_until response reaches process_results untouched.
from spatial_tasks.common.yesno import (  # noqa: F401
    PAYLOAD_KEY,
    is_payload,
)
from spatial_tasks.common.yesno import encode_payload_fields as encode_payload  # noqa: F401

# ------------------------------------------------------------------------------------------
# 7. lmms-eval's own answer readers


def embspatial_answer_letter(response: str) -> str:
    """lmms-eval's ``embspatial`` task's letter reader (empty when it finds none)."""
    from lmms_eval.tasks.embspatial.utils import _extract_answer_letter

    return _extract_answer_letter(response) or ""


def cv_bench_answer_letter(response: str) -> str:
    """lmms-eval's ``cv_bench`` task's letter reader (empty when it finds none)."""
    from lmms_eval.tasks.cv_bench.utils import _extract_answer_letter

    return _extract_answer_letter(response) or ""


# ------------------------------------------------------------------------------------------
# 8. lmms-eval's Qwen2.5-VL model, which ``qwen2_5_vl_yesno`` extends


# What qwen2_5_vl_yesno uses of lmms-eval's Qwen2_5_VL besides the public lmms API.
QWEN2_5_VL_MEMBERS = ("model", "tokenizer", "device", "_encode_image_data_url")


def lmms_eval_qwen2_5_vl() -> tuple[type, Callable]:
    """(lmms-eval's ``Qwen2_5_VL`` class, the ``process_vision_info`` its generate_until uses):
    ``qwen2_5_vl_yesno`` builds its prompts exactly as that model does, so it extends it."""
    from lmms_eval.models.simple.qwen2_5_vl import Qwen2_5_VL, process_vision_info

    return Qwen2_5_VL, process_vision_info


# ------------------------------------------------------------------------------------------
# 9. lmms-eval's other transformers-native models, which the other ``*_yesno`` twins extend

YESNO_TWINS = ("qwen3_vl", "gemma3", "llava_hf")  # lmms-eval model modules with a ``<id>_yesno`` twin


def lmms_eval_model_module(name: str):
    """lmms-eval's ``lmms_eval.models.simple.<name>`` module (one of ``YESNO_TWINS``): its model
    class, and the constants its generate_until builds prompts with."""
    import importlib

    if name not in YESNO_TWINS:
        raise ValueError(f"no *_yesno twin relies on lmms-eval's {name!r} model")
    return importlib.import_module(f"lmms_eval.models.simple.{name}")


# ------------------------------------------------------------------------------------------
# Contracts: every assumption above, checked against the installed lmms-eval


def contract_problems() -> list[str]:
    """One line per assumption about lmms-eval that does not hold (empty when all hold)."""
    import inspect

    problems: list[str] = []

    def check(what: str, test: Callable[[], bool]) -> None:
        try:
            ok = test()
        except Exception as err:  # noqa: BLE001 - any failure means the assumption broke
            problems.append(f"{what}: {type(err).__name__}: {err}")
            return
        if not ok:
            problems.append(what)

    def task_manager():
        from lmms_eval.tasks import TaskManager

        return TaskManager

    def configurable_task():
        from lmms_eval.api.task import ConfigurableTask

        return ConfigurableTask

    check("(1) TaskManager.initialize_tasks(include_path, ...) builds the task index (task discovery)",
          lambda: "include_path" in inspect.signature(task_manager().initialize_tasks).parameters)
    check("(1) the lmms_eval.models entry-point group is loaded with ModelManifest(model_id, simple_class_path)",
          lambda: {"model_id", "simple_class_path"} <= set(inspect.signature(
              __import__("lmms_eval.models.registry_v2", fromlist=["ModelManifest"]).ModelManifest).parameters))
    check("(2) ConfigurableTask.__init__ sets DATASET_PATH/NAME, then calls self.download(self.config.dataset_kwargs)",
          lambda: "self.download(self.config.dataset_kwargs)" in inspect.getsource(configurable_task().__init__))
    check("(2) ConfigurableTask.download calls config.process_docs(split) on the loaded splits",
          lambda: "self.config.process_docs(self.dataset[split])" in inspect.getsource(_unpatched_download()))
    check("(3) ConfigurableTask.download is a tenacity retry wrapper (retry_with exists)",
          lambda: hasattr(_unpatched_download(), "retry_with"))
    check("(2) TaskConfig has the dataset / prompt / metadata / metric_list fields TaskData reads",
          lambda: {"dataset_path", "dataset_name", "dataset_kwargs", "test_split", "process_docs",
                   "lmms_eval_specific_kwargs", "metadata", "metric_list"} <= set(
              __import__("lmms_eval.api.task", fromlist=["TaskConfig"]).TaskConfig.__dataclass_fields__))
    check("(2) lmms-eval resolves a task's lmms_eval_specific_kwargs before download (task.lmms_eval_specific_kwargs)",
          lambda: "self.lmms_eval_specific_kwargs" in inspect.getsource(configurable_task()._prepare_model_specific_config))
    check("(12) lmms-eval reads task YAMLs with yaml.full_load, registering !function on the default loaders",
          lambda: all(t in inspect.getsource(__import__("lmms_eval.utils", fromlist=["x"]).load_yaml_config)
                      for t in ("yaml.full_load(file)", 'yaml.add_constructor("!function", constructor_fn)')))
    check("(3) the CLI catches Exception (not SystemExit) around an evaluation",
          lambda: "except Exception as e:" in inspect.getsource(__import__("lmms_eval.__main__", fromlist=["x"]).cli_evaluate))
    check("(4) a group's aggregate_metric_list aggregation is called as fn(subtask values, sizes, weight_by_size) "
          "and matches metric names as substrings",
          lambda: all(s in inspect.getsource(__import__("lmms_eval.evaluator_utils", fromlist=["x"]).consolidate_group_results)
                      for s in ("aggregate_fn(", 'metric_config["metric"] not in metric')))
    check("(5) logged samples write unknown objects with str()",
          lambda: __import__("lmms_eval.utils", fromlist=["x"]).handle_non_serializable(RecordRef({}, "k"))
          == "<spatial-tasks record: see 'k'>")
    check("(7) lmms-eval's embspatial and cv_bench letter readers take the answer's first letter: '(B)' -> B, "
          "'C. the lamp' -> C, 'The lamp' -> T (resplit/tasks.py documents this)",
          lambda: [f(t) for f in (embspatial_answer_letter, cv_bench_answer_letter)
                   for t in ("(B)", "C. the lamp", "The lamp")] == ["B", "C", "T"] * 2)
    check("(13) lmms-eval's CLI calls evaluator.simple_evaluate(model=, model_args=, tasks=) (the preflight wraps it)",
          lambda: "evaluator.simple_evaluate(" in inspect.getsource(
              __import__("lmms_eval.__main__", fromlist=["x"]).cli_evaluate_single)
          and {"model", "model_args", "tasks"} <= set(inspect.signature(
              __import__("lmms_eval.evaluator", fromlist=["x"]).simple_evaluate).parameters))
    _model_contract(check)
    return problems


def _model_contract(check: Callable[[str, Callable[[], bool]], None]) -> None:
    """The assumptions about lmms-eval's model classes that our scorers reuse (contract_problems)."""
    import inspect

    check("(8) lmms-eval's Qwen2_5_VL has " + ", ".join(QWEN2_5_VL_MEMBERS) + ", sets self._model and self.processor "
          "in __init__, and builds its prompt with processor.apply_chat_template",
          lambda: all(hasattr(lmms_eval_qwen2_5_vl()[0], m) for m in QWEN2_5_VL_MEMBERS)
          and all(t in inspect.getsource(lmms_eval_qwen2_5_vl()[0].__init__) for t in ("self._model =", "self.processor ="))
          and "self.processor.apply_chat_template" in inspect.getsource(lmms_eval_qwen2_5_vl()[0].generate_until))
    check("(9) lmms-eval's Qwen3_VL builds a batch's inputs in _preprocess_chunk(chunk of request args), reading "
          "visuals as doc_to_visual[0](self.task_dict[task][split][doc_id])",
          lambda: "self._preprocess_chunk" in inspect.getsource(lmms_eval_model_module("qwen3_vl").Qwen3_VL.generate_until)
          and "doc_to_visual[0](self.task_dict[t][s][i])" in inspect.getsource(
              lmms_eval_model_module("qwen3_vl").Qwen3_VL._preprocess_chunk))
    check("(9) lmms-eval's Gemma3 prompts with a system turn, JPEG data URLs and processor.apply_chat_template "
          "(padding to a multiple of 8)",
          lambda: all(t in inspect.getsource(lmms_eval_model_module("gemma3").Gemma3.generate_until) for t in (
              '{"role": "system", "content": [{"type": "text", "text": self.system_prompt}]}',
              "self._encode_image_data_url(visual)", "self.processor.apply_chat_template(batched_messages",
              '"pad_to_multiple_of": 8')))
    check("(9) lmms-eval's LlavaHf prompts with '<image>' markers before the context as one user message "
          "through tokenizer.apply_chat_template (VICUNA_CHAT_TEMPLATE when the tokenizer has none)",
          lambda: hasattr(lmms_eval_model_module("llava_hf"), "VICUNA_CHAT_TEMPLATE") and all(
              t in inspect.getsource(lmms_eval_model_module("llava_hf").LlavaHf.generate_until) for t in (
                  'context = f"{image_tokens}\\n{context}"', 'messages = [{"role": "user", "content": context}]',
                  "self._image_processor(images=visuals, text=text")))


def _unpatched_download():
    from lmms_eval.api.task import ConfigurableTask

    download = ConfigurableTask.download
    return download.__wrapped__ if getattr(download, "_spatial_tasks", False) else download
