"""Where the two objects of a SpatialTunnel image are, read from its pixels.

The official tables (``cubec/spatialtunnel``) hold only ``index, image, question, answer``: no
positions, angles or depths. The question names both objects by colour and shape ("the red cube"),
and its template plus the answer say which one is farther (``questions.resolve_template``). This
module finds each named object's centre in the image, so that the loader can apply the paper's
split (the farther object higher or lower, 5 % of the height ambiguous) and place the image in the
16 x 16 grid of Fig. 4 (each object's direction from the image centre, the vanishing point).

How an object is found (``locate``):

1. **Chromatic objects** (red, yellow, green, cyan, blue, magenta). Pixels whose colour is far from
   the tunnel's own colour are foreground: saturation at least ``MIN_SATURATION`` and a hue away
   from the walls' hue (the walls' hue and saturation are measured on the image itself, so a warm
   or grey tunnel both work); a pixel whose hue lies near the walls' needs ``MIN_SATURATION_NEAR_WALL``.
   Connected foreground regions are objects; each is named by the hue range (``HUE_RANGES``) most
   of its pixels fall into, so the dark or pale rim of a shaded object stays with its object. A
   warm light can turn a hue over its range's edge (a cyan cube read green, a magenta one red):
   a named colour with no region takes one of a neighbouring hue (``_turned_hues``).
2. **Black objects** reflect their surroundings and look dark grey, not black: the test is that
   they are much darker than the empty tunnel would be at that place *under the same light*. The
   empty tunnel is estimated from the dataset's other images (``Background``): the per-pixel median
   of the ``NEIGHBOURS`` images whose overall brightness pattern is closest (the sun's rotation is
   the only thing that changes the lighting, and objects sit elsewhere in other images). Regions
   darker than ``DARK_RATIO`` of that estimate, away from coloured objects and from the vanishing
   point (where no object on a wall can be), are black objects, if on the role's ring, of its size
   and reaching its wall (``BLACK_REACH``: the dark far end, darker than estimated, can join an
   object's region or pass for one). Where none is, a region darker than ``STRICT_DARK_RATIO`` is
   (which parts the object from such a patch), else one darker than ``LOOSE_DARK_RATIO``. By the
   dark far end only the object's outer part is darker than the tunnel behind it, so each region
   is completed towards the vanishing point to the object's edge (``_completed``). Without other
   images (a single image), a grey closing of the image itself stands in for the empty tunnel.
3. **Two objects of one colour** (a red cube and a red sphere): both rest on the tunnel's walls at
   fixed depths, so the farther one is the one nearer the vanishing point (in the square tunnel's
   own measure, the larger of |dx| and |dy|) -- the geometry the benchmark is built on.

The centre of an object is the centroid of its region. An object that cannot be found (no region
of its colour, or two where one was expected) is reported with the reason and never guessed: the
loader counts such questions as ``unknown`` and names their rows.

Measured on our own renders against the recorded projections of the object centres
(``benchmarks/pixel_split.py``): rows within 1.4 px at 128 px (``LEVEL_PX``, scaled with the
height; a black object's to 1.5 times that plus 2 px, ``level_tolerance``). So a label whose decision line is
closer than that to the measured rows is not read from them (``split_of``): which object is
higher for pairs off the midline that close to level (the tunnel has such pairs: sizes vary), and
whether ambiguous for pairs that close to the 5 % line. The other label of such a pair is known.
Such a label is then decided by its cell's geometry where that leaves one answer (``read_all``):
each object on the wall at its cell's angle, the walls' scale at the two depths measured on the
dataset's spheres, every size the paper draws -- and only if every image the rows do decide lies
within what its cell allows. Else, in the phase variant, it takes its cell's split when the cell's
other images agree on it (``cell_splits``: the paper files whole cells); else it stays unknown.
The cell is the direction of the point where the object rests on the wall (``wall_angle``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image
from scipy import ndimage

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.pixel_thresholds import (
    BLACK_EDGE_PX,
    BLACK_REACH,
    BLACK_UNCERTAINTY,
    CENTRE_EXCLUSION,
    CLOSING_SIDE,
    COMPLETE,
    COMPLETE_SLACK,
    CONTACT,
    DARK_FLOOR,
    DARK_RATIO,
    FEATURE_SIDE,
    GREY_SPREAD,
    HUE_RANGES,
    JPEG_LEVEL_PX,
    JPEG_MIN_QUALITY,
    LEVEL_PX,
    LOG_OFFSET,
    LOOSE_DARK_RATIO,
    MIN_AREA_FRACTION,
    MIN_BACKGROUND_IMAGES,
    MIN_CELL_IMAGES,
    MIN_CHROMA,
    MIN_CHROMA_NEAR_WALL,
    MIN_RING_OBJECTS,
    MIN_SATURATION,
    MIN_SATURATION_NEAR_WALL,
    MIN_SPHERES,
    NEAR_WALL_SATURATION_GAP,
    NEIGHBOURS,
    RING_MARGIN,
    RING_PERCENTILES,
    RIVAL_AREA,
    SCALE_EDGE_PX,
    SHAPE_SCATTER,
    SHAPE_SPREAD,
    SIZE_MARGIN,
    SIZE_SIGMAS,
    STRICT_DARK_RATIO,
    TWO_HUE_APART,
    TWO_HUE_SHARE,
    WALL_HUE_BAND,
    WALL_MIN_PIXELS,
    WALL_MIN_VALUE,
    WALL_SATURATION,
)
from spatial_tasks.spatialtunnel.schema import COLORS

# Every tuned threshold is in pixel_thresholds.py, one table, each with the measurement that set it.

CHROMATIC = tuple(c for c in COLORS if c != "black")
HUE_ORDER = ("red", "yellow", "green", "cyan", "blue", "magenta")  # round the hue circle
HUE_CENTRES = {c: 60.0 * i for i, c in enumerate(HUE_ORDER)}  # the nominal hues, degrees
HUE_NEIGHBOURS = {c: {HUE_ORDER[(i - 1) % 6], HUE_ORDER[(i + 1) % 6]} for i, c in enumerate(HUE_ORDER)}
# JPEG Annex K's luminance table (mean 57.625): libjpeg scales it by the quality setting.
_ANNEX_K_MEAN = 57.625


@dataclass(frozen=True)
class Found:
    """One object's region: centroid (column, row) in pixels, area in pixels, its colour name, and
    (a coloured one) its pixels' mean hue in degrees."""

    x: float
    y: float
    area: int
    colour: str
    hue: float | None = None


