"""A stand-in for Molmo's Hub code (allenai/Molmo-7B-O-0924), for testing the ``molmo`` adapter
offline through transformers' real ``trust_remote_code`` loading.

It is NOT Molmo: a 2-block random decoder written here that exposes the API the adapter relies on,
as Molmo's model card and processor document it: ``AutoModelForCausalLM`` / ``AutoProcessor``
through the config's ``auto_map``; ``processor.process(images=[...], text=question)`` returning
1-D ``input_ids`` (BOS, image tokens, then " User: {question} Assistant:") with ``images``,
``image_input_idx`` and ``image_masks`` per crop; ``forward(input_ids, images, image_masks,
image_input_idx, attention_mask, use_cache)`` returning ``logits``; decoder layers at
``model.model.transformer.blocks``. ``build(out, tokenizer_dir)`` writes a checkpoint folder
whose config.json has model_type "molmo" and this file as its code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer, PretrainedConfig, PreTrainedModel, ProcessorMixin
from transformers.modeling_outputs import CausalLMOutputWithPast

PATCH, PATCHES_PER_SIDE = 8, 4  # each image: one crop resized to 32x32, 16 patches of 8x8 pixels


class MolmoConfig(PretrainedConfig):
    model_type = "molmo"

    def __init__(self, vocab_size: int = 1000, hidden_size: int = 32, num_layers: int = 2, **kwargs) -> None:
        self.vocab_size, self.hidden_size, self.num_layers = vocab_size, hidden_size, num_layers
        super().__init__(**kwargs)


class _Transformer(torch.nn.Module):
    def __init__(self, config: MolmoConfig) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(config.hidden_size, 2, 2 * config.hidden_size, dropout=0.0,
                                             batch_first=True) for _ in range(config.num_layers))
        self.ln_f = torch.nn.LayerNorm(config.hidden_size)


class _Backbone(torch.nn.Module):
    def __init__(self, config: MolmoConfig) -> None:
        super().__init__()
        self.transformer = _Transformer(config)
        self.vision = torch.nn.Linear(3 * PATCH * PATCH, config.hidden_size)


class MolmoForCausalLM(PreTrainedModel):
    config_class = MolmoConfig

    def __init__(self, config: MolmoConfig) -> None:
        super().__init__(config)
        self.model = _Backbone(config)
        self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.model.transformer.wte

    def forward(self, input_ids, images=None, image_masks=None, image_input_idx=None, attention_mask=None,
                use_cache=None, **kwargs):
        x = self.model.transformer.wte(input_ids)
        if images is not None:  # image patch features added at their tokens' positions, as Molmo does
            features = self.model.vision(images.to(x.dtype)) * image_masks.to(x.dtype)[..., None]
            batch = torch.arange(x.shape[0], device=x.device)[:, None]
            flat_idx = image_input_idx.reshape(x.shape[0], -1)
            x = x.index_put((batch.expand_as(flat_idx), flat_idx), features.reshape(x.shape[0], -1, x.shape[-1]),
                            accumulate=True)
        causal = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device, dtype=x.dtype)
        for block in self.model.transformer.blocks:
            x = block(x, src_mask=causal, is_causal=True)
        return CausalLMOutputWithPast(logits=self.lm_head(self.model.transformer.ln_f(x)))


class MolmoProcessor(ProcessorMixin):
    """Molmo's ``process`` API over the checkpoint's tokenizer (a ProcessorMixin, as Molmo's is)."""

    attributes = ["tokenizer"]
    tokenizer_class = "AutoTokenizer"

    def __init__(self, tokenizer=None, **kwargs) -> None:
        super().__init__(tokenizer, **kwargs)

    def process(self, text: str, images=None) -> dict[str, torch.Tensor]:
        images = images or []
        image_token = self.tokenizer.convert_tokens_to_ids("<|image_pad|>")
        bos = self.tokenizer.bos_token_id or self.tokenizer.eos_token_id
        n = PATCHES_PER_SIDE ** 2
        ids = [bos] + [image_token] * (n * len(images)) + self.tokenizer.encode(f" User: {text} Assistant:",
                                                                                add_special_tokens=False)
        crops = []
        for image in images:
            pixels = np.asarray(image.convert("RGB").resize((PATCH * PATCHES_PER_SIDE,) * 2), dtype=np.float32) / 255
            grid = pixels.reshape(PATCHES_PER_SIDE, PATCH, PATCHES_PER_SIDE, PATCH, 3).transpose(0, 2, 1, 3, 4)
            crops.append(grid.reshape(n, -1))
        out = {"input_ids": torch.tensor(ids, dtype=torch.long)}
        if images:
            out["images"] = torch.from_numpy(np.stack(crops))
            out["image_input_idx"] = torch.arange(1, 1 + n * len(images)).reshape(len(images), n)
            out["image_masks"] = torch.ones(len(images), n)
        return out


def build(out: Path, tokenizer_dir: Path, seed: int = 0) -> Path:
    """A random stand-in checkpoint in ``out`` (tokenizer copied from ``tokenizer_dir``)."""
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    MolmoConfig.register_for_auto_class()
    MolmoForCausalLM.register_for_auto_class("AutoModelForCausalLM")
    model = MolmoForCausalLM(MolmoConfig(vocab_size=len(tokenizer)))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # as Molmo's checkpoints do: the processor class is named in preprocessor_config.json's auto_map
    processor = {"auto_map": {"AutoProcessor": f"{Path(__file__).stem}.MolmoProcessor"}, "processor_class": "MolmoProcessor"}
    (out / "preprocessor_config.json").write_text(json.dumps(processor, indent=2))
    shutil.copy(__file__, out / Path(__file__).name)
    return out
