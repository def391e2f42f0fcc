"""Every model family on a tiny random build: first-token scoring (batch 1 = batched = grouped),
probing (left padding = batch 1), the real lmms-eval CLI with ``hf_yesno`` on the bundled logit
sample, and the real ``spatial-tasks probe`` CLI on the bundled pairs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from lmms import SPATIAL_TASKS, assert_all_finite, declared_metrics, run_cli
from PIL import Image
from scoring import check_batch_invariance

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.harness import MODELS
from spatial_tasks.models import families
from spatial_tasks.models.hf_yesno import HFYesNo, ModelArgsError
from spatial_tasks.models.hidden_states import FamilyHidden, load_hidden_state_model
from spatial_tasks.models.scoring_paths import GROUPED, ONE_BY_ONE, PACKED, PADDED, SHARED_PREFIX
from spatial_tasks.paths import benchmark_tasks_dir

ALL = list(families.FAMILIES)
TOL = 1e-5  # fp32 logits: batch 1 vs padded batches vs precomputed image features


@pytest.fixture(scope="module")
def family_dir(tiny_family_dirs, tiny_qwen_dir):
    return lambda family: tiny_qwen_dir if family == "qwen2_5_vl" else tiny_family_dirs(family)


def _images() -> list[Image.Image]:
    return [Image.new("RGB", (72 + 16 * i, 56), (60 * i, 40, 220 - 50 * i)) for i in range(2)]


def _items() -> list[tuple[str, list]]:
    """Five questions on two images (one image asked about three times), lengths differ."""
    a, b = _images()
    words = ["sphere", "big blue sphere", "cube", "small yellow cube on the left", "cone"]
    return [(f"<image>Is the red cube closer to the camera than the {w}? Answer Yes or No.", [img])
            for w, img in zip(words, [a, b, a, b, a], strict=True)]


def test_the_families_are_the_issues_list():
    assert set(families.FAMILIES) == {
        "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "llava_onevision", "internvl", "gemma3", "molmo2"}
    assert all(f.tiny is not None for f in families.FAMILIES.values())  # each entry builds its tiny model
    # a family lmms-eval has a model class for is scored by that class's *_yesno twin too
    from spatial_tasks.models.model_table import MODEL_TABLE

    twins = {e.extends: e.served() for e in MODEL_TABLE.values() if e.extends}
    assert twins == {"qwen2_5_vl": ("qwen2_5_vl",), "qwen3_vl": ("qwen3_vl", "qwen3_vl_moe"),
                     "llava_hf": ("llava_onevision",), "gemma3": ("gemma3",)}
    assert all(f"{twin}_yesno" in MODELS for twin in twins)


def test_the_family_table_is_the_entries_and_the_preflight_reads_it_without_torch():
    """Issue 66, item 4: which families exist (their model_types, names and paths) is one table that
    imports no torch; each entry of ``FAMILIES`` is its row plus the code that runs it."""
    from spatial_tasks.models.family_table import FAMILY_TABLE

    assert set(FAMILY_TABLE) == set(families.FAMILIES)
    for model_type, row in FAMILY_TABLE.items():
        entry = families.FAMILIES[model_type]
        assert (entry.title, entry.paths) == (row.title, row.paths)
    script = ("import sys; from spatial_tasks import preflight; "
              "print(preflight.expected_families('qwen3_vl_yesno'), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["('qwen3_vl',", "'qwen3_vl_moe')", "False"]


@pytest.mark.parametrize("family", ALL)
def test_batch_one_equals_batched_and_grouped_scoring(family, family_dir, monkeypatch):
    model = HFYesNo(str(family_dir(family)), device="cpu", dtype="float32", batch_size=3)
    assert model.family == family
    _, encoded = check_batch_invariance(model, _items(), monkeypatch)  # every path the family offers
    # hf_yesno implements every path but Qwen2.5-VL's shared prefix (qwen2_5_vl_yesno's)
    assert set(families.FAMILIES[family].paths) - set(model.offered_paths()) <= {SHARED_PREFIX}
    if families.FAMILIES[family].grouping:
        assert sum(encoded) == 2  # two distinct images, each through the tower once
    else:
        assert GROUPED not in model.scoring.order and encoded == []


@pytest.mark.parametrize("family", ALL)
def test_probe_states_with_left_padding_equal_batch_one(family, family_dir):
    model = load_hidden_state_model(str(family_dir(family)), device="cpu", dtype="float32")
    assert isinstance(model, FamilyHidden) and model.family is families.FAMILIES[family]
    items = [(question.replace("<image>", ""), images[0]) for question, images in _items()[:3]]
    states, first = model.last_token_states(items)
    alone = np.concatenate([model.last_token_states([item])[0] for item in items], axis=1)
    assert states.shape == (model.num_layers, 3, model.hidden_size) and len(first) == 3
    assert np.abs(states - alone).max() <= TOL
    assert np.isfinite(states).all() and np.abs(states[:, 0] - states[:, 1]).max() > 0


@pytest.mark.cli
@pytest.mark.parametrize("family", ALL)
def test_hf_yesno_through_the_lmms_eval_cli(family, family_dir, lmms_run):
    path = family_dir(family)
    run = lmms_run("hf_yesno", f"pretrained={path},device=cpu,dtype=float32",
                   "spatialtunnel_logit_sample_phase", "--batch_size", "4")  # shared with test_data_parallel
    assert_all_finite(run.metrics("spatialtunnel_logit_sample_phase"), declared_metrics("spatialtunnel_logit_sample_phase"))
    samples = run.samples["spatialtunnel_logit_sample_phase"]
    assert len(samples) == run.results["n-samples"]["spatialtunnel_logit_sample_phase"]["effective"] > 0
    model = HFYesNo(str(path), device="cpu", dtype="float32")
    expected = model.answer_tokens().log_fields()
    for sample in samples:
        payload = json.loads(sample["v"]["response"])
        assert decode_payload(sample["v"]["response"]).finite and {k: payload[k] for k in expected} == expected


# The probe CLI of every family in ONE process (the console entry, `spatial_tasks.cli.main`, called
# once per family as `spatial-tasks probe ...` would be): importing torch and transformers once, not
# seven times. Each family's outputs are still checked by a test of its own.
PROBE_ALL = """
import json, sys
from spatial_tasks.cli import main
codes = {}
for family, model, data, out in json.loads(sys.argv[1]):
    try:
        main(["probe", "--model", model, "--data", data, "--out", out, "--dtype", "float32", "--batch-size", "4"])
        codes[family] = 0
    except SystemExit as stop:
        codes[family] = stop.code if isinstance(stop.code, int) else 1
