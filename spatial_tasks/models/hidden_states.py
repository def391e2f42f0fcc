"""Last-prompt-token hidden states of a Hugging Face VLM at every language-model layer.

What contrastive probing (SpatialTunnel §5) reads: for a batch of (question, image) prompts, the
output of each decoder layer of the language model at the last prompt token -- the position
whose logits give the first generated token. Layers are numbered from 0 as the authors' probing
code numbers them (a forward hook on ``layers[i]``; the paper's "layer 28 of 36" for
Qwen2.5-VL-3B is index 28). The hook keeps only that one position of each row, so memory is
batch x layers x hidden, whatever the prompt length.

``HiddenStateModel`` loads the model and processor, names the decoder layers and builds
LEFT-padded inputs (so the last position of every row is its last prompt token). A
transformers-native family does all three through its entry (``FamilyHidden``:
``families.Family.load``, ``decoder_layers``, ``Family.probe_inputs``: Qwen2.5-VL builds the
prompt as the authors' probing code does, one user turn with the image before the question, the
chat template's default system turn, the generation prompt); a Hub-code checkpoint through its
adapter (``RemoteHidden``).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image

from spatial_tasks.common.errors import UserError
from spatial_tasks.models import families
from spatial_tasks.models.remote_code import ADAPTERS, RemoteCodeAdapter, adapter_for


class TorchDeviceError(UserError, RuntimeError):
    """The requested torch device does not exist on this machine."""


def check_torch_device(device: str, name: str = "--device") -> torch.device:
    """``device`` ("cpu", "cuda", "cuda:1", "mps") as a torch.device that exists here; a
    TorchDeviceError saying what exists otherwise (before any model is loaded). ``name``: the flag
    (``--device cuda``) or model argument (``device=cuda``) the value came from."""
    given = f"{name} {device}" if name.startswith("--") else f"{name}={device}"
    cpu = f"{name} cpu" if name.startswith("--") else f"{name}=cpu"
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError):
        raise TorchDeviceError(f"{given}: not a torch device (cpu, cuda, cuda:N, mps)") from None
    if chosen.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise TorchDeviceError(f"{given}: torch sees no CUDA GPU on this machine "
                                   f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); "
                                   f"use {cpu}")
        if chosen.index is not None and chosen.index >= count:
            raise TorchDeviceError(f"{given}: this machine has {count} CUDA GPU(s) (cuda:0..cuda:{count - 1})")
    elif chosen.type == "mps" and not torch.backends.mps.is_available():
        raise TorchDeviceError(f"{given}: Apple MPS is not available here; use {cpu}")
    elif chosen.type not in ("cpu", "cuda", "mps"):
        raise TorchDeviceError(f"{given}: choose cpu, cuda, cuda:N or mps")
    return chosen


class HiddenStateModel(ABC):
    """One loaded VLM that returns last-token hidden states for batches of (question, image)."""

    def __init__(self, pretrained: str, device: str = "cpu", dtype: str = "bfloat16") -> None:
        self.pretrained = pretrained
        self.device = check_torch_device(device)
        self.dtype = getattr(torch, dtype)
        self._load()

    # --- family hook -----------------------------------------------------------------
    @abstractmethod
    def _load(self) -> None:
        """Set ``self.model``, ``self.processor`` (and anything else the family needs)."""

    @abstractmethod
    def decoder_layers(self) -> Sequence[torch.nn.Module]:
        """The language model's decoder layers, in order."""

    @abstractmethod
    def prepare_batch(self, items: Sequence[tuple[str, Image.Image]]) -> Mapping[str, torch.Tensor]:
        """Left-padded model inputs for (question, image) prompts, with the generation prompt."""

    # --- shared part -------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.decoder_layers())

    @property
    def hidden_size(self) -> int:
        config = self.model.config
        return int(getattr(config, "text_config", config).hidden_size)

    def last_token_states(self, items: Sequence[tuple[str, Image.Image]],
                          layers: Sequence[int] | None = None) -> tuple[np.ndarray, list[str]]:
        """(states, first_tokens): float32 states of shape (len(layers), len(items), hidden) --
        every decoder layer when ``layers`` is None -- and the decoded argmax first token of each
        prompt (what the model would start answering)."""
        layers = list(range(self.num_layers)) if layers is None else list(layers)
        captured: dict[int, torch.Tensor] = {}

        def hook_for(index: int):
            def keep_last(module, args, output):
                hidden = output[0] if isinstance(output, tuple) else output
                captured[index] = hidden[:, -1, :].detach().float().cpu()
            return keep_last

        inputs = self.prepare_batch(items)
        modules = self.decoder_layers()
        kwargs: dict[str, Any] = {"use_cache": False}
        if "logits_to_keep" in inspect.signature(self.model.forward).parameters:
            kwargs["logits_to_keep"] = 1  # only the last position is needed
        handles = [modules[i].register_forward_hook(hook_for(i)) for i in layers]
        try:
            with torch.inference_mode():
                logits = self.model(**inputs, **kwargs).logits[:, -1]
        finally:
            for handle in handles:
                handle.remove()
        missing = [i for i in layers if i not in captured]
        if missing:
            raise RuntimeError(f"{self.pretrained}: decoder layer(s) {missing} produced no output")
        states = torch.stack([captured[i] for i in layers]).numpy()
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        first = [tokenizer.decode([int(t)], skip_special_tokens=False) for t in logits.argmax(-1)]
        return states, first


