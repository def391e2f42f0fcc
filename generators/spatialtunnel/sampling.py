"""Which SpatialTunnel images to render and everything random about each one (no Blender here).

The image list of a variant is fixed by its flags, in this order (positions count from 0):

* phase: for theta1 index r, then theta2 index c (both 0..grid-1), then replicate k
  (0..per_cell-1): ``image_id = "phase-r{r:02d}-c{c:02d}-k{k:02d}"``.
* size: for s1 in SIZE_SWEEP (0.10, 0.12, ... 0.30), then replicate k:
  ``image_id = "size-s{100*s1:03d}-k{k:02d}"`` (e.g. "size-s010-k07").
* probing (contrastive-probing pairs, §5): for each answer left, right, above, below, far, close,
  then replicate k (``--per-cell`` pairs per answer, balanced):
  ``image_id = "probing-{answer}-k{k:03d}"``; one question in the probing templates
  (probe.data.TEMPLATES) about the object that has that relation to the other.

Each image's seed is ``derive_seed(run_seed, image_id)`` (SHA-256), and everything random is
drawn from ``random.Random(seed)`` using only ``random()`` (whose stream CPython keeps stable
across versions), in this order:

1. obj1's (colour, shape) uniformly from the 14 pairs; obj2's from the 13 others;
2. roughness1, roughness2 ~ U[0.05, 1.0];
3. phase only: size factors f1, f2 ~ U[1.0, 1.5] (s1 = 0.2 f1, s2 = 0.1 f2);
   size variant: sizes are exactly s1 and s2 = 0.4 - s1 (the sweep controls them);
4. sun rotation ~ U[1.25 pi, 1.75 pi];
5. size only: theta1 index, theta2 index uniformly from 0..grid-1, drawn again (same stream)
   while the two objects could overlap in the image (``may_overlap``: a big near object at
   the same angle can hide a small far one completely). The phase grid never overlaps.

Probing pairs draw (colour, shape) x 2, roughness x 2, one size factor, the sun rotation, then
their angles (``_probing_spec``).

The same flags and seed therefore give the same images on any machine, shard or worker.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from spatial_tasks.generators.common.jobs import derive_seed

from spatial_tasks.spatialtunnel import geometry
from spatial_tasks.spatialtunnel.probe.data import CATEGORY_ORDER, TEMPLATES
from spatial_tasks.spatialtunnel.probe.metrics import AXIS_OF
from spatial_tasks.spatialtunnel.questions import questions_for
from spatial_tasks.spatialtunnel.schema import COLORS, SHAPES

VARIANTS = ("phase", "size", "probing")
BENCHMARK_VARIANTS = ("phase", "size")  # what --variant all renders
DEFAULT_PER_CELL = {"phase": 12, "size": 100, "probing": 200}  # probing: pairs per answer, as the official set
SEED_NAMESPACE = "spatialtunnel"
NOMINAL_SIZES = (0.2, 0.1)  # half-extents of obj1 (far) and obj2 (near), paper §3
SIZE_FACTOR_RANGE = (1.0, 1.5)
ROUGHNESS_RANGE = (0.05, 1.0)
SUN_ROTATION_RANGE = (1.25 * math.pi, 1.75 * math.pi)
SIZE_SUM = geometry.SIZE_SUM  # size variant: s1 + s2
SIZE_SWEEP = geometry.SIZE_SWEEP  # s1 = 0.10 ... 0.30
OVERLAP_MARGIN = 0.01  # image-plane units (x/depth): ~5 px at 512 px between the objects' outlines
MAX_THETA_DRAWS = 1000
DEPTH_MID = (geometry.DEPTH_NEAR + geometry.DEPTH_FAR) / 2  # probing left/right and above/below pairs
PROBE_SIZE = 0.15  # probing left/right and above/below: both objects' nominal half-extent
OBJECT_KINDS = tuple((colour, shape) for colour in COLORS for shape in SHAPES)


@dataclass(frozen=True)
class ImageSpec:
    """One image to render: its id, seed and every sampled or derived scene parameter.

    ``position`` and the questions are fixed here, when the objects are placed; the renderer
    adds what only the camera knows (pixel centres, apparent radii).
    """

    position_in_variant: int
    image_id: str
    variant: str
    grid: int
    seed: int
    theta1_index: int
    theta2_index: int
    theta1: float
    theta2: float
    depth1: float
    depth2: float
    size1: float
    size2: float
    size1_nominal: float
    size2_nominal: float
    color1: str
    shape1: str
    color2: str
    shape2: str
    roughness1: float
    roughness2: float
    sun_rotation: float
    position1: tuple[float, float, float]
    position2: tuple[float, float, float]
    probe_label: str | None = None  # probing variant: the original question's answer
    probe_query_slot: int | None = None  # probing variant: the object (1 or 2) the question asks about

    @property
    def obj1(self) -> str:
        return f"{self.color1} {self.shape1}"

    @property
    def obj2(self) -> str:
        return f"{self.color2} {self.shape2}"

    def metadata(self) -> dict:
        """The sampled fields of the dataset row (schema.IMAGE_FEATURES names), JSON-ready."""
        row = asdict(self)
        row.pop("position_in_variant")
        label, slot = row.pop("probe_label"), row.pop("probe_query_slot")
        row["position1"], row["position2"] = list(self.position1), list(self.position2)
        row["obj1"], row["obj2"] = self.obj1, self.obj2
        if self.variant != "probing":
            row["questions"] = questions_for(self.obj1, self.obj2)
            return row
        query, reference = (self.obj1, self.obj2) if slot == 1 else (self.obj2, self.obj1)
        axis = AXIS_OF[label]
        row.update(index=self.position_in_variant, question=TEMPLATES[axis].format(query=query, reference=reference),
                   answer=label, query=query, reference=reference)
        return row


def check_variant(variant: str, flag: str = "--variant") -> None:
    if variant not in VARIANTS:
        raise ValueError(f"{flag} must be one of {', '.join(VARIANTS)} (or all), got {variant!r}")


def image_seed(run_seed: int, image_id: str) -> int:
    return derive_seed(run_seed, image_id, SEED_NAMESPACE)


def may_overlap(position1: tuple[float, float, float], size1: float,
                position2: tuple[float, float, float], size2: float, margin: float = OVERLAP_MARGIN) -> bool:
    """Whether the two objects' images could touch or overlap (conservative, resolution-free).

    Works in image-plane units (x / depth, z / depth): each object is bounded by a disc around
    its projected centre with radius sqrt(2) * half-extent / (depth - half-extent) (the
    front-face diagonal of a cube, at its nearest depth), which contains a sphere's or an
    axis-aligned cube's outline here.
    """
    (x1, y1, z1), (x2, y2, z2) = position1, position2
    bound1 = math.sqrt(2) * size1 / (y1 - size1)
    bound2 = math.sqrt(2) * size2 / (y2 - size2)
    return math.hypot(x1 / y1 - x2 / y2, z1 / y1 - z2 / y2) <= bound1 + bound2 + margin


def _uniform(rng: random.Random, low: float, high: float) -> float:
    return low + (high - low) * rng.random()


def _pick(rng: random.Random, options: Sequence):
    return options[min(int(rng.random() * len(options)), len(options) - 1)]


def phase_image_id(theta1_index: int, theta2_index: int, replicate: int) -> str:
    return f"phase-r{theta1_index:02d}-c{theta2_index:02d}-k{replicate:02d}"


def size_image_id(s1: float, replicate: int) -> str:
    return f"size-s{round(s1 * 100):03d}-k{replicate:02d}"


def _appearance(rng: random.Random) -> tuple[tuple[str, str], tuple[str, str], float, float]:
    """Steps 1-2 of every image: two distinct (colour, shape) kinds, then the two roughnesses."""
    kind1 = _pick(rng, OBJECT_KINDS)
    kind2 = _pick(rng, [k for k in OBJECT_KINDS if k != kind1])
    return kind1, kind2, _uniform(rng, *ROUGHNESS_RANGE), _uniform(rng, *ROUGHNESS_RANGE)


def probing_image_id(label: str, replicate: int) -> str:
    return f"probing-{label}-k{replicate:03d}"


def _probing_spec(position: int, label: str, replicate: int, grid: int, run_seed: int) -> ImageSpec:
    """One probing pair. left/right: both objects at DEPTH_MID, mirrored across the vertical
    plane (same height, same size); above/below: mirrored across the horizontal plane; far/close:
    the phase grid's depths and sizes (equal apparent sizes) at two angles drawn at random. The
    question asks about the object that has the answer's relation to the other."""
    image_id = probing_image_id(label, replicate)
    seed = image_seed(run_seed, image_id)
    rng = random.Random(seed)
    kind1, kind2, roughness1, roughness2 = _appearance(rng)
    factor = _uniform(rng, *SIZE_FACTOR_RANGE)
    sun_rotation = _uniform(rng, *SUN_ROTATION_RANGE)
    axis = AXIS_OF[label]
    thetas = [geometry.theta_degrees(i, grid) for i in range(grid)]
    for _ in range(MAX_THETA_DRAWS):
        if axis == "D":
            theta1, theta2 = _pick(rng, thetas), _pick(rng, thetas)
            depths, sizes = (geometry.DEPTH_FAR, geometry.DEPTH_NEAR), (NOMINAL_SIZES[0] * factor, NOMINAL_SIZES[1] * factor)
        else:  # keep angles whose mirror image is a clearly different place
            usable = [t for t in thetas if abs(math.cos(math.radians(t)) if axis == "H" else math.sin(math.radians(t))) > 0.3]
            theta1 = _pick(rng, usable)
            theta2 = (180.0 - theta1) % 360.0 if axis == "H" else (360.0 - theta1) % 360.0
            depths, sizes = (DEPTH_MID, DEPTH_MID), (PROBE_SIZE * factor, PROBE_SIZE * factor)
        position1 = geometry.object_center(theta1, depths[0], sizes[0])
        position2 = geometry.object_center(theta2, depths[1], sizes[1])
        if not may_overlap(position1, sizes[0], position2, sizes[1]):
            break
    else:
        raise ValueError(f"{image_id}: the objects overlap in the image for every angle drawn")
    # which object has the answer's relation to the other: x for left/right, z for above/below, depth for far/close
    coordinate = {"H": 0, "V": 2, "D": 1}[axis]
    first_is_larger = position1[coordinate] > position2[coordinate]
    wants_larger = label in ("right", "above", "far")
    query_slot = 1 if first_is_larger == wants_larger else 2
    return ImageSpec(
        position_in_variant=position, image_id=image_id, variant="probing", grid=grid, seed=seed,
        theta1_index=round(theta1 / (360.0 / grid)) % grid, theta2_index=round(theta2 / (360.0 / grid)) % grid,
        theta1=theta1, theta2=theta2, depth1=depths[0], depth2=depths[1], size1=sizes[0], size2=sizes[1],
        size1_nominal=sizes[0] / factor, size2_nominal=sizes[1] / factor,
        color1=kind1[0], shape1=kind1[1], color2=kind2[0], shape2=kind2[1],
        roughness1=roughness1, roughness2=roughness2, sun_rotation=sun_rotation,
        position1=position1, position2=position2, probe_label=label, probe_query_slot=query_slot,
    )


