"""The packed pipeline (spatial_tasks.models.packed) part by part, against the per-question path it
replaces, on the tiny and mid Qwen2.5-VL builds' real code:

* the image pool gives byte for byte the pixels the per-question path hands the processor;
* uint8 normalised and patchified by the image processor on the device equals the processor's output;
* prefix + suffix tokens equal the processor's input ids, and the M-RoPE positions computed ahead
  equal the model's own for the whole prompt;
* every question's l_Yes/l_No equal batch 1 to 1e-5 in float32, argmax included -- mixed prompt
  lengths, 1 to 8 questions per image, a two-image doc and a doc without an image;
* one vision call and one language-model forward per window; results in request order.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo, process_vision_info
from spatial_tasks.models.lmms_requests import image_key
from spatial_tasks.models.packed import ImagePool, QwenPacked, Stages, packed_by_default, plan_windows
from spatial_tasks.models.scoring_paths import ONE_BY_ONE, PACKED, PADDED, PREPARED_ONCE

ARGS = {"device": "cpu", "device_map": "cpu", "min_pixels": 3136, "max_pixels": 50176, "dtype": "float32"}
TOL = 1e-5


def _image(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    image = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    draw = ImageDraw.Draw(image)
    draw.rectangle([10, 10, 40 + seed, 40], fill=(220, 30, 30))
    return image


IMAGES = [_image(i, size) for i, size in enumerate([(160, 120), (200, 100), (96, 96), (250, 180), (64, 200)])]
WORDS = ["sphere", "big blue sphere", "cube", "small yellow cube standing on the left of the table", "cone",
         "torus", "red cylinder", "pyramid"]


def _docs() -> list[dict]:
    """1 to 8 questions per image (8, 1, 3, 5, 2), prompts of differing lengths, a two-image doc and
    a doc without an image, in a scrambled order."""
    docs = []
    for image, count in zip(IMAGES, [8, 1, 3, 5, 2], strict=True):
        for j in range(count):
            docs.append({"images": [image], "q": f"Is the red cube closer to the camera than the {WORDS[j]}? "
                                                 "Answer with yes or no."})
    docs.append({"images": [IMAGES[0], IMAGES[2]], "q": "Is the cube in both pictures? Answer yes or no."})
    docs.append({"images": [], "q": "Is the sky blue? Answer with yes or no."})
    order = np.random.default_rng(0).permutation(len(docs))
    return [docs[i] for i in order]


DOCS = _docs()


def _items() -> list[tuple[str, list]]:
    return [(doc["q"], doc["images"]) for doc in DOCS]


@pytest.fixture(scope="module")
def mid_qwen_dir(tmp_path_factory):
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    return build_tiny_qwen2_5_vl(tmp_path_factory.mktemp("mid") / "qwen", seed=0, shape="mid")


@pytest.fixture(scope="module")
def tiny(tiny_qwen_dir) -> Qwen2_5_VLYesNo:
    return Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), **ARGS)


def test_the_pool_gives_the_pixels_of_the_per_question_path(tiny):
    """lmms-eval's JPEG data URL, qwen_vl_utils' decode and resize: the same bytes, image by image."""
    pool = ImagePool(tiny.packed_load_image, workers=2)
    try:
        for i, image in enumerate(IMAGES):
            pool.submit(str(i), image)
            pool.submit(str(i), image)  # once per key
        for i, image in enumerate(IMAGES):
            today = process_vision_info([tiny._yesno_messages("question", [image])])[0][0]
            got = pool.take(str(i))
            assert got.dtype == torch.uint8 and tuple(got.shape) == (today.height, today.width, 3)
            assert np.array_equal(got.numpy(), np.asarray(today.convert("RGB")))
        assert pool.cpu_seconds > 0
    finally:
        pool.close()


def test_a_bad_preparation_is_named():
    pool = ImagePool(lambda image: np.zeros((4, 4), dtype=np.float32), workers=1)
    try:
        pool.submit("k", None)
        with pytest.raises(ValueError, match="prepared as float32 \\(4, 4\\), not uint8 HxWx3"):
            pool.take("k")
    finally:
        pool.close()


def test_normalise_and_patchify_on_the_device_equal_the_processor(tiny):
    scorer = QwenPacked(tiny)
    try:
        images = [torch.from_numpy(tiny.packed_load_image(im)).permute(2, 0, 1) for im in IMAGES]
        pixels, grids = scorer.pixels(images)
        today = [tiny.yesno_prepare_inputs("q", [im]) for im in IMAGES]
        want = torch.cat([t["pixel_values"] for t in today])
        assert pixels.shape == want.shape
        assert float((pixels - want).abs().max()) <= 1e-6
        assert torch.equal(grids, torch.cat([t["image_grid_thw"] for t in today]).cpu())
    finally:
        scorer.close()


def test_prefix_plus_suffix_is_the_processors_input_ids_and_positions(tiny):
    """Each question's row part (prefix, then its own suffix) is exactly the ids the per-question path
    builds, and its positions are the model's own M-RoPE positions of that prompt."""
    scorer = QwenPacked(tiny)
    try:
        items = _items()
        keys = [tuple(image_key(im) for im in images) for _, images in items]
        groups, suffixes = scorer.groups(items, keys)
        grids = {}
        for group in groups:
            for key, image in zip(group.keys, group.visuals, strict=True):
                grids[key] = scorer.pixels([torch.from_numpy(tiny.packed_load_image(image)).permute(2, 0, 1)])[1][0]
        assert sum(len(g.questions) for g in groups) == len(items)
        assert len(groups) == 7  # five images, the two-image doc, the doc without one
        for group in groups:
            grid = torch.stack([grids[k] for k in group.keys]) if group.keys else torch.zeros((0, 3), dtype=torch.long)
            prefix_ids, prefix_pos = scorer.prefix(group.head, grid)
            for q in group.questions:
                today = tiny.yesno_prepare_inputs(*items[q])
                ids = today["input_ids"][0]
                assert torch.equal(torch.cat([prefix_ids, torch.tensor(suffixes[q], dtype=torch.long)]), ids)
                full, _ = tiny.model.model.get_rope_index(ids[None], mm_token_type_ids=today["mm_token_type_ids"],
                                                          image_grid_thw=today.get("image_grid_thw"),
                                                          attention_mask=torch.ones_like(ids[None]))
                start = int(prefix_pos.max()) + 1 if prefix_pos.numel() else 0
                suffix_pos = (start + torch.arange(len(suffixes[q]))).expand(3, -1)
                assert torch.equal(torch.cat([prefix_pos, suffix_pos], 1), full[:, 0])
    finally:
        scorer.close()