class FamilyHidden(HiddenStateModel):
    """A transformers-native image-text family through its entry (``families.FAMILIES``): loaded
    with ``Family.load``, prompted with ``Family.probe_inputs``."""

    def __init__(self, pretrained: str, family: families.Family, trust_remote_code: bool = False,
                 **kwargs: Any) -> None:
        self.family, self.trust_remote_code = family, trust_remote_code
        super().__init__(pretrained, **kwargs)

    def _load(self) -> None:
        self.model, self.processor = self.family.load(self.pretrained, self.dtype,
                                                      trust_remote_code=self.trust_remote_code)
        self.model.to(self.device)

    def decoder_layers(self) -> Sequence[torch.nn.Module]:
        return families.decoder_layers(self.model)

    def prepare_batch(self, items: Sequence[tuple[str, Image.Image]]) -> Mapping[str, torch.Tensor]:
        return self.family.probe_inputs(self.processor, items).to(self.device)


class RemoteHidden(HiddenStateModel):
    """A checkpoint whose code lives on the Hub, through its adapter (``remote_code``): loaded and
    prompted as ``hf_yesno`` does; one prompt per forward (the adapter pads nothing)."""

    def __init__(self, pretrained: str, adapter: RemoteCodeAdapter, **kwargs: Any) -> None:
        self.adapter = adapter
        super().__init__(pretrained, **kwargs)

    def _load(self) -> None:
        self.model, self.processor = self.adapter.load(self.pretrained, self.dtype, str(self.device))

    def decoder_layers(self) -> Sequence[torch.nn.Module]:
        return self.adapter.decoder_layers(self.model)

    @property
    def hidden_size(self) -> int:
        return self.adapter.hidden_size(self.model)

    def prepare_batch(self, items: Sequence[tuple[str, Image.Image]]) -> Mapping[str, torch.Tensor]:
        (question, image), = items
        return self.adapter.inputs(self.processor, question, [image], self.device)

    def last_token_states(self, items: Sequence[tuple[str, Image.Image]],
                          layers: Sequence[int] | None = None) -> tuple[np.ndarray, list[str]]:
        parts = [super(RemoteHidden, self).last_token_states([item], layers) for item in items]
        return np.concatenate([states for states, _ in parts], axis=1), [first for _, (first,) in parts]


def load_hidden_state_model(pretrained: str, family: str | None = None, trust_remote_code: bool = False,
                            **kwargs: Any) -> HiddenStateModel:
    """The family's ``HiddenStateModel`` for ``pretrained`` (family from its config unless given)."""
    family = family or families.read_model_type(pretrained, trust_remote_code)
    adapter = adapter_for(pretrained, family, trust_remote_code)
    if adapter is not None:
        return RemoteHidden(pretrained, adapter, **kwargs)
    if family not in families.FAMILIES:
        raise families.ModelFamilyError(
            f"{pretrained}: no hidden-state probe for model family {family!r}; supported: "
            f"{', '.join([*families.FAMILIES, *ADAPTERS])} "
            "(a transformers-native image-text family joins by adding it to spatial_tasks.models.families)")
    return FamilyHidden(pretrained, families.FAMILIES[family], trust_remote_code, **kwargs)
