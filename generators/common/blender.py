"""A small version-adaptive layer over Blender's Python module (``bpy`` 4.5 LTS and 5.x).

Scene scripts call these helpers instead of bpy where the API moved between releases, so one
script renders with bpy 5.2 (Python 3.13, what ``[render]`` installs) and with bpy 4.5 (a hand-installed
Blender 4.5 LTS; spatial-tasks itself no longer runs on the Python 3.11 its wheels need):

* sky texture type: ``'NISHITA'`` (4.5) is ``'SINGLE_SCATTERING'`` (5.x), same pixels;
* multilayer EXR output needs ``image_settings.media_type = 'MULTI_LAYER_IMAGE'`` in 5.x;
* materials and worlds get a node tree by default in 5.x (``use_nodes`` is deprecated there);
* multilayer EXRs are multi-part in 5.x (one part per pass, "Object Index") and single-part in
  4.5 ("IndexOB"): ``read_exr_passes`` returns the same dict for both.

Everything here imports bpy lazily, so the module can be imported (and its pure helpers
tested) in a process without Blender. Passes are read with the OpenImageIO Python module that
ships inside the bpy wheel.

Conventions: pixel coordinates are (column, row) with row 0 at the top of the image and pixel
``(c, r)`` covering ``[c, c+1) x [r, r+1)``; arrays returned by ``read_exr_passes`` are
``(height, width, channels)`` with row 0 at the top, like a PNG.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from spatial_tasks.common.errors import UserError

# bpy 5.2 LTS publishes wheels for one Python; the [render] extra installs nothing on the others.
BPY_PYTHON = (3, 13)


def install_hint(python: tuple[int, int] = tuple(sys.version_info[:2])) -> str:
    """The one line a render command stops with when bpy does not import."""
    if python == BPY_PYTHON:
        return ("Blender's Python module is needed to render: pip install 'spatial-tasks[render]' "
                "(bpy 5.2, which has wheels for Python 3.13 only)")
    return (f"Rendering needs Python 3.13: this is Python {python[0]}.{python[1]}, where bpy 5.2 has no wheel, so "
            "the [render] extra installed nothing here (evaluation runs on 3.11 to 3.13; render from a 3.13 environment)")


INSTALL_HINT = install_hint()


def need_bpy() -> None:
    """Stop in one line (``install_hint``) before a render command makes anything, where bpy cannot be
    imported: found without importing it, so a check costs nothing where it can. A Blender other than
    the one our datasets were rendered with is said in one line (``say_other_blender``)."""
    if importlib.util.find_spec("bpy") is None:
        raise UserError(INSTALL_HINT)
    say_other_blender()


# The Blender our datasets were rendered and checked with: the [render] extra pins it, since another
# build draws other bytes (sampling, denoising, colour management) for the same scene and seed.
TESTED_BPY = "5.2.3"
_SAID_ENV = "SPATIAL_TASKS_OTHER_BLENDER_SAID"  # inherited by render workers: said once per command


def other_blender() -> str | None:
    """The installed bpy's version when it is not ``TESTED_BPY`` (None when it is, or none is installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        found = installed("bpy")
    except PackageNotFoundError:
        return None
    return None if found == TESTED_BPY else found


def say_other_blender() -> None:
    """One line, once per command (its workers included), when rendering with another Blender."""
    found = other_blender()
    if found and not os.environ.get(_SAID_ENV):
        os.environ[_SAID_ENV] = "1"
        print(f"spatial-tasks: rendering with bpy {found}, not {TESTED_BPY}, the Blender our datasets were rendered and "
              "checked with: images may differ in their bytes from a dataset made with it; the dataset records "
              f"blender_version {found}", file=sys.stderr, flush=True)

# Canonical pass names (5.x spelling) for the names a multilayer EXR may carry.
_PASS_ALIASES = {"IndexOB": "Object Index", "IndexMA": "Material Index", "Z": "Depth"}


def require_bpy() -> ModuleType:
    """Import bpy, or fail with the install command.

    Importing bpy puts Blender's ``scripts/modules`` folder (which holds a pure-Python ``bpy``
    package) on sys.path; a process spawned by multiprocessing inherits that sys.path and would
    then import the wrong ``bpy``. Such entries are dropped before the first import.
    """
    if "bpy" in sys.modules:
        return sys.modules["bpy"]
    sys.path[:] = [p for p in sys.path if not _is_blender_scripts_path(p)]
    try:
        with quiet_stdout():  # Blender logs its colour-management set-up on import
            import bpy
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(INSTALL_HINT) from err
    say_other_blender()
    return bpy


