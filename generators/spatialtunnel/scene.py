"""SpatialTunnel scene: two objects inside a 2 m x 2 m tunnel, seen down its axis (paper §3).

The scene (world frame as in ``spatial_tasks.spatialtunnel.geometry``: tunnel axis +Y, +Z up):

* a square tunnel, |x| <= 1 and |z| <= 1, from y = -1 (just behind the camera) to y = 40, open
  at both ends; floor, walls and ceiling share one plain grey material, so nothing but
  perspective tells them apart;
* a 35 mm pinhole camera at the origin looking down +Y (square image);
* obj1 (far, y = 8) and obj2 (near, y = 4), each a sphere or a cube (half-extent = radius or
  half edge), resting on the inner surface at angle theta (from +X towards +Z), Principled
  BSDF in one of seven colours with random roughness;
* lighting: Blender's physical sky (Nishita; 'SINGLE_SCATTERING' in 5.x) with its sun disc,
  background strength 0.15, sun rotation U[1.25 pi, 1.75 pi]. The sky is turned so that the
  middle of that range (1.5 pi) puts the sun behind the camera, low above the horizon: sunlight
  enters the tunnel's mouth and the rest of the tunnel is lit by bounces off the walls.

Ground truth is recorded when the objects are placed (3D centres from the sampler, the pixel
centres from Blender's camera projection) and checked against the object-index pass.

Commands (one per variant; rendering then dataset building, see generate.py):

    spatial-tasks generate spatialtunnel --variant phase --out data/spatialtunnel \\
        --grid 16 --per-cell 12 --resolution 512 --samples 16 --seed 0      # 3,072 images
    spatial-tasks generate spatialtunnel --variant size --out data/spatialtunnel \\
        --per-cell 100 --resolution 512 --samples 16 --seed 0               # 1,100 images

    # the same without the console script
    python -m spatial_tasks.generators.spatialtunnel.generate --variant phase --out data/spatialtunnel

This module holds the Blender part only: ``TunnelRenderer`` builds the static scene once per
process and then, per image, moves/recolours the objects, renders, and writes
``<image_id>.png`` and ``<image_id>.json`` (the dataset row without the image) atomically.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from spatial_tasks.generators.common import blender
from spatial_tasks.generators.common.jobs import atomic_write_bytes, atomic_write_json
from spatial_tasks.generators.spatialtunnel.sampling import ImageSpec

from spatial_tasks.spatialtunnel import geometry

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------ constants

# Bump when anything below changes the pixels: finished images of another version re-render.
RENDERER_VERSION = 1

# Scene (the paper's values where it gives them; see the module docstring).
SKY_STRENGTH = 0.15  # background strength (paper)
SUN_INTENSITY = 0.3  # sky texture sun strength (Blender: 1.0): sunlit faces stay in display range
SUN_ELEVATION = 0.2  # rad above the horizon: low enough for sunlight to reach into the tunnel
SKY_AZIMUTH_OFFSET = -math.pi / 2  # sun rotation 1.5 pi -> sun behind the camera (towards -Y)
WALL_COLOR = (0.9, 0.9, 0.9)  # linear albedo of floor, walls and ceiling (bright: light bounces deep)
WALL_ROUGHNESS = 0.9
EXPOSURE = 1.0  # stops; the tunnel interior is lit only through its mouth
VIEW_TRANSFORM = "Standard"  # keeps object colours saturated (AgX pales sunlit faces)
LOOK = "None"
SPHERE_SEGMENTS, SPHERE_RINGS = 64, 32
OBJECT_PASS_INDEX = {1: 1, 2: 2}  # object-index pass value of obj1 / obj2 (walls: 0)

# Linear-RGB base colours of the paper's seven colour names.
COLOR_RGB = {
    "red": (0.80, 0.02, 0.02),
    "green": (0.03, 0.55, 0.04),
    "blue": (0.02, 0.06, 0.80),
    "yellow": (0.85, 0.68, 0.02),
    "cyan": (0.02, 0.60, 0.70),
    "magenta": (0.72, 0.02, 0.55),
    "black": (0.012, 0.012, 0.012),
}

# Cycles (16 samples is the generator's default; the denoiser removes most of the noise). Light
# reaches the far object (8 m in) mostly by bouncing along the walls: with 6 diffuse bounces
# (and wall albedo 0.9) its worst contrast against the surrounding wall over 24 test images
# rose from ~11 to ~26 8-bit levels compared with 3 bounces (albedo 0.8), for ~35% more CPU
# time per render.
MAX_BOUNCES, DIFFUSE_BOUNCES, GLOSSY_BOUNCES = 8, 6, 2
DENOISING_QUALITY = "BALANCED"
PNG_COMPRESSION = 15  # Blender's default; higher is slower for a few % smaller files


# ---------------------------------------------------------------------------------- setup


class TunnelRenderer:
    """One long-lived Blender scene per process; call it with ``(spec, out_dir)`` per image.

    Picklable by its arguments (``multiprocessing`` spawn): the scene is built in ``__init__``,
    which runs inside the worker process.
    """

    def __init__(self, resolution: int, samples: int, threads: int, keep_passes: bool = False,
                 device: str = "cpu") -> None:
        """``keep_passes`` keeps each image's multilayer EXR (object index) as ``<image_id>.exr``;
        ``device``: Cycles' device (blender.use_device)."""
        self.resolution, self.samples, self.threads = resolution, samples, threads
        self.device = device
        self.keep_passes = keep_passes
        t0 = time.perf_counter()
        with blender.quiet_stdout():  # Cycles logs device probing ("CUEW ...") on set-up
            self._build()
        self.blender_version = blender.version_string()
        self.setup_seconds = time.perf_counter() - t0
        self._bpy = blender.require_bpy()
        self._timer = blender.RenderTimer()
        log.debug("scene built in %.2f s (Blender %s)", self.setup_seconds, self.blender_version)

    def _build(self) -> None:
        """The static scene: render settings, sky, camera, tunnel and two object slots."""
        resolution, samples, threads = self.resolution, self.samples, self.threads
        self.scene = blender.reset_scene()
        blender.configure_cycles(
            self.scene, width=resolution, height=resolution, samples=samples, threads=threads,
            denoise=True, denoising_quality=DENOISING_QUALITY, max_bounces=MAX_BOUNCES,
            diffuse_bounces=DIFFUSE_BOUNCES, glossy_bounces=GLOSSY_BOUNCES, exposure=EXPOSURE,
            view_transform=VIEW_TRANSFORM, look=LOOK, device=self.device,
        )
        blender.enable_passes(self.scene, object_index=True)
        self.world = blender.sky_world(self.scene, sun_elevation=SUN_ELEVATION, sun_rotation=1.5 * math.pi,
                                       strength=SKY_STRENGTH, azimuth_offset=SKY_AZIMUTH_OFFSET,
                                       sun_intensity=SUN_INTENSITY)
        self.camera = blender.add_camera(
            self.scene, location=(0.0, 0.0, 0.0), rotation_euler=(math.pi / 2, 0.0, 0.0),
            lens_mm=geometry.FOCAL_LENGTH_MM, sensor_width_mm=geometry.SENSOR_WIDTH_MM, clip_end=100.0)
        self._build_tunnel()
        self.objects = {slot: self._build_slot(slot) for slot in (1, 2)}

    def _build_tunnel(self) -> None:
        h, y0, y1 = geometry.HALF_WIDTH, geometry.TUNNEL_START, geometry.TUNNEL_END
        vertices = [(-h, y0, -h), (h, y0, -h), (h, y0, h), (-h, y0, h),
                    (-h, y1, -h), (h, y1, -h), (h, y1, h), (-h, y1, h)]
        faces = [(0, 1, 5, 4), (3, 7, 6, 2), (0, 4, 7, 3), (1, 2, 6, 5)]  # floor, ceiling, -x, +x; inwards
        wall = blender.principled_material("Wall", WALL_COLOR, WALL_ROUGHNESS)
        tunnel = blender.add_mesh(self.scene, "Tunnel", vertices, faces, material=wall)
        tunnel.pass_index = 0

    def _build_slot(self, slot: int) -> dict[str, Any]:
        """A sphere and a cube sharing one material; only the sampled shape is rendered."""
        material = blender.principled_material(f"Object{slot}", COLOR_RGB["red"], 0.5)
        shapes = {
            "sphere": blender.add_unit_sphere(self.scene, f"Sphere{slot}", segments=SPHERE_SEGMENTS,
                                              rings=SPHERE_RINGS, material=material),
            "cube": blender.add_unit_cube(self.scene, f"Cube{slot}", material=material),
        }
        for obj in shapes.values():
            obj.pass_index = OBJECT_PASS_INDEX[slot]
            obj.hide_render = True
        return {"material": material, "shapes": shapes}

    # ---------------------------------------------------------------------- per image

    def _place(self, spec: ImageSpec) -> None:
        for slot, (shape, color, roughness, size, position) in {
            1: (spec.shape1, spec.color1, spec.roughness1, spec.size1, spec.position1),
            2: (spec.shape2, spec.color2, spec.roughness2, spec.size2, spec.position2),
        }.items():
            entry = self.objects[slot]
            blender.set_principled(entry["material"], base_color=COLOR_RGB[color], roughness=roughness)
            for name, obj in entry["shapes"].items():
                obj.hide_render = name != shape
                if name == shape:
                    obj.location = position
                    obj.scale = (size, size, size)
        blender.set_sun_rotation(self.world, spec.sun_rotation)
        blender.set_seed(self.scene, spec.seed)

    def _camera_geometry(self, spec: ImageSpec) -> dict[str, Any]:
        """Pixel centres and apparent radii through the render camera (not the analytic model)."""
        self._bpy.context.view_layer.update()
        focal = blender.focal_length_px(self.scene, self.camera)
        out: dict[str, Any] = {"width": self.resolution, "height": self.resolution}
        for slot, (position, size) in {1: (spec.position1, spec.size1), 2: (spec.position2, spec.size2)}.items():
            col, row, depth = blender.world_to_pixel(self.scene, self.camera, position)
            out[f"pixel{slot}"] = [col, row]
            out[f"radius{slot}_px"] = focal * size / depth
        return out

    @staticmethod
    def _mask_checks(index_pass: np.ndarray, row: dict[str, Any]) -> dict[str, Any]:
        """Visible pixels per object and whether each recorded centre lies on its object."""
        ids = np.rint(index_pass[..., 0]).astype(np.int32)
        qa: dict[str, Any] = {}
        for slot, value in OBJECT_PASS_INDEX.items():
            col, r = row[f"pixel{slot}"]
            ci, ri = min(max(int(col), 0), ids.shape[1] - 1), min(max(int(r), 0), ids.shape[0] - 1)
            qa[f"visible_px{slot}"] = int((ids == value).sum())
            qa[f"center{slot}_on_object"] = bool(ids[ri, ci] == value)
        return qa

    def __call__(self, job: tuple[ImageSpec, str]) -> dict[str, Any]:
        spec, out_dir = job
        out_dir = Path(out_dir)
        timings: dict[str, float] = {}
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        self._place(spec)
        row = spec.metadata()
        row.update(self._camera_geometry(spec))
        t1 = time.perf_counter()
        timings["scene_update"] = t1 - t0

        keep = out_dir / f"{spec.image_id}.exr" if self.keep_passes else None
        png, passes, render_timings = blender.render_image_and_passes(
            self.scene, out_dir, f"{spec.image_id}.png", self._timer, compression=PNG_COMPRESSION, keep_exr=keep)
        timings.update(render_timings)
        t4 = time.perf_counter()
        qa = self._mask_checks(passes["Object Index"], row)
        atomic_write_bytes(out_dir / f"{spec.image_id}.png", png)
        record = {
            "row": row,
            "qa": qa,
            "render": {"resolution": self.resolution, "samples": self.samples,
                       "renderer_version": RENDERER_VERSION, "blender": self.blender_version},
        }
        atomic_write_json(out_dir / f"{spec.image_id}.json", record)  # written last: marks "done"
        timings["write"] = time.perf_counter() - t4
        timings["cpu"] = time.process_time() - cpu0  # all threads of this process
        if not (qa["center1_on_object"] and qa["center2_on_object"]):
            log.warning("%s: a recorded pixel centre is not on its object (%s)", spec.image_id, qa)
        return {"image_id": spec.image_id, "timings": timings, "qa": qa}
