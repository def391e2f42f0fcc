"""O3-D's commands: spatial-tasks generate o3d, spatial-tasks preview o3d, spatial-tasks assets pybullet, spatial-tasks rescore o3d.

CLI level: listed by its ``Benchmark.commands``, registered by ``spatial_tasks.cli``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from spatial_tasks.benchmark import Command, Later
from spatial_tasks.cli_helpers import (
    DeviceOption,
    OverwriteOption,
    RayOption,
    SamplesOption,
    ShardOption,
    WorkersOption,
    figures_line,
    known_model,
    print_json,
)


BUILD = Later("spatial_tasks.o3d.known_models.build:build")  # the known models' build, imported when run


def generate_o3d(
    out: Annotated[Path, typer.Option(help="Dataset folder to write (an interrupted run resumes there).")],
    cues: Annotated[str, typer.Option(help="Comma-separated: none, HP, OC, RS, LS, TG, FO, SA, FS, a pair (HP+SA), "
                                           "all-single, all-pairs.")] = "none,all-single",
    no_lp: Annotated[bool, typer.Option("--no-lp", help="HP cue sets on a textureless ground (config kb-no-lp).")] = False,
    strengths: Annotated[str, typer.Option(help="Cue strengths (1 regular, 2 doubled).")] = "1,2",
    positions: Annotated[str, typer.Option(help="Target positions: near, far, none (none: 0-cue only).")] = "near,far,none",
    objects: Annotated[str | None, typer.Option(help="Object ids or groups: blender, pybullet, kubasic, gso, all "
                                                     "(default: the Blender primitives and Suzanne).")] = None,
    envs: Annotated[str | None, typer.Option(help="Environments: basic, HDRI names, hdri (all HDRIs), all.")] = None,
    assets: Annotated[Path | None, typer.Option(help="A local folder in Kubric's asset layout (KuBasic, GSO, "
                                                     "HDRI_haven manifests).")] = None,
    resolution: Annotated[int, typer.Option(help="Image side in pixels (the release: 1024).")] = 1024,
    samples: SamplesOption = 16,
    seed: Annotated[int, typer.Option(help="Run seed; odd_scaler and image seeds derive from it.")] = 0,
    shard: ShardOption = "1/1",
    workers: WorkersOption = 1,
    ray: RayOption = None,
    device: DeviceOption = "cpu",
    overwrite: OverwriteOption = False,
) -> None:
    """Render O3-D odd-one-out depth scenes with pictorial cues, in the official Hub layout (needs bpy)."""
    from spatial_tasks.generators.o3d.generate import generate

    typer.echo(str(generate(out, cues=cues, objects=objects, envs=envs, positions=positions, strengths=strengths,
                            no_lp=no_lp, seed=seed, resolution=resolution, samples=samples, shard=shard,
                            workers=workers, assets_dir=assets, device=device, ray_address=ray,
                            overwrite=overwrite)))


def preview_o3d(
    folder: Annotated[Path, typer.Argument(help="A generated O3-D folder (official layout).")],
    out: Annotated[Path, typer.Option(help="PNG to write.")],
    size: Annotated[int, typer.Option(help="Panel side in pixels.")] = 256,
    position: Annotated[str | None, typer.Option(help="near or far (default: the scene with most cues).")] = None,
    strength: Annotated[float, typer.Option(help="Cue strength to show.")] = 1.0,
) -> None:
    """A contact sheet of one scene: the base view and each cue (the paper's Fig. 2c)."""
    from spatial_tasks.generators.common.preview import unfinished_note
    from spatial_tasks.generators.o3d.preview import contact_sheet

    note = unfinished_note(folder)
    if note:
        typer.echo(f"warning: {note}", err=True)
    typer.echo(str(contact_sheet(folder, out, size=size, position=position, strength=strength)))


def assets_pybullet(
    archive: Annotated[Path | None, typer.Option(help="An already downloaded pybullet-3.2.7.tar.gz.")] = None,
) -> None:
    """Put pybullet_data's meshes into the asset cache (from the package registry; nothing is built)."""
    from spatial_tasks.generators.o3d import assets as o3d_assets

    folder = o3d_assets.fetch_pybullet(archive=archive)
    typer.echo(f"{folder}: " + ", ".join(sorted(o3d_assets.pybullet_objects())))


def rescore_o3d(
    file: Annotated[Path, typer.Argument(help="The authors' released outputs (jsonl[.gz]) or lmms-eval output.")],
    format: Annotated[str, typer.Option(help="auto, o3d-released or lmms-samples.")] = "auto",
    ddof: Annotated[int, typer.Option(help="SDGM standard deviation: 0 = the paper's, 1 = the authors' pandas.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """O3-D metrics (Table 12 columns, near-far bias, SDGM) from saved outputs."""
    from spatial_tasks.o3d import rescore as o3d
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.tidy import benchmark_records, outside_records

    if o3d.chosen_format(file, format, ddof) == o3d.RELEASED_FORMAT:  # no run: each released model's headlines
        records = o3d.records_from_released(file)
        result = o3d.rescore_released(file, ddof, records)
        result["records"] = outside_records("o3d", records, f"released:{Path(file).name}", str(file))
    else:
        runs = read_runs(file)
        result = o3d.rescore_samples(runs, ddof)
        result["records"] = benchmark_records(runs, "o3d")
    if as_json:
        print_json(result)
        return
    for model, figures in result["models"].items():
        typer.echo(f"{model}: {figures_line(figures)}")


COMMANDS = [
    Command("generate", "o3d", generate_o3d),
    Command("preview", "o3d", preview_o3d),
    Command("assets", "pybullet", assets_pybullet),
    Command("rescore", "o3d", rescore_o3d),
    Command("known-model", "height", known_model(
        "height", "O3-D: a model that judges depth by height in the plane alone, trained on HP renders and measured "
        "per cue on a held-out set (about 18 minutes on 2 cores)", BUILD)),
]
