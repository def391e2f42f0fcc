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
