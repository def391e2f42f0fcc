"""A stand-in for VILA's Hub code (NVILA-Lite-2B as converted by NVlabs/VILA ``llava/remote_code``),
for testing the ``vila`` adapter offline through transformers' real ``trust_remote_code`` loading.

It is NOT VILA: a random 2-layer Qwen2 decoder behind a one-layer patch encoder, written here. It
exposes what the adapter relies on, as VILA's remote code defines it:
- ``AutoModel`` through the config's ``auto_map``; model_type "vila";
- module-level ``extract_media``, ``process_image``, ``process_images``, ``tokenize_conversation``
  and ``DEFAULT_IMAGE_TOKEN``, in the checkpoint's modeling module;
- ``model.tokenizer`` with ``media_token_ids``; ``model.vision_tower.image_processor``;
  ``config.image_aspect_ratio`` / ``s2_scales``; the loader casting everything to float16;
- ``forward(input_ids, media, media_config, attention_mask, ...)`` with ``media["image"]`` a list of
  pixel tiles, consumed one per ``<image>`` token, or per image from
  ``media_config["image"]["block_sizes"]`` (1 + rows*cols tiles) in ``dynamic_s2`` mode;
- decoder layers at ``model.llm.model.layers``;
- ``generate_content([*images, question])`` building its inputs as VILA's does and calling
  ``self.generate(input_ids=..., media=..., media_config=..., generation_config=...)``.

``build(out, tokenizer_dir, image_aspect_ratio)`` writes a checkpoint folder with this file as its code.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from transformers import AutoTokenizer, PretrainedConfig, PreTrainedModel, Qwen2Config, Qwen2ForCausalLM
from transformers.modeling_outputs import CausalLMOutputWithPast

DEFAULT_IMAGE_TOKEN = "<image>"
SIDE, PATCH = 16, 4  # each tile: 16x16 pixels, 16 patches of 4x4


class VILAConfig(PretrainedConfig):
    model_type = "vila"

    def __init__(self, llm_cfg: dict | None = None, image_aspect_ratio: str = "dynamic_s2",
                 s2_scales: str | list = "16,32", **kwargs) -> None:
        self.llm_cfg, self.image_aspect_ratio, self.s2_scales = llm_cfg or {}, image_aspect_ratio, s2_scales
        super().__init__(**kwargs)


def _tile(image: Image.Image) -> torch.Tensor:
    pixels = np.asarray(image.convert("RGB").resize((SIDE, SIDE)), dtype=np.float32) / 255
    return torch.from_numpy(pixels).permute(2, 0, 1)


def process_images(images, image_processor, config) -> torch.Tensor:
    return torch.stack([_tile(image) for image in images])


def process_image(image, config, data_args, enable_dynamic_res=False, enable_dynamic_s2=False):
    """The whole image, then its left and right halves (2 blocks of one row)."""
    w, h = image.size
    tiles = torch.stack([_tile(image), _tile(image.crop((0, 0, w // 2, h))), _tile(image.crop((w // 2, 0, w, h)))])
    if enable_dynamic_s2:
        assert isinstance(config.s2_scales, list), "generate_content turns s2_scales into a list first"
        return tiles, (1, 2)
    return tiles


def extract_media(messages, config=None):
    media = defaultdict(list)
    for message in messages:
        text = ""
        for part in message["value"] if isinstance(message["value"], list) else [message["value"]]:
            if isinstance(part, str):
                text += part.replace(DEFAULT_IMAGE_TOKEN, "").strip()
            else:
                media["image"].append(part)
                text += DEFAULT_IMAGE_TOKEN
        message["value"] = text
    return media


def tokenize_conversation(messages, tokenizer, add_generation_prompt=False) -> torch.Tensor:
    roles = {"human": "user", "gpt": "assistant", "system": "system"}
    conversation = [{"role": roles[m["from"]], "content": m["value"].strip()} for m in messages]
    text = tokenizer.apply_chat_template(conversation, add_generation_prompt=add_generation_prompt, tokenize=False)
    return torch.tensor(tokenizer(text, add_special_tokens=False).input_ids, dtype=torch.long)


class _VisionTower(torch.nn.Module):
    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(3 * PATCH * PATCH, hidden_size)
        self.image_processor = object()  # VILA keeps its SigLIP image processor here

    def forward(self, tiles: torch.Tensor) -> torch.Tensor:  # (n, 3, 16, 16) -> (n, 16, hidden)
        n = tiles.shape[0]
        patches = tiles.reshape(n, 3, SIDE // PATCH, PATCH, SIDE // PATCH, PATCH).permute(0, 2, 4, 1, 3, 5)
        return self.proj(patches.reshape(n, -1, 3 * PATCH * PATCH).to(self.proj.weight.dtype))


class VILAForCausalLM(PreTrainedModel):
    config_class = VILAConfig

    def __init__(self, config: VILAConfig, *args, **kwargs) -> None:
        super().__init__(config)
        self.llm = Qwen2ForCausalLM(Qwen2Config(**config.llm_cfg))
        self.vision_tower = _VisionTower(self.llm.config.hidden_size)
        self.post_init()

    @classmethod
    def from_pretrained(cls, path, *args, **kwargs):
        model = super().from_pretrained(path, *args, **kwargs)
        model.tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)  # VILA builds it in the model
        model.tokenizer.media_token_ids = {"image": model.tokenizer.convert_tokens_to_ids(DEFAULT_IMAGE_TOKEN)}
        return model.to(torch.float16)  # VILA's post_config

    def _image_embeds(self, media, media_config) -> list[torch.Tensor]:
        tiles = media.get("image") or []
        if not tiles:
            return []
        features = self.vision_tower(torch.stack(tiles))
        block_sizes = (media_config or {}).get("image", {}).get("block_sizes")
        if block_sizes is None:
            return list(features)
        embeds, start = [], 0
        for rows, cols in block_sizes:
            stop = start + 1 + rows * cols
            embeds.append(features[start:stop].reshape(-1, features.shape[-1]))
            start = stop
        assert start == len(tiles), "every tile belongs to one image"
        return embeds

    def forward(self, input_ids=None, media=None, media_config=None, attention_mask=None, **kwargs):
        assert input_ids.shape[0] == 1, "the stand-in embeds one prompt"
        text = self.llm.get_input_embeddings()(input_ids[0])
        images = self._image_embeds(media or {}, media_config)
        image_id = self.tokenizer.media_token_ids["image"]
        parts = []
        for position, token in enumerate(input_ids[0].tolist()):
            parts.append(images.pop(0).to(text.dtype) if token == image_id else text[position:position + 1])
        assert not images, "every image embedding is consumed"
        embeds = torch.cat(parts)[None]
        out = self.llm(inputs_embeds=embeds, attention_mask=torch.ones(embeds.shape[:2], dtype=torch.long), **kwargs)
        return CausalLMOutputWithPast(logits=out.logits)

    def generate(self, input_ids=None, media=None, media_config=None, **generation_kwargs):
        raise NotImplementedError("the stand-in does not generate; tests spy on this call")

    def generate_content(self, prompt, generation_config=None):
        conversation = [{"from": "human", "value": prompt}]
        media = extract_media(conversation, self.config)
        media_config = defaultdict(dict)
        if "image" in media:
            if len(media["image"]) == 1 and self.config.image_aspect_ratio in ["dynamic", "dynamic_s2"]:
                self.config.image_processor = self.vision_tower.image_processor
                if self.config.image_aspect_ratio == "dynamic":
                    images = process_image(media["image"][0], self.config, None, enable_dynamic_res=True).half()
                    conversation[0]["value"] = conversation[0]["value"].replace(
                        DEFAULT_IMAGE_TOKEN, f"{DEFAULT_IMAGE_TOKEN}\n" * images.shape[0])
                else:
                    if isinstance(self.config.s2_scales, str):
                        self.config.s2_scales = list(map(int, self.config.s2_scales.split(",")))
                    images, block_sizes = process_image(media["image"][0], self.config, None, enable_dynamic_s2=True)
                    images = images.half()
                    media_config["image"]["block_sizes"] = [block_sizes]
            else:
                images = process_images(media["image"], self.vision_tower.image_processor, self.config).half()
            media["image"] = list(images)
        input_ids = tokenize_conversation(conversation, self.tokenizer, add_generation_prompt=True)[None]
        return self.generate(input_ids=input_ids, media=media, media_config=media_config,
                             generation_config=generation_config)


def build(out: Path, tokenizer_dir: Path, image_aspect_ratio: str = "dynamic_s2", seed: int = 0) -> Path:
    """A random stand-in checkpoint in ``out`` (tokenizer from ``tokenizer_dir`` plus ``<image>``)."""
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    tokenizer.add_tokens([DEFAULT_IMAGE_TOKEN], special_tokens=True)
    llm_cfg = {"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
               "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 512,
               "tie_word_embeddings": False}
    VILAConfig.register_for_auto_class()
    VILAForCausalLM.register_for_auto_class("AutoModel")
    VILAForCausalLM(VILAConfig(llm_cfg=llm_cfg, image_aspect_ratio=image_aspect_ratio)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    shutil.copy(__file__, out / Path(__file__).name)
    return out
