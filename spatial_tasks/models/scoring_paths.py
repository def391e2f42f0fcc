"""How a first-token scorer scores a window of questions: six paths, strategies of one interface,
and the one choice among them per run (docs/architecture.md, "The model side").

========================= ===============================================================================
path                      what it does (fastest first)
========================= ===============================================================================
``packed``                ``packed.QwenPacked``: each image prepared and encoded once, one packed forward per
                          window, every prompt prefix once under a block mask (the Qwen families)
``prepared_once``         ``packed.PreparedOnce``: each image prepared once, the family's own forward over
                          padded rows (families whose forward takes no precomputed image features)
``shared_prefix``         grouped by image; per image, the prompt up to it runs once and the questions'
                          suffixes in one batch on its KV cache (Qwen2.5-VL)
``grouped``               grouped by image; each image's features computed once and passed to the forward
``padded``                left-padded batches of ``batch_size`` questions
``one_by_one``            one question per forward
========================= ===============================================================================

A family offers some of them (``families.Family.paths``); the class serving it implements the hooks
of some (its ``PATHS``); the arguments drop some (``packed``, ``group_images``, ``share_prefix``).
``choose`` takes the first left as the run's path and the rest, in order, as its fallbacks; the
scorer logs the choice and its reason in one line when it loads and the run records it in each
task's config (``common.environment.SCORING_KEY``). Questions a path cannot take (a video, a prompt
without an image where the pipeline needs one) go to the next path; a path that turns out not to fit
the model at all (``PathUnavailable(lasting=True)``, e.g. an image pooling the packed pipeline does
not reproduce) is dropped for the rest of the run. Both are logged, once per path and reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import torch
from loguru import logger as eval_logger
from PIL import Image

from spatial_tasks.common.yesno import YesNoLogits
from spatial_tasks.models.lmms_requests import image_key
from spatial_tasks.models.family_table import (  # noqa: F401 -- the path names and signals, re-exported
    GROUPED,
    ONE_BY_ONE,
    ORDER,
    PACKED,
    PADDED,
    PREPARED_ONCE,
    SHARED_PREFIX,
    NothingToShare,
    PathUnavailable,
)

Item = tuple[str, list]


# --- the choice ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PathChoice:
    """The run's path (``order[0]``), its fallbacks (the rest, in order), and why."""

    order: tuple[str, ...]
    offered: tuple[str, ...]
    reason: str
    dropped: tuple[str, ...] = field(default=())  # paths found not to fit during the run, with why

    @property
    def path(self) -> str:
        return self.order[0]

    def line(self, model: str) -> str:
        rest = ", ".join(self.order[1:]) or "none"
        return f"{model}: scoring path {self.path} ({self.reason}); fallbacks: {rest}"

    def recorded(self, model: str) -> dict:
        """As the run's config records it."""
        return {"model": model, "path": self.path, "fallbacks": list(self.order[1:]), "offered": list(self.offered),
                "reason": self.reason, **({"dropped": list(self.dropped)} if self.dropped else {})}

    def without(self, path: str, why: str) -> PathChoice:
        return replace(self, order=tuple(p for p in self.order if p != path), dropped=(*self.dropped, f"{path}: {why}"))


def choose(offered: Sequence[str], *, packed: bool | str, group_images: bool, share_prefix: bool,
           packs_by_default: bool, block_mask: bool) -> PathChoice:
    """The paths ``offered`` (fastest first) that the arguments leave, and why. ``packed``: true,
    false or "auto" (packed where images are grouped and ``packs_by_default``, the measured choice for
    the device and dtype); ``block_mask``: whether the attention implementation takes the packed
    pipeline's block mask (sdpa or eager)."""
    why: list[str] = []
    auto = isinstance(packed, str) and packed.strip().lower() == "auto"
    keep = list(dict.fromkeys(p for p in ORDER if p in offered))
    pipelines = [p for p in keep if p in (PACKED, PREPARED_ONCE)]
    if pipelines:
        if auto and not group_images:
            why.append("packed=auto without group_images: not packed")
        elif auto and not packs_by_default:
            why.append("packed=auto: packing not measured fastest on this device and dtype (packed.MEASURED)")
        elif auto:
            why.append("packed=auto: the measured fastest on this device and dtype")
        elif not packed:
            why.append("packed=false")
        if (auto and not (group_images and packs_by_default)) or (not auto and not packed):
            keep = [p for p in keep if p not in pipelines]
        elif PACKED in keep and not block_mask:
            keep.remove(PACKED)
            why.append("the attention implementation takes no block mask (packed needs sdpa or eager)")
    if not group_images:
        keep = [p for p in keep if p not in (SHARED_PREFIX, GROUPED)]
        why.append("group_images=false")
    elif SHARED_PREFIX in keep and not share_prefix:
        keep.remove(SHARED_PREFIX)
        why.append("share_prefix=false")
    if ONE_BY_ONE not in keep:  # every scorer can score one question at a time
        keep.append(ONE_BY_ONE)
    offers = " > ".join(p for p in ORDER if p in offered) or "the basic paths"
    return PathChoice(tuple(keep), tuple(p for p in ORDER if p in offered), "; ".join([f"offered: {offers}", *why]))


