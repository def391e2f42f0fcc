"""Where everything goes in one O3-D image: pure geometry, no Blender (specs/o3d.md, "Scenes and cues").

World: z up, ground z = 0, the camera looks along +y. Every object's base rests on the ground,
centred on its (x, y). ``plan(...)`` follows the paper's scene rules, with the authors' code
where the paper is silent (each rule's source is in its comment):

* Base scene: target at the origin, 4 distractors in a row along x at
  ``w * m * (i//2 + 1) * (-1)**i`` (w = the target's width; m = odd_scaler, or 1.5 for FS pairs);
  camera at (0, -20 w, h0) looking along +y, 50 mm lens on a 36 mm sensor. h0 = D / 1000 lifts the
  camera just off the ground plane (the paper's camera height is 0, where the ground would be seen
  edge-on): the bases of near and far objects then differ by at most f * h0 / (2D) ~ 0.7 px at
  1024 px -- the base view keeps no usable height-in-plane cue.
* Scale ambiguity (the dolly): "far" scales the target by k = odd_scaler and multiplies its
  position relative to the camera by k; "near" does that to every distractor instead. Every
  object then projects to the same size and the same spacing whichever is true. FS pairs move the
  object without scaling it, by the ratio of the two objects' heights (they project alike because
  their real sizes differ).
* Cues, each computed from the scene after the dolly (the authors build every cue's controller
  before applying any), applied in the order given, TG last:
  HP raises the camera by s * h_target / k (looking at (x_cam, 0, 0): no pan);
  OC slides the camera along x from the tangent position k * w_near by s * k/(k-1) * w_near / 6
  (so the nearer object covers w_near * s / 6 of the farther; half at the authors' maximum
  strength 3); FS pairs use the authors' other rule (base x_gap*k/(k-1) far, x_gap/(k-1) near,
  unit -0.8 (k-1) w);
  RS sets the target's scale to 1 / (1 + (k-1) s) when far, 1 + (k-1) s when near (the code's
  rule; the paper's text says the target is moved along the optical axis instead);
  LS adds a sun of strength 0.5 s at (-|x_t - x_d| * M, y_cam, h_t) aimed at (0, y_t, 0.75 h_t),
  M = 1/(k-1) near, k/(k-1) far, so the nearer objects' shadows fall on the farther ones;
  FO turns depth of field on at f/(2.8/s), focused on the target;
  SA is post-render haze with beta = s / 100 (scene.py);
  TG gives every object horizontal stripe noise of world frequency 5 / w_target, times (s + 1)
  on the farther ones;
  LP is not a cue one adds: ``no_lp`` renders the basic environment with a textureless ground.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

LENS_MM = 50.0
SENSOR_MM = 36.0
CAMERA_DISTANCE_WIDTHS = 20.0  # camera at -20 x the target's width (the authors' DEFAULT_CAM_DEPTH)
CAMERA_LIFT = 1e-3  # camera height as a fraction of its distance (see the module docstring)
N_DISTRACTORS = 4
FS_SPACING = 1.5  # the authors' row spacing for FS pairs (odd_scaler otherwise)
MAX_CUE_STRENGTH = 3.0  # the authors' strength scale: OC covers half the object at 3
LS_UNIT_STRENGTH = 0.5
FO_FSTOP = 2.8
TG_WORLD_FREQUENCY = 5.0  # stripes per target width
HAZE_AIRLIGHT = 230.0
HAZE_UNIT = 100.0  # beta = strength / 100 per metre
ODD_SCALER_RANGE = (1.1, 2.0)
SINGLE_CUES = ("HP", "OC", "RS", "LS", "TG", "FO", "SA", "FS")


@dataclass
class Placed:
    role: str  # target | distractor
    index: int  # 0 for the target, 1..4 for distractors (their pass index - 1)
    asset: str
    x: float
    y: float
    scale: float
    width: float  # at scale 1
    height: float

    @property
    def current_height(self) -> float:
        return self.height * self.scale

    @property
    def current_width(self) -> float:
        return self.width * self.scale


@dataclass
class Layout:
    objects: list[Placed]
    camera: list[float]  # x, y, z
    look_at: list[float]
    lens_mm: float = LENS_MM
    sensor_mm: float = SENSOR_MM
    light: dict[str, Any] | None = None  # LS: location, look_at, strength
    dof: dict[str, float] | None = None  # FO: focus_distance, fstop
    stripes: dict[str, float] | None = None  # TG: target / distractor world frequency
    haze_beta: float | None = None  # SA
    depth_ratio: float | None = None  # far object's distance / near object's (the oddity)
    notes: list[str] = field(default_factory=list)

    @property
    def target(self) -> Placed:
        return self.objects[0]

    @property
    def distractors(self) -> list[Placed]:
        return self.objects[1:]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def plan(position: str, cues: list[str], strength: float | None, odd_scaler: float, *,
         target: tuple[str, tuple[float, float, float]], distractor: tuple[str, tuple[float, float, float]] | None = None,
         ) -> Layout:
    """The layout of one image. ``target`` / ``distractor``: (asset id, (width, depth, height) at
    scale 1); ``distractor`` differs only for FS pairs. ``strength`` is None for 0-cue images."""
    k = float(odd_scaler)
    if not ODD_SCALER_RANGE[0] - 1e-9 <= k <= ODD_SCALER_RANGE[1] + 1e-9:
        raise ValueError(f"odd_scaler {k} outside {ODD_SCALER_RANGE}")
    if position not in ("near", "far", "none"):
        raise ValueError(f"position must be near, far or none, not {position!r}")
    fs = "FS" in cues
    if fs and (distractor is None or position == "none"):
        raise ValueError("FS needs a (large, small) pair and a near or far target")
    if cues and position == "none":
        raise ValueError("cues need a near or far target")
    s = 1.0 if strength is None else float(strength)
    t_id, (t_w, _, t_h) = target
    d_id, (d_w, _, d_h) = distractor if distractor is not None else target
    distance = CAMERA_DISTANCE_WIDTHS * t_w
    camera = [0.0, -distance, CAMERA_LIFT * distance]
    spacing = FS_SPACING if fs else k
    objects = [Placed("target", 0, t_id, 0.0, 0.0, 1.0, t_w, t_h)]
    for i in range(N_DISTRACTORS):
        x = t_w * spacing * (i // 2 + 1) * (-1) ** i
        objects.append(Placed("distractor", i + 1, d_id, x, 0.0, 1.0, d_w, d_h))
    layout = Layout(objects=objects, camera=camera, look_at=[0.0, 0.0, 0.0])

    # The oddity: dolly the odd object(s) away from the camera (scale with them unless FS).
    if position != "none":
        movers = [objects[0]] if position == "far" else objects[1:]
        if fs:
            far, near = (objects[0], objects[1]) if position == "far" else (objects[1], objects[0])
            coef = far.height / near.height
        else:
            coef = k
        for obj in movers:
            obj.y = camera[1] + (obj.y - camera[1]) * coef
            obj.x = camera[0] + (obj.x - camera[0]) * coef
            if not fs:
                obj.scale *= coef
        layout.depth_ratio = coef

    # Cues, from the post-dolly scene; TG last.
    tgt, d0 = objects[0], objects[1]
    base_height, base_width = tgt.current_height, tgt.current_width
    cam_y = camera[1]
    for cue in sorted(cues, key=lambda c: c == "TG"):
        if cue == "HP":
            camera[2] += s * base_height / k
        elif cue == "OC":
            camera[0] += _occlusion_shift(position, k, s, tgt, d0, cam_y)
        elif cue == "RS":
            factor = 1 + (k - 1) * s
            tgt.scale = 1 / factor if position == "far" else factor
        elif cue == "LS":
            offset = abs(tgt.x - d0.x)
            multiplier = 1 / (k - 1) if position == "near" else k / (k - 1)
            layout.light = {"location": [-offset * multiplier, cam_y, base_height],
                            "look_at": [0.0, tgt.y, 0.75 * base_height], "strength": LS_UNIT_STRENGTH * s}
        elif cue == "FO":
            layout.dof = {"focus_distance": tgt.y - cam_y, "fstop": FO_FSTOP / s}
        elif cue == "SA":
            layout.haze_beta = s / HAZE_UNIT
        elif cue == "TG":
            frequency = TG_WORLD_FREQUENCY / base_width
            layout.stripes = {"target": frequency * ((s + 1) if position == "far" else 1.0),
                              "distractor": frequency * ((s + 1) if position == "near" else 1.0)}
        elif cue == "FS":
            pass  # made by the pair itself, above
        else:
            raise ValueError(f"unknown cue {cue!r}")
    layout.look_at = [camera[0], 0.0, 0.0]
    return layout


def _occlusion_shift(position: str, k: float, s: float, tgt: Placed, d0: Placed, cam_y: float) -> float:
    """Camera x for OC (the authors' rule, see the module docstring)."""
    if position == "far":
        width, far_depth, near_depth = d0.current_width, tgt.y - cam_y, d0.y - cam_y
    else:
        width, far_depth, near_depth = tgt.current_width, d0.y - cam_y, tgt.y - cam_y
    ratio = far_depth / near_depth
    if math.isclose(ratio, k, rel_tol=1e-3):
        base = ratio * width  # the nearer object's edge just touches the farther one's
        unit = ratio / (ratio - 1) * width / MAX_CUE_STRENGTH / 2
    else:  # FS pairs: the depth ratio is the pair's height ratio
        gap = abs(d0.x - tgt.x)
        base = gap * ratio / (ratio - 1) if position == "far" else gap / (ratio - 1)
        unit = -(ratio - 1) * 0.8 * width
    return base + s * unit


def focal_px(resolution: int) -> float:
    return LENS_MM / SENSOR_MM * resolution


def project(layout: Layout, point: tuple[float, float, float], resolution: int) -> tuple[float, float]:
    """(column, row) of a world point for a camera with no roll, looking from ``camera`` at
    ``look_at`` (pinhole; for checks without Blender)."""
    cx, cy, cz = layout.camera
    fx, fy, fz = (layout.look_at[0] - cx, layout.look_at[1] - cy, layout.look_at[2] - cz)
    norm = math.sqrt(fx * fx + fy * fy + fz * fz)
    forward = (fx / norm, fy / norm, fz / norm)
    right = _normalise((forward[1], -forward[0], 0.0))
    up = (right[1] * forward[2] - right[2] * forward[1], right[2] * forward[0] - right[0] * forward[2],
          right[0] * forward[1] - right[1] * forward[0])
    v = (point[0] - cx, point[1] - cy, point[2] - cz)
    depth = sum(a * b for a, b in zip(v, forward))
    x = sum(a * b for a, b in zip(v, right)) / depth
    y = sum(a * b for a, b in zip(v, up)) / depth
    f = focal_px(resolution)
    return resolution / 2 + f * x, resolution / 2 - f * y


def _normalise(v: tuple[float, float, float]) -> tuple[float, float, float]:
    n = math.sqrt(sum(c * c for c in v))
    return (v[0] / n, v[1] / n, v[2] / n)
