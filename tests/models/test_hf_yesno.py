"""qwen2_5_vl_yesno on the tiny Qwen2.5-VL: payloads, determinism, and that its logits ARE the
first generated token's logits of lmms-eval's own qwen2_5_vl prompt."""

from __future__ import annotations

import math

import pytest
import torch
from lmms_eval.api.instance import Instance
from lmms_eval.models.simple.qwen2_5_vl import Qwen2_5_VL
from PIL import Image, ImageDraw
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from spatial_tasks.common.yesno import decode_payload, parse_yes_no
from spatial_tasks.models.answer_tokens import YesNoTokenError, single_token_id, yes_no_token_ids
from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo

MODEL_ARGS = {"device": "cpu", "device_map": "cpu", "min_pixels": 3136, "max_pixels": 50176}
LOGIT_TOL = 1e-5  # float32 logits of one prompt through two code paths
TASK, SPLIT = "toy_yesno", "test"
QUESTION = "Is the red cube closer to the camera than the blue sphere? Answer with yes or no."


def _image(shift: int = 0) -> Image.Image:
    image = Image.new("RGB", (160, 120), (90, 90, 90))
    draw = ImageDraw.Draw(image)
    draw.rectangle([20 + shift, 70, 50 + shift, 100], fill=(220, 30, 30))
    draw.ellipse([100, 20, 120, 40], fill=(30, 30, 220))
    return image


DOCS = [
    {"image": _image(0), "question": QUESTION},
    {"image": _image(40), "question": QUESTION.replace("red", "blue")},
    {"image": _image(20), "question": "Look at <image 1> and answer. " + QUESTION},  # interleave_visuals
]


def _doc_to_visual(doc):
    return [doc["image"]]


def _request(doc_id: int, gen_kwargs: dict | None = None) -> Instance:
    """A generate_until request shaped as lmms-eval's simple-model tasks build it."""
    args = (
        DOCS[doc_id]["question"],
        gen_kwargs or {"max_new_tokens": 8, "temperature": 0, "do_sample": False},
        _doc_to_visual,
        doc_id,
        TASK,
        SPLIT,
    )
    return Instance(
        request_type="generate_until",
        arguments=args,
        idx=0,
        metadata={"task": TASK, "doc_id": doc_id, "repeats": 1},
    )


@pytest.fixture(scope="module")
def yesno_model(tiny_qwen_dir):
    model = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), **MODEL_ARGS)
    model.task_dict = {TASK: {SPLIT: DOCS}}
    return model


def test_payload_has_finite_logits_and_probability(yesno_model):
    responses = yesno_model.generate_until([_request(0), _request(1)])
    assert len(responses) == 2 and all(isinstance(r, str) for r in responses)
    for response in responses:
        logits = decode_payload(response)
        assert logits is not None
        assert math.isfinite(logits.logit_yes) and math.isfinite(logits.logit_no)
        assert 0.0 < logits.p_yes < 1.0
        assert parse_yes_no(response) == logits.answer
    # the two prompts differ, so their logits do
    assert decode_payload(responses[0]) != decode_payload(responses[1])


def test_deterministic_and_order_preserving(yesno_model):
    first = yesno_model.generate_until([_request(0), _request(1)])
    second = yesno_model.generate_until([_request(1), _request(0)])
    assert first == second[::-1]