# --- the strategies ------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one path did with its questions: the scored ones by position, and those it passed on
    (position -> why)."""

    scored: dict[int, YesNoLogits] = field(default_factory=dict)
    passed_on: dict[int, str] = field(default_factory=dict)


class Strategy:
    """One path: ``run(items, batch_size, on_batch)`` scores what it can; ``needs`` names the hooks
    (methods of the scorer) it calls beyond ``score_yes_no``."""

    name: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer

    def run(self, items: Sequence[Item], batch_size: int, on_batch: Callable[[int], None] | None) -> Outcome:
        raise NotImplementedError


def _images_only(scorer: Any, items: Sequence[Item], outcome: Outcome) -> list[list[str] | None]:
    """Each item's image keys in prompt order; an item with another visual (a video) is passed on."""
    keys: list[list[str] | None] = []
    for i, (context, visuals) in enumerate(items):
        ordered = scorer.yesno_image_order(context, visuals)
        if all(isinstance(v, Image.Image) for v in ordered):
            keys.append([image_key(v) for v in ordered])
        else:
            keys.append(None)
            outcome.passed_on[i] = "a visual that is not an image"
    return keys


class OneByOne(Strategy):
    name = ONE_BY_ONE

    def run(self, items, batch_size, on_batch):
        outcome = Outcome()
        for i, (context, visuals) in enumerate(items):
            outcome.scored[i] = self.scorer.score_yes_no(context, visuals)
            if on_batch:
                on_batch(1)
        return outcome


class PaddedBatch(Strategy):
    name = PADDED
    needs = ("yesno_prepare_batch",)

    def run(self, items, batch_size, on_batch):
        from spatial_tasks.models.packed import PREPARE, Stages, stage

        outcome, scorer = Outcome(), self.scorer
        for first in range(0, len(items), batch_size):
            rows = list(range(first, min(first + batch_size, len(items))))
            if len(rows) == 1:
                outcome.scored[first] = scorer.score_yes_no(*items[first])
            else:
                try:
                    with stage(scorer, PREPARE):
                        inputs = scorer.yesno_prepare_batch([items[i] for i in rows])
                except PathUnavailable as why:
                    outcome.passed_on.update(dict.fromkeys(rows, str(why)))
                    continue
                with stage(scorer, "vision + language model", Stages.DEVICE):
                    logits = scorer.first_token_logits_batch(inputs)
                outcome.scored.update(zip(rows, scorer.to_yes_no_rows(logits), strict=True))
            if on_batch:
                on_batch(len(rows))
        return outcome


class Grouped(Strategy):
    """Items ordered by the content of their images (``image_key``: a hash of the decoded pixels, so
    one image reached through two docs counts once), scored in padded batches of ``batch_size``; the
    vision encoder runs only on images whose features are not kept, and a feature is dropped after
    the last item that uses it -- memory holds the features of at most the current batch's images
    plus those shared with later ones."""

    name = GROUPED
    needs = ("yesno_prepare_batch", "yesno_image_parts", "yesno_encode_images", "yesno_forward_with_features")

    def forward(self, inputs, features, row_keys) -> torch.Tensor:
        return self.scorer.yesno_forward_with_features(inputs, features)

    def run(self, items, batch_size, on_batch):
        from spatial_tasks.models.packed import PREPARE, Stages, stage

        outcome, scorer = Outcome(), self.scorer
        keys = _images_only(scorer, items, outcome)
        # one-image requests apart from the others, so that a batch can share prompt prefixes
        order = sorted((i for i, k in enumerate(keys) if k is not None), key=lambda i: (len(keys[i]) != 1, keys[i], i))
        batches: list[list[int]] = []
        for i in order:
            if not batches or len(batches[-1]) == batch_size or (len(keys[i]) == 1) != (len(keys[batches[-1][0]]) == 1):
                batches.append([])
            batches[-1].append(i)
        remaining = Counter(key for i in order for key in keys[i])
        cache: dict[str, Any] = {}
        for rows in batches:
            batch, batch_keys = [items[i] for i in rows], [key for i in rows for key in keys[i]]
            try:
                with stage(scorer, PREPARE):
                    inputs = scorer.yesno_prepare_batch(batch) if len(batch) > 1 else scorer.yesno_prepare_inputs(*batch[0])
                    parts = scorer.yesno_image_parts(inputs)
            except PathUnavailable as why:
                parts, reason = None, str(why)
            else:
                reason = "the prepared inputs' images do not match the prompts'"
            if parts is None or len(parts) != len(batch_keys):
                outcome.passed_on.update(dict.fromkeys(rows, reason))
            else:
                new = {key: part for key, part in zip(batch_keys, parts) if key not in cache}
                if new:
                    with stage(scorer, "vision", Stages.DEVICE):
                        cache.update(zip(new, scorer.yesno_encode_images(list(new.values()))))
                with stage(scorer, "language model", Stages.DEVICE):
                    logits = self.forward(inputs, [cache[key] for key in batch_keys], [keys[i] for i in rows])
                outcome.scored.update(zip(rows, scorer.to_yes_no_rows(logits), strict=True))
                if on_batch:
                    on_batch(len(rows))
            for key in batch_keys:  # a feature goes after its last use
                remaining[key] -= 1
                if remaining[key] == 0:
                    cache.pop(key, None)
        return outcome