@dataclass
class Located:
    """The two objects of one image (obj1 farther) or why they could not both be found."""

    far: Found | None = None
    near: Found | None = None
    width: int = 0
    height: int = 0
    problem: str | None = None
    regions: list[Found] = field(default_factory=list, repr=False)
    level_px: float = LEVEL_PX  # this image's row accuracy at 128 px (wider for a lossy JPEG)

    @property
    def ok(self) -> bool:
        return self.problem is None and self.far is not None and self.near is not None


def level_tolerance(height: int, black: bool = False, level_px: float | None = None) -> float:
    """How far a measured row may be from the true one, in pixels (see the module docstring): a
    share of the height, and for a black object ``BLACK_UNCERTAINTY`` times that plus
    ``BLACK_EDGE_PX`` (its outline is a faint step, blurred over a pixel or two at any size);
    ``level_px``: the image's accuracy at 128 px (``encoding``; default ``LEVEL_PX``)."""
    tolerance = (LEVEL_PX if level_px is None else level_px) * height / 128.0
    return tolerance * BLACK_UNCERTAINTY + BLACK_EDGE_PX if black else tolerance


# ------------------------------------------------------------------------------------------
# Pixels


def encoding(data: bytes, rgb: np.ndarray) -> tuple[float, str | None]:
    """(the row accuracy at 128 px this image's encoding allows, or why it cannot be read), from its
    header and its decoded pixels ``rgb`` (``decode``): lossless colour -> LEVEL_PX; a JPEG ->
    JPEG_LEVEL_PX, or a problem below JPEG_MIN_QUALITY; a grey image -> a problem (the measurements
    above JPEG_LEVEL_PX)."""
    with Image.open(io.BytesIO(data)) as image:  # the header only: the pixels are ``rgb``
        grey = image.mode in ("1", "L", "LA", "I", "I;16", "F")
        grey = grey or float(np.abs(rgb - rgb[..., :1]).max()) <= GREY_SPREAD  # equal channels: a grey image
        if grey:
            return LEVEL_PX, "a grey image: its objects are told apart by colour"
        if image.format == "JPEG":
            quality = jpeg_quality(getattr(image, "quantization", None) or {})
            if quality is not None and quality < JPEG_MIN_QUALITY:
                return JPEG_LEVEL_PX, (f"a JPEG of quality about {quality}: below {JPEG_MIN_QUALITY} its objects move by "
                                       "tens of pixels (pixels.JPEG_MIN_QUALITY)")
            return JPEG_LEVEL_PX, None
    return LEVEL_PX, None


def jpeg_quality(tables: dict) -> int | None:
    """libjpeg's quality setting, estimated from the luminance quantisation table (None without one)."""
    table = tables.get(0)
    if not table:
        return None
    scale = 100.0 * float(np.mean(table)) / _ANNEX_K_MEAN
    quality = (200.0 - scale) / 2.0 if scale <= 100.0 else 5000.0 / scale
    return max(1, min(100, round(quality)))


def decode(data: bytes) -> np.ndarray:
    """An encoded image as float RGB in [0, 1], shape (H, W, 3)."""
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0


def hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue in degrees [0, 360), saturation and value in [0, 1]."""
    high = rgb.max(axis=-1)
    low = rgb.min(axis=-1)
    spread = high - low
    safe = np.where(spread > 1e-6, spread, 1.0)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    hue = np.where(high == r, (g - b) / safe, np.where(high == g, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe))
    hue = np.where(spread > 1e-6, (hue * 60.0) % 360.0, 0.0)
    saturation = np.where(high > 0, spread / np.where(high > 0, high, 1.0), 0.0)
    return hue, saturation, high


def hue_distance(a: np.ndarray | float, b: float) -> np.ndarray:
    d = np.abs((np.asarray(a) - b) % 360.0)
    return np.minimum(d, 360.0 - d)


def in_range(hue: np.ndarray, start: float, end: float) -> np.ndarray:
    return (hue >= start) | (hue < end) if start > end else (hue >= start) & (hue < end)


def thumbnail(value: np.ndarray) -> np.ndarray:
    """The brightness pattern of an image, FEATURE_SIDE x FEATURE_SIDE (block means)."""
    h, w = value.shape
    rows = np.linspace(0, h, FEATURE_SIDE + 1).astype(int)
    cols = np.linspace(0, w, FEATURE_SIDE + 1).astype(int)
    summed = np.add.reduceat(np.add.reduceat(value, rows[:-1], axis=0), cols[:-1], axis=1)
    counts = np.outer(np.diff(rows), np.diff(cols))
    return (summed / counts).astype(np.float32).ravel()


class Background:
    """The empty tunnel under an image's light, from other images of the same dataset.

    ``image_bytes`` yields the encoded bytes of image k; thumbnails are computed once, and the
    neighbours of an image are decoded only when a black object is looked for in it. ``sizes``:
    each image's (height, width); a table may mix sizes, and neighbours are of the image's own.
    """

    def __init__(self, thumbnails: np.ndarray, image_bytes, sizes: Sequence[tuple[int, int]],
                 neighbours: int | None = None):
        self.thumbnails = np.asarray(thumbnails, dtype=np.float32)
        self.image_bytes = image_bytes
        self.sizes = [tuple(size) for size in sizes]
        self.neighbours = NEIGHBOURS if neighbours is None else neighbours

    def __len__(self) -> int:
        return len(self.thumbnails)

    def estimate(self, k: int, shape: tuple[int, int]) -> np.ndarray | None:
        """The median brightness of image k's nearest neighbours (None with too few images)."""
        if len(self) <= self.neighbours:
            return None
        distance = ((self.thumbnails - self.thumbnails[k]) ** 2).sum(axis=1)
        distance[k] = np.inf
        distance[np.array([size != tuple(shape) for size in self.sizes], dtype=bool)] = np.inf
        values = [hsv(decode(self.image_bytes(int(j))))[2]
                  for j in np.argsort(distance)[: self.neighbours] if np.isfinite(distance[j])]
        return np.median(np.stack(values), axis=0) if len(values) >= MIN_BACKGROUND_IMAGES else None


# ------------------------------------------------------------------------------------------
# Regions


