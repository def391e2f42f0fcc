"""(12) Task YAMLs read by libyaml: ``yaml.full_load`` replaced, process-wide, by the same loader on
PyYAML's C parser with lmms-eval's own constructors."""

from __future__ import annotations


def install_fast_yaml() -> None:
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


# What lmms-eval's load_yaml_config resolves data_files against the YAML's folder for (the generic
# local builders); a Hub dataset's data_files stay relative to its repo.
LOCAL_BUILDERS = frozenset({"csv", "json", "parquet", "text", "pandas", "arrow"})
URL_PREFIXES = ("http://", "https://", "s3://", "gs://", "ftp://", "ftps://")


def load_task_yaml(path, mode: str = "full") -> dict:
    """A task YAML as lmms-eval's ``utils.load_yaml_config(path, mode=mode)`` reads it -- ``include:``
    merged (the last include first, the file's own keys last), ``!function module.name`` imported from
    the YAML's folder ("full") or kept as its node ("simple"), local builders' relative ``data_files``
    anchored at the YAML's folder -- without importing ``lmms_eval.utils``, which imports torch and
    transformers (~620 MB of a report's memory, for reading its tasks' YAMLs).
    ``tests/test_task_index.py`` checks it against lmms-eval's loader on every YAML of ours."""
    import os

    import yaml

    folder = os.path.dirname(str(path))
    base = getattr(yaml, "CFullLoader", yaml.FullLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    def function(loader, node):
        if mode != "full":
            return node
        return _task_function(folder, loader.construct_scalar(node))

    Loader.add_constructor("!function", function)
    with open(path, "rb") as stream:
        config = yaml.load(stream, Loader=Loader)
    if "include" in config:
        includes = config.pop("include")
        merged: dict = {}
        for include in reversed([includes] if isinstance(includes, str) else list(includes)):
            include = include if os.path.isfile(include) else os.path.join(folder, include)
            merged.update(load_task_yaml(include, mode))
        merged.update(config)
        config = merged
    return _anchored_data_files(config, folder)


def _task_function(folder: str, dotted: str):
    """``!function utils.name``: the function from ``<folder>/utils.py`` (loaded as lmms-eval loads
    it, a module of its own), else from an importable module of that name."""
    import importlib
    import importlib.util
    import os

    module_name, _, name = dotted.rpartition(".")
    module_path = os.path.normpath(os.path.join(folder, f"{module_name}.py"))
    if os.path.exists(module_path):
        spec = importlib.util.spec_from_file_location(module_name, module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name)
    return getattr(importlib.import_module(module_name), name)


def _anchored_data_files(config: dict, folder: str) -> dict:
    import os

    kwargs = config.get("dataset_kwargs")
    if config.get("dataset_path") not in LOCAL_BUILDERS or not isinstance(kwargs, dict) or "data_files" not in kwargs:
        return config

    def anchored(value):
        if isinstance(value, str):
            if not value or value.startswith(URL_PREFIXES) or os.path.isabs(value):
                return value
            candidate = os.path.join(folder, value)
            return candidate if os.path.isfile(candidate) else value
        if isinstance(value, dict):
            return {key: anchored(item) for key, item in value.items()}
        if isinstance(value, list):
            return [anchored(item) for item in value]
        return value

    return {**config, "dataset_kwargs": {**kwargs, "data_files": anchored(kwargs["data_files"])}}
