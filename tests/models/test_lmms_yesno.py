"""The ``<lmms-eval id>_yesno`` twins of lmms-eval's qwen3_vl, gemma3 and llava_hf on tiny builds:
their inputs ARE what the lmms-eval class's generate_until hands to model.generate (tensor for
tensor) and their logits are that generation's first step; batch 1 = batched = grouped; the
real lmms-eval CLI on the bundled logit sample."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from lmms import assert_all_finite, declared_metrics, run_lmms_eval
from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw
from scoring import check_batch_invariance

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.models.families import ModelFamilyError
from spatial_tasks.models.lmms_yesno import Gemma3YesNo, LlavaHfYesNo, Qwen3_VLYesNo
from spatial_tasks.models.scoring_paths import GROUPED

TASK, SPLIT = "toy_yesno", "test"
QWEN_PIXELS = {"min_pixels": 3136, "max_pixels": 50176}

# twin id -> (class, tiny family, model_args besides pretrained and dtype)
TWINS = {
    "qwen3_vl_yesno": (Qwen3_VLYesNo, "qwen3_vl", {"device": "cpu", "device_map": "cpu", **QWEN_PIXELS}),
    "qwen3_vl_yesno-moe": (Qwen3_VLYesNo, "qwen3_vl_moe", {"device": "cpu", "device_map": "cpu", **QWEN_PIXELS}),
    "gemma3_yesno": (Gemma3YesNo, "gemma3", {"device": "cpu", "device_map": "cpu"}),
    "llava_hf_yesno": (LlavaHfYesNo, "llava_onevision", {"device": "cpu"}),
}


def _image(shift: int) -> Image.Image:
    image = Image.new("RGB", (96, 72), (90, 90, 90))
    draw = ImageDraw.Draw(image)
    draw.rectangle([10 + shift, 40, 30 + shift, 60], fill=(220, 30, 30))
    draw.ellipse([60, 10, 76, 26], fill=(30, 30, 220))
    return image


DOCS = [{"image": _image(0), "question": "Is the red cube closer to the camera than the blue sphere? Answer Yes or No."},
        {"image": _image(30), "question": "<image>Is the blue sphere farther away than the small red cube?"}]


def _request(doc_id: int) -> Instance:
    args = (DOCS[doc_id]["question"], {"max_new_tokens": 2, "temperature": 0}, lambda doc: [doc["image"]],
            doc_id, TASK, SPLIT)
    return Instance(request_type="generate_until", arguments=args, idx=0,
                    metadata={"task": TASK, "doc_id": doc_id, "repeats": 1})


@pytest.fixture(scope="module")
def twin_dir(tiny_family_dirs, tmp_path_factory):
    """The tiny build for a twin; the MoE one under a name with its active size (lmms-eval's
    qwen3_vl picks the MoE class from the name, as for Qwen3-VL-235B-A22B)."""
    def path(twin: str):
        family = TWINS[twin][1]
        if family != "qwen3_vl_moe":
            return tiny_family_dirs(family)
        named = tmp_path_factory.getbasetemp() / "tiny-Qwen3-VL-MoE-A1B"
        if not named.exists():
            shutil.copytree(tiny_family_dirs(family), named)
        return named

    return path


def _twin(twin: str, path, **extra):
    cls, _, args = TWINS[twin]
    model = cls(pretrained=str(path), **args, **extra)
    model.task_dict = {TASK: {SPLIT: DOCS}}
    return model


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("doc_id", [0, 1])
def test_inputs_and_logits_are_the_lmms_eval_models_first_generation_step(twin, doc_id, twin_dir):
    """lmms-eval's own generate_until on the same request, spying on model.generate (in the
    class's own load dtype, bfloat16 or the checkpoint's): same tensors, and our payload's logits
    are the first step's."""
    model = _twin(twin, twin_dir(twin))
    parent = type(model).__mro__[type(model).__mro__.index(type(model)) + 1:]
    lmms_class = next(c for c in parent if c.__module__.startswith("lmms_eval.models"))
    hf_model, seen = model.model, {}
    real_generate = hf_model.generate

    def spy(**kwargs):
        seen["inputs"] = {k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
        out = real_generate(**kwargs, output_logits=True, return_dict_in_generate=True)
        seen["logits"] = out.logits
        return out.sequences

    hf_model.generate = spy
    try:
        assert isinstance(lmms_class.generate_until(model, [_request(doc_id)])[0], str)
    finally:
        del hf_model.generate

    ours = model.yesno_prepare_inputs(DOCS[doc_id]["question"], [DOCS[doc_id]["image"]])
    assert set(ours.keys()) == set(seen["inputs"]), twin
    assert int((ours["input_ids"] == model.model.config.image_token_id).sum()) > 0  # the image is in the prompt
    for key, value in ours.items():
        assert value.dtype == seen["inputs"][key].dtype and torch.equal(value, seen["inputs"][key]), key

    payload = decode_payload(model.generate_until([_request(doc_id)])[0])
    tokens = model.answer_tokens()
    first_step = seen["logits"][0][0].float()
    # generate's first step (KV cache on) and our single forward (cache off, last position only) are
    # the same computation; in bfloat16 their kernels round differently (gemma3: 2.4e-4 apart)
    tol = 1e-6 if model.model.dtype == torch.float32 else 2e-3
    assert payload.logit_yes == pytest.approx(float(first_step[tokens.yes_ids[0]]), abs=tol)
    assert payload.logit_no == pytest.approx(float(first_step[tokens.no_ids[0]]), abs=tol)
    if model.model.dtype == torch.float32:
        assert payload.text == model.tokenizer.decode([int(first_step.argmax())])


def _items() -> list[tuple[str, list]]:
    """Five questions on two images (one asked about three times), of different lengths."""
    a, b = _image(0), _image(30)
    words = ["sphere", "big blue sphere", "cube", "small yellow cube on the left", "cone"]
    return [(f"Is the red cube closer to the camera than the {w}? Answer Yes or No.", [img])
            for w, img in zip(words, [a, b, a, b, a], strict=True)]


@pytest.mark.parametrize("twin", TWINS)
def test_batch_one_equals_batched_and_grouped_scoring(twin, twin_dir, monkeypatch):
    model = _twin(twin, twin_dir(twin), dtype="float32", batch_size=3)
    _, encoded = check_batch_invariance(model, _items(), monkeypatch)  # every path the twin offers
    grouped = GROUPED in model.scoring.order
    assert grouped == twin.startswith("qwen3")
    assert sum(encoded) == (2 if grouped else 0)  # each distinct image through the tower once


def test_qwen3_moe_checkpoint_without_active_size_in_its_name_is_refused(tiny_family_dirs, twin_dir):
    with pytest.raises(ModelFamilyError, match=r"qwen3_vl_moe.*A<n>B.*hf_yesno"):
        Qwen3_VLYesNo(pretrained=str(tiny_family_dirs("qwen3_vl_moe")), device="cpu", device_map="cpu")
    named = _twin("qwen3_vl_yesno-moe", twin_dir("qwen3_vl_yesno-moe"))
    assert type(named.model).__name__ == "Qwen3VLMoeForConditionalGeneration"


def test_gemma3_yesno_refuses_a_video_visual(twin_dir):
    model = _twin("gemma3_yesno", twin_dir("gemma3_yesno"))
    with pytest.raises(TypeError, match="gemma3_yesno scores images.*str.*clip.mp4"):
        model.score_yes_no("Is it moving?", ["clip.mp4"])


@pytest.mark.cli
@pytest.mark.parametrize("twin", ["qwen3_vl_yesno", "gemma3_yesno", "llava_hf_yesno"])
def test_twin_through_the_lmms_eval_cli(twin, twin_dir, tmp_path):
    _, _, args = TWINS[twin]
    model_args = ",".join([f"pretrained={twin_dir(twin)}", "dtype=float32", *(f"{k}={v}" for k, v in args.items())])
    run = run_lmms_eval(tmp_path / "out", twin, model_args, "spatialtunnel_logit_sample_phase", "--batch_size", "4")
    assert_all_finite(run.metrics("spatialtunnel_logit_sample_phase"), declared_metrics("spatialtunnel_logit_sample_phase"))
    samples = run.samples["spatialtunnel_logit_sample_phase"]
    assert len(samples) == run.results["n-samples"]["spatialtunnel_logit_sample_phase"]["effective"] > 0
    expected = _twin(twin, twin_dir(twin)).answer_tokens().log_fields()
    for sample in samples:
        payload = json.loads(sample["v"]["response"])
        assert decode_payload(sample["v"]["response"]).finite and {k: payload[k] for k in expected} == expected
