"""The mission's line offline (issue 44, item 3): an lmms-eval run with our tasks whose checkpoint or
dataset cannot be had stops in one line naming it and the fix, exit status 2, no traceback, at once
(spatial_tasks/preflight.py). Runs without our tasks are left as lmms-eval makes them."""

from __future__ import annotations

import time

import pytest

from lmms import TINY_QWEN_ARGS, run_lmms_eval


def _offline(tmp_path) -> dict[str, str]:
    """No network and an empty Hugging Face cache: nothing of the Hub can be had."""
    return {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
            "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"), "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets")}


@pytest.mark.cli
def test_the_missions_line_offline_names_the_checkpoint_in_one_line(tmp_path):
    started = time.monotonic()
    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl", "", "o3d_markers,spatialtunnel", env=_offline(tmp_path),
                        verbose=False)
    took = time.monotonic() - started
    last = run.output.strip().splitlines()[-1]
    assert run.returncode == 2 and run.results is None, run.output[-3000:]
    assert last == ("spatial-tasks: --model qwen2_5_vl: checkpoint 'Qwen/Qwen2.5-VL-3B-Instruct' is not in the local "
                    "Hugging Face cache and the Hub cannot be reached (HF_HUB_OFFLINE is set): download it once where "
                    "the Hub is reachable (HF_HUB_OFFLINE=1 then reads the cached copy), or pass a local folder "
                    "(pretrained=/path/to/checkpoint in --model_args)"), last
    assert "Traceback" not in run.output
    assert took < 30, took  # the bound, lmms-eval's own start (~8 s here) included


@pytest.mark.cli
def test_a_local_model_with_a_dataset_not_cached_names_the_dataset_before_loading_the_model(tmp_path, tiny_qwen_dir):
    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl", f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS}",
                        "dori_sample,spatialtunnel", env=_offline(tmp_path), verbose=False)
    last = run.output.strip().splitlines()[-1]
    assert run.returncode == 2 and run.results is None and "Traceback" not in run.output, run.output[-3000:]
    assert last.startswith("spatial-tasks: task spatialtunnel_phase: dataset 'cubec/spatialtunnel' is not in the local "
                           "Hugging Face cache and the Hub cannot be reached (HF_HUB_OFFLINE is set): "), last
    assert "spatial-tasks custom-task spatialtunnel_phase --data DIR --out TASKS`, then --include_path TASKS)" in last


@pytest.mark.cli
def test_our_bundled_samples_and_a_local_model_pass_the_check(tmp_path, tiny_qwen_dir):
    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl", f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS}",
                        "spatialtunnel_embspatial_depth_split_sample", "--gen_kwargs", "max_new_tokens=4",
                        env=_offline(tmp_path))
    assert run.results is not None and "spatialtunnel_embspatial_depth_split_sample" in run.results["results"]


@pytest.mark.cli
def test_a_run_without_our_tasks_is_left_as_it_was(tmp_path):
    """An offline run of lmms-eval's own task: none of our lines (lmms-eval fails as it always did)."""
    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl", "", "mme", env=_offline(tmp_path), verbose=False)
    assert "spatial-tasks:" not in run.output, run.output[-3000:]