print(json.dumps(codes))
"""


@pytest.fixture(scope="module")
def probe_cli_outputs(family_dir, tmp_path_factory) -> Path:
    from conftest import shared_across_workers

    data = str(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing")

    def run_all(root: Path) -> None:
        jobs = [(f, str(family_dir(f)), data, str(root / f)) for f in ALL]
        proc = subprocess.run([sys.executable, "-c", PROBE_ALL, json.dumps(jobs)], capture_output=True, text=True,
                              timeout=1200, env={**_env(), "OMP_NUM_THREADS": "1"}, check=False)
        (root / "codes.json").write_text(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}")
        (root / "output.txt").write_text(proc.stdout + proc.stderr)

    return shared_across_workers(tmp_path_factory, "probe_cli_all_families", run_all)


@pytest.mark.cli
@pytest.mark.parametrize("family", ALL)
def test_probe_cli_on_the_bundled_pairs(family, probe_cli_outputs):
    codes = json.loads((probe_cli_outputs / "codes.json").read_text())
    assert codes.get(family) == 0, (probe_cli_outputs / "output.txt").read_text()[-3000:]
    out = probe_cli_outputs / family
    meta = json.loads((out / "probe.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert meta["num_layers"] == 2 and meta["hidden_size"] == 64
    assert set(metrics["per_layer"]) == {"0", "1"}
    deltas = np.load(out / "deltas.npy")
    assert deltas.shape[:2] == (2, meta["pairs"]) and np.isfinite(deltas).all() and np.abs(deltas).max() > 0


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def test_device_map_auto_scores_as_one_device(family_dir):
    """device_map=auto (accelerate's sharding over the visible GPUs; on this CPU-only machine every
    layer lands on the CPU, so this checks the loading and input placement path): same scores."""
    items = _items()[:2]
    plain = HFYesNo(str(family_dir("qwen3_vl_moe")), device="cpu", dtype="float32").score_items(items, 2, paths=(PADDED,))
    auto = HFYesNo(str(family_dir("qwen3_vl_moe")), device_map="auto", dtype="float32")
    assert auto.device_map == "auto" and str(auto.device) == "cpu"
    for a, b in zip(plain, auto.score_items(items, 2, paths=(PADDED,)), strict=True):
        assert abs(a.logit_yes - b.logit_yes) <= TOL and abs(a.logit_no - b.logit_no) <= TOL


def test_bad_model_args_are_named(family_dir):
    path = str(family_dir("gemma3"))
    with pytest.raises(ModelArgsError, match=r"unknown --model_args \['min_pixels'\]"):
        HFYesNo(path, device="cpu", min_pixels=3136)
    with pytest.raises(ModelArgsError, match="dtype='fp8'"):
        HFYesNo(path, device="cpu", dtype="fp8")
    with pytest.raises(families.ModelFamilyError, match="no such folder"):
        HFYesNo("/nonexistent/model", device="cpu")


def test_hf_yesno_on_a_checkpoint_that_is_not_image_text_is_one_line(tmp_path):
    """A BERT folder: one line naming its family and what hf_yesno takes, exit 2 -- not transformers'
    list of ~100 classes after a traceback, with exit 0."""
    from lmms import run_lmms_eval

    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    (bert / "model.safetensors").write_bytes(b"")  # a checkpoint by its files (the preflight): its family is what is wrong
    with pytest.raises(families.ModelFamilyError, match=r"'bert' checkpoint, not an image-text model.*Qwen2.5-VL"):
        HFYesNo(str(bert), device="cpu")
    run = run_lmms_eval(tmp_path / "out", "hf_yesno", f"pretrained={bert},device=cpu", "spatialtunnel_logit_sample_phase",
                        verbose=False)
    last = run.output.strip().splitlines()[-1]
    assert run.results is None and run.returncode == 2
    assert last.startswith(f"spatial-tasks: hf_yesno: {bert} is a 'bert' checkpoint, not an image-text model"), last
    assert "trust_remote_code=true" in last and "BertModel" not in last


def test_a_family_we_do_not_know_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "blip-2"}))
    with pytest.raises(families.ModelFamilyError, match="model family 'blip-2'.*supported: qwen2_5_vl"):
        load_hidden_state_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(families.ModelFamilyError, match="config.json: not valid JSON"):
        families.read_model_type(str(tmp_path))


def test_tiny_model_cli_builds_a_family_and_refuses_unknown_ones(tmp_path):
    ok = run_cli([SPATIAL_TASKS, "tiny-model", "--family", "internvl", "--out", str(tmp_path / "m")],
                 capture_output=True, text=True, timeout=300, env=_env())
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "m" / "config.json").read_text())["model_type"] == "internvl"
    bad = run_cli([SPATIAL_TASKS, "tiny-model", "--family", "blip2", "--out", str(tmp_path / "x")],
                  capture_output=True, text=True, timeout=300, env=_env())
    assert bad.returncode == 2 and "--family 'blip2': choose one of qwen2_5_vl, qwen3_vl" in bad.stderr
    assert not (tmp_path / "x").exists()


def test_a_probe_only_report_keeps_the_leaderboard_it_replaces(probe_cli_outputs, golden_runs, tmp_path):
    """Issue 32, item 1: a report into a folder with a leaderboard replaces the earlier report's
    files; one that adds no records (probe folders only) must keep the leaderboard, not delete it."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report
    from spatial_tasks.results.schema import read_record_file

    out = tmp_path / "report"
    write_report(read_runs(golden_runs / "dori"), out)
    before = read_record_file(out / "leaderboard.json")
    written = write_report(None, out, probes=[probe_cli_outputs / "qwen2_5_vl"])
    assert out / "leaderboard.json" in written and read_record_file(out / "leaderboard.json") == before
    assert read_record_file(out / "leaderboard.csv") == before and "## SpatialTunnel: contrastive probing" in (out / "report.md").read_text()