def _is_blender_scripts_path(path: str) -> bool:
    parts = Path(path).parts
    return "bpy" in parts and "scripts" in parts[parts.index("bpy"):]


def version() -> tuple[int, int, int]:
    return tuple(require_bpy().app.version)  # type: ignore[return-value]


def version_string() -> str:
    """e.g. "5.2.3 LTS (e13b728c6880)"."""
    app = require_bpy().app
    build = app.build_hash.decode() if isinstance(app.build_hash, bytes) else str(app.build_hash)
    return f"{app.version_string} ({build})"


def is_5x() -> bool:
    return version() >= (5, 0, 0)


def sky_single_scattering() -> str:
    """The sky type of Blender's physical (Nishita) sky under this Blender's name."""
    return "SINGLE_SCATTERING" if is_5x() else "NISHITA"


def openimageio() -> ModuleType:
    """The OpenImageIO module bundled in the bpy wheel (not on sys.path by default)."""
    bpy = require_bpy()
    try:
        import OpenImageIO
    except ImportError:
        local = Path(bpy.utils.resource_path("LOCAL")) / "python" / "lib"
        candidates = sorted(local.glob("python3*/site-packages"))
        if not candidates:
            raise ImportError(f"OpenImageIO not found in the bpy wheel under {local}") from None
        sys.path.append(str(candidates[0]))
        import OpenImageIO
    return OpenImageIO


# ---------------------------------------------------------------------------------- scene


def reset_scene() -> Any:
    """Empty factory scene (no default cube, camera or light); returns ``bpy.context.scene``."""
    bpy = require_bpy()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy.context.scene


def _ensure_nodes(idblock: Any) -> None:
    if not is_5x():
        idblock.use_nodes = True


def configure_cycles(
    scene: Any,
    *,
    width: int,
    height: int,
    samples: int,
    threads: int,
    denoise: bool = True,
    denoising_quality: str = "BALANCED",
    max_bounces: int = 4,
    diffuse_bounces: int = 3,
    glossy_bounces: int = 2,
    clamp_indirect: float = 10.0,
    exposure: float = 0.0,
    view_transform: str = "AgX",
    look: str = "None",
    persistent_data: bool = True,
    device: str | None = None,
) -> None:
    """Cycles with a fixed thread count and no metadata stamped into output files.

    ``device`` is a ``--device`` value (``DEVICES``: auto, cpu, cuda, optix, hip, metal, oneapi;
    None = cpu); see ``use_device``.

    ``persistent_data`` keeps the synced scene between renders of a long-lived process, so a
    render after a small change (object moved, colour changed) does not rebuild everything.
    """
    render = scene.render
    render.engine = "CYCLES"
    scene.cycles.device = "CPU" if device is None else use_device(device)
    scene.cycles.samples = samples
    scene.cycles.use_adaptive_sampling = False  # fixed sample count: time per image is predictable
    scene.cycles.use_denoising = denoise
    if denoise:
        scene.cycles.denoiser = "OPENIMAGEDENOISE"
        scene.cycles.denoising_quality = denoising_quality
    scene.cycles.max_bounces = max_bounces
    scene.cycles.diffuse_bounces = diffuse_bounces
    scene.cycles.glossy_bounces = glossy_bounces
    scene.cycles.transmission_bounces = 0
    scene.cycles.transparent_max_bounces = 0
    scene.cycles.volume_bounces = 0
    scene.cycles.caustics_reflective = False
    scene.cycles.caustics_refractive = False
    scene.cycles.sample_clamp_indirect = clamp_indirect
    render.resolution_x = width
    render.resolution_y = height
    render.resolution_percentage = 100
    render.threads_mode = "FIXED"
    render.threads = max(1, threads)
    render.use_persistent_data = persistent_data
    global _ATEXIT_REGISTERED
    if persistent_data and not _ATEXIT_REGISTERED and not is_5x():
        atexit.register(release_render_data)  # bpy 4.5 only: 5.x exits cleanly (and faster without)
        _ATEXIT_REGISTERED = True
    scene.view_settings.view_transform = view_transform
    scene.view_settings.look = look
    scene.view_settings.exposure = exposure
    scene.view_settings.gamma = 1.0
    disable_metadata(scene)


DEVICES = ("auto", "cpu", "cuda", "optix", "hip", "metal", "oneapi")
_AUTO_ORDER = ("OPTIX", "CUDA", "HIP", "METAL", "ONEAPI")  # fastest first where several exist


