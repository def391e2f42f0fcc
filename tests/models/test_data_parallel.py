"""Data parallel scoring the lmms-eval way: ``accelerate launch`` with 2 processes. On this
CPU-only machine accelerate's multi-process launcher (torchrun) starts 2 CPU processes and
torch.distributed uses the gloo backend; lmms-eval gives each rank half of the requests and
gathers them. Every logged response and every metric must equal the one-process run: the logits to
LOGIT_TOL (each rank packs its own half into other windows, and a float32 matrix product over other
rows rounds its last bits differently), everything else exactly."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from lmms import declared_metrics, read_run

pytestmark = pytest.mark.cli
ACCELERATE = str(Path(sys.executable).with_name("accelerate"))
TASK = "spatialtunnel_logit_sample_phase"
LOGIT_TOL = 1e-5  # float32 logits of one question in different batches


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_score_exactly_as_one(tiny_family_dirs, lmms_run, tmp_path):
    checkpoint = tiny_family_dirs("qwen3_vl")
    # The one-process run is test_families' (device=cpu there: this machine has no other device).
    one = lmms_run("hf_yesno", f"pretrained={checkpoint},device=cpu,dtype=float32", TASK, "--batch_size", "4")
    args = f"pretrained={checkpoint},dtype=float32"
    cmd = [ACCELERATE, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
           "-m", "lmms_eval", "--model", "hf_yesno", "--model_args", args, "--tasks", TASK, "--batch_size", "4",
           "--output_path", str(tmp_path / "two"), "--log_samples", "--verbosity", "DEBUG"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert log.count("number of requests on this rank: 128") == 2, log[-4000:]  # 256 requests, half each
    two = read_run(tmp_path / "two", proc.returncode, log)
    by_doc = {name: {s["doc_id"]: json.loads(s["v"]["response"]) for s in run.samples[TASK]} for name, run in
              (("one", one), ("two", two))}
    assert len(by_doc["one"]) == 256 and by_doc["one"].keys() == by_doc["two"].keys()
    for doc, want in by_doc["one"].items():
        got = by_doc["two"][doc]
        computed = ("logit_yes", "logit_no", "label_mass")  # from the model's float32 logits
        assert {k: v for k, v in got.items() if k not in computed} == {k: v for k, v in want.items() if k not in computed}
        assert got["logit_yes"] == pytest.approx(want["logit_yes"], abs=LOGIT_TOL)
        assert got["logit_no"] == pytest.approx(want["logit_no"], abs=LOGIT_TOL)
        assert got["label_mass"] == pytest.approx(want["label_mass"], abs=1e-6)
    for metric in declared_metrics(TASK):
        assert two.metrics(TASK)[metric] == pytest.approx(one.metrics(TASK)[metric], abs=1e-6)