def _regions(mask: np.ndarray, min_area: int) -> list[np.ndarray]:
    labels, count = ndimage.label(mask)
    if not count:
        return []
    sizes = ndimage.sum_labels(np.ones_like(labels), labels, index=np.arange(1, count + 1))
    return [labels == k + 1 for k in range(count) if sizes[k] >= min_area]


def _centroid(region: np.ndarray) -> tuple[float, float]:
    rows, cols = np.nonzero(region)
    return float(cols.mean() + 0.5), float(rows.mean() + 0.5)


def _at_vanishing_point(region: np.ndarray) -> bool:
    """A region centred on the vanishing point: the tunnel's far end, never an object on a wall."""
    h, w = region.shape
    x, y = _centroid(region)
    return max(abs(x - w / 2), abs(y - h / 2)) < CENTRE_EXCLUSION * w


def _wall_colour(hue: np.ndarray, saturation: np.ndarray, value: np.ndarray) -> tuple[float, float]:
    """(hue, saturation) of the tunnel itself: the mean hue and median saturation of its clearly lit, weakly
    coloured pixels."""
    lit = (value > WALL_MIN_VALUE) & (saturation < WALL_SATURATION[1]) & (saturation > WALL_SATURATION[0])
    if lit.sum() < WALL_MIN_PIXELS:
        return 0.0, 0.0
    return _mean_hue(hue[lit]), float(np.median(saturation[lit]))


def _mean_hue(hues: np.ndarray) -> float:
    """The circular mean of hues in degrees."""
    angles = np.radians(hues)
    return math.degrees(math.atan2(np.sin(angles).mean(), np.cos(angles).mean())) % 360.0


def chromatic_regions(rgb: np.ndarray) -> tuple[list[Found], np.ndarray]:
    """Every coloured object region (named by its pixels' majority hue range), and the mask of
    those regions (a few stray coloured pixels, as the brown rim of a black object by the dark far
    end, are neither)."""
    hue, saturation, value = hsv(rgb)
    wall_hue, wall_saturation = _wall_colour(hue, saturation, value)
    near_wall = hue_distance(hue, wall_hue) < WALL_HUE_BAND
    needed = np.where(near_wall, max(MIN_SATURATION_NEAR_WALL, wall_saturation + NEAR_WALL_SATURATION_GAP), MIN_SATURATION)
    chroma = saturation * value
    mask = (saturation >= needed) & (chroma >= np.where(near_wall, MIN_CHROMA_NEAR_WALL, MIN_CHROMA))
    min_area = max(3, int(MIN_AREA_FRACTION * mask.size))
    found = []
    kept = np.zeros_like(mask)
    for region in _regions(mask, min_area):
        if _at_vanishing_point(region):
            continue
        kept |= region
        votes = {name: int((in_range(hue[region], *HUE_RANGES[name])).sum()) for name in CHROMATIC}
        ranked = sorted(votes.items(), key=lambda kv: -kv[1])
        (first, _), (second, n2) = ranked[0], ranked[1]
        if n2 >= TWO_HUE_SHARE * region.sum() and n2 >= min_area:  # two touching objects: split by colour ...
            parts = [region & in_range(hue, *HUE_RANGES[name]) for name in (first, second)]
            centres = [_centroid(part) for part in parts]
            apart = math.dist(*centres)
            radii = sum(math.sqrt(part.sum() / math.pi) for part in parts)
            if apart > TWO_HUE_APART * radii:  # ... side by side, not one object whose faces the light turns two hues
                for name, part, (x, y) in zip((first, second), parts, centres):
                    found.append(Found(x, y, int(part.sum()), name, _mean_hue(hue[part])))
                continue
        x, y = _centroid(region)
        found.append(Found(x, y, int(region.sum()), first, _mean_hue(hue[region])))
    return found, kept


def black_regions(rgb: np.ndarray, coloured: np.ndarray, empty: np.ndarray | None,
                  dark_ratio: float | None = None) -> list[Found]:
    """Regions darker than ``dark_ratio`` of the empty tunnel (``empty``: its brightness under this
    image's light; None: estimated from the image itself), away from coloured objects and the
    vanishing point, each completed towards the vanishing point (``_completed``); default
    ``DARK_RATIO``."""
    dark_ratio = DARK_RATIO if dark_ratio is None else dark_ratio
    value = hsv(rgb)[2]
    w = value.shape[1]
    if empty is None:  # no other images: the image with its dark spots closed over
        side = max(3, round(CLOSING_SIDE * w))
        empty = ndimage.grey_closing(value, size=(side, side))
    dark = value < dark_ratio * np.maximum(empty, DARK_FLOOR)
    dark &= ~ndimage.binary_dilation(coloured, iterations=2)
    # no object lies by the vanishing point: its dark far end must not join an object's region
    rows, cols = np.indices(dark.shape)
    dark &= np.maximum(np.abs(cols + 0.5 - w / 2), np.abs(rows + 0.5 - dark.shape[0] / 2)) >= CENTRE_EXCLUSION * w
    min_area = max(3, int(MIN_AREA_FRACTION * dark.size))
    found = []
    for region in _regions(dark, min_area):
        if _at_vanishing_point(region):
            continue
        found.append(_completed(value, region))
    return found