class DeviceError(UserError, RuntimeError):
    """The requested render device does not exist on this machine."""


def check_device(device: str, *, here: bool = False) -> str:
    """``device`` is one of DEVICES; ``here``: a GPU backend named explicitly must exist on this
    machine (checked before any work starts; a Ray run renders elsewhere, so it passes False)."""
    if device not in DEVICES:
        raise ValueError(f"--device must be one of {list(DEVICES)}, got {device!r}")
    if here and device not in ("cpu", "auto"):
        try:
            found = gpu_devices(device.upper())
        except ImportError:
            return device  # no bpy: the render command says so itself
        if not found:
            raise _no_gpu(device)
    return device


def _no_gpu(device: str) -> DeviceError:
    return DeviceError(f"--device {device}: Cycles finds no {device.upper()} GPU on this machine "
                       f"(use --device auto to fall back to the CPU, or --device cpu)")


def gpu_devices(backend: str) -> list[Any]:
    """Cycles' devices of one compute backend ("CUDA", "OPTIX", ...) other than the CPU; [] when
    this Blender build or machine has none."""
    bpy = require_bpy()
    prefs = bpy.context.preferences.addons["cycles"].preferences
    try:
        prefs.compute_device_type = backend
    except TypeError:  # backend not compiled into this build
        return []
    with quiet_stdout():
        prefs.refresh_devices()
    return [d for d in prefs.get_devices_for_type(backend) if d.type != "CPU"]


def use_device(device: str) -> str:
    """Point Cycles at ``device`` and return "CPU" or "GPU" for ``scene.cycles.device``.

    cpu: the CPU. cuda / optix / hip / metal / oneapi: every GPU of that backend, or a
    DeviceError naming what exists. auto: the first backend of OPTIX, CUDA, HIP, METAL, ONEAPI
    with a GPU, else the CPU (so one command line works on a laptop and a GPU node).
    """
    check_device(device)
    if device == "cpu":
        return "CPU"
    backends = _AUTO_ORDER if device == "auto" else (device.upper(),)
    for backend in backends:
        found = gpu_devices(backend)
        if found:
            for d in require_bpy().context.preferences.addons["cycles"].preferences.devices:
                d.use = d in found or d.type == backend
            return "GPU"
    if device == "auto":
        return "CPU"
    raise _no_gpu(device)


_RELEASED_AT_EXIT = False
_ATEXIT_REGISTERED = False


def release_render_data() -> None:
    """Free Cycles' persistent session (bpy 4.5 hangs at interpreter exit while one is alive).

    Registered with atexit by ``configure_cycles(persistent_data=True)`` under bpy 4.x; runs at
    most once.
    """
    global _RELEASED_AT_EXIT
    if _RELEASED_AT_EXIT or "bpy" not in sys.modules:
        return
    _RELEASED_AT_EXIT = True
    with quiet_stdout():
        sys.modules["bpy"].ops.wm.read_factory_settings(use_empty=True)


def disable_metadata(scene: Any) -> None:
    """No date, render time, host name ... in written files: same inputs give the same bytes."""
    render = scene.render
    for prop in render.bl_rna.properties:
        name = prop.identifier
        if name.startswith("use_stamp"):
            setattr(render, name, False)


def set_seed(scene: Any, seed: int) -> None:
    """Cycles' sampling seed (0 .. 2**31 - 1); any non-negative int is folded into that range."""
    scene.cycles.seed = int(seed) % (2**31 - 1)


def enable_passes(scene: Any, *, object_index: bool = True, depth: bool = False) -> None:
    layer = scene.view_layers[0]
    layer.use_pass_object_index = object_index
    layer.use_pass_z = depth


# ----------------------------------------------------------------------------- materials


def principled_material(name: str, base_color: Sequence[float], roughness: float) -> Any:
    bpy = require_bpy()
    material = bpy.data.materials.new(name)
    _ensure_nodes(material)
    set_principled(material, base_color=base_color, roughness=roughness)
    return material


def set_principled(material: Any, *, base_color: Sequence[float] | None = None,
                   roughness: float | None = None) -> None:
    bsdf = next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")
    if base_color is not None:
        rgba = tuple(base_color) + (1.0,) * (4 - len(base_color))
        bsdf.inputs["Base Color"].default_value = rgba
    if roughness is not None:
        bsdf.inputs["Roughness"].default_value = float(roughness)


# --------------------------------------------------------------------------------- world


