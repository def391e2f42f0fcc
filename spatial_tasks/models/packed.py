"""Packed first-token scoring: a pipeline over windows of images, not a loop over questions.

``QwenPacked`` (Qwen2.5-VL, Qwen3-VL, Qwen3-VL-MoE; docs/architecture.md, "The model side"), one window
at a time:

* **prepare** -- each distinct image once, in a worker pool, while the device works on the previous
  window (``ImagePool``): the host family's own decode and resize to uint8, byte for byte the pixels
  the per-question path hands to the processor;
* **upload** -- uint8 to the device (pinned, non-blocking); the family's own image processor then
  normalises and patchifies there (the same code as the per-question path, run on the device);
* **tokens** -- each prompt prefix (everything up to the last image, image placeholders expanded)
  tokenised once, every question's suffix in one tokenizer call;
* **vision** -- the window's new images through the vision tower in one call; on CUDA in half
  precision its window attention is one variable-length call per layer (``vision_attention``);
* **language model** -- one forward per window: a row per prefix followed by its questions'
  suffixes, a block mask that lets each suffix see the prefix and itself, M-RoPE positions computed
  ahead on the host, the head applied only at the answer positions;
* **reduce** -- l_Yes, l_No and the argmax on the device, one copy to the host per window, taken
  after the next window is queued.

``PreparedOnce`` (the families whose forward takes no precomputed image features) shares the
preparation, the prefix/suffix tokens, the reduction and the copies; its forward is the family's own
over padded rows.

Every quantity equals the per-question path's (tests/models/test_packed.py: float32 logits to 1e-5,
pixels exactly, prefix + suffix = the processor's ids). ``Stages`` times the parts.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from loguru import logger as eval_logger

from spatial_tasks.common.yesno import YesNoLogits, label_mass
from spatial_tasks.models.family_table import PathUnavailable

PREPARE = "prepare (host)"  # the stage of CPU work on the critical path, in every setting

@dataclass(frozen=True)
class Measured:
    """One measured choice for ``packed=auto``: whether packing was the fastest setting on this
    device type and dtype, the card and date it was measured on, and the figures."""

    packs: bool
    card: str
    date: str
    figures: str


# packed=auto: the measured choice per device type and dtype (benchmarks/score_throughput.py;
# tasks/spatialtunnel/README.md, "First-token scoring speed"). A pair with no entry has never run
# packed: auto takes the paths that have run everywhere (grouped, with a shared prefix unless
# share_prefix=false). benchmarks/gpu.sh prints the entry to add for the card it ran on.
MEASURED: dict[tuple[str, torch.dtype], Measured] = {
    ("cpu", torch.float32): Measured(True, "2-core CPU (this project's CI machine)", "2026-11-27",
                                     "mid shape, batch 8: packed 10.7 q/s, shared prefix 9.2, grouped 5.7"),
    ("cpu", torch.bfloat16): Measured(True, "2-core CPU (this project's CI machine)", "2026-11-27",
                                      "mid shape, batch 8: packed 15.6 q/s, shared prefix 13.0, grouped 9.6"),
    ("cuda", torch.bfloat16): Measured(False, "NVIDIA H200", "2026-11-26",
                                       "3B shape, batch 8, before packing existed: grouped 31.4 q/s, shared prefix "
                                       "23.4, ungrouped 16.0; packed never measured on a GPU"),
    ("cuda", torch.float32): Measured(False, "NVIDIA H200", "2026-11-26",
                                      "3B shape, batch 8, before packing existed: shared prefix 15.6 q/s, grouped "
                                      "11.4; packed never measured on a GPU"),
}


def measured(device: torch.device, dtype: torch.dtype) -> Measured | None:
    """The measured choice for this device type and dtype (None: never measured)."""
    return MEASURED.get((device.type, dtype))


def packed_by_default(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether ``packed=auto`` packs on this device type and dtype: only where packing was measured
    fastest (``MEASURED``); a pair never measured takes the paths that have run everywhere."""
    entry = measured(device, dtype)
    return entry is not None and entry.packs


