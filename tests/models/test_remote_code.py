"""The remote-code adapters (``molmo``, ``vila``) through transformers' real trust_remote_code
loading, on stand-in checkpoints (tests/models/standin_molmo.py, standin_vila.py: the API of
Molmo's and VILA's Hub code, not their code -- the Hub, and so the real model code, cannot be
reached here)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from lmms import SPATIAL_TASKS, assert_all_finite, declared_metrics, run_cli, run_lmms_eval
from PIL import Image

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.models.families import ModelFamilyError
from spatial_tasks.models.hf_yesno import HFYesNo
from spatial_tasks.models.hidden_states import RemoteHidden, load_hidden_state_model
from spatial_tasks.models.scoring_paths import ONE_BY_ONE
from spatial_tasks.paths import benchmark_tasks_dir

sys.path.insert(0, str(Path(__file__).parent))
import standin_molmo  # noqa: E402
import standin_vila  # noqa: E402

STATE_TOL = 1e-5  # float32 hidden states of a left-padded batch vs one prompt alone



@pytest.fixture(scope="module")
def molmo_dir(tmp_path_factory, tiny_family_dirs):
    return standin_molmo.build(tmp_path_factory.mktemp("standin_molmo"), tiny_family_dirs("qwen3_vl"))


@pytest.fixture(scope="module")
def vila_dirs(tmp_path_factory, tiny_family_dirs):
    """``dirs(image_aspect_ratio)``: a stand-in VILA checkpoint per image mode, built on first use."""
    built: dict[str, Path] = {}

    def dirs(mode: str = "dynamic_s2") -> Path:
        if mode not in built:
            built[mode] = standin_vila.build(tmp_path_factory.mktemp(f"standin_vila_{mode}"),
                                             tiny_family_dirs("qwen3_vl"), image_aspect_ratio=mode)
        return built[mode]

    return dirs


def _image(red: int) -> Image.Image:
    return Image.new("RGB", (50, 40), (red, 20, 200 - red))


def test_hf_yesno_scores_through_the_adapter_with_molmos_own_prompt(molmo_dir):
    model = HFYesNo(str(molmo_dir), device="cpu", dtype="float32", trust_remote_code=True, batch_size=4)
    assert model.family == "molmo" and model.adapter is not None and model.scoring.order == (ONE_BY_ONE,)
    question = "Is the red cube closer than the blue sphere? Answer Yes or No."
    inputs = model.yesno_prepare_inputs(f"<image>{question}", [_image(200)])
    expected = model.processor.process(images=[_image(200)], text=question)
    assert set(inputs) == set(expected) == {"input_ids", "images", "image_input_idx", "image_masks"}
    for key, value in expected.items():  # the processor's own output, batch axis added
        assert torch.equal(inputs[key], value[None]), key
    image_tokens = int(inputs["image_input_idx"].numel())
    assert model.tokenizer.decode(inputs["input_ids"][0, 1 + image_tokens:]) == f" User: {question} Assistant:"
    items = [(question, [_image(200)]), (question, [_image(20)]), ("Is it small? Answer Yes or No.", [_image(90)])]
    scores = model.score_items(items, len(items))  # one prompt per forward: process() pads nothing
    assert [s.logit_yes for s in scores] == [model.score_yes_no(*item).logit_yes for item in items]
    assert all(np.isfinite([s.logit_yes, s.logit_no]).all() for s in scores)
    assert len({round(s.logit_yes - s.logit_no, 7) for s in scores}) == 3  # the image and the words reach the logits


def test_remote_code_checkpoint_without_trust_remote_code_is_refused(molmo_dir):
    with pytest.raises(ModelFamilyError, match=r"molmo.*trust_remote_code=true"):
        HFYesNo(str(molmo_dir), device="cpu", dtype="float32")
    with pytest.raises(ModelFamilyError, match=r"molmo.*--trust-remote-code"):
        load_hidden_state_model(str(molmo_dir), device="cpu")


def test_probe_states_through_the_adapter(molmo_dir):
    model = load_hidden_state_model(str(molmo_dir), trust_remote_code=True, device="cpu", dtype="float32")
    assert isinstance(model, RemoteHidden) and model.num_layers == 2 and model.hidden_size == 32
    items = [("Is the cube in front?", _image(200)), ("Is the sphere much farther away?", _image(30))]
    states, first = model.last_token_states(items)
    alone = np.concatenate([model.last_token_states([item])[0] for item in items], axis=1)
    assert states.shape == (2, 2, 32) and len(first) == 2
    assert np.abs(states - alone).max() <= STATE_TOL and np.abs(states[:, 0] - states[:, 1]).max() > 0
    # the hook reads block i's output at the last prompt token: block 1 run by hand on it agrees
    inputs = model.prepare_batch(items[:1])
    seen = {}
    handle = model.decoder_layers()[0].register_forward_hook(lambda m, a, out: seen.setdefault("out", out))
    with torch.inference_mode():
        model.model(**inputs)
    handle.remove()
    assert np.allclose(seen["out"][0, -1].numpy(), states[0, 0], atol=1e-6)


@pytest.mark.parametrize("mode", ["dynamic_s2", "dynamic", "resize"])
def test_vila_inputs_are_generate_contents(vila_dirs, mode):
    """The adapter builds what VILA's generate_content passes to generate (pixels cast to the
    model's dtype where generate_content casts them to float16), and the image reaches the logits."""
    model = HFYesNo(str(vila_dirs(mode)), device="cpu", dtype="float32", trust_remote_code=True, batch_size=4)
    assert model.family == "vila" and model.scoring.order == (ONE_BY_ONE,) and next(model.model.parameters()).dtype == torch.float32
    question = "Is the red cube closer than the blue sphere? Answer Yes or No."
    ours = model.yesno_prepare_inputs(f"<image>{question}", [_image(200)])
    seen = {}
    model.model.generate = lambda **kwargs: seen.update(kwargs)
    model.model.generate_content([_image(200), question])
    assert torch.equal(ours["input_ids"], seen["input_ids"])
    assert len(ours["media"]["image"]) == len(seen["media"]["image"]) == (1 if mode == "resize" else 3)
    for tile, theirs in zip(ours["media"]["image"], seen["media"]["image"], strict=True):
        assert tile.dtype == torch.float32 and torch.equal(tile.half(), theirs)
    assert dict(ours["media_config"]) == dict(seen["media_config"])
    assert ours["media_config"].get("image") == ({"block_sizes": [(1, 2)]} if mode == "dynamic_s2" else None)
    text = model.tokenizer.decode(ours["input_ids"][0])
    assert text.count("<image>") == (3 if mode == "dynamic" else 1) and question in text
    items = [(question, [_image(200)]), (question, [_image(20)]), ("Is it small? Answer Yes or No.", [_image(90)])]
    scores = model.score_items(items, len(items))
    assert [s.logit_yes for s in scores] == [model.score_yes_no(*item).logit_yes for item in items]
    assert len({round(s.logit_yes - s.logit_no, 7) for s in scores}) == 3