def sky_world(
    scene: Any,
    *,
    sun_elevation: float,
    sun_rotation: float,
    strength: float,
    azimuth_offset: float = 0.0,
    sun_intensity: float = 1.0,
    name: str = "Sky",
) -> Any:
    """A physical sky (Nishita / single scattering) with its sun disc as the scene's world.

    ``sun_rotation`` is Blender's own parameter: 0 puts the sun towards +Y, pi/2 towards +X
    (clockwise seen from above). ``azimuth_offset`` turns the whole sky about +Z (through the
    texture mapping), so a scene can point the sun range of a paper at its own geometry while
    recording the paper's rotation value.
    """
    bpy = require_bpy()
    world = bpy.data.worlds.new(name)
    _ensure_nodes(world)
    nodes, links = world.node_tree.nodes, world.node_tree.links
    background = next((n for n in nodes if n.bl_idname == "ShaderNodeBackground"), None)
    background = background or nodes.new("ShaderNodeBackground")
    output = next((n for n in nodes if n.bl_idname == "ShaderNodeOutputWorld"), None)
    output = output or nodes.new("ShaderNodeOutputWorld")
    sky = nodes.new("ShaderNodeTexSky")
    sky.name = "Sky Texture"
    sky.sky_type = sky_single_scattering()
    sky.sun_disc = True
    sky.sun_intensity = sun_intensity
    sky.sun_elevation = sun_elevation
    sky.sun_rotation = sun_rotation
    sky.texture_mapping.rotation = (0.0, 0.0, azimuth_offset)
    links.new(sky.outputs["Color"], background.inputs["Color"])
    links.new(background.outputs["Background"], output.inputs["Surface"])
    background.inputs["Strength"].default_value = strength
    scene.world = world
    return world


def _world_nodes(name: str) -> tuple[Any, Any, Any]:
    """A new world with its Background and Output nodes (created where missing)."""
    bpy = require_bpy()
    world = bpy.data.worlds.new(name)
    _ensure_nodes(world)
    nodes = world.node_tree.nodes
    background = next((n for n in nodes if n.bl_idname == "ShaderNodeBackground"), None)
    background = background or nodes.new("ShaderNodeBackground")
    output = next((n for n in nodes if n.bl_idname == "ShaderNodeOutputWorld"), None)
    output = output or nodes.new("ShaderNodeOutputWorld")
    world.node_tree.links.new(background.outputs["Background"], output.inputs["Surface"])
    return world, background, output


def color_world(scene: Any, color: Sequence[float], strength: float = 1.0, name: str = "Plain",
                below_horizon: Sequence[float] | None = None) -> Any:
    """A uniform background colour (it also lights the scene a little, like a plain sky);
    ``below_horizon``: another colour for directions pointing down (a ground seen far away)."""
    world, background, _ = _world_nodes(name)
    background.inputs["Strength"].default_value = strength
    if below_horizon is None:
        background.inputs["Color"].default_value = tuple(color)[:3] + (1.0,)
    else:
        nodes, links = world.node_tree.nodes, world.node_tree.links
        direction = nodes.new("ShaderNodeTexCoord")
        split = nodes.new("ShaderNodeSeparateXYZ")
        down = nodes.new("ShaderNodeMath")
        down.operation = "LESS_THAN"
        down.inputs[1].default_value = 0.0
        mix = nodes.new("ShaderNodeMix")
        mix.data_type = "RGBA"
        mix.inputs["A"].default_value = tuple(color)[:3] + (1.0,)
        mix.inputs["B"].default_value = tuple(below_horizon)[:3] + (1.0,)
        links.new(direction.outputs["Generated"], split.inputs["Vector"])
        links.new(split.outputs["Z"], down.inputs[0])
        links.new(down.outputs[0], mix.inputs["Factor"])
        links.new(mix.outputs["Result"], background.inputs["Color"])
    scene.world = world
    return world


def hdri_world(scene: Any, path: Path, *, strength: float = 1.0, rotation: float = 0.0, name: str = "HDRI") -> Any:
    """An equirectangular HDRI (EXR/HDR file) as the scene's background and light, turned by
    ``rotation`` radians about +Z."""
    bpy = require_bpy()
    world, background, _ = _world_nodes(name)
    nodes, links = world.node_tree.nodes, world.node_tree.links
    texture = nodes.new("ShaderNodeTexEnvironment")
    texture.image = bpy.data.images.load(str(path), check_existing=True)
    texture.texture_mapping.rotation = (0.0, 0.0, rotation)
    links.new(texture.outputs["Color"], background.inputs["Color"])
    background.inputs["Strength"].default_value = strength
    scene.world = world
    return world


