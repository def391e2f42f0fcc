"""The DORI scene (Blender): objects with an unambiguous front on a ground plane, one camera.

Conventions (world: z up, the camera looks along +y from -y):

* every object's front points along its local -y, toward the camera at yaw 0, and carries a
  red front marker (so the front is never ambiguous);
* ``yaw`` is a rotation about the vertical axis, in degrees CLOCKWISE SEEN FROM ABOVE
  (Blender's +z rotation is counterclockwise, so rotation_euler.z = -yaw); at yaw 90 the front
  points to the image's left (-x);
* ``tilt`` is a rotation about the horizontal axis (world x, left-right across the image),
  degrees, positive tipping the top toward the camera;
* a compound rotation is ``tilt`` first, then ``yaw`` (Blender's XYZ Euler order applies x
  before z), as "90 horizontal then 180 vertical" reads.

``DoriRenderer`` builds the scene once per process and renders view specs:
``{"image_id", "objects": [{"kind", "x", "y", "z", "yaw", "tilt", "scale"}]}``; it writes the PNG
and returns each object's box (projected mesh vertices), its front marker's pixel and its world
matrix, so the recorded angles can be checked against the render.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from spatial_tasks.generators.common import blender
from spatial_tasks.generators.common.jobs import atomic_write_bytes, derive_seed, temporary_sibling
from spatial_tasks.generators.common.png import strip_text_chunks

RENDERER_VERSION = 1  # bump when the scene changes what an image looks like
KINDS = ("suzanne", "chair", "car")
CATEGORY = {"suzanne": "monkey head", "chair": "chair", "car": "car"}
SLOTS = 2
CAMERA_LOCATION = (0.0, -7.0, 3.0)
CAMERA_TARGET = (0.0, 0.0, 0.7)
LENS_MM, SENSOR_MM = 50.0, 36.0
BODY_COLOURS = {"suzanne": (0.55, 0.45, 0.30), "chair": (0.30, 0.42, 0.60), "car": (0.25, 0.50, 0.35)}
MARKER_COLOUR = (0.9, 0.02, 0.02)
GROUND_COLOUR = (0.55, 0.55, 0.55)
BACKGROUND = (0.80, 0.85, 0.95)
MARKER_RADIUS = 0.22


def _boxes(bm, parts) -> None:
    """Add axis-aligned boxes ``(centre, half_extents)`` to a bmesh."""
    import bmesh
    from mathutils import Matrix

    for centre, half in parts:
        matrix = Matrix.Translation(centre) @ Matrix.Diagonal((*[2 * h for h in half], 1.0))
        bmesh.ops.create_cube(bm, size=1.0, matrix=matrix)


def _mesh_object(scene: Any, name: str, build, material: Any) -> Any:
    import bmesh

    bpy = blender.require_bpy()
    bm = bmesh.new()
    build(bm)
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(obj)
    return obj


def _suzanne(bm) -> None:
    import bmesh
    from mathutils import Matrix

    bmesh.ops.create_monkey(bm, matrix=Matrix.Diagonal((0.8, 0.8, 0.8, 1.0)))  # Suzanne looks along -y


def _chair(bm) -> None:
    legs = [((sx * 0.4, sy * 0.4, -0.45), (0.06, 0.06, 0.45)) for sx in (-1, 1) for sy in (-1, 1)]
    _boxes(bm, [((0, 0, 0.05), (0.5, 0.5, 0.07)), ((0, 0.44, 0.6), (0.5, 0.06, 0.5)), *legs])


def _car(bm) -> None:
    wheels = [((sx * 0.52, sy * 0.65, -0.3), (0.08, 0.22, 0.22)) for sx in (-1, 1) for sy in (-1, 1)]
    _boxes(bm, [((0, 0, -0.1), (0.5, 1.05, 0.22)), ((0, 0.25, 0.3), (0.45, 0.5, 0.2)), *wheels])


BUILDERS = {"suzanne": _suzanne, "chair": _chair, "car": _car}
# The marker's centre in each kind's local frame: on the front (-y) face.
MARKER_AT = {"suzanne": (0.0, -0.8, 0.12), "chair": (0.0, -0.6, 0.16), "car": (0.0, -1.15, 0.0)}
# Half height below the origin: an upright object stands on the ground at z = this.
STAND_HEIGHT = {"suzanne": 0.62, "chair": 0.9, "car": 0.52}


class DoriRenderer:
    """One long-lived Blender scene per process; call it with ``(view, out_dir)`` per image."""

    def __init__(self, resolution: int, samples: int, threads: int, device: str = "cpu") -> None:
        self.device = device
        self.resolution, self.samples, self.threads = resolution, samples, threads
        with blender.quiet_stdout():
            self._build()
        self.blender_version = blender.version_string()

    def _build(self) -> None:
        bpy = blender.require_bpy()
        from mathutils import Vector  # ships with bpy: importable only after it

        self.scene = scene = blender.reset_scene()
        blender.configure_cycles(scene, width=self.resolution, height=self.resolution, samples=self.samples,
                                 threads=self.threads, denoise=True, max_bounces=3, diffuse_bounces=2,
                                 view_transform="Standard", device=self.device)
        world = bpy.data.worlds.new("World")
        scene.world = world
        background = world.node_tree.nodes.get("Background") if world.node_tree else None
        if background is None:
            world.use_nodes = True
            background = world.node_tree.nodes["Background"]
        background.inputs["Color"].default_value = (*BACKGROUND, 1.0)
        background.inputs["Strength"].default_value = 0.8
        sun_data = bpy.data.lights.new("Sun", type="SUN")
        sun_data.energy = 3.0
        sun = bpy.data.objects.new("Sun", sun_data)
        sun.rotation_euler = (math.radians(40), math.radians(15), math.radians(30))
        scene.collection.objects.link(sun)
        ground_material = blender.principled_material("Ground", GROUND_COLOUR, 0.9)
        blender.add_mesh(scene, "Ground", [(-30, -30, 0), (30, -30, 0), (30, 30, 0), (-30, 30, 0)],
                         [(0, 1, 2, 3)], material=ground_material)
        direction = Vector(CAMERA_TARGET) - Vector(CAMERA_LOCATION)
        rotation = direction.to_track_quat("-Z", "Y").to_euler()
        self.camera = blender.add_camera(scene, location=CAMERA_LOCATION, rotation_euler=tuple(rotation),
                                         lens_mm=LENS_MM, sensor_width_mm=SENSOR_MM, clip_end=100.0)
        marker_material = blender.principled_material("Marker", MARKER_COLOUR, 0.4)
        self.slots = []
        for slot in range(SLOTS):
            objects = {}
            for kind in KINDS:
                material = blender.principled_material(f"{kind}{slot}", BODY_COLOURS[kind], 0.6)
                obj = _mesh_object(scene, f"{kind}{slot}", BUILDERS[kind], material)
                obj.rotation_mode = "XYZ"
                marker = blender.add_unit_sphere(scene, f"{kind}{slot}_marker", segments=16, rings=8,
                                                 material=marker_material)
                marker.parent = obj
                marker.location = MARKER_AT[kind]
                marker.scale = (MARKER_RADIUS,) * 3
                objects[kind] = (obj, marker)
            self.slots.append(objects)

    def _place(self, view: dict) -> list[dict]:
        bpy = blender.require_bpy()
        placed = view["objects"]
        for slot, objects in enumerate(self.slots):
            for kind, (obj, marker) in objects.items():
                shown = slot < len(placed) and placed[slot]["kind"] == kind
                obj.hide_render = marker.hide_render = not shown
                if shown:
                    spec = placed[slot]
                    obj.location = (spec["x"], spec["y"], spec["z"])
                    obj.rotation_euler = (math.radians(spec["tilt"]), 0.0, -math.radians(spec["yaw"]))
                    obj.scale = (spec["scale"],) * 3
        bpy.context.view_layer.update()
        facts = []
        for slot, spec in enumerate(placed):
            obj, marker = self.slots[slot][spec["kind"]]
            pixels = [blender.world_to_pixel(self.scene, self.camera, obj.matrix_world @ v.co)
                      for v in obj.data.vertices]
            xs, ys = [p[0] for p in pixels], [p[1] for p in pixels]
            marker_world = marker.matrix_world.translation
            centre_world = obj.matrix_world.translation
            mx, my, mdepth = blender.world_to_pixel(self.scene, self.camera, marker_world)
            _, _, cdepth = blender.world_to_pixel(self.scene, self.camera, centre_world)
            facts.append({
                "box": [max(0.0, min(xs)), max(0.0, min(ys)), min(self.resolution, max(xs)),
                        min(self.resolution, max(ys))],
                "marker_px": [mx, my],
                "marker_toward_camera": mdepth < cdepth,
                "matrix_world": [list(row) for row in obj.matrix_world],
            })
        return facts

    def __call__(self, job: tuple[dict, str]) -> dict:
        view, out_dir = job
        bpy = blender.require_bpy()
        t0 = time.perf_counter()
        facts = self._place(view)
        blender.set_seed(self.scene, derive_seed(0, view["image_id"], "dori-render"))  # same view, same pixels
        png = Path(out_dir) / f"{view['image_id']}.png"
        tmp = temporary_sibling(png)  # a killed render leaves only scratch (folder.clean_scratch)
        with blender.quiet_stdout():
            bpy.ops.render.render()
        blender.save_png(self.scene, tmp)
        # Blender stamps text chunks (time, software) into PNGs: the same view must give the same bytes.
        atomic_write_bytes(png, strip_text_chunks(tmp.read_bytes()))
        tmp.unlink()
        return {"image_id": view["image_id"], "facts": facts, "seconds": time.perf_counter() - t0}