def test_a_family_entry_is_checked_where_it_is_written():
    """A path that hands the forward precomputed image features needs the entry's image_features;
    every entry allows padded batches and one by one."""
    with pytest.raises(ValueError, match="family toy: the packed, grouped path"):
        families.Family("toy", "Toy", None, (PACKED, GROUPED, PADDED, ONE_BY_ONE))
    with pytest.raises(ValueError, match="every family allows padded and one_by_one"):
        families.Family("toy", "Toy", None, (PADDED,))
    generic = families.family_of("toy")  # not listed: the generic entry, the chat template's prompt
    assert generic.paths == families.BASIC_PATHS and generic.image_features is None and generic.tiny is None
    with pytest.raises(families.ModelFamilyError, match="--family 'toy': choose one of qwen2_5_vl, qwen3_vl"):
        families.build_tiny_model("toy", Path("/nonexistent"))


def test_the_family_entry_holds_probings_prompt(family_dir):
    """Qwen2.5-VL probes with qwen_vl_utils' prompt (the authors' code); every other family with
    the chat template, the same inputs hf_yesno builds."""
    image = _images()[0]
    for family in ("qwen2_5_vl", "gemma3"):
        entry = families.FAMILIES[family]
        _, processor = entry.load(str(family_dir(family)), torch.float32)
        probed = entry.probe_inputs(processor, [("Is it red?", image)])
        chat = families.chat_inputs(processor, [("Is it red?", [image])])
        if family == "qwen2_5_vl":
            from qwen_vl_utils import process_vision_info

            messages = [[{"role": "user", "content": [{"type": "image", "image": image},
                                                      {"type": "text", "text": "Is it red?"}]}]]
            resized, _ = process_vision_info(messages)
            assert resized[0].size != image.size  # qwen_vl_utils resized it before the processor saw it
            assert entry.probe_prompt is families.qwen_vl_utils_inputs
        else:
            assert entry.probe_prompt is None
            assert torch.equal(probed["input_ids"], chat["input_ids"])
            assert torch.equal(probed["pixel_values"], chat["pixel_values"])
