"""Tiny, randomly initialised VLMs of every family we score, built locally and offline.

``families.build_tiny_model(family, out_dir)`` writes a checkpoint folder that loads with
``AutoProcessor`` and ``AutoModelForImageTextToText`` (``HF_HUB_OFFLINE=1``), for the tests,
the demo, CI smoke runs and users checking a pipeline. ``family`` is the transformers
``model_type``; each family's entry (``families.FAMILIES``) names its builder here:

    qwen2_5_vl (tiny_qwen.py)  qwen3_vl  qwen3_vl_moe  llava_onevision  internvl  gemma3  molmo2

Each build is the real transformers architecture at toy sizes (text hidden 64, 2 layers; a
2-layer vision tower; 28-56 px image tiles), a BPE tokenizer trained here on the embedded corpus
of ``tiny_qwen`` with the family's own special tokens and token conventions (byte-level BPE for
the Qwen-based families, SentencePiece-style "▁" pieces and <bos> for Gemma 3), and a chat
template written for this project that renders the family's prompt format (turn markers, where
the image placeholder goes, default system turn or none). Answers are noise; the code path is the
real one. The same seed gives the same weights.

    spatial-tasks tiny-model --family gemma3 --out /tmp/tiny-gemma3
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# "tiny": what tests use. "served": "tiny" with head sizes a real engine's attention takes (vLLM's CPU
# kernels take 32 to 512; the .ci/vllm lane). "mid": a CPU-sized stand-in for throughput figures
# (benchmarks/), with the vision tower keeping a realistic share of the cost (224 px tiles for
# fixed-size towers).
SHAPES: dict[str, dict[str, Any]] = {
    "tiny": {"text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                      "num_key_value_heads": 2, "head_dim": 16},
             "vision": {"hidden_size": 32, "intermediate_size": 64, "layers": 2, "heads": 2}, "side": 56,
             "mrope": [2, 3, 3]},
    "served": {"text": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32},
               "vision": {"hidden_size": 64, "intermediate_size": 128, "layers": 2, "heads": 2}, "side": 56,
               "mrope": [4, 6, 6]},
    "mid": {"text": {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 6, "num_attention_heads": 8,
                     "num_key_value_heads": 2, "head_dim": 64},
            "vision": {"hidden_size": 320, "intermediate_size": 864, "layers": 8, "heads": 5}, "side": 224,
            "mrope": [8, 12, 12]},
}
TEXT = SHAPES["tiny"]["text"]


# --- tokenizers ---------------------------------------------------------------------------

def _bpe_pieces(style: str, vocab_size: int = 1024) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Vocabulary and merges of a BPE trained on tiny_qwen's corpus with the pre-tokenisation of
    ``style``: "bytelevel" (Qwen2's normaliser/pre-tokeniser) or "metaspace" (Gemma's)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers.models.gemma.tokenization_gemma import GemmaTokenizer
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    from spatial_tasks.models.tiny_qwen import training_corpus

    reference = (Qwen2Tokenizer() if style == "bytelevel" else GemmaTokenizer()).backend_tokenizer
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = reference.normalizer
    bpe.pre_tokenizer = reference.pre_tokenizer
    alphabet = pre_tokenizers.ByteLevel.alphabet() if style == "bytelevel" else sorted(
        {c for line in training_corpus() for c in line.replace(" ", "▁")})
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=[], initial_alphabet=alphabet)
    corpus = training_corpus() if style == "bytelevel" else [line.rstrip("\n") for line in training_corpus()]
    bpe.train_from_iterator(corpus, trainer=trainer)
    data = json.loads(bpe.to_str())
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in data["model"]["merges"]]
    return dict(data["model"]["vocab"]), merges


def _qwen_style_tokenizer(specials: list[str], named: dict[str, str], eos: str, pad: str,
                          bos: str | None = None):
    """A byte-level BPE Qwen2Tokenizer whose special tokens follow the BPE vocabulary, as in the
    Qwen-based checkpoints; ``named`` ({"image_token": "<image>"}) become tokenizer attributes
    (``tokenizer.image_token``/``image_token_id``), which the family processors read."""
    from transformers import AddedToken
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    vocab, merges = _bpe_pieces("bytelevel")
    for token in specials:
        vocab.setdefault(token, len(vocab))
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, bos_token=bos, eos_token=eos,
                               pad_token=pad, model_max_length=32768, extra_special_tokens=named or None)
    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken(t, special=True, normalized=False)
                                                                for t in specials]},
                                 replace_extra_special_tokens=False)
    return tokenizer


NEWLINE_RUNS = ("\n", "\n\n", "\n\n\n", "\n\n\n\n")


def _gemma_style_tokenizer(specials: list[str], named: dict[str, str]):
    """A GemmaTokenizer (BPE over "▁"-joined pieces with byte fallback, <bos> added) trained here."""
    from transformers import AddedToken
    from transformers.models.gemma.tokenization_gemma import GemmaTokenizer

    pieces, merges = _bpe_pieces("metaspace")
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"])}
    for byte in range(256):  # byte fallback pieces, as Gemma's vocabulary has them
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    # Runs of newlines are single tokens in Gemma's vocabulary, and serving engines look them up (vLLM's
    # Gemma 3 finds "\n\n" to "\n\n\n\n" around each image's tokens).
    for run in NEWLINE_RUNS:
        vocab.setdefault(run, len(vocab))
    for token in specials:
        vocab.setdefault(token, len(vocab))
    merges = [m for m in merges if m[0] in vocab and m[1] in vocab and m[0] + m[1] in vocab]
    merges += [("\n", "\n"), ("\n\n", "\n"), ("\n\n", "\n\n")]
    tokenizer = GemmaTokenizer(vocab=vocab, merges=merges, extra_special_tokens=named or None)
    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken(t, special=True, normalized=False)
                                                                for t in specials]},
                                 replace_extra_special_tokens=False)
    return tokenizer


# --- chat templates -------------------------------------------------------------------------

def chat_template(*, turn_start: str, turn_end: str, image: str, assistant: str = "assistant",
                  default_system: str | None = None, bos: str = "", system_into_user: bool = False,
                  image_then: str = "") -> str:
    """A Jinja chat template in one family's format (written for this project).

    ``turn_start``/``turn_end`` wrap each turn ("{role}" is replaced by the role), ``image`` is
    the placeholder text per image part (followed by ``image_then``), ``assistant`` names the
    model's role, ``default_system`` is added when a conversation has no system turn,
    ``system_into_user`` folds a system turn into the first user turn (Gemma has no system role)
    and ``bos`` starts the prompt."""
    def turn(role_expr: str) -> str:
        start, end = turn_start.split("{role}")
        return "{{- '" + _esc(start) + "' + " + role_expr + " + '" + _esc(end) + "' -}}"

    parts = ["{{- '" + _esc(bos) + "' -}}", "{%- set ns = namespace(system='') -%}"]
    parts.append("{%- for message in messages -%}")
    if default_system is not None:
        parts.append("{%- if loop.first and message['role'] != 'system' -%}" + turn("'system'")
                     + "{{- '" + _esc(default_system + turn_end) + "' -}}{%- endif -%}")
    if system_into_user:
        parts.append("{%- if message['role'] == 'system' -%}{%- set ns.system = (message['content'] if message['content']"
                     " is string else message['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text')"
                     " | join('')) + '\\n\\n' -%}{%- else -%}")
    role = "('" + _esc(assistant) + "' if message['role'] == 'assistant' else message['role'])"
    parts.append(turn(role))
    if system_into_user:
        parts.append("{{- ns.system -}}{%- set ns.system = '' -%}")
    parts.append(
        "{%- if message['content'] is string -%}{{- message['content'] -}}{%- else -%}"
        "{%- for part in message['content'] -%}"
        "{%- if part['type'] in ['image', 'image_url'] or 'image' in part -%}"
        "{{- '" + _esc(image + image_then) + "' -}}"
        "{%- elif 'text' in part -%}{{- part['text'] -}}{%- endif -%}"
        "{%- endfor -%}{%- endif -%}"
        "{{- '" + _esc(turn_end) + "' -}}")
    if system_into_user:
        parts.append("{%- endif -%}")
    parts.append("{%- endfor -%}")
    start = turn_start.split("{role}")
    parts.append("{%- if add_generation_prompt -%}{{- '" + _esc(start[0] + assistant + start[1]) + "' -}}{%- endif -%}")
    return "".join(parts)


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")


QWEN_TURNS = {"turn_start": "<|im_start|>{role}\n", "turn_end": "<|im_end|>\n"}
QWEN_VISION = ["<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
QWEN_BASE = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


# --- the builders: one per family, each named by its entry in families.FAMILIES -------------

def _save_model(config, model_class, out_dir: Path, seed: int, generation: dict[str, Any]) -> None:
    import torch
    from transformers import GenerationConfig

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config).eval().to(torch.float32)
    model.generation_config = GenerationConfig(do_sample=False, **generation)
    model.save_pretrained(out_dir)


def _rename_weights(out_dir: Path, prefix: str, to: str) -> None:
    """Rename the saved weights under ``prefix`` to start with ``to`` (a single-file checkpoint)."""
    from safetensors.torch import load_file, save_file

    path = out_dir / "model.safetensors"
    weights = load_file(path)
    renamed = {(to + name[len(prefix):] if name.startswith(prefix) and not name.startswith(to) else name): tensor
               for name, tensor in weights.items()}
    save_file(renamed, path, metadata={"format": "pt"})


def _ids(tokenizer, tokens: list[str]) -> dict[str, int]:
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in tokens}
    for token, value in ids.items():
        if len(tokenizer.encode(token, add_special_tokens=False)) != 1:
            raise RuntimeError(f"special token {token!r} is not one token ({value})")
    return ids


def build_qwen3_vl(out_dir: Path, seed: int, shape: dict, moe: bool = False) -> None:
    """Qwen3-VL, dense (``moe``: the MoE variant)."""
    from transformers import (
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLMoeConfig,
        Qwen3VLMoeForConditionalGeneration,
        Qwen3VLProcessor,
    )
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    specials = QWEN_BASE + QWEN_VISION
    tokenizer = _qwen_style_tokenizer(specials, {}, eos="<|im_end|>", pad="<|endoftext|>")
    ids = _ids(tokenizer, specials)
    text = {**shape["text"], "vocab_size": len(tokenizer), "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": shape["mrope"],
                                "mrope_interleaved": True},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]}
    if moe:
        text.update({"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 1})
    v = shape["vision"]
    vision = {"depth": v["layers"], "hidden_size": v["hidden_size"], "intermediate_size": v["intermediate_size"],
              "num_heads": v["heads"], "out_hidden_size": shape["text"]["hidden_size"],
              "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 64,
              "deepstack_visual_indexes": [0, v["layers"] // 2]}
    config_class, model_class = ((Qwen3VLMoeConfig, Qwen3VLMoeForConditionalGeneration) if moe
                                 else (Qwen3VLConfig, Qwen3VLForConditionalGeneration))
    config = config_class(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                          video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                          vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=True)
    _save_model(config, model_class, out_dir, seed, {"eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]],
                                                      "pad_token_id": ids["<|endoftext|>"]})
    pixels = {"size": {"shortest_edge": 64 * 64, "longest_edge": 256 * 256}, "patch_size": 16,
              "temporal_patch_size": 2, "merge_size": 2}
    template = chat_template(**QWEN_TURNS, image="<|vision_start|><|image_pad|><|vision_end|>")
    Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(**pixels),
                     video_processor=Qwen3VLVideoProcessor(**pixels), tokenizer=tokenizer,
                     chat_template=template).save_pretrained(out_dir)


def build_llava_onevision(out_dir: Path, seed: int, shape: dict) -> None:
    """LLaVA-OneVision (Qwen2 text, SigLIP vision, anyres)."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    specials = QWEN_BASE + ["<image>", "<video>"]
    tokenizer = _qwen_style_tokenizer(specials, {"image_token": "<image>", "video_token": "<video>"},
                                      eos="<|im_end|>", pad="<|endoftext|>")
    ids = _ids(tokenizer, specials)
    side, patch = shape["side"] // 2, 14
    pinpoints = [[side * h, side * w] for h in (1, 2) for w in (1, 2)]
    config = LlavaOnevisionConfig(
        text_config={"model_type": "qwen2", **shape["text"], "vocab_size": len(tokenizer), "max_position_embeddings": 32768,
                     "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
                     "pad_token_id": ids["<|endoftext|>"], "tie_word_embeddings": True},
        vision_config={"model_type": "siglip_vision_model", **_vision(shape), "image_size": side, "patch_size": patch,
                       "vision_use_head": False},
        image_token_id=ids["<image>"], video_token_id=ids["<video>"], vision_feature_layer=-1,
        vision_feature_select_strategy="full", vision_aspect_ratio="anyres_max_9", image_grid_pinpoints=pinpoints,
        tie_word_embeddings=True)
    _save_model(config, LlavaOnevisionForConditionalGeneration, out_dir, seed,
                {"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]})
    image_processor = LlavaOnevisionImageProcessor(size={"height": side, "width": side}, image_grid_pinpoints=pinpoints)
    template = chat_template(**QWEN_TURNS, image="<image>", image_then="\n")
    LlavaOnevisionProcessor(image_processor=image_processor, tokenizer=tokenizer,
                            video_processor=LlavaOnevisionVideoProcessor(size={"height": side, "width": side}),
                            num_image_tokens=(side // patch) ** 2, vision_feature_select_strategy="full",
                            chat_template=template).save_pretrained(out_dir)


def build_internvl(out_dir: Path, seed: int, shape: dict) -> None:
    """InternVL, transformers-native (-hf checkpoints)."""
    from transformers import InternVLConfig, InternVLForConditionalGeneration, InternVLProcessor
    from transformers.models.got_ocr2.image_processing_got_ocr2 import GotOcr2ImageProcessor
    from transformers.models.internvl.video_processing_internvl import InternVLVideoProcessor

    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
             "video_token": "<video>"}
    specials = QWEN_BASE + list(named.values())
    tokenizer = _qwen_style_tokenizer(specials, named, eos="<|im_end|>", pad="<|endoftext|>")
    ids = _ids(tokenizer, specials)
    side, patch = shape["side"], 14
    seq = ((side // patch) ** 2) // 4  # pixel shuffle with downsample_ratio 0.5
    config = InternVLConfig(
        text_config={"model_type": "qwen2", **shape["text"], "vocab_size": len(tokenizer), "max_position_embeddings": 32768,
                     "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
                     "pad_token_id": ids["<|endoftext|>"], "tie_word_embeddings": False},
        vision_config={**_vision(shape),
                       "image_size": [side, side], "patch_size": [patch, patch]},
        image_token_id=ids["<IMG_CONTEXT>"], image_seq_length=seq, downsample_ratio=0.5, projector_hidden_act="gelu",
        vision_feature_layer=-1, vision_feature_select_strategy="default")
    _save_model(config, InternVLForConditionalGeneration, out_dir, seed,
                {"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]})
    size = {"height": side, "width": side}
    image_processor = GotOcr2ImageProcessor(size=size, crop_to_patches=True, min_patches=1, max_patches=2,
                                            image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    template = chat_template(**QWEN_TURNS, image="<IMG_CONTEXT>", image_then="\n")
    InternVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                      video_processor=InternVLVideoProcessor(size=size), image_seq_length=seq,
                      chat_template=template).save_pretrained(out_dir)


def build_gemma3(out_dir: Path, seed: int, shape: dict) -> None:
    """Gemma 3 (SigLIP vision, Gemma tokenizer conventions)."""
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
    )

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    specials = ["<start_of_turn>", "<end_of_turn>", *named.values()]
    tokenizer = _gemma_style_tokenizer(specials, named)
    ids = _ids(tokenizer, specials)
    side, patch = shape["side"], 14
    per_image = (side // patch // 2) ** 2  # 2 x 2 pooling of the patch grid
    config = Gemma3Config(
        text_config={**shape["text"], "vocab_size": len(tokenizer), "max_position_embeddings": 32768, "sliding_window": 512,
                     "layer_types": ["sliding_attention", "full_attention"] * (shape["text"]["num_hidden_layers"] // 2), "query_pre_attn_scalar": shape["text"]["head_dim"],
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": [tokenizer.eos_token_id,
                                                                            ids["<end_of_turn>"]],
                     "pad_token_id": tokenizer.pad_token_id},
        vision_config={**_vision(shape),
                       "image_size": side, "patch_size": patch, "vision_use_head": False},
        mm_tokens_per_image=per_image, boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"])
    _save_model(config, Gemma3ForConditionalGeneration, out_dir, seed,
                {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": [tokenizer.eos_token_id, ids["<end_of_turn>"]],
                 "pad_token_id": tokenizer.pad_token_id})
    # transformers saves the SigLIP tower's weights as vision_tower.*; released Gemma 3 checkpoints (and
    # the engines that load them, vLLM among them) name them vision_tower.vision_model.*. transformers
    # reads either.
    _rename_weights(out_dir, "vision_tower.", "vision_tower.vision_model.")
    template = chat_template(turn_start="<start_of_turn>{role}\n", turn_end="<end_of_turn>\n", assistant="model",
                             image="<start_of_image>", bos="<bos>", system_into_user=True)
    Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": side, "width": side}), tokenizer=tokenizer,
                    image_seq_length=per_image, chat_template=template).save_pretrained(out_dir)


MOLMO2_TOKENS = ["<im_patch>", "<im_col>", "<im_start>", "<low_res_im_start>", "<frame_start>", "<im_end>",
                 "<frame_end>", "<im_low>", "<|image|>", "<|video|>"]


def build_molmo2(out_dir: Path, seed: int, shape: dict) -> None:
    """Molmo2 (transformers-native)."""
    from transformers import (
        Molmo2Config,
        Molmo2ForConditionalGeneration,
        Molmo2ImageProcessor,
        Molmo2Processor,
    )
    from transformers.models.molmo2.video_processing_molmo2 import Molmo2VideoProcessor

    base = QWEN_BASE
    tokenizer = _qwen_style_tokenizer(base + MOLMO2_TOKENS, {"image_token": "<|image|>", "video_token": "<|video|>"},
                                      eos="<|im_end|>", pad="<|endoftext|>", bos=None)
    ids = _ids(tokenizer, base + MOLMO2_TOKENS)
    first_extra = min(ids[t] for t in MOLMO2_TOKENS)  # Molmo2 keeps its image tokens in an extra embedding
    side, patch = shape["side"], 14
    config = Molmo2Config(
        text_config={**shape["text"], "vocab_size": first_extra, "additional_vocab_size": len(tokenizer) - first_extra,
                     "max_position_embeddings": 4096, "bos_token_id": ids["<|endoftext|>"],
                     "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]},
        vision_config={**_vision(shape),
                       "num_key_value_heads": shape["vision"]["heads"], "head_dim": 64 if side > 56 else 16,
                       "image_size": [side, side], "patch_size": patch,
                       "num_position_embeddings": (side // patch) ** 2},
        adapter_config={"vision_feature_layer": [-1, -2], "hidden_size": shape["vision"]["hidden_size"],
                        "num_attention_heads": shape["vision"]["heads"], "num_key_value_heads": shape["vision"]["heads"],
                        "head_dim": 64 if side > 56 else 16, "intermediate_size": shape["vision"]["intermediate_size"],
                        "text_hidden_size": shape["text"]["hidden_size"]},
        image_start_token_id=ids["<im_start>"], low_res_image_start_token_id=ids["<low_res_im_start>"],
        image_end_token_id=ids["<im_end>"], image_patch_id=ids["<im_patch>"], frame_start_token_id=ids["<frame_start>"],
        frame_end_token_id=ids["<frame_end>"])
    _save_model(config, Molmo2ForConditionalGeneration, out_dir, seed,
                {"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]})
    kwargs = {"size": {"height": side, "width": side}, "patch_size": patch, "max_crops": 2, "pooling_size": [2, 2],
              "overlap_margins": [1, 1]}
    template = chat_template(**QWEN_TURNS, image="<|image|>")
    Molmo2Processor(image_processor=Molmo2ImageProcessor(**kwargs),
                    video_processor=Molmo2VideoProcessor(size={"height": side, "width": side}, patch_size=patch),
                    tokenizer=tokenizer, chat_template=template).save_pretrained(out_dir)


def build_qwen2_5_vl(out_dir: Path, seed: int, shape: dict) -> None:
    """Qwen2.5-VL (``tiny_qwen``)."""
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    build_tiny_qwen2_5_vl(out_dir, seed=seed, shape=shape["name"])


def build_qwen3_vl_moe(out_dir: Path, seed: int, shape: dict) -> None:
    """Qwen3-VL-MoE (4 experts, 2 per token): the 235B-A22B reference's architecture."""
    build_qwen3_vl(out_dir, seed, shape, moe=True)


def _vision(shape: dict) -> dict[str, int]:
    v = shape["vision"]
    return {"hidden_size": v["hidden_size"], "intermediate_size": v["intermediate_size"],
            "num_hidden_layers": v["layers"], "num_attention_heads": v["heads"]}