def test_windows_hold_whole_groups_and_split_big_ones():
    from spatial_tasks.models.packed import Group

    groups = [Group("a", ("a",), [], list(range(0, 8))), Group("b", ("b",), [], [8]),
              Group("c", ("c",), [], [9, 10, 11])]
    windows = plan_windows(groups, 3)
    assert [[(g.head, qs) for g, qs in w.rows] for w in windows] == [
        [("a", [0, 1, 2])], [("a", [3, 4, 5])], [("a", [6, 7]), ("b", [8])], [("c", [9, 10, 11])]]
    assert all(len(w.questions) <= 3 for w in windows)
    assert plan_windows(groups, 16)[0].keys == ["a", "b", "c"]


def _scores(model, items, batch_size: int, packed: bool):
    return model.score_items(items, batch_size, paths=(PACKED,) if packed else (ONE_BY_ONE,))


@pytest.mark.parametrize("shape", ["tiny", "mid"])
def test_packed_equals_batch_one_in_float32(shape, tiny_qwen_dir, mid_qwen_dir):
    path = tiny_qwen_dir if shape == "tiny" else mid_qwen_dir
    model = Qwen2_5_VLYesNo(pretrained=str(path), **ARGS)
    items = _items()
    one = _scores(model, items, 1, packed=False)
    assert len({round(s.logit_yes - s.logit_no, 5) for s in one}) > 5  # the prompts reach the logits
    for size in (1, 3, 8, 32):
        packed = _scores(model, items, size, packed=True)
        for a, b in zip(one, packed, strict=True):
            assert abs(a.logit_yes - b.logit_yes) <= TOL and abs(a.logit_no - b.logit_no) <= TOL, size
            assert a.text == b.text


def test_bfloat16_packed_keeps_the_argmax(tiny_qwen_dir):
    """bf16 changes the last bits of a padded or packed matrix product; the argmax of every question
    stays (the tiny model's logits are far enough apart) and the difference is small."""
    model = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), **{**ARGS, "dtype": "bfloat16"})
    items = _items()
    one, packed = _scores(model, items, 1, False), _scores(model, items, 8, True)
    same = sum(a.text == b.text for a, b in zip(one, packed, strict=True))
    diff = max(max(abs(a.logit_yes - b.logit_yes), abs(a.logit_no - b.logit_no)) for a, b in zip(one, packed))
    print(f"bf16 packed vs batch 1: argmax equal {same}/{len(items)}, max |Δ logit| {diff:.3g}")
    assert same >= 0.99 * len(items)
    assert diff < 0.1


