"""The O3-D renderer (Blender): one long-lived scene per worker, one image per call.

``O3DRenderer(resolution, samples, threads, device, assets_dir)`` builds the static parts once
(render settings, camera, sun, ground, worlds on demand, meshes on first use) and is then called
with ``(spec, work_dir)`` per image (``spec``: a ``sampling.ImageSpec`` as a dict). It places the
objects and cues by ``layout.plan``, renders once with Cycles (a multilayer EXR with the depth and
object-index passes, then the PNG), and writes, each atomically, JSON last::

    <image_id>.png          the image shown to models (SA: hazed from the depth pass)
    <image_id>.depth.png    8-bit depth, metres = min + v / 255 * (max - min) (the release's format)
    <image_id>.depth.npy    float32 metric depth, lossless (background: +inf)
    <image_id>.targ.png     255 on the target's pixels
    <image_id>.dist.png     distractor j (1..4) at j * 255 // 4 (distinct levels, as markers.py reads them)
    <image_id>.json         the row, the layout, what the render measured, render settings

Depth is Blender's Z pass (distance along the view axis). Background pixels have no depth; the
8-bit map and the haze put them at the far wall of the paper's dome, BACKGROUND_DEPTH_FACTOR times
the camera's distance (so SA hazes the sky most, as in the authors' renders).
"""

from __future__ import annotations

import io
import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from spatial_tasks.generators.common import blender
from spatial_tasks.generators.common.jobs import atomic_write_bytes, atomic_write_json
from spatial_tasks.generators.o3d import assets as asset_catalog
from spatial_tasks.generators.o3d import layout as geometry

log = logging.getLogger(__name__)

RENDERER_VERSION = 1  # bump when the scene changes what an image looks like
BACKGROUND_DEPTH_FACTOR = 3.0
GROUND_EXTENT = 60.0  # ground half-size in camera distances
GROUND_NEAR = 0.25  # the ground begins this many camera distances in front of the camera
BASIC_BACKGROUND = (0.22, 0.38, 0.75)  # plain blue
BASIC_FAR_GROUND = (0.40, 0.40, 0.41)  # the background below the horizon: ground-grey where no ground is
BASIC_SUN_STRENGTH = 3.0
BASIC_SUN_FROM = (0.0, -5.0, 40.0)  # the authors' basic sun: (0, -5, 40) aimed at the origin
CHECKER_COLOURS = ((0.55, 0.55, 0.55, 1.0), (0.30, 0.30, 0.30, 1.0))
PLAIN_GROUND = (0.45, 0.45, 0.45)
STRIPE_COLOURS = ((0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0, 1.0))
PNG_COMPRESSION = 15
CAMERA_CLIP = 1e-3  # clip_start as a fraction of the camera's height at rest
TARGET_INDEX = 1  # object pass index; distractors 2..5


def haze(rgb: np.ndarray, depth: np.ndarray, beta: float, airlight: float = geometry.HAZE_AIRLIGHT) -> np.ndarray:
    """Aerial perspective (specs/o3d.md, SA): I * exp(-beta d) + A (1 - exp(-beta d)), on 8-bit RGB
    with metric depth ``d`` (finite), rounded back to uint8."""
    t = np.exp(-beta * depth)[..., None]
    return np.clip(np.rint(rgb.astype(np.float64) * t + airlight * (1 - t)), 0, 255).astype(np.uint8)


def depth_png(depth: np.ndarray) -> tuple[bytes, dict[str, float]]:
    """The release's 8-bit depth map of finite metric depth, and its depth_scale {'min', 'max'}."""
    lo, hi = float(depth.min()), float(depth.max())
    span = hi - lo if hi > lo else 1.0
    values = np.rint((depth - lo) / span * 255).astype(np.uint8)
    return _png(values), {"min": lo, "max": hi}


def _png(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array.astype(np.float32), allow_pickle=False)
    return buffer.getvalue()


