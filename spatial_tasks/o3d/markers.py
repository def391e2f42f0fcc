"""O3-D markers: a red circle on the target, blue squares on the distractors, drawn from masks.

The authors' highest-clarity images mark the target with a filled red circle at the centre of
mass of its mask and every distractor with a filled blue square at the centre of mass of its
mask, both 20 px, and then shrink the image so that its longer side is at most 1024 px. Marked
synthetic images are not on the Hub, so ``image_for`` draws them here from ``targ_seg`` and
``dist_seg``. Details that follow the authors' script (src/dataaug.py in github.com/lyiqian/o3-d):

* Centres are the mean (column, row) of the mask's non-zero pixels, rounded to whole pixels
  (round half to even).
* Marker size 20 means half-width 20 // 2 = 10 on each side of the centre, inclusive, so a marker
  spans 21 pixels (what cv2 draws there); colours are pure red (255, 0, 0) and blue (0, 0, 255).
  The circle is drawn first, then the squares (a square can cover part of the circle).
* The rescale only ever shrinks (max side > 1024 -> 1024, bilinear); smaller images keep their size.
* How several distractors are told apart in one ``dist_seg``: every distinct non-zero grey level
  is one object. The authors' renderer keeps each object's own segmentation id and writes the
  mask as id * 255 // max(id), so the levels are distinct per distractor. If a mask has a single
  non-zero level (a plain binary mask) but several 8-connected blobs, each blob is one
  distractor (blobs under 5 % of the largest are dropped as fragments). The target mask is always
  one object (one circle at the centre of mass of all its pixels).
* If a mask's size differs from the image's, centres are scaled to the image.

Drawn images are cached in a small LRU (``MARKER_CACHE``) keyed by (source, subset, image_name);
``MARKER_CACHE.draws`` counts actual draws.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np
from PIL import Image, ImageDraw

MARKER_SIZE = 20
MAX_SIDE = 1024
TARGET_COLOR = (255, 0, 0)
DISTRACTOR_COLOR = (0, 0, 255)
FRAGMENT_FRACTION = 0.05


def as_label_array(mask: Image.Image | np.ndarray) -> np.ndarray:
    """A 2-D integer array from a mask image/array (first channel of a multi-channel mask)."""
    arr = np.asarray(mask)
    if arr.ndim == 3:
        arr = arr[..., 0]
    if arr.ndim != 2:
        raise ValueError(f"a mask must be 2-D (or H x W x C), got shape {arr.shape}")
    if arr.dtype == bool:
        return arr.astype(np.uint8)
    return arr


def _connected_components(binary: np.ndarray) -> tuple[np.ndarray, int]:
    try:
        from scipy import ndimage
    except ImportError:  # scipy comes with lmms-eval's dependencies; keep a plain fallback anyway
        return _flood_fill_components(binary)
    return ndimage.label(binary, structure=np.ones((3, 3), dtype=bool))


def _flood_fill_components(binary: np.ndarray) -> tuple[np.ndarray, int]:
    labels = np.zeros(binary.shape, dtype=np.int32)
    h, w = binary.shape
    count = 0
    for r0, c0 in zip(*np.nonzero(binary)):
        if labels[r0, c0]:
            continue
        count += 1
        labels[r0, c0] = count
        stack = [(r0, c0)]
        while stack:
            r, c = stack.pop()
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    if 0 <= rr < h and 0 <= cc < w and binary[rr, cc] and not labels[rr, cc]:
                        labels[rr, cc] = count
                        stack.append((rr, cc))
    return labels, count


def instance_masks(seg: Image.Image | np.ndarray, *, split_binary: bool = True) -> list[np.ndarray]:
    """One boolean mask per object in a labelled mask (see the module docstring), by grey level."""
    labels = as_label_array(seg)
    levels = [v for v in np.unique(labels) if v != 0]
    if len(levels) == 1 and split_binary:
        comp, n = _connected_components(labels != 0)
        if n > 1:
            areas = np.bincount(comp.ravel())[1:]
            keep = [i + 1 for i, a in enumerate(areas) if a >= FRAGMENT_FRACTION * areas.max()]
            return [comp == i for i in keep]
    return [labels == v for v in levels]


def centre_of_mass(mask: np.ndarray) -> tuple[float, float]:
    """(x, y) = mean column and row of the mask's non-zero pixels."""
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        raise ValueError("empty mask has no centre of mass")
    return float(cols.mean()), float(rows.mean())


def marker_centres(targ_seg, dist_seg) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Unrounded centres of the target (one, or none for an empty mask) and of each distractor."""
    targ = as_label_array(targ_seg) != 0
    targets = [centre_of_mass(targ)] if targ.any() else []
    distractors = [centre_of_mass(m) for m in instance_masks(dist_seg)]
    return targets, distractors


def _scale(points, from_hw: tuple[int, int], to_wh: tuple[int, int]):
    (mh, mw), (w, h) = from_hw, to_wh
    if (mh, mw) == (h, w):
        return points
    return [(x * w / mw, y * h / mh) for x, y in points]


def draw_markers(image: Image.Image, targ_seg, dist_seg, *, size: int = MARKER_SIZE,
                 max_side: int | None = MAX_SIDE) -> Image.Image:
    """A new RGB image with the target's red circle and the distractors' blue squares, then shrunk."""
    out = image.convert("RGB")
    targ, dist = as_label_array(targ_seg), as_label_array(dist_seg)
    targets, distractors = marker_centres(targ, dist)
    targets = _scale(targets, targ.shape, out.size)
    distractors = _scale(distractors, dist.shape, out.size)
    half = size // 2
    draw = ImageDraw.Draw(out)
    for x, y in targets:
        x, y = round(x), round(y)
        draw.ellipse((x - half, y - half, x + half, y + half), fill=TARGET_COLOR)
    for x, y in distractors:
        x, y = round(x), round(y)
        draw.rectangle((x - half, y - half, x + half, y + half), fill=DISTRACTOR_COLOR)
    return shrink_to_max_side(out, max_side)


def shrink_to_max_side(image: Image.Image, max_side: int | None = MAX_SIDE) -> Image.Image:
    """Shrink so the longer side is ``max_side`` (never enlarges), like the authors' rescaler."""
    if max_side is None:
        return image
    scale = max_side / max(image.size)
    if scale >= 1:
        return image
    w, h = image.size
    return image.resize((round(w * scale), round(h * scale)), Image.Resampling.BILINEAR)


class MarkerCache:
    """A thread-safe LRU of drawn images; ``draws`` counts cache misses (actual draws)."""

    def __init__(self, maxsize: int = 32):
        self.maxsize = maxsize
        self.draws = 0
        self.hits = 0
        self._items: OrderedDict[Hashable, Image.Image] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Image.Image]) -> Image.Image:
        """The cached image for ``key`` (a copy, so callers may modify it), drawing it on a miss."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key].copy()
        image = make()
        with self._lock:
            self.draws += 1
            self._items[key] = image
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return image.copy()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.draws = 0
            self.hits = 0

    def __len__(self) -> int:
        return len(self._items)


MARKER_CACHE = MarkerCache()