def bundled_hdris() -> dict[str, Path]:
    """The CC0 studio-light HDRIs shipped inside Blender (city, courtyard, forest, interior, night,
    studio, sunrise, sunset), by name.

    Found in the installed bpy package without importing it: a process that imports bpy and then
    waits on Ray no longer sees Ctrl-C, so a generator's driver (which only plans) must not."""
    if "bpy" in sys.modules:
        folders = [Path(sys.modules["bpy"].utils.system_resource("DATAFILES", path="studiolights/world"))]
    else:
        spec = importlib.util.find_spec("bpy")
        if spec is None or spec.origin is None:
            raise ImportError(INSTALL_HINT)
        folders = sorted(Path(spec.origin).parent.glob("*/datafiles/studiolights/world"))
    return {p.stem: p for folder in folders[:1] for p in sorted(folder.glob("*.exr"))}


def set_sun_rotation(world: Any, sun_rotation: float) -> None:
    world.node_tree.nodes["Sky Texture"].sun_rotation = float(sun_rotation)


# ------------------------------------------------------------------------ camera, meshes


def add_camera(scene: Any, *, location: Sequence[float], rotation_euler: Sequence[float],
               lens_mm: float, sensor_width_mm: float, clip_end: float = 1000.0,
               name: str = "Camera") -> Any:
    bpy = require_bpy()
    data = bpy.data.cameras.new(name)
    data.lens = lens_mm
    data.sensor_width = sensor_width_mm
    data.sensor_fit = "HORIZONTAL"
    data.clip_start = 0.05
    data.clip_end = clip_end
    camera = bpy.data.objects.new(name, data)
    camera.location = tuple(location)
    camera.rotation_euler = tuple(rotation_euler)
    scene.collection.objects.link(camera)
    scene.camera = camera
    return camera


def add_mesh(scene: Any, name: str, vertices: Iterable[Sequence[float]], faces: Iterable[Sequence[int]],
             *, material: Any = None, smooth: bool = False) -> Any:
    bpy = require_bpy()
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(v) for v in vertices], [], [tuple(f) for f in faces])
    mesh.update()
    if smooth:
        mesh.shade_smooth()
    if material is not None:
        mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(obj)
    return obj


def add_unit_sphere(scene: Any, name: str, *, segments: int = 64, rings: int = 32,
                    material: Any = None) -> Any:
    """UV sphere of radius 1 at the origin, smooth shaded (scale it to the wanted radius)."""
    import bmesh

    bpy = require_bpy()
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=rings, radius=1.0)
    bm.to_mesh(mesh)
    bm.free()
    mesh.shade_smooth()
    if material is not None:
        mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(obj)
    return obj


def add_unit_cube(scene: Any, name: str, *, material: Any = None) -> Any:
    """Axis-aligned cube with half-extent 1 at the origin (edge 2), flat shaded."""
    v = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    # vertex index = 4*ix + 2*iy + iz; faces wound outwards
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return add_mesh(scene, name, v, faces, material=material)


def world_to_pixel(scene: Any, camera: Any, point: Sequence[float]) -> tuple[float, float, float]:
    """(column, row, depth) of a world point through the render camera (Blender's own projection).

    Uses ``bpy_extras.object_utils.world_to_camera_view``: normalised frame coordinates with
    y up, turned into pixels with row 0 at the top; depth is the distance along the view axis.
    """
    from bpy_extras.object_utils import world_to_camera_view
    from mathutils import Vector

    u, v, depth = world_to_camera_view(scene, camera, Vector(tuple(point)))
    width = scene.render.resolution_x * scene.render.resolution_percentage / 100
    height = scene.render.resolution_y * scene.render.resolution_percentage / 100
    return (float(u) * width, (1.0 - float(v)) * height, float(depth))


def focal_length_px(scene: Any, camera: Any) -> float:
    """Focal length in pixels of a horizontally fitted camera."""
    return camera.data.lens / camera.data.sensor_width * scene.render.resolution_x


# --------------------------------------------------------------------- render and passes


