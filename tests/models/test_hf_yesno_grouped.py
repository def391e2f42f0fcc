"""Scores do not depend on batching: qwen2_5_vl_yesno at batch 1, batch 8 ungrouped, batch 8
grouped by image, with shared prefixes and packed give the same first-token logits (float32, 1e-5),
and grouping runs the vision tower once per distinct image -- on the tiny Qwen2.5-VL's real code.
(The packed pipeline's own parts: tests/models/test_packed.py.)"""

from __future__ import annotations

import pytest
from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo
from spatial_tasks.models.lmms_requests import image_key
from spatial_tasks.models.scoring_paths import NothingToShare

ARGS = {"device": "cpu", "device_map": "cpu", "min_pixels": 3136, "max_pixels": 50176, "dtype": "float32"}
TASK, SPLIT = "grouped", "test"


def _image(shift: int, size=(160, 120)) -> Image.Image:
    image = Image.new("RGB", size, (90, 90, 90))
    draw = ImageDraw.Draw(image)
    draw.rectangle([20 + shift, 40, 50 + shift, 70], fill=(220, 30, 30))
    draw.ellipse([90, 20, 110, 40], fill=(30, 30, 220))
    return image


A, B, C = _image(0), _image(40, (200, 100)), _image(10, (96, 96))
A_COPY = _image(0)  # the same pixels as A, another object: another doc's copy of the image
QUESTIONS = ["Is the red cube closer to the camera than the blue sphere? Answer with yes or no.", "Near?",
             "Is the blue sphere farther from the camera than the red cube, seen from where the camera stands?"]
DOCS = [
    {"images": [A], "q": QUESTIONS[0]}, {"images": [B], "q": QUESTIONS[1]}, {"images": [A_COPY], "q": QUESTIONS[2]},
    {"images": [C], "q": QUESTIONS[0]}, {"images": [], "q": "Is the sky blue? Answer with yes or no."},
    {"images": [A, C], "q": QUESTIONS[1]}, {"images": [B], "q": QUESTIONS[2]}, {"images": [A], "q": QUESTIONS[1]},
    {"images": [C], "q": QUESTIONS[2]}, {"images": [B], "q": QUESTIONS[0]}, {"images": [A_COPY], "q": QUESTIONS[0]},
]
DISTINCT = 3  # A (and its copy), B, C


def _requests() -> list[Instance]:
    return [Instance(request_type="generate_until",
                     arguments=(doc["q"], {"max_new_tokens": 8}, lambda d: d["images"], i, TASK, SPLIT), idx=0,
                     metadata={"task": TASK, "doc_id": i, "repeats": 1}) for i, doc in enumerate(DOCS)]


def _model(tiny_qwen_dir, **kwargs) -> Qwen2_5_VLYesNo:
    model = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), **{**ARGS, **kwargs})
    model.task_dict = {TASK: {SPLIT: DOCS}}
    return model


def _count_encoded_images(model) -> list[int]:
    """Images per vision-tower call (the rows of grid_thw), recorded on the real module."""
    counts: list[int] = []
    visual = model.model.model.visual
    real = visual.forward

    def counting(hidden_states, grid_thw=None, **kwargs):
        counts.append(int(grid_thw.shape[0]))
        return real(hidden_states, grid_thw=grid_thw, **kwargs)

    visual.forward = counting
    return counts


def test_image_key_is_the_pixels():
    assert image_key(A) == image_key(A_COPY) and A is not A_COPY
    assert image_key(A) != image_key(B) != image_key(C)
    assert image_key(A) != image_key(A.convert("L"))


@pytest.fixture(scope="module")
def scores(tiny_qwen_dir):
    out, encoded = {}, {}
    shared: dict[str, list[bool]] = {}
    for name, kwargs in {"batch 1": dict(batch_size=1, group_images=False),
                         "batch 8 ungrouped": dict(batch_size=8, group_images=False),
                         "batch 8 grouped": dict(batch_size=8, group_images=True, share_prefix=False, packed=False),
                         "batch 3 grouped, window 4": dict(batch_size=3, group_images=True, group_window=4,
                                                           share_prefix=False, packed=False),
                         "batch 8 grouped, shared prefix": dict(batch_size=8, group_images=True, share_prefix=True,
                                                                packed=False),
                         "batch 3 grouped, shared prefix": dict(batch_size=3, group_images=True, packed=False),
                         "batch 8 packed": dict(batch_size=8, packed=True),
                         "batch 3 packed, window 4": dict(batch_size=3, group_window=4, packed=True)}.items():
        model = _model(tiny_qwen_dir, **kwargs)
        encoded[name] = _count_encoded_images(model)
        used = shared.setdefault(name, [])
        real = model.yesno_forward_shared_prefix

        def spy(inputs, features, row_keys, real=real, used=used):
            one_image = all(len(k) == 1 for k in row_keys)
            repeated = one_image and len({k[0] for k in row_keys}) < len(row_keys)
            try:
                result = real(inputs, features, row_keys)
            except NothingToShare:
                used.append((False, repeated))
                raise
            used.append((True, repeated))
            return result

        model.yesno_forward_shared_prefix = spy
        out[name] = [decode_payload(r) for r in model.generate_until(_requests())]
    return out, encoded, shared