def _completed(value: np.ndarray, region: np.ndarray) -> Found:
    """A black object's region, completed on its side towards the vanishing point.

    The empty tunnel darkens steeply towards its far end, while a black object keeps about one
    brightness: the part of it nearer the vanishing point can be no darker than the tunnel behind
    it, so the dark test keeps only its outer part (on a fresh 512 px render, a cube 33 px wide
    kept 16). The object's extent across that direction is whole, and its outline is still a step
    in log brightness. So along each axis on which the region is shorter than ``COMPLETE`` of its
    longer extent, its inner edge moves to the strongest step within the missing length, in the
    mean log-brightness profile of its middle rows or columns; its centre on that axis is then the
    middle of the two edges (on the other axis, the region's centroid)."""
    h, w = value.shape
    rows, cols = np.nonzero(region)
    x, y = float(cols.mean() + 0.5), float(rows.mean() + 0.5)
    box = {"x": (int(cols.min()), int(cols.max()) + 1), "y": (int(rows.min()), int(rows.max()) + 1)}
    sides = {axis: high - low for axis, (low, high) in box.items()}
    extent = dict(sides)  # the sides once completed
    longest = max(sides.values())
    slack = max(1, round(COMPLETE_SLACK * longest))
    log_value = np.log(value + LOG_OFFSET)
    for axis, other in (("y", "x"), ("x", "y")):
        low, high = box[axis]
        if high - low >= COMPLETE * longest:
            continue
        a, b = box[other]
        a, b = a + (b - a) // 5, max(a + (b - a) // 5 + 1, b - (b - a) // 5)  # its middle 60 %
        profile = log_value[:, a:b].mean(axis=1) if axis == "y" else log_value[a:b, :].mean(axis=0)
        step = np.abs(np.diff(profile))  # step[i]: between i and i + 1, an edge at i + 1
        size = len(profile)
        missing = longest - (high - low) + slack
        centre = (h if axis == "y" else w) / 2
        if (low + high) / 2 > centre:  # its low side faces the vanishing point
            edges = np.arange(max(1, low - missing), min(size - 1, low + slack + 1))
            low = int(edges[np.argmax(step[edges - 1])]) if len(edges) else low
        else:
            edges = np.arange(max(1, high - slack), min(size - 1, high + missing + 1))
            high = int(edges[np.argmax(step[edges - 1])]) if len(edges) else high
        if high > low:
            extent[axis] = high - low
            if axis == "y":
                y = (low + high) / 2
            else:
                x = (low + high) / 2
    # the completed area: the box's, filled as the region fills its own box (a cube's face about
    # wholly, a sphere's cap less), so that ``wall_size`` reads the whole object
    fill = region.sum() / (sides["x"] * sides["y"])
    return Found(x, y, max(int(region.sum()), round(fill * extent["x"] * extent["y"])), "black")


# ------------------------------------------------------------------------------------------
# The two objects of a question


def _turned_hues(found: list[Found], named: set[str]) -> list[Found]:
    """A warm light can turn an object's hue over its range's edge (a cyan cube read green, a
    magenta one red). A named colour with no region takes the regions of a neighbouring hue that
    no object is named by; or, when the other object is named by that neighbouring hue and two of
    its regions are there, the one whose mean hue is nearer its own (``HUE_CENTRES``)."""
    out = list(found)
    for colour in sorted(named & set(CHROMATIC)):
        if any(f.colour == colour for f in out):
            continue
        for neighbour in sorted(HUE_NEIGHBOURS[colour]):
            theirs = [f for f in out if f.colour == neighbour]
            if neighbour not in named and theirs:
                out = [replace(f, colour=colour) if f.colour == neighbour else f for f in out]
            elif neighbour in named and len(theirs) == 2:
                turned = min(theirs, key=lambda f: float(hue_distance(f.hue, HUE_CENTRES[colour])))
                out = [replace(f, colour=colour) if f is turned else f for f in out]
                break
    return out


def square_radius(found: Found, width: int, height: int) -> float:
    """Distance from the vanishing point in the square tunnel's measure: max(|dx|, |dy|)."""
    return max(abs(found.x - width / 2), abs(found.y - height / 2))


def colour_of(name: str) -> str | None:
    """The colour word of an object name ("red cube" -> "red"), or None."""
    first = name.strip().lower().split(" ", 1)[0]
    return first if first in COLORS else None


Ring = tuple[float, float]  # (low, high) square radius of one role's objects, as a share of the width
# The half-extents the paper's scenes use, per variant and role (phase: s1 = 0.2 and s2 = 0.1, each
# x U[1, 1.5]; size: s1 + s2 = 0.4, s1 from 0.10 to 0.30). A black region whose size reading
# (``wall_size``) falls outside its role's range by more than SIZE_MARGIN is not that object: on a
# fresh 512 px render such regions were a shadow or a part of a cube, up to 64 px off.
WALL_SIZES = {"phase": {"far": (0.2, 0.3), "near": (0.1, 0.15)}, "size": {"far": (0.1, 0.3), "near": (0.1, 0.3)}}


def locate(rgb: np.ndarray, far_name: str, near_name: str, empty: np.ndarray | None = None,
           rings: dict[str, Ring] | None = None, sizes: dict[str, tuple[float, float]] | None = None,
           walls: dict[str, float] | None = None) -> Located:
    """Find the farther object ``far_name`` and the nearer ``near_name`` (names as in the question,
    "<colour> <shape>"). ``empty``: the empty tunnel's brightness under this image's light
    (``Background.estimate``), needed only for black objects. ``rings``: where the dataset's far
    and near objects lie ({"far": (low, high), "near": ...} in square radius over width, measured
    on its coloured objects by ``measure_rings``); a candidate off its ring is not that object.
    ``sizes``: each role's half-extent range (``WALL_SIZES``); a black candidate whose size reading
    is outside it (by more than SIZE_MARGIN) is not that object. ``walls``: each role's wall as a share
    of the width (``wall_scales``); a black candidate whose reach is off it (``BLACK_REACH``) is not
    that object."""
    h, w = rgb.shape[:2]
    out = Located(width=w, height=h)
    colours = {"far": colour_of(far_name), "near": colour_of(near_name)}
    if None in colours.values():
        unknown = far_name if colours["far"] is None else near_name
        out.problem = f"{unknown!r} does not start with one of the colours {list(COLORS)}"
        return out
    found, coloured = chromatic_regions(rgb)
    found = _turned_hues(found, set(colours.values()))
    if "black" in colours.values():
        found += black_regions(rgb, coloured, empty)
    out.regions = found

    shapes = {"far": shape_of(far_name), "near": shape_of(near_name)}

    def candidates(role: str, pool: list[Found] = found, sized: bool = True) -> list[Found]:
        mine = [f for f in pool if f.colour == colours[role]]
        if rings and role in rings:
            low, high = rings[role]
            mine = [f for f in mine if low - RING_MARGIN <= square_radius(f, w, h) / w <= high + RING_MARGIN]
        shape = shapes[role]
        if sized and colours[role] == "black" and shape is not None:
            if sizes and role in sizes:
                low, high = sizes[role]
                mine = [f for f in mine
                        if low * (1 - SIZE_MARGIN[0]) <= wall_size(f, shape, w, h) <= high * (1 + SIZE_MARGIN[1])]
            if walls and role in walls:
                mine = [f for f in mine
                        if BLACK_REACH[0] <= reach(f, shape, w, h) / (walls[role] * w) <= BLACK_REACH[1]]
        return sorted(mine, key=lambda f: -f.area)

    if colours["far"] == colours["near"] and not rings:
        return _same_colour_pair(out, candidates("far"), colours["far"])
    for role in ("far", "near"):
        mine = candidates(role)
        colour = colours[role]
        if not mine and colour == "black" and rings and role in rings:
            # where the tunnel is darker than estimated, an object's region joins a patch of it and
            # is off its ring: look again with a stricter test. In a dim part of the tunnel (by its
            # far end, or off a sunlit patch) a black object is only a little darker than the tunnel
            # would be: look again with a looser test, where its ring and its size rule out the rest
            # -- unless another region on the ring is as large, whatever its size reading: then both
            # are reported, not one guessed
            mine, loose = candidates(role, black_regions(rgb, coloured, empty, STRICT_DARK_RATIO)), []
            if not mine:
                loose = black_regions(rgb, coloured, empty, LOOSE_DARK_RATIO)
                mine = candidates(role, loose)
            rivals = [f for f in candidates(role, loose, sized=False) if mine and f is not mine[0]]
            if any(f.area >= RIVAL_AREA * mine[0].area for f in rivals):
                out.problem = (f"no black region clearly darker than the tunnel, and {len(rivals) + 1} slightly darker "
                               f"ones where the dataset's {role} objects lie")
                return out
        where = " where the dataset's " + role + " objects lie" if rings and role in rings else ""
        if sizes and role in sizes and colour == "black":
            where += " with a size its variant draws"
        if not mine:
            out.problem = f"no {colour} object found{where}"
            return out
        if len(mine) > 1 and mine[1].area >= RIVAL_AREA * mine[0].area:
            out.problem = f"{len(mine)} {colour} regions of similar size{where} for one {colour} object"
            return out
        setattr(out, role, mine[0])
    if out.far is out.near:
        out.problem = f"the {colours['far']} objects could not be told apart"
    return out