def _spec(position: int, image_id: str, variant: str, grid: int, run_seed: int,
          theta_indices: tuple[int, int] | None, sizes_nominal: tuple[float, float]) -> ImageSpec:
    seed = image_seed(run_seed, image_id)
    rng = random.Random(seed)
    kind1, kind2, roughness1, roughness2 = _appearance(rng)
    if variant == "phase":
        factors = (_uniform(rng, *SIZE_FACTOR_RANGE), _uniform(rng, *SIZE_FACTOR_RANGE))
    else:
        factors = (1.0, 1.0)
    sun_rotation = _uniform(rng, *SUN_ROTATION_RANGE)
    size1, size2 = sizes_nominal[0] * factors[0], sizes_nominal[1] * factors[1]
    draw = theta_indices is None
    for _ in range(MAX_THETA_DRAWS if draw else 1):
        if draw:
            theta_indices = (_pick(rng, range(grid)), _pick(rng, range(grid)))
        theta1 = geometry.theta_degrees(theta_indices[0], grid)
        theta2 = geometry.theta_degrees(theta_indices[1], grid)
        position1 = geometry.object_center(theta1, geometry.DEPTH_FAR, size1)
        position2 = geometry.object_center(theta2, geometry.DEPTH_NEAR, size2)
        if not may_overlap(position1, size1, position2, size2):
            break
    else:
        raise ValueError(f"{image_id}: the objects overlap in the image for every angle drawn "
                         f"(theta indices {theta_indices}, sizes {size1:.3f}, {size2:.3f})")
    return ImageSpec(
        position_in_variant=position, image_id=image_id, variant=variant, grid=grid, seed=seed,
        theta1_index=theta_indices[0], theta2_index=theta_indices[1], theta1=theta1, theta2=theta2,
        depth1=geometry.DEPTH_FAR, depth2=geometry.DEPTH_NEAR, size1=size1, size2=size2,
        size1_nominal=sizes_nominal[0], size2_nominal=sizes_nominal[1],
        color1=kind1[0], shape1=kind1[1], color2=kind2[0], shape2=kind2[1],
        roughness1=roughness1, roughness2=roughness2, sun_rotation=sun_rotation,
        position1=position1, position2=position2,
    )


def plan(variant: str, *, grid: int = geometry.DEFAULT_GRID, per_cell: int | None = None,
         seed: int = 0) -> list[ImageSpec]:
    """Every image of a variant, in the documented order (shards select from this list)."""
    check_variant(variant)
    if grid < 2:
        raise ValueError(f"--grid must be >= 2, got {grid}")
    per_cell = DEFAULT_PER_CELL[variant] if per_cell is None else per_cell
    if per_cell < 1:
        raise ValueError(f"--per-cell must be >= 1, got {per_cell}")
    specs: list[ImageSpec] = []
    if variant == "probing":
        for label in CATEGORY_ORDER:
            for k in range(per_cell):
                specs.append(_probing_spec(len(specs), label, k, grid, seed))
    elif variant == "phase":
        for r in range(grid):
            for c in range(grid):
                for k in range(per_cell):
                    specs.append(_spec(len(specs), phase_image_id(r, c, k), variant, grid, seed,
                                       (r, c), NOMINAL_SIZES))
    else:
        for s1 in SIZE_SWEEP:
            s2 = round(SIZE_SUM - s1, 10)
            for k in range(per_cell):
                specs.append(_spec(len(specs), size_image_id(s1, k), variant, grid, seed, None, (s1, s2)))
    return specs
