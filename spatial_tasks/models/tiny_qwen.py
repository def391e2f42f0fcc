"""A tiny, randomly initialised Qwen2.5-VL that is built locally and runs offline.

No registry package ships VLM weights and the Hugging Face Hub is unreachable in tests, so
tests and demos use this stand-in: the real ``transformers`` Qwen2.5-VL architecture (text
hidden size 64, 2 layers; vision depth 2, hidden 32, patch 14), a byte-level BPE tokenizer
trained here on a small embedded corpus, Qwen2.5-VL's 14 special tokens and a chat template
that renders Qwen2.5-VL's prompt format. Its answers are noise; it exercises the real code
paths (lmms-eval's ``qwen2_5_vl`` model, ``qwen_vl_utils``, the HF processor, ``generate``).

    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl
    path = build_tiny_qwen2_5_vl(Path("/tmp/tiny-qwen"))
    # lmms-eval --model qwen2_5_vl \
    #   --model_args pretrained=/tmp/tiny-qwen,device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176

Also runnable as ``python -m spatial_tasks.models.tiny_qwen OUT_DIR [--seed N]``.

The same seed gives byte-identical weights; the tokenizer does not depend on the seed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from spatial_tasks.paths import output_folder

# Qwen2.5-VL's special tokens, in the order (and therefore relative id order) of the real
# checkpoints, where they follow the BPE vocabulary.
SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

# Renders the Qwen2.5-VL chat format (written for this project, same output as the real one
# for text, image and video turns; no tool calling):
#   <|im_start|>system\n...<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>
#   question<|im_end|>\n<|im_start|>assistant\n
# A default system turn is added when the conversation has none. Content may be a string or a
# list of parts: {"type": "text"}, {"type": "image" | "image_url"} or {"type": "video"} (a part
# without "type" is recognised by its "image"/"image_url"/"video" key). ``add_vision_id=True``
# prefixes each visual with "Picture N: " / "Video N: ".
CHAT_TEMPLATE = (
    "{%- set n_images = namespace(value=0) -%}"
    "{%- set n_videos = namespace(value=0) -%}"
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM_PROMPT + "<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}"
    "{{- message['content'] -}}"
    "{%- else -%}"
    "{%- for part in message['content'] -%}"
    "{%- set kind = part['type'] if 'type' in part else ('image' if ('image' in part or 'image_url' in part)"
    " else ('video' if 'video' in part else 'text')) -%}"
    "{%- if kind in ['image', 'image_url'] -%}"
    "{%- set n_images.value = n_images.value + 1 -%}"
    "{%- if add_vision_id is defined and add_vision_id -%}"
    "{{- 'Picture ' + n_images.value|string + ': ' -}}"
    "{%- endif -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif kind == 'video' -%}"
    "{%- set n_videos.value = n_videos.value + 1 -%}"
    "{%- if add_vision_id is defined and add_vision_id -%}"
    "{{- 'Video ' + n_videos.value|string + ': ' -}}"
    "{%- endif -%}"
    "{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif 'text' in part -%}"
    "{{- part['text'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
)

# Training text for the BPE tokenizer: the words of spatial questions, answers, colours and
# shapes, and the system prompt, so that prompts tokenise into plausible pieces and the answer
# words are single tokens. Lines starting with "Yes"/"No" make the bare words (the first token
# after "assistant\n") merge into one token; the spaced forms come from running text.
_CORPUS_LINES: tuple[str, ...] = (
    "You are a helpful assistant.",
    "system",
    "user",
    "assistant",
    "Yes",
    "No",
    "yes",
    "no",
    "Yes.",
    "No.",
    "Yes,",
    "No,",
    "YES",
    "NO",
    "Yes, it is.",
    "No, it is not.",
    "Yes, the object is closer.",
    "No, the object is farther.",
    "Answer with yes or no.",
    "Answer Yes or No.",
    "Answer with only one word.",
    "Answer with the option's letter from the given choices directly.",
    "Please answer the question with a single word: Yes or No.",
    "Is the red cube closer to the camera than the blue sphere?",
    "Is the green sphere farther from the camera than the yellow cube?",
    "Is the cyan cube to the left or right of the magenta sphere?",
    "Is the black sphere above or below the white cube?",
    "Which object is closer to the camera, A or B?",
    "Which object is farther from the viewer?",
    "Is the orange cylinder in front of or behind the purple cone?",
    "Is the gray box on top of the brown table?",
    "The red cube is to the left of the blue sphere and above the green cylinder.",
    "The yellow sphere is behind the cyan cube, near the bottom of the image.",
    "The magenta cone is far away, at the top of the picture; the black cube is near.",
    "Objects that are farther appear higher in the image and smaller.",
    "A tunnel has a floor, a ceiling and two walls; the camera looks down the corridor.",
    "What is the distance between the two objects? About 2 meters.",
    "Options: A. left B. right C. above D. below E. front F. back",
    "The answer is A. The answer is B. The answer is C. The answer is D.",
    "Question: How many objects are in the image? Answer: 2, 3, 4, 5, 6, 7, 8, 9, 10.",
    "Picture 1: an image of a room. Video 1: a clip of a street.",
    "left right above below up down top bottom front back behind under over near far",
    "closer farther nearer further inside outside between next to beside facing toward away",
    "red green blue yellow cyan magenta black white gray grey orange purple brown pink",
    "cube sphere cylinder cone box ball object objects camera viewer image picture scene",
    "small large big tiny bigger smaller same size shape colour color height depth width",
    "the a an of to in on at is are was be it this that which what how many with from by",
    "Describe the image. The image shows a red cube and a blue sphere on a wooden floor.",
    "Think step by step, then answer.",
)


def training_corpus() -> list[str]:
    # Repetition only raises pair counts; the answer words get the most weight.
    answers = [f"{word}\n" for word in ("Yes", "No", "yes", "no")] * 40
    return list(_CORPUS_LINES) * 20 + answers


def _train_tokenizer(vocab_size: int):
    """A Qwen2Tokenizer (byte-level BPE) trained on the embedded corpus, plus the special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AddedToken
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    # Borrow the normaliser/pre-tokeniser/decoder of transformers' own Qwen2 tokenizer, so the
    # merges are learned on exactly the pieces that Qwen2Tokenizer produces when it is loaded.
    reference = Qwen2Tokenizer().backend_tokenizer
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = reference.normalizer
    bpe.pre_tokenizer = reference.pre_tokenizer
    bpe.decoder = reference.decoder
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(training_corpus(), trainer=trainer)
    data = json.loads(bpe.to_str())
    vocab: dict[str, int] = data["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in data["model"]["merges"]]

    # Specials go after the BPE vocabulary, as in the real checkpoints.
    for token in SPECIAL_TOKENS:
        vocab[token] = len(vocab)
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=32768,
    )
    tokenizer.add_special_tokens(
        {
            "additional_special_tokens": [
                AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS
            ]
        },
        replace_extra_special_tokens=True,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _check_tokenizer(tokenizer) -> None:
    for token in SPECIAL_TOKENS:
        ids = tokenizer.encode(token, add_special_tokens=False)
        if len(ids) != 1:
            raise RuntimeError(f"special token {token!r} is not a single token: {ids}")
    for word in ("Yes", "No"):
        ids = tokenizer.encode(word, add_special_tokens=False)
        if len(ids) != 1:
            raise RuntimeError(f"{word!r} must be a single token, got {tokenizer.convert_ids_to_tokens(ids)}")


# Model shapes. "tiny" is what tests use; "mid" scales the real 3B down so that a CPU run of the
# throughput benchmark takes minutes while the vision tower keeps a realistic share of the cost;
# "served" is "tiny" with the head size a real engine's attention takes (vLLM's CPU kernels: 32 to
# 512; the .ci/vllm lane); "3b" is Qwen2.5-VL-3B-Instruct's architecture (random weights), for GPU benchmarks. M-RoPE
# sections sum to head_dim / 2.
SHAPES: dict[str, dict[str, dict]] = {
    "tiny": {
        "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "mrope_section": [2, 3, 3]},
        "vision": {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "fullatt_block_indexes": [1]},
    },
    "served": {
        "text": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "mrope_section": [4, 6, 6]},
        "vision": {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "fullatt_block_indexes": [1]},
    },
    # "known": the shape of the models trained on our renders (spatial_tasks/known_models): big enough
    # to bind an object's name to its image tokens, small enough to ship (about 4M parameters).
    "known": {
        "text": {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "mrope_section": [8, 12, 12]},
        "vision": {"depth": 4, "hidden_size": 128, "intermediate_size": 256, "num_heads": 2,
                   "fullatt_block_indexes": [1, 3]},
    },
    "mid": {
        "text": {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 6, "num_attention_heads": 8,
                 "num_key_value_heads": 2, "mrope_section": [8, 12, 12]},
        "vision": {"depth": 8, "hidden_size": 320, "intermediate_size": 864, "num_heads": 5,
                   "fullatt_block_indexes": [3, 7]},
    },
    "3b": {
        "text": {"hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 16,
                 "num_key_value_heads": 2, "mrope_section": [16, 24, 24], "vocab_size": 151936},
        "vision": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                   "fullatt_block_indexes": [7, 15, 23, 31]},
    },
}


