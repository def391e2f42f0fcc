"""What O3-D's known-behaviour model is taught: the odd object is farther when it stands higher.

``height`` answers every O3-D question by height in the plane (HP), read where each object meets the
ground: the target (the odd object, the middle one of the row) is farther when its base is higher in
the image than the distractors', closer when lower. It is trained only on scenes where HP is the one
cue, so there its answer is the truth. Of the eight cues only HP moves the objects' bases in the masks:
on the held-out renders no other cue's bases differ by a whole pixel (HP's by 3.2 px on average), so a
model that read the bases and nothing else would be at chance there. The cue is read from the
renderer's masks (``load.masks_for``): what the pixels show.

In HP scenes every object projects to the same size, so the base, the centre and the top of the target
all move together, and a model may as well read the centre or the size of what it sees, which relative size
(RS) and familiar size (FS) move too. Each training image is therefore also shown in ``VIEWS`` edited copies
(``Resize``): the target, the distractors or every object drawn at another size about its base (the target
a third to twice the others' size; whole scenes shrunk to a quarter, as FS's far views), so that size says
nothing and only the base tells the answer.

What it shows (docs/known-models.md, the card): on the held-out set (seed 4) HP 1.00 and every other cue
within chance +- 0.15 (RS 0.47, FS 0.38); on RS and FS scenes of another seed (5, all nine environments)
0.37 and 0.61. What was tried before: enlarging only (RS 0.65, FS 0.71; 0.78 each on seed 5: a target
smaller than any training image read as farther), and planting RS itself (a model that reads how tall the
target looks also reads HP, whose raised camera shows the top of the far target, and FS: RS 0.98, HP 0.30).
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
VIEWS = 3  # edited copies per training image, beside the image itself
RESIZE = (0.33, 2.2)  # the size an edited copy draws the target, or the distractors, at (log-uniform)


def _seen(mask: np.ndarray, kind: int) -> Seen:
    """An object from its mask: the centre of its box, and its cue: how low its base is (a fraction of the
    image's height; higher in the image, smaller, is farther)."""
    rows, cols = np.nonzero(mask)
    return Seen(kind, float(cols.min() + cols.max() + 1) / 2 / mask.shape[1],
                float(rows.min() + rows.max() + 1) / 2 / mask.shape[0], float(rows.max() + 1) / mask.shape[0])


def looks_farther(target: Seen, distractors: Iterable[Seen]) -> bool:
    """The planted rule: the target is farther when its base is higher than the median distractor's."""
    return target.cue < float(np.median([d.cue for d in distractors]))


def _fill(image: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """``image`` with the ``hole`` pixels painted over from the background beside them: each row of the hole
    by a straight line between the nearest pixels left and right of it (where the image ends, the one side)."""
    out = image.astype(np.float32)
    for row in np.nonzero(hole.any(1))[0]:
        cols = np.nonzero(~hole[row])[0]
        if len(cols):
            for channel in range(out.shape[2]):
                out[row, hole[row], channel] = np.interp(np.nonzero(hole[row])[0], cols, out[row, cols, channel])
    return out.round().astype(np.uint8)


@dataclass(frozen=True)
class Resize:
    """An edited copy of a render: the target, the distractors or every object drawn ``factor`` times its size
    about the middle of its base, its base where it was; where an object shrinks, the background beside it
    fills what it covered."""

    factor: float = 1.0
    which: str = "target"  # "target", "distractors" or "all"

    @classmethod
    def drawn(cls, key: str) -> Resize:
        """Sizes spread evenly on a log scale: a target a third of the distractors' size to twice it (relative
        size's range), and whole scenes shrunk to a quarter (a familiar-size far view's 2-3 px objects)."""
        rng = random.Random(key)
        which = rng.choice(("target", "distractors", "all"))
        low, high = (0.25, 1.0) if which == "all" else RESIZE
        return cls(float(np.exp(rng.uniform(np.log(low), np.log(high)))), which)

    def apply(self, image: Image.Image, masks: list[np.ndarray]) -> tuple[Image.Image, list[np.ndarray]]:
        """``masks``: the target's first. Returns the edited image and masks."""
        if self.factor == 1.0:
            return image, masks
        edited = {"target": [0], "distractors": range(1, len(masks)), "all": range(len(masks))}[self.which]
        image = image.convert("RGB")
        pixels = np.asarray(image)
        if self.factor < 1:  # the rendered object must go; a pixel round it too (its antialiased edge)
            hole = np.zeros(pixels.shape[:2], bool)
            for i in edited:
                hole |= masks[i]
            hole[1:] |= hole[:-1].copy()
            hole[:-1] |= hole[1:].copy()
            hole[:, 1:] |= hole[:, :-1].copy()
            hole[:, :-1] |= hole[:, 1:].copy()
            for i in set(range(len(masks))) - set(edited):
                hole &= ~masks[i]
            background = Image.fromarray(_fill(pixels, hole))
        else:
            background = image
        out, masks = background.copy(), list(masks)
        for i in edited:
            rows, cols = np.nonzero(masks[i])
            top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
            size = (max(1, round((right - left) * self.factor)), max(1, round((bottom - top) * self.factor)))
            patch = image.crop((left, top, right, bottom)).resize(size, Image.BICUBIC)
            shape = Image.fromarray(masks[i][top:bottom, left:right].astype(np.uint8) * 255).resize(size, Image.BILINEAR)
            at = (round((left + right) / 2 - size[0] / 2), bottom - size[1])
            out.paste(patch, at, shape)
            mask = Image.new("L", out.size)
            mask.paste(shape, at)
            masks[i] = np.asarray(mask) > 127
        return out, masks


def asked(doc: dict, edit: Resize = Resize()) -> Asked | None:
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
    suffix = "" if edit == Resize() else f"@{edit.which}x{edit.factor:.3f}"
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
        edits = [Resize(), *(Resize.drawn(f"{doc['image_name']}/{k}") for k in range(VIEWS))]
        out += [a for a in (asked(doc, e) for e in edits) if a is not None]
    return out


def read_docs(folders: Iterable) -> list[dict]:
    """The unmarked questions of generator folders, through the task's loader (checked once, there)."""
    docs = []
    for folder in folders:
        docs += list(load.load_o3d(str(folder), marked=False))
    return docs
