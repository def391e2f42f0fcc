"""What O3-D scenes are made of, all available offline: objects, familiar-size pairs, environments.

Objects (``--objects``; the ``obj_cat`` column says where each comes from):

* ``blender`` -- built here from Blender primitives, at KuBasic's scale (longest side 2 m, as
  Kubric's cube spans [-1, 1]): cube, sphere, cylinder, cone, torus, suzanne; and four familiar
  objects at their real sizes, made for the familiar-size cue: basketball (24 cm), tennis_ball
  (6.7 cm), oil_drum (88 cm high), soda_can (12.2 cm high).
* ``pybullet`` -- meshes of pybullet's ``pybullet_data`` at real-world sizes (duck, bunny, mug,
  soccer_ball, teddy, lego, ring). No wheel of pybullet installs here, so
  ``spatial-tasks assets pybullet`` takes them from the registry's source archive (pip download,
  nothing compiled) into the asset cache; each entry records the file's up axis so every mesh
  stands upright, facing the camera, base on the ground.
* ``kubasic`` / ``gso`` -- the paper's own objects, when the user has Kubric's asset folders
  (``--assets DIR``; see ``KubricAssets``). Never required.

Familiar-size pairs (FS; large / small, same shape family, clearly different familiar size):
basketball / tennis_ball (balls), oil_drum / soda_can (cylindrical drums), and with pybullet's
meshes soccer_ball / tennis_ball. With ``--assets`` holding GSO, the paper's five pairs
(``PAPER_FS_PAIRS``) are used as well.

Environments (``--envs``): ``basic`` (checker ground, plain blue background, a sun; the
``env_cat`` 'basic' with no ``env_id``, as in the release) and one ``hdri`` environment per HDRI:
Blender's eight bundled CC0 studio lights (city, courtyard, forest, interior, night, studio,
sunrise, sunset), plus HDRI Haven's under ``--assets``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import reprlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from spatial_tasks.common.owned import Ledger
from spatial_tasks.common.validate import DataError, safe_name

KUBASIC_SIZE = 2.0  # metres: Kubric's KuBasic objects span [-1, 1]

# Kubric's manifests (file names and the obj_cat each gives), as in Kubric's asset folders.
KUBRIC_MANIFESTS = {"KuBasic.json": "kubasic", "GSO.json": "gso"}
HDRI_MANIFEST = "HDRI_haven.json"

# The paper's FS pairs (GSO ids; large / small), used when --assets holds them.
PAPER_FS_PAIRS = (
    ("Organic_Whey_Protein_Unflavored", "CoQ10_BjTLbuRVt1t"),
    ("Travel_Mate_P_series_Notebook", "BlackBlack_Nintendo_3DSXL"),
    ("Threshold_Porcelain_Pitcher_White", "Threshold_Porcelain_Coffee_Mug_All_Over_Bead_White"),
    ("Remington_TStudio_Hair_Dryer", "Razer_Abyssus_Ambidextrous_Gaming_Mouse"),
    ("TriStar_Products_PPC_Power_Pressure_Cooker_XL_in_Black", "Threshold_Porcelain_Teapot_White"),
)
BUILTIN_FS_PAIRS = (("basketball", "tennis_ball"), ("oil_drum", "soda_can"), ("soccer_ball", "tennis_ball"))

PYBULLET_VERSION = "3.2.7"
PYBULLET_PREFIX = f"pybullet-{PYBULLET_VERSION}/examples/pybullet/gym/pybullet_data/"


@dataclass(frozen=True)
class ObjectAsset:
    """One object class. ``size``: metres of its longest side after loading (None keeps the
    file's own scale, as Kubric does for GSO). ``kind``: how scene.py builds it."""

    id: str
    cat: str
    kind: str  # primitive | obj | blend
    size: float | None
    path: str | None = None  # obj / blend file
    up_axis: str = "Z"  # the file's up axis (OBJ import)
    forward_axis: str = "Y"
    colour: tuple[float, float, float] | None = None  # material for meshes without one
    blend_object: str | None = None  # object name inside a .blend
    note: str = ""
    yaw: float = 0.0  # degrees about +Z after loading (e.g. to show a mug's handle)


@dataclass(frozen=True)
class EnvAsset:
    id: str  # 'basic' or the HDRI's name
    cat: str  # basic | hdri
    path: str | None = None


BLENDER_OBJECTS = {
    a.id: a for a in (
        ObjectAsset("cube", "blender", "primitive", KUBASIC_SIZE, colour=(0.6, 0.6, 0.6)),
        ObjectAsset("sphere", "blender", "primitive", KUBASIC_SIZE, colour=(0.6, 0.6, 0.6)),
        ObjectAsset("cylinder", "blender", "primitive", KUBASIC_SIZE, colour=(0.6, 0.6, 0.6)),
        ObjectAsset("cone", "blender", "primitive", KUBASIC_SIZE, colour=(0.6, 0.6, 0.6)),
        ObjectAsset("torus", "blender", "primitive", KUBASIC_SIZE, colour=(0.6, 0.6, 0.6)),
        ObjectAsset("suzanne", "blender", "primitive", KUBASIC_SIZE, colour=(0.6, 0.6, 0.6)),
        ObjectAsset("basketball", "blender", "primitive", 0.24, colour=(0.80, 0.28, 0.05),
                    note="orange ball with black seams, 24 cm"),
        ObjectAsset("tennis_ball", "blender", "primitive", 0.067, colour=(0.78, 0.90, 0.10),
                    note="yellow-green ball with a white seam, 6.7 cm"),
        ObjectAsset("oil_drum", "blender", "primitive", 0.88, colour=(0.08, 0.22, 0.55),
                    note="blue steel drum with two rolling hoops, 88 x 57 cm"),
        ObjectAsset("soda_can", "blender", "primitive", 0.122, colour=(0.75, 0.05, 0.05),
                    note="red aluminium can with a silver lid, 12.2 x 6.6 cm"),
    )
}

# pybullet_data meshes: (id, file, up axis, real size in metres, colour when the file has no texture, note,
# yaw in degrees)
_PYBULLET = (
    ("duck", "duck.obj", "Y", 0.10, None, "rubber duck (textured)", 0.0),
    ("bunny", "bunny.obj", "Y", 0.15, (0.75, 0.70, 0.62), "Stanford bunny", 0.0),
    ("mug", "objects/mug.obj", "Z", 0.12, (0.92, 0.92, 0.90), "mug, handle to the side", 90.0),
    ("soccer_ball", "soccerball.obj", "Y", 0.22, None, "football (textured)", 0.0),
    ("teddy", "teddy2_VHACD_CHs.obj", "Z", 0.30, (0.45, 0.30, 0.18), "teddy bear (convex pieces)", 0.0),
    ("lego", "lego/lego.obj", "Y", 0.032, (0.80, 0.08, 0.06), "red lego brick", 0.0),
    ("ring", "torus/torus_textured.obj", "Y", 0.30, None, "textured ring lying flat", 0.0),
)
# Files (besides each mesh) that the meshes' materials need.
_PYBULLET_EXTRA = ("duck.mtl", "duckCM.png", "soccerball.mtl", "colors16.png", "torus/torus_textured.mtl", "cube.png")


def cache_dir() -> Path:
    """Where fetched assets live: $SPATIAL_TASKS_ASSETS, else ~/.cache/spatial-tasks/assets."""
    env = os.environ.get("SPATIAL_TASKS_ASSETS")
    return Path(env) if env else Path.home() / ".cache" / "spatial-tasks" / "assets"


def pybullet_dir(root: Path | None = None) -> Path:
    return (root or cache_dir()) / f"pybullet_data-{PYBULLET_VERSION}"


def pybullet_objects(root: Path | None = None) -> dict[str, ObjectAsset]:
    """The pybullet meshes present in the cache (empty before ``fetch_pybullet``)."""
    folder = pybullet_dir(root)
    out = {}
    for oid, rel, up, size, colour, note, yaw in _PYBULLET:
        path = folder / rel
        if path.is_file():
            out[oid] = ObjectAsset(oid, "pybullet", "obj", size, str(path), up_axis=up,
                                   forward_axis="NEGATIVE_Z" if up == "Y" else "Y", colour=colour, note=note, yaw=yaw)
    return out


def fetch_pybullet(root: Path | None = None, *, archive: Path | None = None) -> Path:
    """Put pybullet_data's meshes used here into the cache, from pybullet's source archive on the
    package registry (``pip download``; nothing is built). ``archive``: an already downloaded
    ``pybullet-<version>.tar.gz``. Returns the folder; a second call finds it and returns."""
    target = pybullet_dir(root)
    wanted = [rel for _, rel, *_ in _PYBULLET] + list(_PYBULLET_EXTRA)
    if all((target / rel).is_file() for _, rel, *_ in _PYBULLET):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        if archive is None:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
                   "-d", tmp, f"pybullet=={PYBULLET_VERSION}"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            found = sorted(Path(tmp).glob("pybullet-*.tar.gz"))
            if done.returncode != 0 or not found:
                raise DataError(f"could not download pybullet {PYBULLET_VERSION}'s source archive from the package "
                                   f"registry ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'no file'})")
            archive = found[0]
        target.parent.mkdir(parents=True, exist_ok=True)  # staging beside the target: one atomic rename
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".pybullet-"))
        try:
            with _open_archive(archive) as tar, _archive_errors(archive):
                members = {m.name.removeprefix(PYBULLET_PREFIX): m for m in tar.getmembers()
                           if m.name.startswith(PYBULLET_PREFIX) and m.isfile()}
                for rel in wanted:
                    if rel in members:
                        dest = staging / rel
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        with tar.extractfile(members[rel]) as src, open(dest, "wb") as out:
                            shutil.copyfileobj(src, out)
            missing = [rel for _, rel, *_ in _PYBULLET if not (staging / rel).is_file()]
            if missing:
                raise DataError(f"{archive}: not pybullet {PYBULLET_VERSION}'s source archive: its pybullet_data lacks "
                                f"{missing[:3]}{' ...' if len(missing) > 3 else ''} (pass the pybullet-{PYBULLET_VERSION}"
                                ".tar.gz that `pip download --no-deps --no-binary :all: pybullet==" + PYBULLET_VERSION
                                + "` fetches)")
            cache = Ledger(target.parent, "spatial-tasks assets")
            if target.exists():  # an incomplete cache of ours; a folder it cannot prove ours is refused
                cache.remove(target, what_to_do=f"Move {target} away, or set SPATIAL_TASKS_ASSETS to another cache.")
            staging.replace(target)  # whole folder at once: never half a cache
            cache.record_scratch(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


# ------------------------------------------------------------------------- Kubric folders


@dataclass
class KubricAssets:
    """A local folder in Kubric's asset layout (``--assets DIR``)::

        DIR/KuBasic.json   DIR/GSO.json   DIR/HDRI_haven.json      Kubric's manifests (any of them)
        DIR/<manifest stem>/<asset id>/...                        an asset's files, unpacked
        DIR/<manifest stem>/<asset id>.tar.gz                     ... or packed, as Kubric stores them

    A manifest entry's ``kwargs.render_filename`` (objects) or ``kwargs.filename`` (HDRIs) names
    the file, with ``{asset_dir}`` standing for the asset's folder; ``render_import_kwargs`` name
    the object inside a .blend. Packed assets are unpacked once into the asset cache.
    """

    root: Path
    objects: dict[str, ObjectAsset] = field(default_factory=dict)
    envs: dict[str, EnvAsset] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path) -> KubricAssets:
        root = Path(root)
        if not root.is_dir():
            raise ValueError(f"--assets {root}: not a folder")
        found = cls(root)
        manifests = [*KUBRIC_MANIFESTS, HDRI_MANIFEST]
        if not any((root / m).is_file() for m in manifests):
            raise ValueError(f"--assets {root}: none of Kubric's manifests ({', '.join(manifests)}) is there")
        for name, cat in KUBRIC_MANIFESTS.items():
            for asset_id, entry in _manifest(root / name).items():
                kwargs = entry.get("kwargs") or {}
                render = kwargs.get("render_filename")
                if not isinstance(render, str):
                    raise ValueError(f"{root / name}: asset {asset_id!r} has no kwargs.render_filename")
                folder = _asset_folder(root, Path(name).stem, asset_id)
                path = render.replace("{asset_dir}", str(folder))
                kind = "blend" if path.endswith(".blend") else "obj"
                blend_object = (kwargs.get("render_import_kwargs") or {}).get("filename")
                found.objects[asset_id] = ObjectAsset(asset_id, cat, kind, KUBASIC_SIZE if cat == "kubasic" else None,
                                                      path, up_axis="Z", forward_axis="Y", colour=(0.6, 0.6, 0.6),
                                                      blend_object=blend_object)
        for asset_id, entry in _manifest(root / HDRI_MANIFEST).items():
            filename = (entry.get("kwargs") or {}).get("filename")
            if not isinstance(filename, str):
                raise ValueError(f"{root / HDRI_MANIFEST}: asset {asset_id!r} has no kwargs.filename")
            folder = _asset_folder(root, Path(HDRI_MANIFEST).stem, asset_id)
            found.envs[asset_id] = EnvAsset(asset_id, "hdri", filename.replace("{asset_dir}", str(folder)))
        return found


