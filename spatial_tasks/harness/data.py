"""(2) Where a task's data comes from, passed explicitly: ``TaskData`` (from a task's YAML fields,
as lmms-eval resolved them or read with its own YAML loader) and our ``process_docs`` hooks
(``DocsHook``), and ``load_docs``: the same path outside lmms-eval."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatial_tasks.benchmark import Source
from spatial_tasks.common.environment import data_read
from spatial_tasks.common.origin import LOCAL_BUILDERS
from spatial_tasks.common.validate import DataError


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

    def with_source(self, source: Source) -> TaskData:
        """This data with ``$env`` (``source.override()``) in place of the benchmark's default release
        (only tasks that read that release are redirected; a path is taken relative to the working
        directory)."""
        value = source.override()
        if not value or self.path != source.default:
            return self
        path = Path(value).expanduser()
        resolved = str(path.resolve()) if path.exists() or value.startswith((".", "/", "~")) else value
        kwargs = {k: v for k, v in self.kwargs.items() if k not in ("revision", "data_files", "data_dir")}
        return replace(self, path=resolved, kwargs=kwargs, override=source.env)

    def as_recorded(self) -> dict:
        """This data as a run records it (``DATA_KEY`` in its results file): plain JSON."""
        import json

        return {"path": self.path, "name": self.name, "split": self.split,
                "kwargs": json.loads(json.dumps(dict(self.load_kwargs()), default=str)), "override": self.override}

    @classmethod
    def of_task(cls, task) -> TaskData:
        """The TaskData of an lmms-eval ConfigurableTask (its config, as lmms-eval resolved it)."""
        config = task.config
        specific = getattr(task, "lmms_eval_specific_kwargs", None) or {}
        return cls(task=str(config.task), path=str(config.dataset_path), name=config.dataset_name,
                   split=str(config.test_split), kwargs=dict(config.dataset_kwargs or {}),
                   prompt_kwargs=dict(specific) if isinstance(specific, Mapping) else {},
                   metadata=dict(config.metadata) if isinstance(config.metadata, Mapping) else {},
                   metrics=metric_names(config.metric_list))

    @classmethod
    def from_yaml(cls, path: str | Path) -> tuple[TaskData, DocsHook]:
        """(TaskData, its process_docs hook) of a task YAML, read with lmms-eval's own YAML loader
        (includes and relative data_files resolved as lmms-eval does), outside any lmms-eval run."""
        from lmms_eval.utils import load_yaml_config

        return cls.from_config(path, load_yaml_config(str(path), mode="full"))

    @classmethod
    def from_config(cls, path: str | Path, config: Mapping[str, Any]) -> tuple[TaskData, DocsHook]:
        """``from_yaml`` of a YAML already loaded in full (``config``)."""
        specific = config.get("lmms_eval_specific_kwargs") or {}
        data = cls(task=str(config.get("task")), path=str(config.get("dataset_path")),
                   name=config.get("dataset_name"), split=str(config.get("test_split")),
                   kwargs=dict(config.get("dataset_kwargs") or {}),
                   prompt_kwargs=dict(specific.get("default") or {}) if isinstance(specific, Mapping) else {},
                   metadata=dict(config.get("metadata") or {}), metrics=metric_names(config.get("metric_list")))
        hook = config.get("process_docs")
        if not isinstance(hook, DocsHook):
            raise DataError(f"{path}: process_docs is not a spatial-tasks hook ({hook!r})")
        return hook.resolve(data), hook


def metric_names(metric_list: object) -> tuple[str, ...]:
    return tuple(str(m["metric"]) for m in metric_list or () if isinstance(m, Mapping) and "metric" in m)


LMMS_ONLY_KWARGS = frozenset({"load_from_disk", "From_YouTube", "video", "builder_script", "force_download",
                              "force_unzip", "local_files_only", "create_link", "max_retries", "num_proc", "cache_dir"})


class DocsHook:
    """A task's ``process_docs``: ``hook(dataset, data)`` -> canonical docs.

    ``build(dataset, data)`` maps a loaded split onto the benchmark's docs. ``reads_source(data)``
    says whether the hook reads ``data`` itself (``build`` then gets ``dataset=None``): a layout
    ``datasets`` cannot load as is. ``source``: the benchmark's release and its documented override
    (``benchmark.Source``).
    """

    def __init__(self, name: str, build: Callable[..., Any], *, reads_source: Callable[[TaskData], bool] | None = None,
                 source: Source | None = None):
        self.__name__ = self.__qualname__ = name
        self.build = build
        self.reads_source = reads_source or (lambda data: False)
        self.source = source

    def resolve(self, data: TaskData) -> TaskData:
        return data.with_source(self.source) if self.source else data

    def as_run_read_it(self, data: TaskData, config: Mapping[str, Any]) -> TaskData | None:
        """``data`` (a task's, from its YAML) with the source one run read, as its results file's
        task ``config`` says (``common.environment.data_read``): the source the run recorded, or
        for a run made before it recorded one, the config's, resolved as a run now would. None when
        the config names no data."""
        read = data_read(config)
        if read is None:
            return None
        found = replace(data, path=read["path"], name=read["name"], split=read["split"], kwargs=read["kwargs"],
                        override=read["override"])
        return found if read["recorded"] else self.resolve(found)

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
        from spatial_tasks.common.origin import folder_cache

        raw = datasets.load_dataset(data.path, data.name, split=data.split, **folder_cache(data.path, data.load_kwargs()))
    return hook(raw, data)