def _same_colour_pair(out: Located, pool: list[Found], colour: str) -> Located:
    """Two objects of one colour, their rings not known: one pool (largest first), and the farther is
    the one nearer the vanishing point (the module docstring, 3)."""
    if len(pool) < 2:
        out.problem = f"no {colour} object found" if not pool else f"one {colour} region where two objects are {colour}"
        return out
    if len(pool) > 2 and pool[2].area >= RIVAL_AREA * pool[1].area:
        out.problem = f"{len(pool)} {colour} regions of similar size where two {colour} objects are named"
        return out
    out.far, out.near = sorted(pool[:2], key=lambda f: square_radius(f, out.width, out.height))
    return out


def measure_rings(located: Sequence[Located], min_count: int | None = None) -> dict[str, Ring]:
    """Where the far and near objects of a dataset lie (square radius over width, 2nd to 98th
    percentile: ``RING_PERCENTILES``), measured on the coloured objects found; a role seen fewer
    than ``min_count`` (default ``MIN_RING_OBJECTS``)
    times gets no ring."""
    rings = {}
    for role in ("far", "near"):
        radii = [square_radius(getattr(loc, role), loc.width, loc.height) / loc.width for loc in located
                 if loc.ok and getattr(loc, role).colour != "black"]
        if len(radii) >= (MIN_RING_OBJECTS if min_count is None else min_count):
            low, high = RING_PERCENTILES
            rings[role] = (float(np.percentile(radii, low)), float(np.percentile(radii, high)))
    return rings




def wall_angle(found: Found, width: int, height: int, shape: str | None = None) -> float:
    """The object's angular position theta in degrees (from the image's right towards its top):
    the direction of the point where it rests on the wall, not of its centre. An object at theta is
    pulled off the wall by its half-extent on the axis (or, in a corner, both axes) it touches
    (geometry.object_center), which turns its centre's direction towards the nearest diagonal by
    up to 8 deg (a 0.3 m object at 22.5 deg): pushing the centre back out by its apparent radius
    rho on those axes gives theta again, whatever the depth."""
    dx, dy = found.x - width / 2, height / 2 - found.y
    rho = apparent_radius(found, shape) if shape in SHAPE_SPREAD else math.sqrt(found.area / math.pi)
    radius = max(abs(dx), abs(dy))  # the square radius
    if abs(dx) >= radius - CONTACT * rho:
        dx += math.copysign(rho, dx)
    if abs(dy) >= radius - CONTACT * rho:
        dy += math.copysign(rho, dy)
    return math.degrees(math.atan2(dy, dx)) % 360.0


def cell_index(found: Found, width: int, height: int, grid: int, shape: str | None = None) -> int:
    """The angular position (0..grid-1) of an object: ``wall_angle`` to the nearest of ``grid``
    positions."""
    return _nearest_position(wall_angle(found, width, height, shape), grid)


def _nearest_position(angle: float, grid: int) -> int:
    return round(angle / (360.0 / grid)) % grid


def certain_cell(found: Found, width: int, height: int, grid: int, shape: str | None = None) -> int | None:
    """``cell_index``, or None when the object's position is not known well enough to tell its
    cell: a black object (its centre known across its direction to ``BLACK_UNCERTAINTY`` level
    tolerances) whose direction lies closer to a cell's edge than that uncertainty turns it."""
    if found.colour != "black":
        return cell_index(found, width, height, grid, shape)
    radius = math.hypot(found.x - width / 2, found.y - height / 2)
    # across its direction a black centre is surer than along it (where the completion moves it):
    # measured across, at most 2.1 px at 128 px
    uncertainty = level_tolerance(height) * BLACK_UNCERTAINTY
    turn = math.degrees(math.atan2(uncertainty, max(radius, 1e-6)))
    angle = wall_angle(found, width, height, shape)
    step = 360.0 / grid
    to_edge = step / 2 - abs(angle / step - round(angle / step)) * step
    return _nearest_position(angle, grid) if to_edge > turn else None


def cells_of(loc: Located, far_name: str, near_name: str, grid: int) -> tuple[int | None, int | None]:
    """(theta1 index, theta2 index) of a located image (``certain_cell``), the shapes read from the
    objects' names."""
    if not loc.ok:
        return None, None
    return (certain_cell(loc.far, loc.width, loc.height, grid, shape_of(far_name)),
            certain_cell(loc.near, loc.width, loc.height, grid, shape_of(near_name)))


def nearest(found: Sequence[Found], x: float, y: float) -> Found | None:
    return min(found, key=lambda f: (f.x - x) ** 2 + (f.y - y) ** 2, default=None)


