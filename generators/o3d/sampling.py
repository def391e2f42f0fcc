"""Which O3-D images a run makes: every (cue set, environment, object, position, strength), as the
authors' generator loops, each with its own deterministic seed and odd_scaler.

``--cues`` takes comma-separated items: ``none`` (0-cue), a cue code (HP OC RS LS TG FO SA FS), a
pair (``HP+SA`` or ``HPSA``), ``all-single`` (the 8 cues) and ``all-pairs`` (their 28 pairs).
Cue sets with FS use the familiar-size pairs (assets.py) instead of ``--objects``. Positions:
``none`` only for 0-cue images (no odd object); cued images are near or far. Strengths
(``--strengths``, default 1,2) apply to cued images; FS alone has no strength sweep (the authors
render it once, recorded as strength 1). ``--no-lp`` renders the cue sets that contain HP in the
basic environment on a textureless ground (config kb-no-lp).

The odd_scaler, U(1.1, 2.0), is drawn per (seed, environment, object, position): the same scene
gets every cue, so a base view and its cued views differ only by the cue (the contact sheet of
``spatial-tasks preview o3d`` relies on it). Image names are derived from the same keys
(``<12 digits>_<position>_<cues>.png``, the release's pattern), so an image keeps its name
whatever else a run selects.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import asdict, dataclass

from spatial_tasks.generators.common.jobs import derive_seed
from spatial_tasks.generators.o3d import layout

SINGLE_CUES = layout.SINGLE_CUES
ALL_PAIRS = tuple(itertools.combinations(SINGLE_CUES, 2))  # 28, in the paper's cue order
CONFIG_BY_CUES = {0: "kb-0cue", 1: "kb-1cue", 2: "kb-2cue"}
NO_LP_CONFIG = "kb-no-lp"
CONFIGS = ("kb-0cue", "kb-1cue", "kb-2cue", "kb-no-lp")
POSITIONS = ("near", "far", "none")
NAMESPACE = "o3d"


@dataclass(frozen=True)
class ImageSpec:
    config: str
    image_name: str
    image_id: str
    cues: tuple[str, ...]
    cue_strength: float | None
    position: str
    odd_scaler: float
    env_cat: str
    env_id: str
    obj_cat: str
    obj_id: str
    target_asset: str
    distractor_asset: str
    no_lp: bool
    seed: int

    def to_job(self) -> dict:
        job = asdict(self)
        job["cues"] = list(self.cues)
        return job


def parse_cues(text: str) -> list[tuple[str, ...]]:
    """Cue sets from ``--cues`` (order kept, duplicates dropped); errors name the bad item."""
    out: list[tuple[str, ...]] = []
    for raw in str(text).split(","):
        item = raw.strip()
        if not item:
            continue
        if item == "none":
            sets = [()]
        elif item == "all-single":
            sets = [(c,) for c in SINGLE_CUES]
        elif item == "all-pairs":
            sets = list(ALL_PAIRS)
        else:
            codes = item.upper().replace("+", " ").split()
            if len(codes) == 1 and len(codes[0]) == 4:
                codes = [codes[0][:2], codes[0][2:]]
            bad = [c for c in codes if c not in SINGLE_CUES]
            if bad or not 1 <= len(codes) <= 2 or len(set(codes)) != len(codes):
                hint = " (LP is not a cue to add: use --no-lp)" if "LP" in codes else ""
                raise ValueError(f"--cues {item!r}: use none, one of {list(SINGLE_CUES)}, a pair such as HP+SA, "
                                 f"all-single or all-pairs{hint}")
            sets = [tuple(sorted(codes, key=SINGLE_CUES.index))]
        for cue_set in sets:
            if cue_set not in out:
                out.append(cue_set)
    if not out:
        raise ValueError("--cues is empty")
    return out


def parse_list(text: str | None, flag: str) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise ValueError(f"{flag} is empty")
    return items


def parse_strengths(text: str) -> list[float]:
    values = []
    for item in parse_list(text, "--strengths") or []:
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"--strengths {item!r} is not a number") from None
        if not 0 < value <= layout.MAX_CUE_STRENGTH:
            raise ValueError(f"--strengths {item!r}: must be in (0, {layout.MAX_CUE_STRENGTH:g}]")
        values.append(value)
    return list(dict.fromkeys(values))


def parse_positions(text: str) -> list[str]:
    items = parse_list(text, "--positions") or []
    bad = [p for p in items if p not in POSITIONS]
    if bad:
        raise ValueError(f"--positions {bad[0]!r}: choose from {list(POSITIONS)}")
    return list(dict.fromkeys(items))


def odd_scaler(seed: int, env_id: str, obj_key: str, position: str) -> float:
    rng = random.Random(derive_seed(seed, f"{env_id}|{obj_key}|{position}", NAMESPACE + "-scaler"))
    return rng.uniform(*layout.ODD_SCALER_RANGE)


def image_name(seed: int, config: str, env_id: str, obj_key: str, position: str, cues: tuple[str, ...],
               strength: float | None) -> str:
    key = f"{config}|{env_id}|{obj_key}|{position}|{'+'.join(cues)}|{strength}"
    number = derive_seed(seed, key, NAMESPACE + "-name") % 10**12
    return f"{number:012d}_{position}_{''.join(cues)}.png"


def plan(cue_sets: list[tuple[str, ...]], *, objects: list[str], envs: list[str], fs_pairs: list[tuple[str, str]],
         object_cats: dict[str, str], env_cats: dict[str, str], positions: list[str], strengths: list[float],
         no_lp: bool, seed: int) -> dict[str, list[ImageSpec]]:
    """Every image of the run, by config, in a fixed order."""
    by_config: dict[str, list[ImageSpec]] = {}
    if no_lp:
        cue_sets = [c for c in cue_sets if "HP" in c]
        envs = [e for e in envs if env_cats[e] == "basic"]
        if not cue_sets:
            raise ValueError("--no-lp renders cue sets with HP (linear perspective is only tested with "
                             "height-in-plane): add HP or a pair with HP to --cues")
        if not envs:
            raise ValueError("--no-lp renders in the basic environment: include 'basic' in --envs")
    for cues in cue_sets:
        config = NO_LP_CONFIG if no_lp else CONFIG_BY_CUES[len(cues)]
        fs = "FS" in cues
        if fs and not fs_pairs:
            raise ValueError("FS needs familiar-size pairs; none are available")
        scene_objects = [(f"{large}/{small}", large, small) for large, small in fs_pairs] if fs else \
            [(o, o, o) for o in objects]
        cue_positions = [p for p in positions if p != "none"] if cues else positions
        if not cue_positions:
            raise ValueError(f"cue set {'+'.join(cues)} needs near or far in --positions")
        cue_strengths: list[float | None] = [None] if not cues else [1.0] if cues == ("FS",) else list(strengths)
        for env in envs:
            for obj_key, large, small in scene_objects:
                for position in cue_positions:
                    k = odd_scaler(seed, env, obj_key, position)
                    # FS: the farther object is the large one (it looks as big as the small ones)
                    target, distractor = (large, small) if position != "near" else (small, large)
                    for strength in cue_strengths:
                        name = image_name(seed, config, env, obj_key, position, cues, strength)
                        by_config.setdefault(config, []).append(ImageSpec(
                            config=config, image_name=name, image_id=name.removesuffix(".png"), cues=cues,
                            cue_strength=strength, position=position, odd_scaler=k,
                            env_cat=env_cats[env], env_id=env, obj_cat=object_cats[large], obj_id=obj_key,
                            target_asset=target, distractor_asset=distractor, no_lp=no_lp,
                            seed=derive_seed(seed, name, NAMESPACE + "-render")))
    return by_config