def _manifest(path: Path) -> dict[str, dict]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{path}: not a readable JSON manifest ({type(err).__name__}: {str(err)[:120]})") from None
    assets = data.get("assets") if isinstance(data, dict) else None
    if not isinstance(assets, dict):
        raise ValueError(f"{path}: no 'assets' mapping (Kubric's manifest format)")
    for asset_id, entry in assets.items():  # an id names a folder and a cache entry: it must stay inside them
        try:
            safe_name(asset_id, "asset id")
        except DataError as err:
            raise DataError(f"{path}: {err}") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("kwargs", {}), dict):
            raise DataError(f"{path}: asset {asset_id!r}: expected an object with a 'kwargs' object (Kubric's "
                            f"manifest format), found {reprlib.repr(entry)}")
    return assets


def _asset_folder(root: Path, stem: str, asset_id: str) -> Path:
    """The asset's unpacked folder (unpacking ``<id>.tar.gz`` into the cache on first use)."""
    folder = root / stem / asset_id
    if folder.is_dir():
        return folder
    packed = root / stem / f"{asset_id}.tar.gz"
    if not packed.is_file():
        return folder  # reported when a scene needs it (scene.py names the missing file)
    unpacked = cache_dir() / "kubric" / stem / asset_id
    if not unpacked.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f".{asset_id}-"))
        try:
            with _open_archive(packed) as tar, _archive_errors(packed):
                tar.extractall(staging, filter="data")
            inner = [p for p in staging.iterdir()]
            source = inner[0] if len(inner) == 1 and inner[0].is_dir() else staging
            unpacked.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), unpacked)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return unpacked