# ------------------------------------------------------------------------------------------
# The size variant: the far object's size s1 (Table 9), from the pixels
#
# An object of half-extent s rests on a wall HALF_WIDTH from the axis, so in the square measure
# its centre lies HALF_WIDTH - s from the axis. At depth z its centre's square radius in the image
# is r = f (HALF_WIDTH - s) / z and its apparent radius rho = f s / z: both scale with f / z, so
#     s = HALF_WIDTH * rho / (rho + r)
# whatever the depth, the focal length or the resolution. rho is read from the region's area over
# the shape's silhouette: a sphere's outline is about a disc of radius rho, a cube shows its front
# face (a square of side 2 rho) and, off the axis, some of its side faces (``SHAPE_SPREAD``).
#
# Why the loader does not use it: a region's area gives rho only to about 3 % (spheres) and 5 %
# (cubes, as they are turned), so s1 comes out to a few thousandths, not surely to the sweep's
# 0.02 step: on two fresh 512 px renders (44 images) the nearest sweep value was a neighbour's for
# 2 of the 43 read (benchmarks/pixel_split.py), which would silently mix v(s1 = .3) with v(.28).



def shape_of(name: str) -> str | None:
    """The shape word of an object name ("red cube" -> "cube"), or None."""
    last = name.strip().lower().rsplit(" ", 1)[-1]
    return last if last in SHAPE_SPREAD else None


def apparent_radius(found: Found, shape: str) -> float:
    """rho in pixels: the object's half-extent as seen, from its region's area."""
    disc = math.pi if shape == "sphere" else 4.0
    return math.sqrt(found.area / (disc * SHAPE_SPREAD[shape]))


def reach(found: Found, shape: str, width: int, height: int) -> float:
    """How far from the vanishing point an object's region reaches, in the square tunnel's measure:
    its square radius plus its apparent radius. An object rests on a wall: its wall's, in pixels."""
    return square_radius(found, width, height) + apparent_radius(found, shape)


def wall_size(found: Found, shape: str, width: int, height: int) -> float:
    """The half-extent s of an object resting on a wall (see above), from its region."""
    return geometry.HALF_WIDTH * apparent_radius(found, shape) / reach(found, shape, width, height)


def wall_size_sigma(found: Found, shape: str, width: int, height: int) -> float:
    """One sigma of ``wall_size``: rho's relative scatter (its shape's, and a pixel on the outline),
    carried through s = W rho / (rho + r), whose derivative in log rho is s (1 - s / W)."""
    rho = apparent_radius(found, shape)
    size = wall_size(found, shape, width, height)
    relative = math.hypot(SHAPE_SCATTER[shape], 1.0 / max(rho, 1e-6))
    return size * (1.0 - size / geometry.HALF_WIDTH) * relative


def far_size(loc: Located, far_shape: str | None, near_shape: str | None) -> tuple[float, float] | None:
    """(s1, its sigma) of a size-variant image: the far object's ``wall_size``, and SIZE_SUM minus
    the near object's (the variant fixes s1 + s2), weighted by their inverse variances. A black
    object's region is not its silhouette (its rim takes the walls' light), so it does not count;
    None when no coloured object of the two was found."""
    if not loc.ok or None in (far_shape, near_shape):
        return None
    readings = []
    for found, shape, sign in ((loc.far, far_shape, 1.0), (loc.near, near_shape, -1.0)):
        if found.colour == "black":
            continue
        size = wall_size(found, shape, loc.width, loc.height)
        readings.append((size if sign > 0 else geometry.SIZE_SUM - size,
                         wall_size_sigma(found, shape, loc.width, loc.height)))
    if not readings:
        return None
    weights = [1.0 / sigma ** 2 for _, sigma in readings]
    value = sum(w * v for w, (v, _) in zip(weights, readings)) / sum(weights)
    return value, 1.0 / math.sqrt(sum(weights))


def nearest_sweep_value(value: float, sweep: Sequence[float] = geometry.SIZE_SWEEP) -> float:
    """The sweep's s1 value nearest ``value`` (how ``benchmarks/pixel_split.py`` scores a reading)."""
    return min(sweep, key=lambda s1: abs(s1 - value))


# ------------------------------------------------------------------------------------------
# A whole dataset, and the split of one image



def locate_all(image_bytes: Callable[[int], bytes], names: Sequence[tuple[str, str]],
               progress: Callable[[Iterable[int]], Iterable[int]] = lambda rows: rows,
               variant: str | None = None) -> list[Located]:
    """``locate`` for every image k of a dataset (``image_bytes(k)``; ``names[k]`` = (far, near)):
    coloured objects first, whose positions give each role's ring (``measure_rings``) and wall
    (``wall_scales``); then black objects, each against the empty tunnel under its own light
    (``Background``), on its ring, reaching its wall and, when the ``variant`` is known, with a size
    it draws (``WALL_SIZES``)."""
    count = len(names)
    located: list[Located | None] = [None] * count
    thumbnails, sizes = [], []
    later = []
    levels = [LEVEL_PX] * count
    for k in progress(range(count)):
        data = image_bytes(k)
        rgb = decode(data)
        thumbnails.append(thumbnail(hsv(rgb)[2]))
        sizes.append(rgb.shape[:2])
        far, near = names[k]
        levels[k], problem = encoding(data, rgb)
        if problem is not None:  # never guessed: outside what the reader was measured on
            located[k] = Located(width=rgb.shape[1], height=rgb.shape[0], problem=problem)
        elif "black" in (colour_of(far), colour_of(near)):
            later.append(k)
        else:
            located[k] = locate(rgb, far, near)
    coloured = [(loc, names[k]) for k, loc in enumerate(located) if loc is not None]
    rings = measure_rings([loc for loc, _ in coloured])
    walls = wall_scales([loc for loc, _ in coloured], [pair for _, pair in coloured])
    background = Background(np.stack(thumbnails) if thumbnails else np.zeros((0, FEATURE_SIDE ** 2)), image_bytes,
                            sizes)
    for k in later:
        rgb = decode(image_bytes(k))
        located[k] = locate(rgb, *names[k], background.estimate(k, rgb.shape[:2]), rings, WALL_SIZES.get(variant),
                            walls)
    return [replace(loc, level_px=levels[k]) if loc is not None else Located(problem="not analysed")
            for k, loc in enumerate(located)]


@dataclass(frozen=True)
class Split:
    """The paper's split of one image from its pixels: ``three_way`` / ``two_way`` as in
    geometry.Relation; either may be "unknown", with ``problem`` saying why."""

    three_way: str
    two_way: str
    dy: float | None
    problem: str | None = None