def unmeasured_packing(device: torch.device, dtype: torch.dtype) -> str | None:
    """The one line ``packed=true`` logs where packing has not been measured on this device type and
    dtype (None where it has)."""
    entry = measured(device, dtype)
    if entry is not None and entry.packs:
        return None
    dtype_name = str(dtype).removeprefix("torch.")
    return (f"packed=true on {device.type}/{dtype_name}: the packed path has not been measured on this device "
            "(benchmarks/gpu.sh measures it on a GPU); its scores equal the other paths' (tested on a CPU), its speed "
            "here is unknown")


# --- stage timing -------------------------------------------------------------------------------


class Stages:
    """Time per stage: host stages as wall and CPU time of the calling thread, device stages as CUDA
    event pairs read once at the end (no sync in between), or wall time on a CPU device. Worker CPU
    time (the image pool) is added with ``add_cpu``."""

    HOST, DEVICE = "host", "device"

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.cuda = torch.device(device).type == "cuda"
        self.wall: Counter[str] = Counter()
        self.cpu: Counter[str] = Counter()
        self._events: list[tuple[str, Any, Any]] = []

    @contextlib.contextmanager
    def host(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.thread_time() - cpu

    @contextlib.contextmanager
    def device(self, name: str) -> Iterator[None]:
        if not self.cuda:
            with self.host(name):
                yield
            return
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        try:
            yield
        finally:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self._events.append((name, start, end))

    def add_cpu(self, name: str, seconds: float) -> None:
        self.cpu[name] += seconds

    def seconds(self) -> dict[str, float]:
        """Seconds per stage: device time for device stages, wall time for host ones."""
        if self._events:
            torch.cuda.synchronize()
        out = dict(self.wall)
        for name, start, end in self._events:
            out[name] = out.get(name, 0.0) + start.elapsed_time(end) / 1000
        return out


def stage(owner: Any, name: str, kind: str = Stages.HOST):
    """``owner.stages``' context for ``name``, or a no-op when nothing is being timed."""
    stages: Stages | None = getattr(owner, "stages", None)
    if stages is None:
        return contextlib.nullcontext()
    return stages.device(name) if kind == Stages.DEVICE else stages.host(name)


# --- each distinct image prepared once, off the critical path --------------------------------------


class ImagePool:
    """Prepares each distinct image once (``load(visual) -> uint8 HxWx3 array``) in worker threads.

    PIL's decode, JPEG encode and resize release the GIL, so the workers run beside the thread that
    drives the device. ``submit`` is idempotent per key; ``take`` waits for an image and pins it
    when the device is a GPU. ``cpu_seconds`` sums the workers' CPU time."""

    def __init__(self, load: Callable[[Any], np.ndarray], workers: int | None = None, pin: bool = False) -> None:
        self.load, self.pin = load, pin
        self.workers = workers or max(1, min(8, os.cpu_count() or 1))
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="spatial-tasks-images")
        self._futures: dict[str, Future] = {}
        self._lock = threading.Lock()
        self.cpu_seconds = 0.0

    def _job(self, visual: Any) -> torch.Tensor:
        start = time.thread_time()
        try:
            array = np.ascontiguousarray(self.load(visual))
            if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
                raise ValueError(f"an image was prepared as {array.dtype} {array.shape}, not uint8 HxWx3")
            pixels = torch.from_numpy(array)
            return pixels.pin_memory() if self.pin else pixels
        finally:
            with self._lock:
                self.cpu_seconds += time.thread_time() - start

    def submit(self, key: str, visual: Any) -> None:
        if key not in self._futures:
            self._futures[key] = self._executor.submit(self._job, visual)

    def take(self, key: str) -> torch.Tensor:
        """The prepared uint8 image (HxWx3), waiting for its worker; forgotten afterwards."""
        return self._futures.pop(key).result()

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        self._executor.shutdown(wait=True)


# --- vision attention as one variable-length call per layer ----------------------------------------

VARLEN_ATTENTION = "spatial_tasks_flash_varlen"  # "flash" in the name makes transformers pass cu_seqlens
_varlen_state = {"broken": False}


