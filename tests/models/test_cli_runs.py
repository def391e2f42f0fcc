"""The real ``lmms-eval`` console script on a two-question toy task: the tiny Qwen2.5-VL through
``qwen2_5_vl`` and ``qwen2_5_vl_yesno``, and ``openai`` against the local test server.

The CLI exits 0 even when an evaluation crashes, so each test asserts on the results and
samples files. Each run spends ~20 s (lmms-eval indexes its ~2,000 built-in tasks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import pytest
from openai_server import decode_data_url, image_urls, prompt_text
from PIL import Image, ImageDraw

from spatial_tasks.common.yesno import decode_payload

pytestmark = [pytest.mark.cli, pytest.mark.slow]

TASK = "spatial_tasks_selftest_yesno"
TINY_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"
QUESTIONS = [
    (
        "Is the red cube closer to the camera than the blue sphere? Answer with yes or no.",
        "Yes",
        (220, 30, 30),
    ),
    (
        "Is the blue sphere closer to the camera than the red cube? Answer with yes or no.",
        "No",
        (30, 30, 220),
    ),
]


@pytest.fixture(scope="module")
def toy_task_dir(tmp_path_factory) -> Path:
    """A task folder: YAML + utils.py + a parquet file with two images (for --include_path)."""
    folder = tmp_path_factory.mktemp("toy_task")
    images = []
    for _, _, colour in QUESTIONS:
        image = Image.new("RGB", (96, 72), (90, 90, 90))
        ImageDraw.Draw(image).rectangle([10, 10, 40, 40], fill=colour)
        images.append(image)
    features = datasets.Features(
        {"question": datasets.Value("string"), "answer": datasets.Value("string"), "image": datasets.Image()}
    )
    datasets.Dataset.from_dict(
        {"question": [q for q, _, _ in QUESTIONS], "answer": [a for _, a, _ in QUESTIONS], "image": images},
        features=features,
    ).to_parquet(str(folder / "toy.parquet"))
    (folder / "toy.yaml").write_text(
        textwrap.dedent(f"""\
        task: {TASK}
        dataset_path: parquet
        dataset_kwargs:
          data_files:
            test: {folder / "toy.parquet"}
        test_split: test
        output_type: generate_until
        doc_to_visual: !function utils.doc_to_visual
        doc_to_text: question
        doc_to_target: answer
        process_results: !function utils.process_results
        metric_list:
          - metric: exact
            aggregation: mean
            higher_is_better: true
        generation_kwargs:
          max_new_tokens: 4
          temperature: 0
          do_sample: false
        metadata:
          version: 0
        """)
    )
    (folder / "utils.py").write_text(
        textwrap.dedent("""\
        from spatial_tasks.common.yesno import parse_yes_no


        def doc_to_visual(doc):
            return [doc["image"].convert("RGB")]


        def process_results(doc, results):
            return {"exact": float(parse_yes_no(results[0]) == doc["answer"])}
        """)
    )
    return folder


def _run_cli(model: str, model_args: str, task_dir: Path, out: Path) -> tuple[dict, list[dict]]:
    lmms_eval = Path(sys.executable).with_name("lmms-eval")
    command = [
        str(lmms_eval),
        "--model",
        model,
        "--model_args",
        model_args,
        "--tasks",
        TASK,
        "--include_path",
        str(task_dir),
        "--output_path",
        str(out),
        "--log_samples",
        "--verbosity",
        "DEBUG",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        command, check=False, cwd=out.parent, env=env, capture_output=True, text=True, timeout=600
    )
    log = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, log
    results = sorted(out.rglob("*_results.json"))
    samples = sorted(out.rglob(f"*_samples_{TASK}.jsonl"))
    assert results and samples, log
    rows = [json.loads(line) for line in samples[-1].read_text().splitlines() if line.strip()]
    return json.loads(results[-1].read_text())["results"][TASK], sorted(rows, key=lambda r: r["doc_id"])


def test_qwen2_5_vl_runs_the_tiny_model(tiny_qwen_dir, toy_task_dir, tmp_path):
    metrics, rows = _run_cli(
        "qwen2_5_vl", f"pretrained={tiny_qwen_dir},{TINY_ARGS}", toy_task_dir, tmp_path / "out"
    )
    assert len(rows) == 2 and "exact,none" in metrics
    assert all(isinstance(r["filtered_resps"], str) for r in rows)


def test_qwen2_5_vl_yesno_returns_payloads(tiny_qwen_dir, toy_task_dir, tmp_path):
    metrics, rows = _run_cli(
        "qwen2_5_vl_yesno", f"pretrained={tiny_qwen_dir},{TINY_ARGS}", toy_task_dir, tmp_path / "out"
    )
    assert len(rows) == 2
    payloads = [decode_payload(r["filtered_resps"]) for r in rows]
    assert all(p is not None and 0.0 < p.p_yes < 1.0 for p in payloads), rows
    assert (
        metrics["exact,none"]
        == sum(p.answer == a for p, (_, a, _) in zip(payloads, QUESTIONS, strict=True)) / 2
    )


def test_openai_against_the_local_server(openai_server, toy_task_dir, tmp_path):
    model_args = (
        f"model_version=stub,base_url={openai_server.base_url},api_key=test,num_concurrent=1,"
        "max_retries=1,retry_backoff_s=0,httpx_trust_env=False"
    )
    metrics, rows = _run_cli("openai", model_args, toy_task_dir, tmp_path / "out")
    assert [r["filtered_resps"] for r in rows] == ["Yes", "No"]  # the server's colour rule
    assert metrics["exact,none"] == 1.0
    assert sorted(prompt_text(b) for b in openai_server.requests) == sorted(q for q, _, _ in QUESTIONS)
    for body in openai_server.requests:
        (url,) = image_urls(body)
        assert decode_data_url(url)[0] == "image/png"
