"""The tiny offline Qwen2.5-VL: loads with the Auto classes, Qwen2.5-VL's tokens and prompt
format, deterministic weights, and a real generate() on an image."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from PIL import Image
from transformers import AutoProcessor, AutoTokenizer, Qwen2_5_VLForConditionalGeneration

from spatial_tasks.models.tiny_qwen import SPECIAL_TOKENS, build_tiny_qwen2_5_vl


@pytest.fixture(scope="module")
def tokenizer(tiny_qwen_dir):
    return AutoTokenizer.from_pretrained(tiny_qwen_dir)


def test_folder_is_small_and_complete(tiny_qwen_dir: Path):
    names = {p.name for p in tiny_qwen_dir.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "processor_config.json",
        "chat_template.jinja",
    } <= names
    size = sum(p.stat().st_size for p in tiny_qwen_dir.iterdir())
    assert size < 2_000_000


def test_yes_and_no_are_single_tokens(tokenizer):
    for word in ("Yes", "No", " Yes", " No", "yes", "no"):
        ids = tokenizer.encode(word, add_special_tokens=False)
        assert len(ids) == 1, (word, tokenizer.convert_ids_to_tokens(ids))
        assert tokenizer.decode(ids) == word


def test_special_tokens_follow_the_bpe_vocabulary(tokenizer, tiny_qwen_dir):
    ids = [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert len(SPECIAL_TOKENS) == 14
    assert ids == list(range(len(tokenizer) - 14, len(tokenizer)))
    for token, token_id in zip(SPECIAL_TOKENS, ids, strict=True):
        assert tokenizer.encode(f"a{token}b", add_special_tokens=False)[1] == token_id
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"

    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_qwen_dir)
    config = model.config
    assert config.image_token_id == tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert config.video_token_id == tokenizer.convert_tokens_to_ids("<|video_pad|>")
    assert config.vision_start_token_id == tokenizer.convert_tokens_to_ids("<|vision_start|>")
    assert config.text_config.vocab_size == len(tokenizer)
    assert (config.text_config.hidden_size, config.text_config.num_hidden_layers) == (64, 2)
    assert (
        config.vision_config.depth,
        config.vision_config.hidden_size,
        config.vision_config.patch_size,
    ) == (2, 32, 14)


def test_chat_template_renders_qwen2_5_vl_prompt(tiny_qwen_dir):
    processor = AutoProcessor.from_pretrained(tiny_qwen_dir)
    image = Image.new("RGB", (64, 64))
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": [{"type": "image", "image": image}, {"type": "text", "text": "Is it red?"}],
        },
    ]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Is it red?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # default system turn, string content, an assistant turn, a video part
    text = processor.apply_chat_template(
        [
            {
                "role": "user",
                "content": [{"type": "video", "video": "v.mp4"}, {"type": "text", "text": "Hi"}],
            },
            {"role": "assistant", "content": "Yes"},
        ],
        tokenize=False,
    )
    assert text == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>Hi<|im_end|>\n"
        "<|im_start|>assistant\nYes<|im_end|>\n"
    )


def _digest(path: Path) -> str:
    return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()


def test_same_seed_same_weights(tiny_qwen_dir, tmp_path):
    state = torch.random.get_rng_state()
    again = build_tiny_qwen2_5_vl(tmp_path / "again", seed=0)
    assert torch.equal(state, torch.random.get_rng_state())  # global RNG untouched
    assert _digest(again) == _digest(tiny_qwen_dir)
    for name in ("tokenizer.json", "config.json", "processor_config.json"):
        assert (again / name).read_bytes() == (tiny_qwen_dir / name).read_bytes()
    other = build_tiny_qwen2_5_vl(tmp_path / "other", seed=1)
    assert _digest(other) != _digest(tiny_qwen_dir)


def test_generates_from_an_image(tiny_qwen_dir):
    processor = AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_qwen_dir).eval()
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Is it red?"}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=[Image.new("RGB", (120, 90), (200, 30, 30))], return_tensors="pt")
    assert inputs["image_grid_thw"].tolist() == [[1, 6, 8]]  # 84 x 112 pixels after smart resize
    out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert 1 <= out.shape[1] - inputs["input_ids"].shape[1] <= 3


@pytest.mark.parametrize("shape, billions", [("mid", (0.02, 0.2)), ("3b", (3.6, 3.9))])
def test_benchmark_shapes_build_valid_configs(tokenizer, shape, billions):
    """The throughput benchmark's shapes: valid Qwen2.5-VL configs; "3b" has the real model's size
    (~3.75 B parameters, counted on the meta device without allocating them)."""
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    from spatial_tasks.models.tiny_qwen import _config

    config = _config(tokenizer, shape)
    text = config.text_config
    head_dim = text.hidden_size // text.num_attention_heads
    assert sum(text.rope_parameters["mrope_section"]) == head_dim // 2
    assert config.vision_config.out_hidden_size == text.hidden_size
    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(config)
    params = sum(p.numel() for p in model.parameters()) / 1e9
    assert billions[0] < params < billions[1]