class O3DRenderer:
    """See the module docstring. Picklable by its arguments (built in the worker process)."""

    def __init__(self, resolution: int, samples: int, threads: int, device: str = "cpu",
                 assets_dir: str | None = None) -> None:
        self.resolution, self.samples, self.threads, self.device = resolution, samples, threads, device
        self.assets_dir = assets_dir
        t0 = time.perf_counter()
        self.catalog = asset_catalog.catalog(Path(assets_dir) if assets_dir else None)
        with blender.quiet_stdout():
            self._build()
        self.blender_version = blender.version_string()
        self.setup_seconds = time.perf_counter() - t0
        self._bpy = blender.require_bpy()
        self._timer = blender.RenderTimer()
        self._meshes: dict[str, tuple[Any, tuple[float, float, float]]] = {}
        self._worlds: dict[str, Any] = {}
        self._per_image: list[Any] = []  # objects, lights and materials of the current image

    def _build(self) -> None:
        self.scene = blender.reset_scene()
        blender.configure_cycles(self.scene, width=self.resolution, height=self.resolution, samples=self.samples,
                                 threads=self.threads, denoise=True, device=self.device)
        blender.enable_passes(self.scene, object_index=True, depth=True)
        self.camera = blender.add_camera(self.scene, location=(0, -1, 0), rotation_euler=(math.pi / 2, 0, 0),
                                         lens_mm=geometry.LENS_MM, sensor_width_mm=geometry.SENSOR_MM, clip_end=1e5)
        bpy = blender.require_bpy()
        sun_data = bpy.data.lights.new("Sun", "SUN")
        sun_data.energy = BASIC_SUN_STRENGTH
        self.sun = bpy.data.objects.new("Sun", sun_data)
        self.scene.collection.objects.link(self.sun)
        _aim(self.sun, BASIC_SUN_FROM, (0.0, 0.0, 0.0))
        self.ground = blender.add_mesh(self.scene, "Ground", [(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)],
                                       [(0, 1, 2, 3)])
        self.ground.pass_index = 0
        self.checker = self._checker_material()
        self.plain_ground = blender.principled_material("PlainGround", PLAIN_GROUND, 0.9)
        self.catcher = blender.principled_material("ShadowCatcher", (0.5, 0.5, 0.5), 1.0)

    # ------------------------------------------------------------------------- materials

    def _checker_material(self) -> Any:
        material = blender.principled_material("Checker", (0.5, 0.5, 0.5), 0.9)
        nodes, links = material.node_tree.nodes, material.node_tree.links
        position = nodes.new("ShaderNodeNewGeometry")  # world coordinates: squares keep their size
        checker = nodes.new("ShaderNodeTexChecker")
        checker.name = "Checker"
        checker.inputs["Color1"].default_value = CHECKER_COLOURS[0]
        checker.inputs["Color2"].default_value = CHECKER_COLOURS[1]
        links.new(position.outputs["Position"], checker.inputs["Vector"])
        bsdf = nodes["Principled BSDF"]
        links.new(checker.outputs["Color"], bsdf.inputs["Base Color"])
        return material

    def _stripes(self, name: str, frequency: float, offset: float) -> Any:
        """Horizontal stripe noise: noise of world z only, through a black/white ramp (TG)."""
        material = blender.principled_material(name, (1, 1, 1), 1.0)
        nodes, links = material.node_tree.nodes, material.node_tree.links
        geometry_node = nodes.new("ShaderNodeNewGeometry")
        shift = nodes.new("ShaderNodeMapping")
        shift.inputs["Location"].default_value = (0.0, 0.0, offset)
        squash = nodes.new("ShaderNodeMapping")
        squash.inputs["Scale"].default_value = (0.0, 0.0, frequency)  # no change along x, y: stripes
        noise = nodes.new("ShaderNodeTexNoise")
        noise.inputs["Roughness"].default_value = 0.0
        noise.inputs["Detail"].default_value = 0.0
        ramp = nodes.new("ShaderNodeValToRGB")
        for position in (1 / 3, 2 / 3):
            ramp.color_ramp.elements.new(position)
        for i, element in enumerate(ramp.color_ramp.elements):
            element.color = STRIPE_COLOURS[i % 2]
        links.new(geometry_node.outputs["Position"], shift.inputs["Vector"])
        links.new(shift.outputs["Vector"], squash.inputs["Vector"])
        links.new(squash.outputs["Vector"], noise.inputs["Vector"])
        links.new(noise.outputs["Fac"], ramp.inputs["Fac"])
        links.new(ramp.outputs["Color"], nodes["Principled BSDF"].inputs["Base Color"])
        self._per_image.append(material)
        return material

    # ---------------------------------------------------------------------------- meshes

    def mesh(self, asset_id: str) -> tuple[Any, tuple[float, float, float]]:
        """The asset's normalised mesh (base on z = 0, centred, longest side = its size) and its
        (width, depth, height), built once per process."""
        if asset_id not in self._meshes:
            asset = self.catalog.objects.get(asset_id)
            if asset is None:
                raise ValueError(f"unknown object {asset_id!r}")
            with blender.quiet_stdout():
                mesh = _load_mesh(asset)
            self._meshes[asset_id] = (mesh, _normalise(mesh, asset.size))
        return self._meshes[asset_id]

    def dims(self, asset_id: str) -> tuple[float, float, float]:
        return self.mesh(asset_id)[1]

    # ------------------------------------------------------------------------- per image

    def _clear(self) -> None:
        bpy = self._bpy
        for block in self._per_image:
            if isinstance(block, bpy.types.Object):
                bpy.data.objects.remove(block, do_unlink=True)
            elif isinstance(block, bpy.types.Material):
                bpy.data.materials.remove(block, do_unlink=True)
            elif isinstance(block, bpy.types.Light):
                bpy.data.lights.remove(block, do_unlink=True)
        self._per_image = []

    def _environment(self, env_id: str, no_lp: bool, distance: float, target_width: float) -> None:
        env = self.catalog.envs.get(env_id)
        if env is None:
            raise ValueError(f"unknown environment {env_id!r}")
        if env_id not in self._worlds:
            if env.cat == "basic":
                self._worlds[env_id] = blender.color_world(self.scene, BASIC_BACKGROUND, 1.0, name="Basic",
                                                           below_horizon=BASIC_FAR_GROUND)
            else:
                if not Path(env.path).is_file():
                    raise FileNotFoundError(f"environment {env_id!r}: {env.path} is missing")
                self._worlds[env_id] = blender.hdri_world(self.scene, Path(env.path), name=f"HDRI-{env_id}")
        self.scene.world = self._worlds[env_id]
        basic = env.cat == "basic"
        self.sun.hide_render = not basic
        self.ground.is_shadow_catcher = not basic  # HDRI: the photo's own ground shows, with shadows
        self.ground.data.materials.clear()
        self.ground.data.materials.append(self.plain_ground if no_lp else self.checker if basic else self.catcher)
        # Blender's checker has 2 squares per unit: squares half the target's width
        self.checker.node_tree.nodes["Checker"].inputs["Scale"].default_value = 4.0 / target_width
        # The ground starts GROUND_NEAR camera distances ahead: the camera sits D/1000 above it, and
        # ground right under the lens would, out of focus (FO), veil the whole image.
        near, far = -distance + GROUND_NEAR * distance, GROUND_EXTENT * distance
        self.ground.scale = (far, (far - near) / 2, 1.0)
        self.ground.location = (0.0, (far + near) / 2, 0.0)

    def _place(self, spec: dict, plan: geometry.Layout) -> None:
        bpy = self._bpy
        rng = np.random.default_rng(spec["seed"] % 2**63)
        for obj in plan.objects:
            mesh, _ = self.mesh(obj.asset)
            instance = bpy.data.objects.new(f"{obj.role}{obj.index}", mesh)
            instance.location = (obj.x, obj.y, 0.0)
            instance.scale = (obj.scale,) * 3
            instance.pass_index = TARGET_INDEX + obj.index
            self.scene.collection.objects.link(instance)
            self._per_image.append(instance)
            if plan.stripes is not None:
                frequency = plan.stripes["target" if obj.role == "target" else "distractor"]
                material = self._stripes(f"Stripes{obj.index}", frequency, float(rng.uniform()))
                for slot in range(max(1, len(mesh.materials))):
                    if slot >= len(instance.material_slots):
                        break
                    instance.material_slots[slot].link = "OBJECT"
                    instance.material_slots[slot].material = material
        _aim(self.camera, plan.camera, plan.look_at)
        # the camera sits D/1000 above the ground: the lower half of the image sees ground closer
        # than Blender's default 5 cm clip distance
        self.camera.data.clip_start = CAMERA_CLIP * geometry.CAMERA_LIFT * -plan.camera[1]
        dof = self.camera.data.dof
        dof.use_dof = plan.dof is not None
        if plan.dof is not None:
            dof.focus_distance = plan.dof["focus_distance"]
            dof.aperture_fstop = plan.dof["fstop"]
        if plan.light is not None:
            data = bpy.data.lights.new("CueLight", "SUN")
            data.energy = plan.light["strength"]
            light = bpy.data.objects.new("CueLight", data)
            self.scene.collection.objects.link(light)
            _aim(light, plan.light["location"], plan.light["look_at"])
            self._per_image += [light, data]
        blender.set_seed(self.scene, spec["seed"])

    def layout_for(self, spec: dict) -> geometry.Layout:
        target = (spec["target_asset"], self.dims(spec["target_asset"]))
        distractor = (spec["distractor_asset"], self.dims(spec["distractor_asset"]))
        return geometry.plan(spec["position"], spec["cues"], spec["cue_strength"], spec["odd_scaler"],
                             target=target, distractor=distractor)

    def __call__(self, job: tuple[dict, str]) -> dict[str, Any]:
        spec, work = job
        work = Path(work)
        timings: dict[str, float] = {}
        cpu0, t0 = time.process_time(), time.perf_counter()
        self._clear()
        plan = self.layout_for(spec)
        distance = -plan.camera[1]
        self._environment(spec["env_id"], spec["no_lp"], distance, plan.target.width)
        self._place(spec, plan)
        t1 = time.perf_counter()
        timings["scene_update"] = t1 - t0

        image_bytes, passes, render_timings = blender.render_image_and_passes(
            self.scene, work, f"{spec['image_id']}.png", self._timer, compression=PNG_COMPRESSION)
        timings.update(render_timings)
        t2 = time.perf_counter()

        depth = passes["Depth"][..., 0].astype(np.float32)
        index = np.rint(passes["Object Index"][..., 0]).astype(np.int32)
        background = (index == 0) & (depth > 1e9) | ~np.isfinite(depth)
        depth_metric = np.where(background, np.inf, depth).astype(np.float32)
        depth_finite = np.where(background, BACKGROUND_DEPTH_FACTOR * distance, depth).astype(np.float64)
        if plan.haze_beta is not None:
            rgb = np.asarray(Image.open(io.BytesIO(image_bytes)).convert("RGB"))
            image_bytes = _png(haze(rgb, depth_finite, plan.haze_beta))
        depth_bytes, depth_scale = depth_png(depth_finite)
        target = np.where(index == TARGET_INDEX, 255, 0).astype(np.uint8)
        levels = np.zeros_like(index)
        for j in range(1, geometry.N_DISTRACTORS + 1):
            levels[index == TARGET_INDEX + j] = j * 255 // geometry.N_DISTRACTORS
        measured = _measure(index, depth_metric)
        t3 = time.perf_counter()
        timings["post"] = t3 - t2

        image_id = spec["image_id"]
        atomic_write_bytes(work / f"{image_id}.png", image_bytes)
        atomic_write_bytes(work / f"{image_id}.depth.png", depth_bytes)
        atomic_write_bytes(work / f"{image_id}.depth.npy", _npy(depth_metric))
        atomic_write_bytes(work / f"{image_id}.targ.png", _png(target))
        atomic_write_bytes(work / f"{image_id}.dist.png", _png(levels.astype(np.uint8)))
        record = {
            "spec": spec,
            "depth_scale": depth_scale,
            "layout": plan.to_json(),
            "measured": measured,
            "render": render_settings(self.resolution, self.samples),
            "blender": self.blender_version,
            "device": self.scene.cycles.device,
        }
        atomic_write_json(work / f"{image_id}.json", record)  # last: marks the image finished
        timings["write"] = time.perf_counter() - t3
        timings["cpu"] = time.process_time() - cpu0
        problems = [name for name, facts in measured.items() if facts["pixels"] == 0]
        if problems:  # summarised once per run by generate.render (a warning per image floods the terminal)
            log.debug("%s: not visible in the image: %s", image_id, problems)
        return {"image_id": image_id, "timings": timings, "invisible": problems}


