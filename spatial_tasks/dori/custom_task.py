"""``custom-task --data`` for DORI tasks."""

from __future__ import annotations

from spatial_tasks.dori.load import check_folder


def data_spec(request) -> dict:
    """DORI tasks read a whole source (its configs are discovered) and keep their own questions;
    a local folder must hold the task's questions."""
    metadata = request.base_cfg.get("metadata") or {}  # the task's slice (none: every question)
    wanted = [(metadata["task"], metadata["granularity"])] if metadata.get("task") else []
    return request.whole_source(lambda local: check_folder(local, wanted),
                                str(request.base_cfg.get("test_split") or "test"))