def _open_archive(path: Path) -> tarfile.TarFile:
    """``path`` opened as a tar archive; one that is not one (or is cut short) is named."""
    with _archive_errors(path):
        return tarfile.open(path)


@contextlib.contextmanager
def _archive_errors(path: Path):
    """Reading a damaged archive (not tar, bad gzip, cut short) raises ``DataError`` naming it."""
    try:
        yield
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        if "could not be opened successfully" in reason:  # tarfile tried every compression it knows
            reason = "not a tar archive, plain or gzip/bz2/xz-compressed"
        raise DataError(f"{path}: not a readable .tar.gz archive ({reason[:160]}); download it again") from None


# ------------------------------------------------------------------------------- catalogue


@dataclass
class Catalog:
    """Every object, FS pair and environment available to this run."""

    objects: dict[str, ObjectAsset]
    envs: dict[str, EnvAsset]
    fs_pairs: list[tuple[str, str]]

    def object_group(self, cat: str) -> list[str]:
        return [k for k, a in self.objects.items() if a.cat == cat]

    def select_objects(self, names: list[str] | None) -> list[str]:
        """``--objects``: ids and groups (blender, pybullet, kubasic, gso, all); default: the
        Blender primitives and Suzanne (KuBasic's counterpart)."""
        if not names:
            return [k for k in BLENDER_OBJECTS if BLENDER_OBJECTS[k].size == KUBASIC_SIZE]
        out: list[str] = []
        for name in names:
            if name == "all":
                out += list(self.objects)
            elif name in ("blender", "pybullet", "kubasic", "gso"):
                group = self.object_group(name)
                if not group:
                    raise ValueError(f"--objects {name}: no such objects here ({_hint(name)})")
                out += group
            elif name in self.objects:
                out.append(name)
            else:
                raise ValueError(f"--objects {name!r}: unknown object; available: {sorted(self.objects)} "
                                 f"or a group (blender, pybullet, kubasic, gso, all){'' if 'duck' in self.objects else ' -- ' + _hint('pybullet')}")
        return list(dict.fromkeys(out))

    def select_envs(self, names: list[str] | None) -> list[str]:
        """``--envs``: ids, 'basic', 'hdri' (every HDRI) or 'all' (the default)."""
        names = names or ["all"]
        out: list[str] = []
        for name in names:
            if name == "all":
                out += list(self.envs)
            elif name == "hdri":
                out += [k for k, e in self.envs.items() if e.cat == "hdri"]
            elif name in self.envs:
                out.append(name)
            else:
                raise ValueError(f"--envs {name!r}: unknown environment; available: {sorted(self.envs)}, hdri, all")
        return list(dict.fromkeys(out))


def _hint(group: str) -> str:
    if group == "pybullet":
        return "run `spatial-tasks assets pybullet` once to fetch them"
    return "pass --assets DIR with Kubric's asset folders"


def catalog(assets_dir: Path | None = None, *, with_hdris: bool = True) -> Catalog:
    """Objects, FS pairs and environments: built-in, pybullet's (if fetched), and ``assets_dir``'s."""
    objects: dict[str, ObjectAsset] = {**BLENDER_OBJECTS, **pybullet_objects()}
    envs: dict[str, EnvAsset] = {"basic": EnvAsset("basic", "basic")}
    if with_hdris:
        from spatial_tasks.generators.common import blender

        envs.update({name: EnvAsset(name, "hdri", str(path)) for name, path in blender.bundled_hdris().items()})
    if assets_dir is not None:
        kubric = KubricAssets.load(Path(assets_dir))
        objects.update(kubric.objects)  # the paper's own 'cube', 'sphere', ... win where named alike
        envs.update(kubric.envs)
    pairs = [p for p in (*BUILTIN_FS_PAIRS, *PAPER_FS_PAIRS) if p[0] in objects and p[1] in objects]
    return Catalog(objects, envs, pairs)
