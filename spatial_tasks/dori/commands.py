"""DORI's commands: spatial-tasks dori-seeds (the 14 tasks once per option-order seed, each seed a group: the
paper's error bars over seeds 42, 1998 and 107983), spatial-tasks generate dori, spatial-tasks rescore dori.

CLI level: listed by its ``Benchmark.commands``, registered by ``spatial_tasks.cli``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from spatial_tasks.benchmark import Command
from spatial_tasks.cli_helpers import (
    DeviceOption,
    OverwriteOption,
    RayOption,
    SamplesOption,
    ShardOption,
    WorkersOption,
    doc_preview,
    figures_line,
    print_json,
)
from spatial_tasks.dori.schema import TASK_NAMES


def write_seed_tasks(out: Path, seeds: str | Sequence[int], data: str | None = None, overwrite: bool = False,
                     only: str | Sequence[str] | None = None) -> list[Path]:
    """For each seed S: the 14 DORI tasks (or ``only`` those: "compound_rotation" for both
    granularities, "compound_rotation_granular" for one) as ``dori_<task>_<granularity>_sS`` with that
    option-order seed and a group ``dori_sS`` (acc: the mean of the task accuracies), all in ``out``.
    ``lmms-eval --include_path OUT --tasks dori_s42,dori_s1998,dori_s107983`` then runs the paper's
    three seeds, and ``spatial-tasks rescore dori`` reports mean +- std/sqrt(3). A local ``data``
    must hold every chosen task's questions (written with the shared ``custom-task`` machinery)."""
    from spatial_tasks.catalog import local_folder, write_custom_task, write_yaml

    if isinstance(seeds, str):  # the command line's "42,1998,107983"
        try:
            seeds = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise ValueError(f"--seeds {seeds!r}: comma-separated integers, e.g. 42,1998,107983") from None
    if isinstance(only, str):
        only = [o.strip() for o in only.split(",") if o.strip()]
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {seeds}: give distinct integers >= 0")
    chosen = list(TASK_NAMES)
    if only:
        unknown = [o for o in only if not any(t == o or t.rsplit("_", 1)[0] == o for t in TASK_NAMES)]
        if unknown:
            raise ValueError(f"--only {unknown[0]!r}: not a DORI task (one of {', '.join(TASK_NAMES)}, or a task "
                             "name without its granularity)")
        chosen = [t for t in TASK_NAMES if t in only or t.rsplit("_", 1)[0] in only]
    local = local_folder(data) if data is not None else None
    if local is not None:
        from spatial_tasks.dori.load import check_folder

        check_folder(local, [tuple(t.rsplit("_", 1)) for t in chosen])
    written = []
    for seed in seeds:
        names = []
        for base in chosen:
            task = f"dori_{base}_s{seed}"
            written.append(write_custom_task(f"dori_{base}", data, out, name=task, prompt={"seed": str(seed)},
                                             overwrite=overwrite))
            names.append(task)
        group = {"group": f"dori_s{seed}", "task": names,
                 "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": False}],
                 "metadata": {"version": 0.1, "seed": seed}}
        written.append(write_yaml(Path(out), f"dori_s{seed}", group, overwrite))
    return written


def dori_seeds_command(
    out: Annotated[Path, typer.Option(help="Folder to write the task YAMLs into (pass it to --include_path).")],
    seeds: Annotated[str, typer.Option(help="Comma-separated option-order seeds (the paper's: 42,1998,107983).")] = "42,1998,107983",
    data: Annotated[str | None, typer.Option(help="Hub dataset id or local folder (default: the official release).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace existing YAMLs that custom-task did not write.")] = False,
    only: Annotated[str | None, typer.Option(help="Comma-separated DORI tasks to write (e.g. compound_rotation or "
                                                  "compound_rotation_granular; default: all 14).")] = None,
) -> None:
    """Write the 14 DORI tasks once per seed, with a group dori_s<seed> each (the paper's error bars)."""
    paths = write_seed_tasks(out, seeds, data, overwrite, only=only)
    groups = ",".join(p.stem for p in paths if re.fullmatch(r"dori_s\d+", p.stem))  # one group per seed
    typer.echo(f"{len(paths)} YAMLs in {out}. Run: lmms-eval --include_path {out} --tasks {groups} ... --log_samples, "
               f"then: spatial-tasks rescore dori OUTPUT_PATH")