def _config(tokenizer, shape: str = "tiny"):
    from transformers import Qwen2_5_VLConfig

    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {sorted(SHAPES)}, not {shape!r}")
    text, vision = dict(SHAPES[shape]["text"]), SHAPES[shape]["vision"]
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    mrope = text.pop("mrope_section")
    text_config = {
        "vocab_size": text.pop("vocab_size", len(tokenizer)),
        **text,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": mrope},
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision_config = {
        **vision,
        "out_hidden_size": text_config["hidden_size"],
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "tokens_per_second": 2,
    }
    return Qwen2_5_VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,  # as the real 3B
    )


def build_tiny_qwen2_5_vl(out_dir: Path, seed: int = 0, shape: str = "tiny", dtype: str = "float32") -> Path:
    """Write a tiny random Qwen2.5-VL (weights, configs, tokenizer, processor) to ``out_dir``.

    The folder loads offline with ``AutoProcessor``, ``AutoTokenizer`` and
    ``Qwen2_5_VLForConditionalGeneration.from_pretrained``. The same ``seed`` gives the same
    weights; the global torch RNG state is left untouched. ``shape``: a key of SHAPES (the
    benchmarks use "mid" and "3b"). Returns ``out_dir``.
    """
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    out_dir = Path(out_dir)
    out_dir = output_folder(Path(out_dir))

    tokenizer = _train_tokenizer(vocab_size=1024)
    _check_tokenizer(tokenizer)
    config = _config(tokenizer, shape)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config).eval().to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(
        bos_token_id=config.text_config.bos_token_id,
        eos_token_id=[config.text_config.eos_token_id, config.text_config.pad_token_id],
        pad_token_id=config.text_config.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(out_dir)

    # Small images by default (lmms-eval's model passes its own min/max_pixels anyway).
    pixels = {"min_pixels": 56 * 56, "max_pixels": 224 * 224}
    sizes = {"patch_size": 14, "temporal_patch_size": 2, "merge_size": 2}
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels, **sizes),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(**pixels, **sizes),
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(out_dir)
    return out_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(build_tiny_qwen2_5_vl(args.out_dir, seed=args.seed))


if __name__ == "__main__":
    main()