class SharedPrefix(Grouped):
    name = SHARED_PREFIX
    needs = (*Grouped.needs, "yesno_forward_shared_prefix")

    def forward(self, inputs, features, row_keys) -> torch.Tensor:
        try:
            return self.scorer.yesno_forward_shared_prefix(inputs, features, row_keys)
        except NothingToShare:  # no image asked about twice in this batch: the plain grouped forward
            return super().forward(inputs, features, row_keys)


class _Windows(Strategy):
    """A pipeline of ``packed`` (``pipeline_class``) over every item whose visuals are images, in windows of
    ``batch_size`` questions; both pipelines read prompts and images through the same two hooks."""

    needs = ("packed_prompt", "packed_load_image")

    def pipeline_class(self) -> type:
        raise NotImplementedError

    def run(self, items, batch_size, on_batch):
        outcome = Outcome()
        keys = _images_only(self.scorer, items, outcome)
        pipeline_class = self.pipeline_class()
        for i, k in enumerate(keys):
            if k == [] and not pipeline_class.text_only:
                outcome.passed_on[i], keys[i] = "a prompt without an image (this pipeline batches images)", None
        chosen = [i for i, k in enumerate(keys) if k is not None]
        if chosen:
            pipeline = getattr(self, "pipeline", None)
            if pipeline is None:
                pipeline = self.pipeline = pipeline_class(self.scorer)
            scored = pipeline.score([items[i] for i in chosen], [tuple(keys[i]) for i in chosen], batch_size, on_batch)
            outcome.scored.update(zip(chosen, scored, strict=True))
        return outcome


class Packed(_Windows):
    """``packed.QwenPacked``: each image through the vision tower once, every prefix once."""

    name = PACKED

    def pipeline_class(self) -> type:
        from spatial_tasks.models.packed import QwenPacked

        return QwenPacked


class PreparedOnceStrategy(_Windows):
    """``packed.PreparedOnce``: each image prepared once per window, the family's own forward over padded rows."""

    name = PREPARED_ONCE

    def pipeline_class(self) -> type:
        from spatial_tasks.models.packed import PreparedOnce

        return PreparedOnce


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (Packed, PreparedOnceStrategy, SharedPrefix, Grouped,
                                                                PaddedBatch, OneByOne)}


@dataclass
class PathRuns:
    """What a scorer keeps of its paths across the windows of a run: each path's strategy (a pipeline's
    caches live across windows) and the (path, reason) pairs already logged."""

    strategies: dict[str, Strategy] = field(default_factory=dict)
    said: set[tuple[str, str]] = field(default_factory=set)


def score_items(scorer: Any, items: Sequence[Item], batch_size: int, paths: Sequence[str], runs: PathRuns,
                on_batch: Callable[[int], None] | None = None) -> list[YesNoLogits]:
    """Every item scored, in item order: by the first of ``paths`` that takes it, each path handing
    what it cannot take to the next (logged once per path and reason). A path found not to fit the
    model at all is dropped from the scorer's choice for the rest of the run (logged, recorded)."""
    results: dict[int, YesNoLogits] = {}
    todo = list(range(len(items)))
    strategies = runs.strategies
    paths = list(paths)
    while todo and paths:
        name, later = paths[0], paths[1:]
        strategy = strategies.setdefault(name, STRATEGIES[name](scorer))
        try:
            outcome = strategy.run([items[i] for i in todo], batch_size, on_batch)
        except PathUnavailable as why:
            if not why.lasting:
                raise
            scorer.drop_path(name, str(why))
            paths = later
            continue
        results.update((todo[j], value) for j, value in outcome.scored.items())
        for reason, count in Counter(outcome.passed_on.values()).items():
            if (name, reason) not in runs.said:  # each (path, reason) logged once per run
                runs.said.add((name, reason))
                eval_logger.warning(f"{type(scorer).__name__}: {count} question(s) the {name} path cannot take "
                                    f"({reason}) go to {later[0] if later else 'no other path'}")
        todo, paths = [todo[j] for j in sorted(outcome.passed_on)], later
    if todo:
        raise RuntimeError(f"{type(scorer).__name__}: {len(todo)} question(s) no scoring path could take")
    return [results[i] for i in range(len(items))]

