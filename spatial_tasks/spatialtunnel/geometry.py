"""SpatialTunnel scene geometry: one definition shared by the Blender generator and the loaders.

World frame (Blender's): the tunnel axis is +Y, the camera sits at the origin looking down +Y
with +Z up. The cross-section is the square |x| <= HALF_WIDTH, |z| <= HALF_WIDTH (2 m x 2 m,
paper §3). An object's angular position theta is measured in the cross-section plane from +X
towards +Z (theta = 90 deg is the ceiling's centre line, 270 deg the floor's). Objects rest on
the interior surface: their centre is the wall point in direction theta pulled inwards by the
object's half-extent on each axis, so a corner object touches both walls.

obj1 is always the farther object (DEPTH_FAR), obj2 the nearer (DEPTH_NEAR). Sizes are
half-extents (sphere radius, half the cube edge) in metres; with DEPTH_FAR = 2 * DEPTH_NEAR the
paper's s1 = 0.2 and s2 = 0.1 project to the same image size, so size gives no depth cue.

The generator records the pixel centres that Blender's own camera projection gives; the pure
functions here reproduce that projection analytically (a test checks they agree) so loaders
can derive geometry for sources that only carry angles and depths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HALF_WIDTH = 1.0  # m; the tunnel is 2 m x 2 m
DEPTH_FAR = 8.0  # m along the axis; obj1
DEPTH_NEAR = 4.0  # m along the axis; obj2
SIZE_SUM = 0.4  # size variant: s1 + s2 (half-extents, m)
SIZE_SWEEP = tuple(round(0.10 + 0.02 * i, 2) for i in range(11))  # size variant: s1 = 0.10 ... 0.30
TUNNEL_START = -1.0  # m; the tunnel begins just behind the camera
TUNNEL_END = 40.0  # m; open far end, the sky shows through it
FOCAL_LENGTH_MM = 35.0
SENSOR_WIDTH_MM = 36.0  # square images: the sensor fits the width
DEFAULT_GRID = 16  # angular positions per object (16 x 16 cells)
AMBIGUOUS_FRACTION = 0.05  # |dy| < 5% of image height => ambiguous (paper §3)


def theta_degrees(index: int, grid: int = DEFAULT_GRID) -> float:
    """Angle of angular position ``index`` of ``grid`` equally spaced positions, starting at +X."""
    if not 0 <= index < grid:
        raise ValueError(f"theta index {index} out of range 0..{grid - 1}")
    return 360.0 * index / grid


def object_center(theta_deg: float, depth: float, half_extent: float) -> tuple[float, float, float]:
    """World position (x, y, z) of an object resting on the tunnel's inner surface."""
    if not 0 < half_extent < HALF_WIDTH:
        raise ValueError(f"object half-extent {half_extent} must be in (0, {HALF_WIDTH})")
    t = math.radians(theta_deg)
    c, s = math.cos(t), math.sin(t)
    reach = HALF_WIDTH / max(abs(c), abs(s))  # distance from the axis to the wall along theta
    limit = HALF_WIDTH - half_extent
    x = min(max(reach * c, -limit), limit)
    z = min(max(reach * s, -limit), limit)
    return (x, depth, z)


def focal_length_px(width_px: int) -> float:
    return FOCAL_LENGTH_MM / SENSOR_WIDTH_MM * width_px


def project(point: tuple[float, float, float], width_px: int, height_px: int) -> tuple[float, float]:
    """Pixel (column, row) of a world point, row 0 at the top, for the axis-aligned camera."""
    x, y, z = point
    if y <= 0:
        raise ValueError(f"point {point} is behind the camera")
    f = focal_length_px(width_px)
    return (width_px / 2 + f * x / y, height_px / 2 - f * z / y)


def projected_radius_px(half_extent: float, depth: float, width_px: int) -> float:
    """Approximate apparent radius in pixels (what the size baseline compares)."""
    return focal_length_px(width_px) * half_extent / depth


@dataclass(frozen=True)
class Relation:
    """Vertical relation of the farther object (obj1) to the nearer one (obj2) in the image."""

    dy: float  # row(obj2) - row(obj1): positive when the farther object is higher in the image
    two_way: str  # paper's split: "consistent" if the farther object is higher, else "counter"
    three_way: str  # adds "ambiguous" when |dy| < AMBIGUOUS_FRACTION * height


def vertical_relation(row_far: float, row_near: float, height_px: int, level: float = 0.0) -> Relation:
    """Consistent vs counter (paper §3): consistent iff the farther object is higher (smaller row).
    ``level``: rows closer than this many pixels count as level, so not higher (rows measured in
    the pixels carry that uncertainty; recorded projections are exact, level 0)."""
    dy = row_near - row_far
    two_way = "consistent" if dy > level else "counter"
    three_way = "ambiguous" if abs(dy) < AMBIGUOUS_FRACTION * height_px else two_way
    return Relation(dy=dy, two_way=two_way, three_way=three_way)