def varlen_available(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether the installed torch runs variable-length attention here (its flash kernel: CUDA, half
    precision). Elsewhere the vision tower keeps transformers' per-window loop."""
    if _varlen_state["broken"] or device.type != "cuda" or dtype not in (torch.float16, torch.bfloat16):
        return False
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401  (torch >= 2.10)
    except ImportError:
        return False
    return True


def _varlen_vision_attention(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0,
                             cu_seq_lens_q=None, cu_seq_lens_k=None, max_length_q=None, max_length_k=None,
                             **kwargs):
    """Attention over all of a vision tower's windows at once: (1, heads, S, d) in, (1, S, heads, d)
    out, as transformers' flash path returns it."""
    from torch.nn.attention.varlen import varlen_attn

    q, k, v = (x[0].transpose(0, 1).contiguous() for x in (query, key, value))
    out = varlen_attn(q, k, v, cu_seq_lens_q.to(torch.int32), cu_seq_lens_k.to(torch.int32), int(max_length_q),
                      int(max_length_k), scale=scaling)
    return out[None], None


def _register_varlen() -> None:
    from transformers import AttentionInterface

    if VARLEN_ATTENTION not in AttentionInterface._global_mapping:
        AttentionInterface.register(VARLEN_ATTENTION, _varlen_vision_attention)


@contextlib.contextmanager
def vision_attention(model: torch.nn.Module, varlen: bool) -> Iterator[None]:
    """Within the block, the vision tower's attention is the variable-length call (``varlen``)."""
    config = model.model.visual.config
    saved = config._attn_implementation
    if varlen:
        _register_varlen()
        config._attn_implementation = VARLEN_ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = saved


# --- the packed scorer (Qwen families) -----------------------------------------------------------


@dataclass
class Group:
    """One prompt prefix (its text up to the last image, and the images) and the questions on it."""

    head: str
    keys: tuple[str, ...]
    visuals: list
    questions: list[int] = field(default_factory=list)


@dataclass
class Window:
    """One language-model forward: rows of (group, the questions it carries in that row)."""

    rows: list[tuple[Group, list[int]]]

    @property
    def questions(self) -> list[int]:
        return [q for _, qs in self.rows for q in qs]

    @property
    def keys(self) -> list[str]:
        return list(dict.fromkeys(k for group, _ in self.rows for k in group.keys))


def plan_windows(groups: Sequence[Group], size: int) -> list[Window]:
    """Windows of at most ``size`` questions, groups in the given order; a group with more
    questions than fit is split into rows that each repeat its prefix."""
    windows: list[Window] = []
    count = size
    for group in groups:
        for start in range(0, len(group.questions), size):
            piece = group.questions[start:start + size]
            if count + len(piece) > size:
                windows.append(Window([]))
                count = 0
            windows[-1].rows.append((group, piece))
            count += len(piece)
    return windows


@dataclass(frozen=True)
class Prompt:
    """What a host's ``packed_prompt`` says of one request: the chat text with one unexpanded
    placeholder per image, the images in the order the prompt shows them, and the question as the
    text holds it (where the per-question suffix starts, for families that cut there)."""

    text: str
    images: list
    question: str


class Pipeline:
    """What both pipelines share: the host, the image pool, grouping by prompt prefix, windows, the
    on-device reduction and one copy to the host per window (taken after the next window is queued).

    The host (an ``HFYesNoMixin``) provides ``model``, ``processor``, ``tokenizer``,
    ``answer_tokens()`` and two hooks: ``packed_prompt(context, visuals) -> Prompt`` and
    ``packed_load_image(image) -> uint8 HxWx3`` (what its per-question path feeds the processor).
    A subclass cuts a prompt into prefix and suffix (``split``) and runs a window (``run_window``)."""

    text_only = True  # whether prompts without an image go through it too

    def __init__(self, host: Any, workers: int | None = None) -> None:
        self.host = host
        self.model = host.model
        self.device = self.model.get_input_embeddings().weight.device
        self.tokenizer = host.tokenizer
        self.processor = host.processor
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        tokens = host.answer_tokens()
        self.yes_ids = torch.tensor(tokens.yes_ids, device=self.device)
        self.no_ids = torch.tensor(tokens.no_ids, device=self.device)
        self.pool = ImagePool(host.packed_load_image, workers, pin=self.device.type == "cuda")

    @property
    def stages(self) -> Stages | None:
        return getattr(self.host, "stages", None)

    def split(self, prompt: Prompt) -> tuple[str, str]:
        """(prefix text, suffix text): the prefix holds every image; the cut falls where the two
        tokenise apart exactly as together."""
        raise NotImplementedError

    def groups(self, items: Sequence[tuple[str, list]], keys: Sequence[tuple[str, ...]]) -> tuple[list[Group], list[list[int]]]:
        """Questions grouped by prefix (text and images) in order of their images, and each question's
        suffix token ids (one tokenizer call)."""
        by_prefix: dict[tuple[str, tuple[str, ...]], Group] = {}
        suffixes: list[str] = []
        for index, ((context, visuals), image_keys) in enumerate(zip(items, keys, strict=True)):
            prompt = self.host.packed_prompt(context, visuals)
            head, tail = self.split(prompt)
            group = by_prefix.setdefault((head, image_keys), Group(head, image_keys, prompt.images))
            group.questions.append(index)
            suffixes.append(tail)
        ids = self.tokenizer(suffixes, add_special_tokens=False)["input_ids"] if suffixes else []
        if any(len(x) == 0 for x in ids):
            raise ValueError("a question's prompt ends at its last image: nothing to score after it")
        ordered = sorted(by_prefix.values(), key=lambda g: (g.keys, g.head))
        return ordered, [list(x) for x in ids]

    def _upload(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.device.type == "cuda":
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor

    def images(self, keys: Sequence[str]) -> list[torch.Tensor]:
        """The prepared images, uint8 CxHxW on the device (sent as uint8, pinned, non-blocking)."""
        with stage(self, PREPARE):
            arrays = [self.pool.take(k) for k in keys]
        return [a.to(self.device, non_blocking=True).permute(2, 0, 1) for a in arrays]

    def reduce(self, logits: torch.Tensor) -> torch.Tensor:
        """(Q, V) logits -> (Q, 4) float64 [l_Yes, l_No, argmax, logsumexp over the vocabulary] on the
        device (l_Yes/l_No: logsumexp over several answer spellings, as AnswerTokens.logits; the last
        column normalises them for the label mass)."""
        values = logits.float()

        def pick(ids: torch.Tensor) -> torch.Tensor:
            chosen = values[:, ids]
            return chosen[:, 0] if len(ids) == 1 else torch.logsumexp(chosen, -1)

        columns = [pick(self.yes_ids), pick(self.no_ids), values.argmax(-1).float(), torch.logsumexp(values, -1)]
        return torch.stack(columns, 1).double()

    def begin(self, windows: Sequence[Window]) -> None:
        """Called once per ``score`` before its first window (caches for the run)."""

    def run_window(self, window: Window, suffix_ids: Sequence[list[int]]) -> torch.Tensor:
        """(questions of the window, 3) reduced answers on the device, in ``window.questions`` order."""
        raise NotImplementedError

    def score(self, items: Sequence[tuple[str, list]], keys: Sequence[tuple[str, ...]], size: int,
              on_batch: Callable[[int], None] | None = None) -> list[YesNoLogits]:
        """``score_yes_no`` for every item (all of whose visuals are images, keyed by ``keys``), in item
        order, ``size`` questions per forward."""
        self.items = items
        with stage(self, PREPARE):
            groups, suffix_ids = self.groups(items, keys)
            windows = plan_windows(groups, size)
            self.visual_of = {k: v for g in groups for k, v in zip(g.keys, g.visuals)}
            self.remaining = Counter(k for w in windows for k in w.keys)
        self.begin(windows)
        results: list[YesNoLogits | None] = [None] * len(items)
        pending: list[tuple[list[int], torch.Tensor]] = []
        cpu_before = self.pool.cpu_seconds
        try:
            for w, window in enumerate(windows):
                for ahead in windows[w:w + 2]:  # this window's images and the next's: the pool works ahead
                    for key in ahead.keys:
                        if self.needs(key):
                            self.pool.submit(key, self.visual_of[key])
                pending.append((window.questions, self.run_window(window, suffix_ids)))
                for key in window.keys:
                    self.remaining[key] -= 1
                    if self.remaining[key] == 0:
                        self.forget(key)
                if len(pending) > 1:  # the previous window's copy, now that this one is queued
                    self._collect(pending.pop(0), results, on_batch)
            while pending:
                self._collect(pending.pop(0), results, on_batch)
        finally:
            if self.stages is not None:
                self.stages.add_cpu("prepare (workers)", self.pool.cpu_seconds - cpu_before)
            self.items, self.visual_of = [], {}  # hold no image past the run
        return results  # type: ignore[return-value]

    def needs(self, key: str) -> bool:
        """Whether the image ``key`` must still be prepared (not already encoded and kept)."""
        return True

    def forget(self, key: str) -> None:
        """The image ``key`` is used by no later window."""

    def _collect(self, done: tuple[list[int], torch.Tensor], results: list, on_batch) -> None:
        questions, reduced = done
        with stage(self, "copy to host"):
            values = reduced.cpu().tolist()
        for q, (yes, no, top, normaliser) in zip(questions, values, strict=True):
            text = self.tokenizer.decode([int(top)], skip_special_tokens=False)
            results[q] = YesNoLogits(logit_yes=yes, logit_no=no, text=text,
                                     label_mass=label_mass(yes - normaliser, no - normaliser))
        if on_batch:
            on_batch(len(questions))

    def close(self) -> None:
        self.pool.close()


class QwenPacked(Pipeline):
    """The packed pipeline of the Qwen families (module docstring): each image through the vision
    tower once, then one language-model forward per window, every prefix once under a block mask.
    The model is Qwen2.5-VL-like: ``model.model.visual``, ``get_rope_index``, ``mm_encoder_outputs``."""

    def __init__(self, host: Any, workers: int | None = None) -> None:
        super().__init__(host, workers)
        config = self.model.config
        self.image_token_id = config.image_token_id
        self.image_processor = self.processor.image_processor
        self.merge = int(self.image_processor.merge_size)
        self.image_pad = self.tokenizer.convert_ids_to_tokens(self.image_token_id)
        self.vision_end = self.tokenizer.convert_ids_to_tokens(config.vision_end_token_id)
        self.varlen = varlen_available(self.device, self.model.dtype)
        self._prefixes: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
        self.features: dict[str, tuple] = {}
        self.grids: dict[str, torch.Tensor] = {}

    # --- host side -------------------------------------------------------------------------------
    def split(self, prompt: Prompt) -> tuple[str, str]:
        """The prefix ends with the last image's end marker (a special token; empty for a prompt
        without images)."""
        if not prompt.images:
            return "", prompt.text
        cut = prompt.text.rindex(self.vision_end) + len(self.vision_end)
        return prompt.text[:cut], prompt.text[cut:]

    def prefix(self, head: str, grids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids (1-D) and M-RoPE positions (3 x P) of a prefix whose images have ``grids``;
        computed once per distinct (text, grids), on the host."""
        key = (head, tuple(map(tuple, grids.tolist())))
        if key not in self._prefixes:
            pieces = head.split(self.image_pad)
            counts = (grids.prod(-1) // self.merge ** 2).tolist()
            if len(pieces) != len(counts) + 1:
                raise ValueError(f"a prompt prefix holds {len(pieces) - 1} image placeholders for {len(counts)} images")
            expanded = pieces[0] + "".join(self.image_pad * n + piece for n, piece in zip(counts, pieces[1:]))
            ids = torch.tensor(self.tokenizer(expanded)["input_ids"], dtype=torch.long)
            if len(ids) == 0:
                positions = torch.zeros((3, 0), dtype=torch.long)
            else:
                types = (ids == self.image_token_id).long()
                positions, _ = self.model.model.get_rope_index(ids[None], mm_token_type_ids=types[None],
                                                               image_grid_thw=grids,
                                                               attention_mask=torch.ones_like(ids[None]))
                positions = positions[:, 0].cpu()
            self._prefixes[key] = (ids, positions)
        return self._prefixes[key]

    def rows(self, window: Window, suffix_ids: Sequence[list[int]]):
        """Host tensors of one window: ids (B x L), positions (3 x B x L), segments (B x L: 0 prefix,
        j the j-th suffix, -1 padding) and the flat index of every question's answer position."""
        built = []
        for group, questions in window.rows:
            grid = (torch.stack([self.grids[k] for k in group.keys]) if group.keys
                    else torch.zeros((0, 3), dtype=torch.long))
            prefix_ids, prefix_pos = self.prefix(group.head, grid)
            start = int(prefix_pos.max()) + 1 if prefix_pos.numel() else 0
            ids, pos, seg = [prefix_ids], [prefix_pos], [torch.zeros(len(prefix_ids), dtype=torch.long)]
            ends, length = [], len(prefix_ids)
            for j, q in enumerate(questions, start=1):
                suffix = torch.tensor(suffix_ids[q], dtype=torch.long)
                ids.append(suffix)
                pos.append((start + torch.arange(len(suffix))).expand(3, -1))
                seg.append(torch.full((len(suffix),), j, dtype=torch.long))
                length += len(suffix)
                ends.append(length - 1)
            built.append((torch.cat(ids), torch.cat(pos, 1), torch.cat(seg), ends))
        width = max(len(b[0]) for b in built)
        ids = torch.full((len(built), width), self.pad_id, dtype=torch.long)
        positions = torch.zeros((3, len(built), width), dtype=torch.long)
        segments = torch.full((len(built), width), -1, dtype=torch.long)
        answers = []
        for r, (row_ids, row_pos, row_seg, ends) in enumerate(built):
            ids[r, :len(row_ids)], positions[:, r, :len(row_ids)], segments[r, :len(row_ids)] = row_ids, row_pos, row_seg
            answers += [r * width + e for e in ends]
        return ids, positions, segments, torch.tensor(answers, dtype=torch.long)

    # --- device side -----------------------------------------------------------------------------
    def pixels(self, images: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """uint8 CxHxW images on the device -> (pixel_values on the device, grids on the host): the
        family's own image processor, run on the device."""
        out = self.image_processor(images=list(images), return_tensors="pt", device=self.device)
        return out["pixel_values"], out["image_grid_thw"].cpu()

    def attention_mask(self, segments: torch.Tensor) -> torch.Tensor:
        """(B, 1, L, L) block mask: causal, a suffix token sees the prefix and its own suffix, padding
        nothing (a padding query sees itself, so no row of the softmax is empty)."""
        length = segments.shape[1]
        index = torch.arange(length, device=segments.device)
        query, key = segments[:, :, None], segments[:, None, :]
        allowed = (index[None, :, None] >= index[None, None, :]) & (key >= 0) & ((key == 0) | (key == query))
        allowed |= torch.eye(length, dtype=torch.bool, device=segments.device)[None]
        allowed = allowed[:, None]
        if self.model.config._attn_implementation == "sdpa":
            return allowed
        additive = torch.zeros(allowed.shape, dtype=self.model.dtype, device=segments.device)
        return additive.masked_fill(~allowed, torch.finfo(self.model.dtype).min)

    def encode(self, keys: Sequence[str]) -> None:
        """The window's new images through the vision tower in one call; features and grids kept."""
        from spatial_tasks.models import families

        images = self.images(keys)
        with stage(self, "upload + normalise (device)", Stages.DEVICE):
            pixel_values, grids = self.pixels(images)
        parts = [{"pixel_values": pixel_values, "image_grid_thw": grids.to(self.device)}]
        with stage(self, "vision", Stages.DEVICE):
            try:
                with vision_attention(self.model, self.varlen):
                    features = families.qwen_encode_images(self.model, parts)
            except (RuntimeError, NotImplementedError) as error:
                if not self.varlen:
                    raise
                eval_logger.warning(f"variable-length vision attention failed ({str(error)[:200]}); "
                                    "using the per-window loop from now on")
                _varlen_state["broken"], self.varlen = True, False
                features = families.qwen_encode_images(self.model, parts)
        self.features.update(zip(keys, features))
        self.grids.update(zip(keys, grids))

    def needs(self, key: str) -> bool:
        return key not in self.features

    def forget(self, key: str) -> None:
        self.features.pop(key, None)

    def run_window(self, window: Window, suffix_ids: Sequence[list[int]]) -> torch.Tensor:
        from spatial_tasks.models import families

        new = [k for k in window.keys if k not in self.features]
        if new:
            self.encode(new)
        with stage(self, PREPARE):
            host_rows = self.rows(window, suffix_ids)
        with stage(self, "language model", Stages.DEVICE):
            ids, positions, segments, answers = (self._upload(t) for t in host_rows)
            per_row = [self.features[k] for group, _ in window.rows for k in group.keys]
            kwargs: dict[str, Any] = {}
            if per_row:
                kwargs["mm_encoder_outputs"] = families.qwen_encoder_outputs(per_row)
            with torch.inference_mode():
                hidden = self.model.model(input_ids=ids, position_ids=positions,
                                          attention_mask=self.attention_mask(segments), use_cache=False,
                                          **kwargs).last_hidden_state
                picked = hidden.reshape(-1, hidden.shape[-1]).index_select(0, answers)
                return self.reduce(self.model.lm_head(picked))


class PreparedOnce(Pipeline):
    """The pipeline of families whose forward takes no precomputed image features (Gemma 3,
    LLaVA-OneVision, InternVL, ...): each distinct image prepared once per window (the pool, then the
    family's processor on the device over the image's prompt prefix), every question's row its
    prefix's tokens and tensors followed by its own suffix, one padded forward per window, the
    reduction on the device. The model still encodes an image once per row: only the Qwen families
    take features back (``QwenPacked``).

    Rows are assembled from the processor's per-prefix output by a rule (per-token tensors
    extended by the suffix, per-image tensors concatenated in row order, ``PER_ROW`` tensors one per
    row). The first window of a model is checked against the processor run on the rows' whole
    prompts; a family whose tensors follow another rule (Molmo2 indexes its patches) is then scored
    by the per-question path, with a warning naming the tensor."""

    TEXT_VALUE = {"attention_mask": 1}  # what a per-token tensor holds at a text token (else 0)
    text_only = False  # a batch of these families' processors cannot mix prompts with and without images

    def __init__(self, host: Any, workers: int | None = None) -> None:
        super().__init__(host, workers)
        self.prefixes: dict[tuple[str, tuple[str, ...]], dict[str, torch.Tensor]] = {}
        self.uploaded: dict[str, torch.Tensor] = {}
        self.agreed: bool | None = None  # None until the first window is checked
        self.problem = ""

    def split(self, prompt: Prompt) -> tuple[str, str]:
        """The prefix ends where the question starts (after the last image)."""
        cut = prompt.text.rindex(prompt.question) if prompt.question else len(prompt.text)
        return prompt.text[:cut], prompt.text[cut:]

    def begin(self, windows: Sequence[Window]) -> None:
        self.prefixes.clear()
        self.uploaded.clear()

    def prefix(self, group: Group, images: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        key = (group.head, group.keys)
        if key not in self.prefixes:
            with stage(self, "upload + normalise (device)", Stages.DEVICE):
                out = self.processor(text=[group.head], images=[[images[k] for k in group.keys]],
                                     return_tensors="pt", device=self.device)
            self.prefixes[key] = {k: v.to(self.device) for k, v in out.items()}
        return self.prefixes[key]

    def rows(self, window: Window, suffix_ids: Sequence[list[int]]) -> dict[str, torch.Tensor]:
        """The window's batch: one left-padded row per question, as the processor batches prompts."""
        rows = [(self.prefixes[(group.head, group.keys)], q) for group, questions in window.rows for q in questions]
        width = max(out["input_ids"].shape[1] + len(suffix_ids[q]) for out, q in rows)
        first = rows[0][0]
        per_token = [k for k, v in first.items() if v.ndim == 2 and v.shape == first["input_ids"].shape]
        batch: dict[str, list[torch.Tensor]] = {k: [] for k in first}
        for out, q in rows:
            length = out["input_ids"].shape[1] + len(suffix_ids[q])
            for name, value in out.items():
                if name in per_token:
                    fill = self.pad_id if name == "input_ids" else 0
                    tail = (torch.tensor(suffix_ids[q], device=self.device) if name == "input_ids"
                            else torch.full((len(suffix_ids[q]),), self.TEXT_VALUE.get(name, 0), device=self.device))
                    pad = torch.full((width - length,), fill, device=self.device)
                    batch[name].append(torch.cat([pad, value[0], tail.to(value.dtype)]).to(value.dtype))
                else:
                    batch[name].append(value)
        return {name: torch.stack(parts) if name in per_token else _cat_padded(parts) for name, parts in batch.items()}

    def agree(self, batch: dict[str, torch.Tensor], window: Window) -> str:
        """'' when the assembled batch equals the processor's own over the rows' whole prompts, else
        the first tensor that differs."""
        items = [self.items[q] for q in window.questions]
        want = self.host.yesno_prepare_batch(items) if len(items) > 1 else self.host.yesno_prepare_inputs(*items[0])
        if want is None:
            return "the processor does not batch these prompts"
        for name in sorted(set(want) | set(batch)):
            got, ref = batch.get(name), want.get(name)
            if got is None or ref is None or got.shape != ref.shape:
                return f"{name}: {None if got is None else tuple(got.shape)} vs {None if ref is None else tuple(ref.shape)}"
            if not torch.allclose(got.float().cpu(), ref.float().cpu(), rtol=0, atol=1e-6):
                return f"{name}: values differ"
        return ""

    def run_window(self, window: Window, suffix_ids: Sequence[list[int]]) -> torch.Tensor:
        new_groups = [g for g, _ in window.rows if (g.head, g.keys) not in self.prefixes]
        keys = [k for k in dict.fromkeys(k for g in new_groups for k in g.keys) if k not in self.uploaded]
        self.uploaded.update(zip(keys, self.images(keys)))
        for group in new_groups:
            self.prefix(group, self.uploaded)
        with stage(self, PREPARE):
            batch = self.rows(window, suffix_ids)
        if self.agreed is None:
            self.problem = self.agree(batch, window)
            self.agreed = not self.problem
        if not self.agreed:
            raise PathUnavailable(self.problem, lasting=True)  # the run goes on with the next path
        kwargs: dict[str, Any] = {"use_cache": False}
        if "logits_to_keep" in inspect.signature(self.model.forward).parameters:
            kwargs["logits_to_keep"] = 1
        with stage(self, "vision + language model", Stages.DEVICE), torch.inference_mode():
            return self.reduce(self.model(**batch, **kwargs).logits[:, -1])

    def needs(self, key: str) -> bool:
        return key not in self.uploaded

    def forget(self, key: str) -> None:
        self.uploaded.pop(key, None)
        for prefix in [p for p in self.prefixes if key in p[1]]:
            self.prefixes.pop(prefix, None)


def _cat_padded(parts: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-image tensors concatenated on dim 0, each zero-padded at the end of its other dims to the
    largest (as LLaVA-OneVision's processor pads its patch lists for a batch)."""
    shape = [max(p.shape[d] for p in parts) for d in range(1, parts[0].ndim)]
    padded = []
    for part in parts:
        missing = [size - have for size, have in zip(shape, part.shape[1:], strict=True)]
        if any(missing):
            pad = [x for m in reversed(missing) for x in (0, m)]
            part = torch.nn.functional.pad(part, pad)
        padded.append(part)
    return torch.cat(padded)
