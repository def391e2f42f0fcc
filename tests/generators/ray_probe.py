"""A stand-in worker for the Ray tests: writes a job's files slowly, so a test can kill it mid-job.

``Probe(markers)`` is built once per actor; called with ``(spec, work_dir)`` it writes
``<id>.txt``, then records ``<markers>/<id>.<pid>.started``, sleeps ``spec["sleep"]`` seconds and
writes ``<id>.json`` (the record that marks a job finished), like the real renderers.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


class Probe:
    def __init__(self, markers: str) -> None:
        self.markers = Path(markers)

    def __call__(self, job: tuple[dict, str]) -> dict:
        import ray

        spec, work = job
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
        (Path(work) / f"{spec['id']}.txt").write_text(f"payload {spec['id']}\n")
        (self.markers / f"{spec['id']}.{os.getpid()}.started").touch()
        time.sleep(spec.get("sleep", 0.0))
        (Path(work) / f"{spec['id']}.json").write_text(json.dumps({"id": spec["id"]}) + "\n")
        return {"id": spec["id"], "node": node, "pid": os.getpid()}