def test_one_vision_call_and_one_language_model_forward_per_window(tiny, monkeypatch):
    visual, language = tiny.model.model.visual, tiny.model.model.language_model
    images_per_call, forwards = [], []
    real_visual, real_language = visual.forward, language.forward
    monkeypatch.setattr(visual, "forward", lambda x, grid_thw=None, **kw: images_per_call.append(len(grid_thw))
                        or real_visual(x, grid_thw=grid_thw, **kw))
    monkeypatch.setattr(language, "forward", lambda *a, **kw: forwards.append(kw["inputs_embeds"].shape[0])
                        or real_language(*a, **kw))
    items = _items()
    tiny.score_items(items, 8, paths=(PACKED,))
    groups = {tuple(image_key(im) for im in images) for _, images in items}
    keys = [tuple(image_key(im) for im in images) for _, images in items]
    windows = plan_windows(QwenPacked(tiny).groups(items, keys)[0], 8)
    assert len(forwards) == len(windows) and len(groups) == 7
    assert sum(images_per_call) == 5  # each distinct image once (the two-image doc's are shared)
    assert len(images_per_call) <= len(windows)


def test_results_come_back_in_request_order_with_progress(tiny):
    items = _items()
    counted: list[int] = []
    packed = tiny.score_items(items, 4, paths=(PACKED,), on_batch=counted.append)
    alone = [tiny.score_items([item], 4, paths=(PACKED,))[0] for item in items[:4]]
    for a, b in zip(alone, packed[:4], strict=True):
        assert abs(a.logit_yes - b.logit_yes) <= TOL and a.text == b.text
    assert sum(counted) == len(items)


def test_stages_are_timed(tiny):
    tiny.stages = Stages("cpu")
    try:
        tiny.score_items(_items(), 8, paths=(PACKED,))
        seconds = tiny.stages.seconds()
    finally:
        tiny.stages = None
    assert {"prepare (host)", "upload + normalise (device)", "vision", "language model", "copy to host"} <= set(seconds)
    assert all(s >= 0 for s in seconds.values()) and tiny.stages is None


def test_packed_is_a_validated_model_arg(tiny_qwen_dir):
    with pytest.raises(ValueError, match="packed='sometimes' in --model_args; it takes true, false or auto"):
        Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), packed="sometimes", **ARGS)
    auto = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), **ARGS)
    assert (auto.scoring.path == PACKED) == packed_by_default(torch.device("cpu"), torch.float32)
    assert PACKED not in Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), group_images=False, **ARGS).scoring.order
    forced = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), group_images=False, packed=True, **ARGS)
    assert forced.scoring.order == (PACKED, PADDED, ONE_BY_ONE)
    eager = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), packed=True, attn_implementation="eager", **ARGS)
    assert eager.scoring.path == PACKED
    items = _items()[:6]
    for a, b in zip(_scores(eager, items, 1, False), _scores(eager, items, 8, True), strict=True):
        assert abs(a.logit_yes - b.logit_yes) <= TOL and a.text == b.text


@pytest.mark.parametrize("family", ["qwen3_vl", "gemma3", "llava_onevision", "internvl", "molmo2"])
def test_every_hf_yesno_family_prepares_each_image_once(family, tiny_family_dirs, monkeypatch):
    """hf_yesno packs every family whose entry says so: Qwen3-VL like Qwen2.5-VL (QwenPacked); the
    others (PreparedOnce) prepare each distinct image once and take their rows from its prefix --
    equal to batch 1. A family whose tensors follow another rule (Molmo2's patch indices; its entry
    does not offer the pipeline) is found on the first window when the pipeline is forced on it:
    the path is dropped for the run, with the tensor named, and the next path scores."""
    from spatial_tasks.models import packed as packed_module
    from spatial_tasks.models.hf_yesno import HFYesNo

    model = HFYesNo(str(tiny_family_dirs(family)), device="cpu", dtype="float32", batch_size=8)
    pipeline = PACKED if family == "qwen3_vl" else PREPARED_ONCE
    assert model.scoring.path == (PADDED if family == "molmo2" else pipeline)
    prepared: list[str] = []
    real = packed_module.ImagePool._job
    monkeypatch.setattr(packed_module.ImagePool, "_job", lambda pool, visual: prepared.append(image_key(visual))
                        or real(pool, visual))
    items = [item for item in _items() if item[1]]  # prompts with images (a text-only one is scored alone)
    one = [model.score_yes_no(*item) for item in items]
    got = model.score_items(items, 8, paths=(pipeline, ONE_BY_ONE))
    for a, b in zip(one, got, strict=True):
        assert abs(a.logit_yes - b.logit_yes) <= TOL and abs(a.logit_no - b.logit_no) <= TOL and a.text == b.text
    expected = "QwenPacked" if family == "qwen3_vl" else "PreparedOnce"
    assert type(model.path_runs.strategies[pipeline].pipeline).__name__ == expected
    if family == "molmo2":
        assert model.scoring.dropped == (f"{PREPARED_ONCE}: image_token_pooling: values differ",)
    else:
        assert not model.scoring.dropped
        # each distinct image prepared once: kept (features or uploaded pixels) until its last window
        assert sorted(prepared) == sorted({image_key(im) for _, images in items for im in images})