@pytest.mark.parametrize("name", ["batch 8 ungrouped", "batch 8 grouped", "batch 3 grouped, window 4",
                                  "batch 8 grouped, shared prefix", "batch 3 grouped, shared prefix",
                                  "batch 8 packed", "batch 3 packed, window 4"])
def test_scores_do_not_depend_on_batching_or_grouping(scores, name):
    out, _, _ = scores
    for got, want in zip(out[name], out["batch 1"], strict=True):
        assert got.logit_yes == pytest.approx(want.logit_yes, abs=1e-5)
        assert got.logit_no == pytest.approx(want.logit_no, abs=1e-5)
        assert got.p_yes == pytest.approx(want.p_yes, abs=1e-6)
        assert got.text == want.text


def test_shared_prefix_runs_where_an_image_repeats_in_a_batch(scores):
    """The KV-cache path served exactly the batches of one-image requests in which an image is
    asked about more than once; the others (the no-image and two-image requests, and batches of
    distinct images) went through the plain path."""
    _, _, shared = scores
    assert shared["batch 8 grouped"] == [] and shared["batch 1"] == [] and shared["batch 8 packed"] == []
    for name in ("batch 8 grouped, shared prefix", "batch 3 grouped, shared prefix"):
        calls = shared[name]
        assert all(used == repeated for used, repeated in calls), calls
        assert any(used for used, _ in calls) and not all(used for used, _ in calls)


def test_grouping_encodes_each_distinct_image_once(scores):
    _, encoded, _ = scores
    occurrences = sum(len(doc["images"]) for doc in DOCS)
    assert sum(encoded["batch 1"]) == occurrences == 11  # one by one: every image of every request
    assert sum(encoded["batch 8 ungrouped"]) == occurrences
    assert sum(encoded["batch 8 grouped"]) == DISTINCT  # A and its copy in another doc count once
    # windows of 4 requests: an image is encoded once per window it appears in, never more
    windows = [DOCS[i:i + 4] for i in range(0, len(DOCS), 4)]
    per_window = sum(len({image_key(im) for doc in window for im in doc["images"]}) for window in windows)
    assert sum(encoded["batch 3 grouped, window 4"]) == per_window
    assert sum(encoded["batch 8 packed"]) == DISTINCT
    assert sum(encoded["batch 3 packed, window 4"]) == per_window


def test_bad_grouping_args_are_clear_errors(tiny_qwen_dir):
    with pytest.raises(ValueError, match="group_images='maybe' in --model_args; it takes true or false"):
        _model(tiny_qwen_dir, group_images="maybe")
    with pytest.raises(ValueError, match="group_window=0 in --model_args; it takes a whole number >= 1"):
        _model(tiny_qwen_dir, group_window=0)
    with pytest.raises(ValueError, match="dtype='float64' in --model_args; it takes bfloat16, float16, float32"):
        _model(tiny_qwen_dir, dtype="float64")


@pytest.mark.cli
def test_lmms_eval_scores_and_samples_do_not_depend_on_batch_size(tiny_qwen_dir, tmp_path):
    """The real lmms-eval CLI on the bundled logit sample (64 images x 4 questions): batch_size=1
    ungrouped and batch_size=8 with the defaults (packed, on a CPU in float32) log the same records; p(Yes) agrees to 1e-6 (float32;
    the last float digits of a padded matrix product may differ)."""
    from lmms import TINY_QWEN_ARGS, run_lmms_eval

    task = "spatialtunnel_logit_sample_phase"
    base = f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS},dtype=float32"
    # lmms-eval hands its --batch_size to the model (a batch_size in --model_args would clash)
    one = run_lmms_eval(tmp_path / "one", "qwen2_5_vl_yesno", f"{base},group_images=False", task, "--batch_size", "1")
    eight = run_lmms_eval(tmp_path / "eight", "qwen2_5_vl_yesno", base, task, "--batch_size", "8")
    a, b = one.samples[task], eight.samples[task]
    assert len(a) == len(b) == 256
    for x, y in zip(sorted(a, key=lambda s: s["doc_id"]), sorted(b, key=lambda s: s["doc_id"]), strict=True):
        rx, ry = x["v"], y["v"]
        assert rx["p_yes"] == pytest.approx(ry["p_yes"], abs=1e-6)
        assert rx["score"] == pytest.approx(ry["score"], abs=1e-6)
        assert rx["label_mass"] == pytest.approx(ry["label_mass"], abs=1e-6)
        same = {k for k in rx if k not in ("p_yes", "score", "response", "label_mass")}
        assert {k: rx[k] for k in same} == {k: ry[k] for k in same}
    assert one.metrics(task)["v"] == pytest.approx(eight.metrics(task)["v"], abs=1e-6)