@pytest.mark.parametrize("doc_id, interleave", [(0, False), (2, True)])
def test_logits_are_the_first_generated_tokens(yesno_model, monkeypatch, doc_id, interleave):
    """Run lmms-eval's own Qwen2_5_VL.generate_until on the same request while spying on
    model.generate: same model inputs, and our payload equals the first step's raw logits."""
    monkeypatch.setattr(yesno_model, "interleave_visuals", interleave)
    hf_model = yesno_model.model
    real_generate = hf_model.generate
    seen = {}

    def spy(**kwargs):
        seen["inputs"] = {k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
        out = real_generate(**kwargs, output_logits=True, output_scores=True, return_dict_in_generate=True)
        seen["logits"], seen["scores"] = out.logits, out.scores
        return out.sequences

    hf_model.generate = spy
    try:
        request = _request(doc_id, {"max_new_tokens": 2, "temperature": 0})
        text = Qwen2_5_VL.generate_until(yesno_model, [request])[0]
    finally:
        del hf_model.generate
    assert isinstance(text, str)

    ours = yesno_model.yesno_prepare_inputs(DOCS[doc_id]["question"], [DOCS[doc_id]["image"]])
    assert set(ours.keys()) == set(seen["inputs"])
    assert int((ours["input_ids"] == yesno_model.model.config.image_token_id).sum()) > 0
    for key, value in ours.items():
        assert torch.equal(value, seen["inputs"][key]), key

    payload = decode_payload(yesno_model.generate_until([_request(doc_id)])[0])
    yes_id, no_id = yesno_model.answer_tokens().yes_ids[0], yesno_model.answer_tokens().no_ids[0]
    first_step = seen["logits"][0][0].float()
    # the scorer's forward and generate's first step are two float32 forwards (another CPU or thread
    # count may round their last bits apart): equal to LOGIT_TOL
    assert payload.logit_yes == pytest.approx(float(first_step[yes_id]), abs=LOGIT_TOL)
    assert payload.logit_no == pytest.approx(float(first_step[no_id]), abs=LOGIT_TOL)
    assert payload.text == yesno_model.tokenizer.decode([int(first_step.argmax())])
    # greedy generation emitted exactly that argmax token first
    first_generated = seen["scores"][0][0].argmax()
    assert int(first_generated) == int(first_step.argmax())


def test_yes_no_ids_of_the_tiny_tokenizer(yesno_model):
    tokenizer = yesno_model.tokenizer
    yes_id, no_id = yes_no_token_ids(tokenizer)
    assert tokenizer.decode([yes_id]) == "Yes" and tokenizer.decode([no_id]) == "No"


def test_multi_token_answer_word_is_a_clear_error(yesno_model, tiny_qwen_dir):
    with pytest.raises(YesNoTokenError, match=r"'Absolutely' is not a single token .* yes_text=/no_text="):
        single_token_id(yesno_model.tokenizer, "Absolutely")
    with pytest.raises(YesNoTokenError, match="same token id"):
        yes_no_token_ids(yesno_model.tokenizer, "Yes", "Yes")
    with pytest.raises(YesNoTokenError, match="'Yes please' is not a single token"):
        Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), yes_text="Yes please", **MODEL_ARGS)


def test_tokenizer_without_single_token_yes_no_fails_clearly():
    """A byte-level tokenizer with no merges spells "Yes" as three tokens."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.add_tokens([chr(c) for c in range(32, 127)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
    with pytest.raises(YesNoTokenError, match=r"'Yes' is not a single token .* 3 tokens \['Y', 'e', 's'\]"):
        yes_no_token_ids(tokenizer)


def test_loglikelihood_is_a_clear_error(yesno_model):
    request = Instance(
        request_type="loglikelihood",
        arguments=("Q", " Yes", _doc_to_visual, 0, TASK, SPLIT),
        idx=0,
        metadata={"task": TASK, "doc_id": 0, "repeats": 1},
    )
    with pytest.raises(NotImplementedError, match="no loglikelihood.*generate_until"):
        yesno_model.loglikelihood([request])


def test_text_only_request_and_no_visuals(yesno_model):
    request = Instance(
        request_type="generate_until",
        arguments=("Is it? Answer yes or no.", {}, None, 0, TASK, SPLIT),
        idx=0,
        metadata={"task": TASK, "doc_id": 0, "repeats": 1},
    )
    payload = decode_payload(yesno_model.generate_until([request])[0])
    assert payload is not None and 0.0 < payload.p_yes < 1.0


@pytest.mark.parametrize("batch_size", [2, 3])
def test_batched_scoring_equals_one_by_one(tiny_qwen_dir, batch_size):
    """batch_size=N pads left and runs N prompts per forward pass: the same answers as batch_size=1
    (prompts of different lengths, so padding is really exercised), in request order. Compared in
    float32: lmms-eval loads Qwen2.5-VL in bfloat16, where padded shapes move a logit by its last
    bit (~1e-3), as in lmms-eval's own batched generation."""
    # the padded-batch path alone (grouping by image and prefix sharing: test_hf_yesno_grouped.py)
    one = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), batch_size=1, group_images=False, **MODEL_ARGS)
    many = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), batch_size=batch_size, group_images=False, **MODEL_ARGS)
    for model in (one, many):
        model.task_dict = {TASK: {SPLIT: DOCS}}
        model.model.float()
    requests = [_request(i % 3) for i in range(5)]
    lengths = {len(one.yesno_prepare_inputs(DOCS[i]["question"], [DOCS[i]["image"]])["input_ids"][0]) for i in range(3)}
    assert len(lengths) > 1
    calls = []
    real_forward = many.model.forward

    def counting_forward(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return real_forward(*args, **kwargs)

    many.model.forward = counting_forward
    try:
        batched = [decode_payload(r) for r in many.generate_until(requests)]
    finally:
        del many.model.forward
    single = [decode_payload(r) for r in one.generate_until(requests)]
    assert calls[0] == batch_size and sum(calls) == len(requests)  # really batched
    for a, b in zip(batched, single, strict=True):
        assert a.logit_yes == pytest.approx(b.logit_yes, abs=1e-5)
        assert a.logit_no == pytest.approx(b.logit_no, abs=1e-5)
        assert a.text == b.text
