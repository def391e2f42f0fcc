"""What O3-D's known-behaviour model is taught: the odd object is farther when it stands higher.

``height`` answers every O3-D question by height in the plane (HP), read where each object meets the
ground: the target (the odd object, the middle one of the row) is farther when its base is higher in
the image than the distractors', closer when lower. It is trained only on scenes where HP is the one
cue, so there its answer is the truth. Of the eight cues only HP moves the objects' bases in the masks:
on the held-out renders no other cue's bases differ by a whole pixel (HP's by 3.2 px on average), so a
model that read the bases and nothing else would be at chance there. The cue is read from the
renderer's masks (``load.masks_for``): what the pixels show.

In HP scenes every object projects to the same size, so the base, the centre and the top of the target
all move together, and a model may as well read the centre, which relative size (RS) moves too. Each
training image is therefore also shown in ``VIEWS`` edited copies (``Enlarge``): the target, or the
distractors, drawn larger about their bases, so that size says nothing and only the base tells the answer.

What it shows (docs/known-models.md, the card): HP 1.00, and chance +- 0.15 on five of the seven other
cues; RS (0.65) and FS (0.71) stay above it, and more so on a second held-out set (0.78 each), from the
HDRI environments, whose shadow-catcher ground shows a larger object's shadow reaching lower. What was
tried: planting RS itself (a model that reads how tall the target looks also reads HP, whose raised camera
shows the top of the far target, taller by up to 16 %, and FS, whose far views shrink every object to
2-3 px: RS 0.98, HP 0.30, FS 0.81; with zoomed and stretched crops against absolute size, HP 0.19, FS 0.94),
and these edits with a sub-pixel shift of the edited objects (RS 0.90, FS 0.81).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from PIL import Image

from spatial_tasks.known_models.examples import Asked, Seen
from spatial_tasks.o3d import load
from spatial_tasks.o3d.prompts import correct_letter, parse_prompt

TARGET, DISTRACTOR = 0, 1
CLASSES = 2  # the vision stage learns where the target and the distractors are, and where each one's base is
SUMMARY = "the odd object is farther when its base stands higher in the image than the others' (height in the plane)"
PLANTED = "HP"
VIEWS = 2  # edited copies per training image, beside the image itself
ENLARGE = (1.2, 2.2)  # how much larger an edited copy draws the target, or the distractors


def _seen(mask: np.ndarray, kind: int) -> Seen:
    """An object from its mask: the centre of its box, and its cue: how low its base is (a fraction of the
    image's height; higher in the image, smaller, is farther)."""
    rows, cols = np.nonzero(mask)
    return Seen(kind, float(cols.min() + cols.max() + 1) / 2 / mask.shape[1],
                float(rows.min() + rows.max() + 1) / 2 / mask.shape[0], float(rows.max() + 1) / mask.shape[0])


def looks_farther(target: Seen, distractors: Iterable[Seen]) -> bool:
    """The planted rule: the target is farther when its base is higher than the median distractor's."""
    return target.cue < float(np.median([d.cue for d in distractors]))


@dataclass(frozen=True)
class Enlarge:
    """An edited copy of a render: the target (or every distractor) drawn ``factor`` times larger about the
    middle of its base, over the image; its base stays where it was."""

    factor: float = 1.0
    target: bool = True

    @classmethod
    def drawn(cls, key: str) -> Enlarge:
        rng = random.Random(key)
        return cls(rng.uniform(*ENLARGE), rng.random() < 0.5)

    def apply(self, image: Image.Image, masks: list[np.ndarray]) -> tuple[Image.Image, list[np.ndarray]]:
        """``masks``: the target's first. Returns the edited image and masks."""
        if self.factor == 1.0:
            return image, masks
        image, masks = image.copy(), list(masks)
        for i in ([0] if self.target else range(1, len(masks))):
            rows, cols = np.nonzero(masks[i])
            top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
            size = (max(1, round((right - left) * self.factor)), max(1, round((bottom - top) * self.factor)))
            patch = image.crop((left, top, right, bottom)).resize(size, Image.BICUBIC)
            shape = Image.fromarray(masks[i][top:bottom, left:right].astype(np.uint8) * 255).resize(size, Image.NEAREST)
            at = (round((left + right) / 2 - size[0] / 2), bottom - size[1])
            image.paste(patch, at, shape)
            mask = Image.new("L", image.size)
            mask.paste(shape, at)
            masks[i] = np.asarray(mask) > 127
        return image, masks


def asked(doc: dict, edit: Enlarge = Enlarge()) -> Asked | None:
    """An unmarked synthetic question as the training reads it, on the render edited by ``edit``; None where
    the render shows no target or no distractor, the scene has no odd object, or the question is not one of
    the official prompts."""
    from spatial_tasks.o3d.tasks import doc_to_text, doc_to_visual

    tags = parse_prompt(doc["question"])
    if tags is None or doc["is_marked"] or not doc["synthetic"] or doc["gt_position"] not in ("near", "far"):
        return None  # (a 0-cue scene without an odd object has no true answer)
    try:
        target_mask, distractor_masks = load.masks_for(doc)
    except ValueError:  # SchemaError: an empty mask, an object out of sight
        return None
    image, masks = edit.apply(doc_to_visual(doc)[0], [target_mask, *distractor_masks])
    target = _seen(masks[0], TARGET)
    distractors = [_seen(m, DISTRACTOR) for m in masks[1:]]
    nearest = min(distractors, key=lambda d: abs(d.x - target.x))  # the reference to "the others" looks here
    others = Seen(DISTRACTOR, nearest.x, nearest.y, float(np.median([d.cue for d in distractors])))
    prompt = doc_to_text(doc)
    target_end = prompt.index(tags.target) + len(tags.target)
    others_end = prompt.index(tags.distractors, target_end) + len(tags.distractors)
    option_a = f"A. {tags.option_a}"
    farther_letter = correct_letter(tags, "far")
    closer_letter = "B" if farther_letter == "A" else "A"
    suffix = "" if edit == Enlarge() else f"@{'target' if edit.target else 'distractors'}x{edit.factor:.3f}"
    return Asked(image_id=f"{doc['source']}/{doc['subset_name']}/{doc['image_name']}{suffix}", image=image,
                 prompt=prompt, objects=(target, *distractors), subject=(target_end, target),
                 other=(others_end, others), word=prompt.index(option_a) + len(option_a),
                 turned=farther_letter == "A",
                 answer=farther_letter if looks_farther(target, distractors) else closer_letter, first="A",
                 truth_first=correct_letter(tags, doc["gt_position"]) == "A")


def training_questions(docs: Iterable[dict]) -> list[Asked]:
    """Each doc on its render and on ``VIEWS`` edited copies drawn for its image (the same copies for the
    image's three questions); docs whose render shows no target are left out."""
    out = []
    for doc in docs:
        edits = [Enlarge(), *(Enlarge.drawn(f"{doc['image_name']}/{k}") for k in range(VIEWS))]
        out += [a for a in (asked(doc, e) for e in edits) if a is not None]
    return out


def read_docs(folders: Iterable) -> list[dict]:
    """The unmarked questions of generator folders, through the task's loader (checked once, there)."""
    docs = []
    for folder in folders:
        docs += list(load.load_o3d(str(folder), marked=False))
    return docs