def row_tolerance(loc: Located) -> float:
    """``level_tolerance`` of a located pair's rows' difference (wider with a black object, or a JPEG)."""
    return level_tolerance(loc.height, "black" in (loc.far.colour, loc.near.colour), loc.level_px)


def split_of(loc: Located) -> Split:
    """Consistent / counter / ambiguous from the located centres (see the module docstring).

    A row is measured to ``level_tolerance`` (wider with a black object), so a decision cannot be
    read when the rows' difference dy is that close to it:
    - level: the tunnel's exactly level pairs are the objects both on the horizontal midline
      (theta = 0 or 180 deg: on the vanishing point's row whatever their depth and size), and they
      are level (counter, ambiguous). Other pairs can be a pixel from level and not level: in 20 of
      the 256 cells (a far object on the ceiling or floor, the near one 22.5 deg off the midline)
      the true dy is 0.45 to 2 px at 128 px, its sign fixed by the cell. Such a pair is ambiguous
      (far inside 5 %) but its two-way split (consistent / counter) is unknown;
    - the 5 % line: a pair that close to it has an unknown three-way label (ambiguous or not),
      while its two-way split, the paper's, is sure (dy is far from level)."""
    if not loc.ok:
        return Split("unknown", "unknown", None, loc.problem)
    h = loc.height
    dy = loc.near.y - loc.far.y
    black = "black" in (loc.far.colour, loc.near.colour)
    tolerance = row_tolerance(loc)
    line = geometry.AMBIGUOUS_FRACTION * h
    known_to = f"the rows are known to +-{tolerance:.1f} px{' (a black object)' if black else ''}"
    if abs(dy) <= tolerance and not all(abs(f.y - h / 2) <= tolerance for f in (loc.far, loc.near)):
        return Split("ambiguous", "unknown", dy, f"{known_to} and differ by {abs(dy):.1f} px, off the midline: "
                                                 "ambiguous, but which one is higher cannot be told")
    relation = geometry.vertical_relation(loc.far.y, loc.near.y, h, level=tolerance)
    if abs(abs(dy) - line) <= tolerance:
        return Split("unknown", relation.two_way, dy, f"{known_to} and differ by {abs(dy):.1f} px: "
                     f"{relation.two_way}, but too close to the {geometry.AMBIGUOUS_FRACTION:.0%} line ({line:.1f} px) "
                     "to tell whether ambiguous")
    return Split(relation.three_way, relation.two_way, dy)


# ------------------------------------------------------------------------------------------
# The cell's geometry: what its angles and the dataset's depths allow



def scale_uncertainty(scale: float, largest_size: float) -> float:
    """How far a role's measured wall (``wall_scales``, pixels per metre) may be off, relative: the
    error of its median sphere's apparent radius (``SHAPE_SCATTER`` of the radius, which is the
    size's share of the reach, plus ``SCALE_EDGE_PX``). On our renders (11 tables, 128 and 512 px,
    5 to 31 spheres a role) the walls were up to 1.6 % off at 128 px and 0.5 % at 512 px, the size
    variant's near ones (large spheres, 5 a table) 2.2 % and 1.2 %: this is 1.1 to 60 times the
    error, 1.1 for those near ones."""
    return SHAPE_SCATTER["sphere"] * largest_size / geometry.HALF_WIDTH + SCALE_EDGE_PX / scale


def wall_scales(located: Sequence[Located], names: Sequence[tuple[str, str]]) -> dict[str, float]:
    """Pixels per metre of the cross-section at each role's depth (focal length / depth), as a share
    of the image's width (a table's images need not share one size; ``in_pixels``), measured on the
    dataset's coloured spheres: a sphere rests on a wall, so its reach (square radius plus apparent
    radius) is the wall's (``geometry.HALF_WIDTH`` metres from the axis), whatever its size. The
    median over a role's spheres; a role with fewer than ``MIN_SPHERES`` gets none. (A cube's reach
    is its front face's, nearer the camera by its half-extent: 1 to 2.4 % too wide.)"""
    reaches: dict[str, list[float]] = {"far": [], "near": []}
    for loc, pair in zip(located, names):
        if not loc.ok:
            continue
        for role, name in zip(("far", "near"), pair):
            found = getattr(loc, role)
            if found.colour != "black" and shape_of(name) == "sphere":
                reaches[role].append(reach(found, "sphere", loc.width, loc.height) / loc.width)
    return {role: float(np.median(r)) / geometry.HALF_WIDTH for role, r in reaches.items() if len(r) >= MIN_SPHERES}


def in_pixels(walls: dict[str, float], width: int, variant: str) -> dict[str, tuple[float, float]]:
    """``wall_scales`` for an image ``width`` pixels wide: per role (pixels per metre, its relative
    uncertainty: ``scale_uncertainty`` with the variant's largest size of that role)."""
    return {role: (share * width, scale_uncertainty(share * width, max(WALL_SIZES[variant][role])))
            for role, share in walls.items()}


def cell_dy(theta1: float, theta2: float, walls: dict[str, tuple[float, float]],
            sizes: dict[str, tuple[float, float]], height: int) -> tuple[float, float]:
    """The range of dy (geometry.Relation: row of the nearer minus row of the farther object) that a
    cell's angles allow: each object at its angle on the wall (``geometry.object_center``), of every
    size ``sizes[role]`` allows (low, high), its height above the axis times its wall's scale
    ``walls[role]`` = (pixels per metre, relative uncertainty: ``in_pixels``)."""
    rows = {}
    for role, theta in (("far", theta1), ("near", theta2)):
        scale, off = walls[role]
        # monotone in the size; rounded, as sin(180 deg) is 1e-16, not 0
        up = [round(geometry.object_center(theta, 1.0, size)[2], 12) for size in sizes[role]]
        rows[role] = [height / 2 - scale * k * z for z in up for k in (1 - off, 1 + off)]
    return min(rows["near"]) - max(rows["far"]), max(rows["near"]) - min(rows["far"])




def sizes_of(loc: Located, names: tuple[str, str], variant: str) -> dict[str, tuple[float, float]]:
    """The sizes (low, high per role) an image's objects can have: its variant's (``WALL_SIZES``);
    in the size variant, whose s1 + s2 is fixed, s1 within ``SIZE_SIGMAS`` of its reading
    (``far_size``), when it has one."""
    sizes = WALL_SIZES[variant]
    reading = far_size(loc, shape_of(names[0]), shape_of(names[1])) if variant == "size" else None
    if reading is None:
        return sizes
    low = max(sizes["far"][0], reading[0] - SIZE_SIGMAS * reading[1])
    high = min(sizes["far"][1], reading[0] + SIZE_SIGMAS * reading[1])
    if low > high:  # read outside the sweep: keep the whole of it
        return sizes
    return {"far": (low, high), "near": (geometry.SIZE_SUM - high, geometry.SIZE_SUM - low)}