def generate_dori(
    out: Annotated[Path, typer.Option(help="Dataset folder to write (an interrupted run resumes there).")],
    task: Annotated[str, typer.Option(help="single_axis_rotation, compound_rotation, inter_object_direction, "
                                           "viewer_scene_direction, canonical_orientation, or all (the four rendered).")] = "all",
    count: Annotated[int, typer.Option(help="Items per rendered task (each gives a coarse and a granular question).")] = 200,
    images: Annotated[Path | None, typer.Option(help="canonical_orientation: the folder of images to transform.")] = None,
    source: Annotated[str, typer.Option(help="canonical_orientation: the source dataset name of --images.")] = "transformed images",
    patterns: Annotated[int | None, typer.Option(help="canonical_orientation: drawn pictures with no canonical "
                                                      "orientation to add, answered 'Cannot be determined' (default: "
                                                      "one per 8 images, at least 2).")] = None,
    resolution: Annotated[int, typer.Option(help="Image side in pixels.")] = 256,
    samples: SamplesOption = 16,
    seed: Annotated[int, typer.Option(help="Run seed; per-item seeds derive from it and the item id.")] = 0,
    shard: ShardOption = "1/1",
    workers: WorkersOption = 1,
    ray: RayOption = None,
    device: DeviceOption = "cpu",
    overwrite: OverwriteOption = False,
) -> None:
    """Make DORI questions: Blender renders with recorded angles, or transforms of a folder of images."""
    from spatial_tasks.generators.common.blender import check_device
    from spatial_tasks.generators.dori.generate import generate, summary

    path = generate(task, out, count=count, resolution=resolution, samples=samples, seed=seed, shard=shard,
                    workers=workers, images=images, source=source, patterns=patterns, overwrite=overwrite,
                    ray_address=ray, device=check_device(device, here=ray is None))
    typer.echo(f"{path}: " + ", ".join(f"{t} {n} questions" for t, n in summary(path).items()))


def rescore_dori(
    samples: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folder(s); runs of one model with "
                                                        "other seeds are summarised as mean +- std/sqrt(k).")],
    ddof: Annotated[int, typer.Option(help="Seed std: 0 = numpy's default (the paper's formula), 1 = sample std.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """DORI metrics per run (tasks x granularity, averages, soft accuracy, breakdowns) and over seeds."""
    from spatial_tasks.common.formatting import number
    from spatial_tasks.dori.rescore import rescore
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.tidy import benchmark_records

    runs = read_runs(*samples)
    result = rescore(runs, ddof)
    result["records"] = benchmark_records(runs, "dori")
    if as_json:
        print_json(result)
        return
    for label, figures in result["runs"].items():
        typer.echo(f"{label}: {figures_line({k: v for k, v in figures.items() if k != 'breakdowns'})}")
    for model, figures in result["seeds"].items():
        typer.echo(f"{model} over seeds {figures['seeds']}:")
        for key, value in figures.items():
            if key != "seeds":
                typer.echo(f"  {key}: {number(value['mean'])} +- {number(value['error'])}")


def preview_docs(folder: Path) -> list[tuple[dict, object]]:
    """A DORI folder's questions with the visual a model gets (its boxes drawn; ``preview``)."""
    from spatial_tasks.dori import load, tasks

    return [(d, tasks.doc_to_visual) for d in load.load_source(str(folder), check_images=False)]


COMMANDS = [
    Command("", "dori-seeds", dori_seeds_command),
    Command("generate", "dori", generate_dori),
    Command("rescore", "dori", rescore_dori),
    Command("preview", "dori", doc_preview("dori", "DORI", preview_docs)),
]