@contextlib.contextmanager
def quiet_stdout(enabled: bool = True) -> Iterator[None]:
    """Silence Blender's per-render chatter ("Fra:", "Saved: ...") written to file descriptor 1."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def render_multilayer_exr(scene: Any, path: Path, *, quiet: bool = True) -> None:
    """Render the scene and write every enabled pass to one multilayer EXR at ``path``.

    The PNG of the same render is written afterwards with ``save_png`` (the Render Result stays
    in memory), so one render gives both the display image and exact passes.
    """
    bpy = require_bpy()
    settings = scene.render.image_settings
    if is_5x():
        settings.media_type = "MULTI_LAYER_IMAGE"
    settings.file_format = "OPEN_EXR_MULTILAYER"
    settings.color_depth = "32"
    settings.exr_codec = "ZIP"
    scene.render.filepath = str(path)
    scene.render.use_file_extension = False
    with quiet_stdout(quiet):
        bpy.ops.render.render(write_still=True)


def save_png(scene: Any, path: Path, *, compression: int = 15, quiet: bool = True) -> None:
    """Write the last render (view transform applied) as an 8-bit RGB PNG at ``path``."""
    bpy = require_bpy()
    settings = scene.render.image_settings
    if is_5x():
        settings.media_type = "IMAGE"
    settings.file_format = "PNG"
    settings.color_mode = "RGB"
    settings.color_depth = "8"
    settings.compression = compression
    with quiet_stdout(quiet):
        bpy.data.images["Render Result"].save_render(str(path), scene=scene)


class RenderTimer:
    """Records when Cycles finishes (render_post), so a caller can tell the render itself from the
    EXR write that ``bpy.ops.render.render(write_still=True)`` does afterwards."""

    def __init__(self) -> None:
        self.end: float | None = None
        require_bpy().app.handlers.render_post.append(self._on_render_post)

    def _on_render_post(self, *_: Any) -> None:
        self.end = time.perf_counter()


def render_image_and_passes(scene: Any, work: Path, png_name: str, timer: RenderTimer, *, compression: int = 15,
                            keep_exr: Path | None = None) -> tuple[bytes, dict[str, np.ndarray], dict[str, float]]:
    """Render once: the PNG's bytes (Cycles' timing text stripped), every enabled pass, and the
    seconds of render / exr_write / png_encode / pass_extraction. The EXR goes to
    ``work/.scratch/<pid>.exr`` (removed, or moved to ``keep_exr``); nothing is left in ``work``."""
    from .jobs import temporary_sibling
    from .png import strip_text_chunks

    scratch = Path(work) / ".scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    exr = scratch / f"{os.getpid()}.exr"
    timer.end = None
    t0 = time.perf_counter()
    render_multilayer_exr(scene, exr)
    t1 = time.perf_counter()
    end = timer.end if timer.end is not None else t1
    png_tmp = temporary_sibling(Path(work) / png_name)
    try:
        save_png(scene, png_tmp, compression=compression)
        png = strip_text_chunks(png_tmp.read_bytes())
    finally:
        remove_if_exists(png_tmp)
    t2 = time.perf_counter()
    passes = read_exr_passes(exr)
    if keep_exr is not None:
        exr.replace(keep_exr)
    else:
        remove_if_exists(exr)
    t3 = time.perf_counter()
    return png, passes, {"render": end - t0, "exr_write": t1 - end, "png_encode": t2 - t1, "pass_extraction": t3 - t2}


def read_exr_passes(path: Path) -> dict[str, np.ndarray]:
    """Every pass of a Blender multilayer EXR as float32 ``(height, width, channels)``, top row first.

    Keys are pass names in 5.x spelling ("Combined", "Depth", "Object Index", ...), whether the
    file is multi-part (5.x) or single-part (4.5, "IndexOB").
    """
    oiio = openimageio()
    image = oiio.ImageInput.open(str(path))
    if image is None:
        raise OSError(f"cannot open EXR {path}: {oiio.geterror()}")
    passes: dict[str, list[tuple[str, np.ndarray]]] = {}
    try:
        subimage = 0
        while image.seek_subimage(subimage, 0):
            names = list(image.spec().channelnames)
            pixels = image.read_image(subimage, 0, 0, len(names), "float")
            if pixels is None:
                raise OSError(f"cannot read {path} part {subimage}: {image.geterror()}")
            pixels = np.asarray(pixels).reshape(image.spec().height, image.spec().width, len(names))
            for i, full in enumerate(names):
                parts = full.split(".")
                pass_name = parts[-2] if len(parts) >= 2 else parts[0]
                pass_name = _PASS_ALIASES.get(pass_name, pass_name)
                passes.setdefault(pass_name, []).append((parts[-1], pixels[:, :, i]))
            subimage += 1
    finally:
        image.close()
    return {name: np.stack([a for _, a in chans], axis=-1) for name, chans in passes.items()}


def remove_if_exists(path: Path) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