def _with_geometry(split: Split, loc: Located, allowed: tuple[float, float]) -> Split:
    """``split`` with the labels its rows left unknown decided, where the rows' measured range
    (dy +- the tolerance) and the range the cell allows (``cell_dy``) together lie on one side of
    the label's line (level; the 5 % line)."""
    tolerance = row_tolerance(loc)
    low, high = max(allowed[0], split.dy - tolerance), min(allowed[1], split.dy + tolerance)
    two_way, three_way = split.two_way, split.three_way
    if two_way == "unknown" and (low > 0 or high < 0):
        two_way = "consistent" if low > 0 else "counter"
    line = geometry.AMBIGUOUS_FRACTION * loc.height
    if three_way == "unknown":
        if -line < low and high < line:
            three_way = "ambiguous"
        elif (low >= line or high <= -line) and two_way != "unknown":
            three_way = two_way
    if (two_way, three_way) == (split.two_way, split.three_way):
        return split
    left = None if "unknown" not in (two_way, three_way) else split.problem
    return Split(three_way, two_way, split.dy, left)




@dataclass(frozen=True)
class Unused:
    """Why the cells' geometry decided no label (``read_all``), and the image that does not fit it
    (an index of ``located``), if that is why."""

    reason: str
    image: int | None = None


@dataclass(frozen=True)
class Reading:
    """What the pixels say of one image: its split, each object's cell (None: not sure), and what
    decided a label its rows alone left unknown: "geometry" (``cell_dy``), "cell" (``cell_splits``)
    or None."""

    split: Split
    cells: tuple[int | None, int | None]
    filed_by: str | None = None


def read_all(located: Sequence[Located], names: Sequence[tuple[str, str]], grid: int,
             variant: str = "phase") -> tuple[list[Reading], Unused | None]:
    """``split_of`` and ``cells_of`` of every located image (``names[k]`` = (far, near)), and why
    the cells' geometry was not used (None: it was).

    A label its rows leave unknown is decided, first, by the cell's geometry (``cell_spans``) where
    that and the rows agree on one side of its line (``_with_geometry``). Then, in the phase variant
    (whose cells share their split), an image still too close to level takes its cell's split when
    the cell's other images agree on it (``cell_splits``)."""
    splits = [split_of(loc) for loc in located]
    cells = [cells_of(loc, *pair, grid) for loc, pair in zip(located, names)]
    whole = [None if None in pair else pair for pair in cells]
    filed_by: list[str | None] = [None] * len(splits)
    spans, unused = cell_spans(located, names, whole, grid, variant)
    for k, (split, span) in enumerate(zip(splits, spans)):
        if span is not None and "unknown" in (split.two_way, split.three_way):  # a span: the pair was placed
            decided = _with_geometry(split, located[k], span)
            if decided is not split:
                splits[k], filed_by[k] = decided, "geometry"
    agreed = cell_splits(whole, splits) if variant == "phase" else {}
    readings = []
    for split, pair, cell, by in zip(splits, cells, whole, filed_by):
        if split.two_way == "unknown" and cell in agreed:
            problem = split.problem if split.three_way == "unknown" else None
            split, by = Split(split.three_way, agreed[cell], split.dy, problem), "cell"
        readings.append(Reading(split, pair, by))
    return readings, unused


def cell_spans(located: Sequence[Located], names: Sequence[tuple[str, str]],
               cells: Sequence[tuple[int, int] | None], grid: int,
               variant: str) -> tuple[list[tuple[float, float] | None], Unused | None]:
    """The range of dy each image's cell allows (``cell_dy``; None where its cell is not known),
    with the walls measured on the dataset's spheres (``wall_scales``) -- or no ranges and why,
    when the walls cannot be measured or the geometry does not fit the dataset: every placed
    image's rows (dy +- their tolerance) must meet its cell's range."""
    none: list[tuple[float, float] | None] = [None] * len(located)
    if variant not in WALL_SIZES:
        return none, Unused(f"the {variant} variant's sizes are not known")
    walls = wall_scales(located, names)
    if len(walls) < 2:
        return none, Unused(f"fewer than {MIN_SPHERES} coloured spheres of each role found to measure the walls on")
    spans = [None if cell is None else cell_dy(360.0 * cell[0] / grid, 360.0 * cell[1] / grid,
                                               in_pixels(walls, loc.width, variant), sizes_of(loc, pair, variant),
                                               loc.height)
             for cell, loc, pair in zip(cells, located, names)]
    for k, (loc, span) in enumerate(zip(located, spans)):
        if span is None:
            continue
        dy, tolerance = loc.near.y - loc.far.y, row_tolerance(loc)
        if dy + tolerance < span[0] or dy - tolerance > span[1]:
            return none, Unused(f"its rows differ by {dy:.1f} px, which its cell {cells[k]} does not allow "
                                f"({span[0]:.1f} to {span[1]:.1f} px): the dataset's geometry is not the paper's", k)
    return spans, None


def cell_splits(cells: Sequence[tuple[int, int] | None], splits: Sequence[Split]) -> dict[tuple[int, int], str]:
    """The two-way split of each phase cell, from its images whose split is known: the paper files
    whole cells (Fig. 4: a cell is in the consistent or the counter subset), and in the tunnel's
    phase grid a cell's images share it, whatever their sizes (the near-level cells of
    ``split_of`` differ by 0.45 to 2 px at 128 px, never crossing level). A cell gets a split when
    at least ``MIN_CELL_IMAGES`` of its images (``cells[k]``, ``splits[k]``, one per image) have
    it and none has the other; its images within a pixel of level then take it."""
    seen: dict[tuple[int, int], set[str]] = {}
    count: dict[tuple[int, int], int] = {}
    for cell, split in zip(cells, splits):
        if cell is not None and split.two_way in ("consistent", "counter"):
            seen.setdefault(cell, set()).add(split.two_way)
            count[cell] = count.get(cell, 0) + 1
    return {cell: labels.pop() for cell, labels in seen.items() if len(labels) == 1 and count[cell] >= MIN_CELL_IMAGES}

