"""Every generator on a real multi-node Ray cluster (two nodes on 127.0.0.1, ray.cluster_utils):
the same dataset bytes as local workers, and a worker killed mid-job does not stop the run.

Nothing is mocked: the actors are real Ray worker processes on two raylets, rendering with bpy.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("bpy")

from ray import cloudpickle
from ray.cluster_utils import Cluster
from spatial_tasks.common.owned import LEDGER
from spatial_tasks.generators.common.jobs import run_jobs

from . import ray_probe

pytestmark = [pytest.mark.render, pytest.mark.slow]
cloudpickle.register_pickle_by_value(ray_probe)  # tests/ is not importable on the workers: send the code


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes of one CPU each; this process is the driver."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 100 * 2**20,
                                                      "include_dashboard": False})
    c.add_node(num_cpus=1, object_store_memory=100 * 2**20)
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def test_the_cluster_has_two_nodes(cluster):
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2


def test_a_worker_killed_mid_job_is_replaced_and_the_run_finishes(cluster, tmp_path):
    work, markers = tmp_path / "work", tmp_path / "markers"
    work.mkdir()
    markers.mkdir()
    jobs = [({"id": f"job{i}", "sleep": 1.5 if i == 2 else 0.2}, str(work)) for i in range(8)]
    killed: list[int] = []

    def kill_the_slow_job() -> None:  # SIGKILL the process running job2 while it sleeps
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for marker in markers.glob("job2.*.started"):
                pid = int(marker.name.split(".")[1])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_slow_job)
    killer.start()
    results = list(run_jobs(jobs, factory=ray_probe.Probe, factory_args=(str(markers),), workers=2,
                            ray_address=cluster.address, progress=False))
    killer.join()
    assert killed, "job2 was never seen running"
    assert sorted(r["id"] for r in results) == [f"job{i}" for i in range(8)]  # each job reported once
    started = sorted(m.name.split(".")[1] for m in markers.glob("job2.*.started"))
    assert len(started) == 2 and str(killed[0]) in started  # job2 ran again, in a new process
    job2 = next(r for r in results if r["id"] == "job2")
    assert job2["pid"] != killed[0]
    for i in range(8):  # every job's files, written by the driver, JSON record included
        assert (work / f"job{i}.txt").read_text() == f"payload job{i}\n"
        assert (work / f"job{i}.json").is_file()
    assert len({r["node"] for r in results}) == 2, "both nodes rendered"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): _identity_free(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and "_work" not in p.parts}


MADE_WHERE = ("inode", "pid")  # a ledger's scratch entry names the folder and process that made it, not the data


def _identity_free(path: Path) -> bytes:
    """The file's bytes; for the ledger, its lines without the fields that name this machine's folder
    and process (every other byte, and every line, must still be the same)."""
    if path.name != LEDGER:
        return path.read_bytes()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return "".join(json.dumps({k: v for k, v in entry.items() if k not in MADE_WHERE}, sort_keys=True) + "\n"
                   for entry in lines).encode()


def _same_dataset(local: Path, remote: Path) -> None:
    a, b = _files(local), _files(remote)
    assert a.keys() == b.keys() and len(a) > 1
    for name in a:
        assert a[name] == b[name], name


def test_o3d_on_ray_gives_the_same_bytes_as_local_workers(cluster, tmp_path):
    from spatial_tasks.generators.o3d.generate import generate

    flags = dict(cues="none,HP", objects="cube", envs="basic", positions="near,far,none", strengths="1",
                 resolution=48, samples=2, workers=2, progress=False)
    generate(tmp_path / "local" / "o3d", **flags)
    generate(tmp_path / "ray" / "o3d", ray_address=cluster.address, **flags)
    _same_dataset(tmp_path / "local" / "o3d", tmp_path / "ray" / "o3d")


def test_spatialtunnel_and_dori_on_ray_give_the_same_bytes(cluster, tmp_path):
    from spatial_tasks.generators.dori.generate import generate as dori
    from spatial_tasks.generators.spatialtunnel.generate import generate as tunnel

    for where, address in (("local", None), ("ray", cluster.address)):
        tunnel("phase", tmp_path / where / "st", grid=2, per_cell=1, resolution=32, samples=1, workers=2,
               ray_address=address)
        dori("single_axis_rotation", tmp_path / where / "dori", count=2, resolution=32, samples=1, workers=2,
             progress=False, ray_address=address)
    _same_dataset(tmp_path / "local" / "st", tmp_path / "ray" / "st")
    _same_dataset(tmp_path / "local" / "dori", tmp_path / "ray" / "dori")