def test_vila_probe_states_hook_the_language_models_layers(vila_dirs):
    model = load_hidden_state_model(str(vila_dirs()), trust_remote_code=True, device="cpu", dtype="float32")
    assert isinstance(model, RemoteHidden) and model.num_layers == 2 and model.hidden_size == 32
    assert model.decoder_layers() is model.model.llm.model.layers
    items = [("Is the cube in front?", _image(200)), ("Is the sphere much farther away?", _image(30))]
    states, first = model.last_token_states(items)
    alone = np.concatenate([model.last_token_states([item])[0] for item in items], axis=1)
    assert states.shape == (2, 2, 32) and np.abs(states - alone).max() <= STATE_TOL and len(first) == 2
    last = model.model.llm.model.norm  # the final norm's input is the last layer's output
    seen = {}
    handle = last.register_forward_hook(lambda m, args, out: seen.setdefault("in", args[0]))
    with torch.inference_mode():
        model.model(**model.prepare_batch(items[:1]))
    handle.remove()
    assert np.allclose(seen["in"][0, -1].numpy(), states[1, 0], atol=1e-6)


def test_vila_without_generate_contents_helpers_is_refused(vila_dirs, tmp_path):
    broken = tmp_path / "no_helpers"
    shutil.copytree(vila_dirs(), broken)
    code = broken / "standin_vila.py"
    code.write_text(code.read_text().replace("def tokenize_conversation(", "def _tokenize_conversation("))
    with pytest.raises(ModelFamilyError, match=r"not VILA's Hub code.*tokenize_conversation"):
        HFYesNo(str(broken), device="cpu", dtype="float32", trust_remote_code=True)


@pytest.mark.cli
@pytest.mark.parametrize("family", ["molmo", "vila"])
def test_hf_yesno_and_probe_clis_with_trust_remote_code(family, molmo_dir, vila_dirs, tmp_path):
    checkpoint = molmo_dir if family == "molmo" else vila_dirs()
    run = run_lmms_eval(tmp_path / "out", "hf_yesno", f"pretrained={checkpoint},device=cpu,dtype=float32,trust_remote_code=true",
                        "spatialtunnel_logit_sample_phase", "--batch_size", "4")
    assert_all_finite(run.metrics("spatialtunnel_logit_sample_phase"), declared_metrics("spatialtunnel_logit_sample_phase"))
    samples = run.samples["spatialtunnel_logit_sample_phase"]
    assert len(samples) == run.results["n-samples"]["spatialtunnel_logit_sample_phase"]["effective"] > 0
    assert all(decode_payload(s["v"]["response"]).finite and json.loads(s["v"]["response"])["answer_rule"] == "exact"
               for s in samples)
    data = benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing"
    proc = run_cli([SPATIAL_TASKS, "probe", "--model", str(checkpoint), "--trust-remote-code", "--data", str(data),
                    "--out", str(tmp_path / "probe"), "--dtype", "float32"], capture_output=True, text=True,
                   timeout=600, env={**_env(), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((tmp_path / "probe" / "probe.json").read_text())
    assert meta["num_layers"] == 2 and meta["hidden_size"] == 32
    assert np.isfinite(np.load(tmp_path / "probe" / "deltas.npy")).all()


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