def render_settings(resolution: int, samples: int) -> dict[str, Any]:
    """What a finished image's JSON must record for a rerun to keep it."""
    return {"resolution": resolution, "samples": samples, "renderer_version": RENDERER_VERSION}


def _measure(index: np.ndarray, depth: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per object: visible pixels, bounding box (col0, row0, col1, row1), median depth."""
    out = {}
    for j in range(geometry.N_DISTRACTORS + 1):
        mask = index == TARGET_INDEX + j
        name = "target" if j == 0 else f"distractor{j}"
        if not mask.any():
            out[name] = {"pixels": 0, "box": None, "median_depth": None}
            continue
        rows, cols = np.nonzero(mask)
        out[name] = {"pixels": int(mask.sum()),
                     "box": [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1],
                     "median_depth": float(np.median(depth[mask]))}
    return out


def _aim(obj: Any, location, look_at) -> None:
    """Place ``obj`` at ``location`` pointing its -Z axis at ``look_at`` with +Y up (no roll)."""
    from mathutils import Vector

    obj.location = tuple(location)
    direction = Vector(tuple(look_at)) - Vector(tuple(location))
    obj.rotation_mode = "XYZ"
    obj.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()


# --------------------------------------------------------------------------- mesh building


def _load_mesh(asset: asset_catalog.ObjectAsset) -> Any:
    """A mesh datablock for ``asset`` (materials included), not linked to any object."""
    if asset.kind == "primitive":
        mesh = _primitive(asset)
    elif asset.kind == "obj":
        mesh = _import_obj(asset)
    elif asset.kind == "blend":
        mesh = _append_blend(asset)
    else:
        raise ValueError(f"{asset.id}: unknown asset kind {asset.kind!r}")
    if asset.kind != "primitive" and asset.colour is not None and not _textured(mesh):  # untextured files: colour
        mesh.materials.clear()
        mesh.materials.append(blender.principled_material(f"{asset.id}-colour", asset.colour, 0.5))
    if asset.yaw:
        from mathutils import Matrix

        mesh.transform(Matrix.Rotation(math.radians(asset.yaw), 4, "Z"))
    mesh.name = f"asset-{asset.id}"
    return mesh


def _textured(mesh: Any) -> bool:
    return any(node.bl_idname == "ShaderNodeTexImage" for material in mesh.materials
               if material is not None and material.node_tree is not None for node in material.node_tree.nodes)


def _bmesh_to_mesh(name: str, bm) -> Any:
    bpy = blender.require_bpy()
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def _torus(bm, major: float, minor: float, z: float = 0.0, segments: int = 48, sides: int = 16) -> list:
    """Torus vertices/faces around +Z (bmesh has no torus operator); returns its faces."""
    verts = []
    for i in range(segments):
        a = 2 * math.pi * i / segments
        for j in range(sides):
            b = 2 * math.pi * j / sides
            r = major + minor * math.cos(b)
            verts.append(bm.verts.new((r * math.cos(a), r * math.sin(a), z + minor * math.sin(b))))
    faces = []
    for i in range(segments):
        for j in range(sides):
            quad = [verts[(i * sides + j)], verts[((i + 1) % segments) * sides + j],
                    verts[((i + 1) % segments) * sides + (j + 1) % sides], verts[i * sides + (j + 1) % sides]]
            faces.append(bm.faces.new(quad))
    return faces


def _primitive(asset: asset_catalog.ObjectAsset) -> Any:
    import bmesh
    from mathutils import Matrix

    bm = bmesh.new()
    materials = []
    name = asset.id
    if name == "cube":
        bmesh.ops.create_cube(bm, size=2.0)
    elif name in ("sphere", "tennis_ball", "basketball"):
        bmesh.ops.create_uvsphere(bm, u_segments=48, v_segments=24, radius=1.0)
    elif name == "cylinder":
        bmesh.ops.create_cone(bm, cap_ends=True, segments=48, radius1=1.0, radius2=1.0, depth=2.0)
    elif name == "cone":
        bmesh.ops.create_cone(bm, cap_ends=True, segments=48, radius1=1.0, radius2=0.0, depth=2.0)
    elif name == "torus":
        _torus(bm, 0.75, 0.25)
    elif name == "suzanne":
        bmesh.ops.create_monkey(bm)
    elif name == "oil_drum":  # 57 cm across, 88 cm high, two rolling hoops
        bmesh.ops.create_cone(bm, cap_ends=True, segments=48, radius1=0.285, radius2=0.285, depth=0.88,
                              matrix=Matrix.Translation((0, 0, 0.44)))
        for z in (0.29, 0.59):
            _torus(bm, 0.285, 0.012, z=z)
    elif name == "soda_can":  # 6.6 cm across, 12.2 cm high, silver lid (material 1)
        bmesh.ops.create_cone(bm, cap_ends=True, segments=48, radius1=0.033, radius2=0.033, depth=0.115,
                              matrix=Matrix.Translation((0, 0, 0.0575)))
        lid = bmesh.ops.create_cone(bm, cap_ends=True, segments=48, radius1=0.030, radius2=0.027, depth=0.007,
                                    matrix=Matrix.Translation((0, 0, 0.1185)))
        lid_faces = {f for v in lid["verts"] for f in v.link_faces}
        for face in lid_faces:
            face.material_index = 1
        materials.append(blender.principled_material("soda_can-lid", (0.8, 0.8, 0.82), 0.25))
    else:
        raise ValueError(f"no primitive called {name!r}")
    for face in bm.faces:
        face.smooth = name not in ("cube",)
    mesh = _bmesh_to_mesh(name, bm)
    mesh.materials.append(_object_material(asset))
    for material in materials:  # e.g. the soda can's lid (material index 1)
        mesh.materials.append(material)
    return mesh


def _object_material(asset: asset_catalog.ObjectAsset) -> Any:
    """The object's colour; basketballs get their black seams (object coordinates near 0)."""
    roughness = {"tennis_ball": 1.0, "oil_drum": 0.35, "soda_can": 0.25}.get(asset.id, 0.5)
    material = blender.principled_material(f"{asset.id}-colour", asset.colour, roughness)
    bsdf = material.node_tree.nodes["Principled BSDF"]
    if asset.id in ("oil_drum", "soda_can"):
        bsdf.inputs["Metallic"].default_value = 0.6
    if asset.id == "basketball":
        nodes, links = material.node_tree.nodes, material.node_tree.links
        coords = nodes.new("ShaderNodeTexCoord")
        split = nodes.new("ShaderNodeSeparateXYZ")
        links.new(coords.outputs["Object"], split.inputs["Vector"])
        seam = None
        for axis in ("X", "Z"):
            absolute = nodes.new("ShaderNodeMath")
            absolute.operation = "ABSOLUTE"
            links.new(split.outputs[axis], absolute.inputs[0])
            near = nodes.new("ShaderNodeMath")
            near.operation = "LESS_THAN"
            near.inputs[1].default_value = 0.04
            links.new(absolute.outputs[0], near.inputs[0])
            if seam is None:
                seam = near
            else:
                both = nodes.new("ShaderNodeMath")
                both.operation = "MAXIMUM"
                links.new(seam.outputs[0], both.inputs[0])
                links.new(near.outputs[0], both.inputs[1])
                seam = both
        mix = nodes.new("ShaderNodeMix")
        mix.data_type = "RGBA"
        mix.inputs["A"].default_value = tuple(asset.colour) + (1.0,)
        mix.inputs["B"].default_value = (0.02, 0.02, 0.02, 1.0)
        links.new(seam.outputs[0], mix.inputs["Factor"])
        links.new(mix.outputs["Result"], bsdf.inputs["Base Color"])
    return material


def _import_obj(asset: asset_catalog.ObjectAsset) -> Any:
    """An OBJ file (with its MTL) as one mesh, turned so its up axis is +Z."""
    bpy = blender.require_bpy()
    path = Path(asset.path)
    if not path.is_file():
        raise FileNotFoundError(f"object {asset.id!r}: {path} is missing"
                                + (" (run `spatial-tasks assets pybullet`)" if asset.cat == "pybullet" else ""))
    before = set(bpy.data.objects)
    bpy.ops.wm.obj_import(filepath=str(path), up_axis=asset.up_axis, forward_axis=asset.forward_axis)
    new = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
    if not new:
        raise ValueError(f"object {asset.id!r}: {path} holds no mesh")
    return _merge(new, asset.id)


def _append_blend(asset: asset_catalog.ObjectAsset) -> Any:
    """The mesh of one object inside a .blend (Kubric's KuBasic)."""
    bpy = blender.require_bpy()
    path = Path(asset.path)
    if not path.is_file():
        raise FileNotFoundError(f"object {asset.id!r}: {path} is missing")
    with bpy.data.libraries.load(str(path), link=False) as (source, target):
        names = [asset.blend_object] if asset.blend_object in source.objects else list(source.objects)
        target.objects = names
    meshes = [o for o in target.objects if o is not None and o.type == "MESH"]
    if not meshes:
        raise ValueError(f"object {asset.id!r}: {path} holds no mesh object")
    return _merge(meshes, asset.id)


def _merge(objects: list, name: str) -> Any:
    """One mesh from several objects (their transforms applied, materials kept)."""
    import bmesh

    bpy = blender.require_bpy()
    bm = bmesh.new()
    materials: list[Any] = []
    for obj in objects:
        part = obj.data.copy()
        part.transform(obj.matrix_world)
        offset = len(materials)
        materials += list(part.materials)
        for polygon in part.polygons:
            polygon.material_index += offset
        bm.from_mesh(part)
        bpy.data.meshes.remove(part)
    mesh = _bmesh_to_mesh(name, bm)
    for material in materials:
        mesh.materials.append(material)
    for obj in objects:
        bpy.data.objects.remove(obj, do_unlink=True)
    return mesh


def _normalise(mesh: Any, size: float | None) -> tuple[float, float, float]:
    """Centre the mesh on x, y, put its lowest point on z = 0, scale its longest side to ``size``
    (None: keep); returns (width, depth, height)."""
    from mathutils import Matrix

    coords = np.array([v.co[:] for v in mesh.vertices], dtype=np.float64)
    lo, hi = coords.min(axis=0), coords.max(axis=0)
    scale = 1.0 if size is None else size / float((hi - lo).max())
    centre = (lo + hi) / 2
    mesh.transform(Matrix.Diagonal((scale, scale, scale, 1.0)) @
                   Matrix.Translation((-centre[0], -centre[1], -lo[2])))
    mesh.update()
    dims = (hi - lo) * scale
    return float(dims[0]), float(dims[1]), float(dims[2])
