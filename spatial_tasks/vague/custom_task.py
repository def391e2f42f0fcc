"""``custom-task --data`` for VAGUE tasks."""

from __future__ import annotations

from spatial_tasks.vague.load import check_folder


def data_spec(request) -> dict:
    """VAGUE tasks read a whole source and keep their own items; a local folder must hold the
    task's subset."""
    subset = (request.base_cfg.get("metadata") or {}).get("subset")  # the task's slice (None: both)
    return request.whole_source(lambda local: check_folder(local, subset=subset), "train")
