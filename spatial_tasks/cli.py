"""spatial-tasks: spatial-reasoning benchmarks for lmms-eval. Generate, publish, rescore, report.

Every error a user can cause (a missing file, a malformed row, a bad flag, a refused upload)
prints ONE line on stderr and exits 2; ``--debug`` (anywhere on the command line, or
SPATIAL_TASKS_DEBUG=1) shows the traceback too. Heavy imports stay inside the commands so
--help is instant.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

# Help text is plain text: rich markup would eat square brackets ("the [render] extra").
PLAIN = {"no_args_is_help": True, "rich_markup_mode": None}
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, help=__doc__.split("\n")[0], **PLAIN)
generate_app = typer.Typer(help="Render a synthetic dataset (Blender).", **PLAIN)
rescore_app = typer.Typer(help="Recompute metrics from saved model outputs.", **PLAIN)
app.add_typer(generate_app, name="generate")
app.add_typer(rescore_app, name="rescore")
vague_app = typer.Typer(**PLAIN, help="VAGUE tools: person tags.")
app.add_typer(vague_app, name="vague")
preview_app = typer.Typer(**PLAIN, help="Look at a generated dataset: contact sheets.")
app.add_typer(preview_app, name="preview")
assets_app = typer.Typer(**PLAIN, help="Fetch offline assets for the generators.")
app.add_typer(assets_app, name="assets")

# --ray alone starts a local Ray cluster; --ray ADDRESS joins one. Typer has no option with an
# optional value, so main() turns a bare --ray into "--ray local" (OPTIONAL_VALUES).
RAY_LOCAL = "local"
OPTIONAL_VALUES = {"--ray": RAY_LOCAL}
RayOption = Annotated[str | None, typer.Option(
    "--ray", metavar="[ADDRESS]",
    help="Render on a Ray cluster: --ray alone starts a local one, --ray HOST:PORT (or auto) joins one.")]
DeviceOption = Annotated[str, typer.Option(help="Cycles device: auto (a GPU if any, else CPU), cpu, cuda, optix, "
                                                "hip, metal, oneapi.")]
# Flags every Blender generator shares.
SamplesOption = Annotated[int, typer.Option(help="Cycles samples per pixel.")]
ShardOption = Annotated[str, typer.Option(help="K/N: render only shard K of N.")]
WorkersOption = Annotated[int, typer.Option(help="Parallel Blender processes (with --ray: actors).")]
OverwriteOption = Annotated[bool, typer.Option(help="Replace a dataset made with other flags in --out.")]

DEBUG_ENV = "SPATIAL_TASKS_DEBUG"
MAX_MESSAGE = 1200


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"spatial-tasks {version('spatial-tasks')}")
        raise typer.Exit()


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")] = False,
    show_version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print the version and exit.")] = False,
) -> None:
    """spatial-tasks: spatial-reasoning benchmarks for lmms-eval. Generate, publish, rescore, report."""


def _json_safe(value):
    """NaN/inf -> None so the output is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _print_json(data) -> None:
    typer.echo(json.dumps(_json_safe(data), indent=2))


def _one_of(flag: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{flag} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _figures(values: dict) -> str:
    from spatial_tasks.common.formatting import number

    return "  ".join(f"{k}={number(v, 4)}" for k, v in values.items() if isinstance(v, (int, float)) or v is None)


@app.command("tasks-dir")
def tasks_dir_command() -> None:
    """Print the folder holding our task YAMLs (for lmms-eval --include_path)."""
    from spatial_tasks.paths import tasks_dir

    typer.echo(str(tasks_dir()))


@app.command("list")
def list_command() -> None:
    """List our lmms-eval tasks and groups with their default data source."""
    from spatial_tasks.catalog import task_catalog

    for entry in task_catalog():
        typer.echo(f"{entry.name:<34} {entry.kind:<6} {entry.source}")


@app.command("inspect")
def inspect_command(
    source: Annotated[str, typer.Argument(help="A local dataset folder, or a Hub id in the local Hugging Face cache.")],
    benchmark: Annotated[str | None, typer.Option(help="Try only this benchmark's reader: spatialtunnel, o3d, dori, "
                                                       "vague.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """What a dataset holds (files, configs, splits, columns, a sample row) and which reader takes it."""
    from spatial_tasks.inspect_source import inspect_source, render

    report = inspect_source(source, benchmark)
    if as_json:
        _print_json(report.as_dict())
    else:
        typer.echo(render(report))


@app.command("custom-task")
def custom_task_command(
    base_task: Annotated[str, typer.Argument(help="One of our tasks, e.g. spatialtunnel_phase (see `list`).")],
    out: Annotated[Path, typer.Option(help="Folder to write the YAML into (pass it to --include_path).")],
    data: Annotated[str | None, typer.Option(help="Hub dataset id or local dataset folder "
                                                  "(default: the base task's data).")] = None,
    name: Annotated[str | None, typer.Option(help="New task name, letters/digits/_ (default: <base_task>_custom).")] = None,
    config: Annotated[str | None, typer.Option(help="Dataset config (default: the base task's); for SpatialTunnel also a "
                                                    "table file of the official layout, e.g. phase_variation.parquet.")] = None,
    split: Annotated[str | None, typer.Option(help="Split to evaluate (default: the one the data declares).")] = None,
    prompt: Annotated[list[str] | None, typer.Option(
        help="KEY=VALUE prompt parameter, repeatable (e.g. o3d: answer_instruction='Answer:').")] = None,
    metadata: Annotated[list[str] | None, typer.Option(
        help="KEY=VALUE task setting, repeatable (e.g. re-splits: answer_reader=spatial_tasks; SpatialTunnel: grid=32).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing YAML that custom-task did not write.")] = False,
) -> None:
    """Write a tiny YAML that runs one of our tasks on other data or with other prompt parameters."""
    from spatial_tasks.catalog import parse_prompt_options, write_custom_task

    path = write_custom_task(base_task, data, out, name=name, config=config, split=split,
                             prompt=parse_prompt_options(prompt or []), overwrite=overwrite,
                             metadata=parse_prompt_options(metadata or [], "--metadata"))
    typer.echo(str(path))


@generate_app.command("spatialtunnel")
def generate_spatialtunnel(
    out: Annotated[Path, typer.Option(help="Dataset folder to write (an interrupted run resumes there).")],
    variant: Annotated[str, typer.Option(help="phase, size, all (phase and size) or probing (contrastive-probing "
                                              "pairs for `spatial-tasks probe`).")] = "all",
    grid: Annotated[int, typer.Option(help="Angular positions per object.")] = 16,
    per_cell: Annotated[int | None, typer.Option(help="Images per grid cell (phase), per s1 value (size) or per "
                                                      "answer (probing).")] = None,
    resolution: Annotated[int, typer.Option(help="Image side in pixels.")] = 512,
    samples: SamplesOption = 16,
    seed: Annotated[int, typer.Option(help="Run seed; per-image seeds derive from it and the image id.")] = 0,
    shard: ShardOption = "1/1",
    workers: WorkersOption = 1,
    ray: RayOption = None,
    device: DeviceOption = "cpu",
    overwrite: OverwriteOption = False,
) -> None:
    """Render the SpatialTunnel dataset (needs the [render] extra: bpy)."""
    from spatial_tasks.generators.common.blender import check_device
    from spatial_tasks.generators.spatialtunnel.generate import generate

    path = generate(variant, out, grid=grid, per_cell=per_cell, resolution=resolution, samples=samples,
                    seed=seed, shard=shard, workers=workers, overwrite=overwrite, ray_address=ray,
                    device=check_device(device, here=ray is None))
    typer.echo(str(path))


@app.command("dori-seeds")
def dori_seeds_command(
    out: Annotated[Path, typer.Option(help="Folder to write the task YAMLs into (pass it to --include_path).")],
    seeds: Annotated[str, typer.Option(help="Comma-separated option-order seeds (the paper's: 42,1998,107983).")] = "42,1998,107983",
    data: Annotated[str | None, typer.Option(help="Hub dataset id or local folder (default: the official release).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace existing YAMLs that custom-task did not write.")] = False,
    only: Annotated[str | None, typer.Option(help="Comma-separated DORI tasks to write (e.g. compound_rotation or "
                                                  "compound_rotation_granular; default: all 14).")] = None,
) -> None:
    """Write the 14 DORI tasks once per seed, with a group dori_s<seed> each (the paper's error bars)."""
    from spatial_tasks.catalog import write_seed_tasks

    paths = write_seed_tasks(out, seeds, data, overwrite, only=only)
    groups = ",".join(p.stem for p in paths if re.fullmatch(r"dori_s\d+", p.stem))  # one group per seed
    typer.echo(f"{len(paths)} YAMLs in {out}. Run: lmms-eval --include_path {out} --tasks {groups} ... --log_samples, "
               f"then: spatial-tasks rescore dori OUTPUT_PATH")


@generate_app.command("dori")
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


@generate_app.command("o3d")
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


@preview_app.command("o3d")
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


def _doc_preview(benchmark: str, what: str):
    def command(
        folder: Annotated[Path, typer.Argument(help="A dataset folder (generated or downloaded).")],
        out: Annotated[Path, typer.Option(help="PNG to write.")],
        count: Annotated[int, typer.Option(help="Questions to show (1-100).")] = 9,
        size: Annotated[int, typer.Option(help="Panel side in pixels.")] = 200,
    ) -> None:
        from spatial_tasks.generators.common.preview import doc_sheet

        typer.echo(str(doc_sheet(benchmark, folder, out, count=count, size=size,
                                 warn=lambda line: typer.echo(line, err=True))))

    command.__doc__ = f"A contact sheet of the first questions of a {what} folder, as a model sees their images."
    return command


preview_app.command("spatialtunnel")(_doc_preview("spatialtunnel", "SpatialTunnel"))
preview_app.command("dori")(_doc_preview("dori", "DORI"))
preview_app.command("vague")(_doc_preview("vague", "VAGUE (GitHub layout)"))


@assets_app.command("pybullet")
def assets_pybullet(
    archive: Annotated[Path | None, typer.Option(help="An already downloaded pybullet-3.2.7.tar.gz.")] = None,
) -> None:
    """Put pybullet_data's meshes into the asset cache (from the package registry; nothing is built)."""
    from spatial_tasks.generators.o3d import assets as o3d_assets

    folder = o3d_assets.fetch_pybullet(archive=archive)
    typer.echo(f"{folder}: " + ", ".join(sorted(o3d_assets.pybullet_objects())))


@generate_app.command("vague")
def generate_vague(
    out: Annotated[Path, typer.Option(help="Dataset folder (an interrupted run resumes there; no call is paid twice).")],
    scenes: Annotated[Path | None, typer.Option(help="Pass 1: JSON list of scenes {image_name, image, ram_entity, "
                                                      "person_bbox}.")] = None,
    images: Annotated[Path | None, typer.Option(help="Pass 1: the folder of frames.")] = None,
    subset: Annotated[str, typer.Option(help="vcr or ego4d (names the item file).")] = "vcr",
    labels: Annotated[Path | None, typer.Option(help="Pass 2: the Label Studio JSON export of OUT/labelstudio/tasks.json.")] = None,
    model: Annotated[str, typer.Option(help="Chat model of the endpoint.")] = "gpt-4o",
    base_url: Annotated[str, typer.Option(help="OpenAI-compatible endpoint.")] = "https://api.openai.com/v1",
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key.")] = "OPENAI_API_KEY",
    rpm: Annotated[float, typer.Option(help="At most this many calls per minute.")] = 60,
    max_retries: Annotated[int, typer.Option(help="Retries per call (back-off on 429, 5xx, network errors).")] = 5,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for one reply before it counts as failed "
                                                "(a hung endpoint costs at most (max-retries + 1) x this).")] = 60,
    seed: Annotated[int, typer.Option(help="Pass 2: seed of the option order.")] = 0,
    overwrite: Annotated[bool, typer.Option(help="Replace a folder made from other scenes.")] = False,
) -> None:
    """Build VAGUE items with an LLM: pass 1 asks the model (then label in Label Studio), pass 2 keeps and writes."""
    from spatial_tasks.generators.vague.pipeline import generate

    typer.echo(str(generate(out, scenes=scenes, images=images, subset=subset, labels=labels, model=model,
                            base_url=base_url, api_key_env=api_key_env, rpm=rpm, max_retries=max_retries, timeout=timeout, seed=seed,
                            overwrite=overwrite)))


@app.command("publish")
def publish_command(
    path: Annotated[Path, typer.Argument(help="Dataset folder written by `generate` (card + parquet shards).")],
    repo: Annotated[str, typer.Option(help="Hub dataset repo, ORG/NAME.")],
    private: Annotated[bool, typer.Option(help="Create the repo private.")] = False,
    dry_run: Annotated[bool, typer.Option(help="List what would be uploaded; upload nothing.")] = False,
) -> None:
    """Upload the card and the data files its configs declare (nothing else) to the Hub."""
    from spatial_tasks.generators.common.publish import publish, upload_plan

    files = upload_plan(path, repo)
    for file in files:
        typer.echo(f"  {file}")
    if dry_run:
        typer.echo(f"dry run: {len(files)} file(s) would go to {repo}; nothing uploaded")
        return
    typer.echo(publish(path, repo, private=private, files=files))


@rescore_app.command("spatialtunnel")
def rescore_spatialtunnel(
    samples: Annotated[Path, typer.Argument(help="lmms-eval --output_path folder or one *_samples_*.jsonl.")],
    protocol: Annotated[str, typer.Option(help="auto, exact or logit.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """SpatialTunnel metrics (v, v_cons, v_ctr, delta, grid, size sweep) per run and task."""
    from spatial_tasks.spatialtunnel.rescore import rescore

    result = rescore(samples, protocol)
    if as_json:
        _print_json(result)
        return
    for label, run in result["runs"].items():
        typer.echo(label)
        for kind in ("tasks", "groups"):
            for task, figures in run[kind].items():
                typer.echo(f"  {task}: {_figures(figures)}")


@rescore_app.command("o3d")
def rescore_o3d(
    file: Annotated[Path, typer.Argument(help="The authors' released outputs (jsonl[.gz]) or lmms-eval output.")],
    format: Annotated[str, typer.Option(help="auto, o3d-released or lmms-samples.")] = "auto",
    ddof: Annotated[int, typer.Option(help="SDGM standard deviation: 0 = the paper's, 1 = the authors' pandas.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """O3-D metrics (Table 12 columns, near-far bias, SDGM) from saved outputs."""
    from spatial_tasks.o3d.rescore import rescore

    result = rescore(file, format, ddof)
    if as_json:
        _print_json(result)
        return
    for model, figures in result["models"].items():
        typer.echo(f"{model}: {_figures(figures)}")


@rescore_app.command("dori")
def rescore_dori(
    samples: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folder(s); runs of one model with "
                                                        "other seeds are summarised as mean +- std/sqrt(k).")],
    ddof: Annotated[int, typer.Option(help="Seed std: 0 = numpy's default (the paper's formula), 1 = sample std.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """DORI metrics per run (tasks x granularity, averages, soft accuracy, breakdowns) and over seeds."""
    from spatial_tasks.common.formatting import number
    from spatial_tasks.dori.rescore import rescore

    result = rescore(samples, ddof)
    if as_json:
        _print_json(result)
        return
    for label, figures in result["runs"].items():
        typer.echo(f"{label}: {_figures({k: v for k, v in figures.items() if k != 'breakdowns'})}")
    for model, figures in result["seeds"].items():
        typer.echo(f"{model} over seeds {figures['seeds']}:")
        for key, value in figures.items():
            if key != "seeds":
                typer.echo(f"  {key}: {number(value['mean'])} +- {number(value['error'])}")


@rescore_app.command("vague")
def rescore_vague(
    samples: Annotated[Path, typer.Argument(help="lmms-eval --output_path folder or one *_samples_*.jsonl.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """VAGUE metrics per run and task: accuracy, FS/SU/NE counts, valid answers, BLEU-1, BERTScore F1."""
    from spatial_tasks.vague.rescore import rescore

    result = rescore(samples)
    if as_json:
        _print_json(result)
        return
    for label, tasks in result["runs"].items():
        typer.echo(label)
        for task, figures in tasks.items():
            typer.echo(f"  {task}: {_figures(figures)}")


@vague_app.command("tag-persons")
def vague_tag_persons(
    image: Annotated[Path, typer.Argument(help="The image to tag.")],
    boxes: Annotated[str, typer.Option(help="Person boxes: JSON [[x1, y1, x2, y2], ...], or a JSON file holding "
                                            "such a list or a VAGUE item (its meta.person_bbox).")],
    out: Annotated[Path, typer.Option(help="Where to write the tagged image (e.g. NAME_annot.jpg).")],
    size: Annotated[int | None, typer.Option(help="Font size in pixels (default: 40 per 1,000 px of the longer side).")] = None,
) -> None:
    """Draw numbered person tags (white digits on black) at the centres of the boxes."""
    from spatial_tasks.vague.person_tags import tag_image_file

    typer.echo(f"{out}: {tag_image_file(image, boxes, out, size)} tag(s)")


@app.command("prompts")
def prompts_command(benchmark: Annotated[str, typer.Argument(help="o3d, dori, spatialtunnel or vague")]) -> None:
    """Print a benchmark's prompts as JSON lines: O3-D's whole prompt space ({"prompt", "tags"}); for
    the others, what a model is shown for each kind of question of the bundled samples ({"task",
    "id", "prompt"}, rendered by lmms-eval's task objects, offline)."""
    _one_of("BENCHMARK", benchmark, ("o3d", "dori", "spatialtunnel", "vague"))
    if benchmark == "o3d":
        from spatial_tasks.o3d.prompts import prompt_space

        for prompt in prompt_space():
            typer.echo(json.dumps({"prompt": prompt.text, "tags": prompt.tags.as_dict()}, ensure_ascii=False))
        return
    from loguru import logger

    from spatial_tasks.task_prompts import sample_prompts

    logger.remove()  # lmms-eval indexes its ~2,000 tasks chattily at INFO: keep its warnings only
    logger.add(sys.stderr, level="WARNING")
    for line in sample_prompts(benchmark):
        typer.echo(json.dumps(line, ensure_ascii=False))


@app.command("report")
def report_command(
    out: Annotated[Path, typer.Option(help="Folder for report.md and the PNGs (a report there is replaced).")],
    results_dir: Annotated[Path | None, typer.Argument(help="lmms-eval --output_path folder (run with --log_samples); "
                                                         "may be left out with --probe.")] = None,
    probe: Annotated[list[Path] | None, typer.Option(help="A `spatial-tasks probe` folder to add (repeatable).")] = None,
) -> None:
    """Turn lmms-eval results (and logged samples) and probe folders into report.md and plots."""
    from spatial_tasks.report import write_report

    if results_dir is None and not probe:
        raise ValueError("give an lmms-eval results folder, or --probe FOLDER, or both")
    for path in write_report(results_dir, out, probes=probe or ()):
        typer.echo(str(path))


@app.command("results")
def results_command(
    paths: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folders (run with --log_samples).")],
    out: Annotated[Path, typer.Option(help="Folder for results.jsonl and results.csv.")],
    iterations: Annotated[int, typer.Option(min=100, help="Bootstrap resamples per interval.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Every headline figure of every task and group of every run, with its 95 % interval and
    provenance, as tidy records (schema: spatial_tasks/results/record.schema.json)."""
    from spatial_tasks.paths import output_folder
    from spatial_tasks.results.schema import write_csv, write_jsonl
    from spatial_tasks.results.tidy import collect

    records = collect(list(paths), iterations=iterations, seed=seed)
    if not records:
        raise FileNotFoundError(f"{', '.join(map(str, paths))}: no logged samples of O3-D, DORI, VAGUE or "
                                "SpatialTunnel (run lmms-eval with --log_samples)")
    folder = output_folder(out)
    for path in (write_jsonl(records, folder / "results.jsonl"), write_csv(records, folder / "results.csv")):
        typer.echo(f"{path}  ({len(records)} records)")


@app.command("verify")
def verify_command(
    paths: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folders (with --log_samples), or "
                                                     "O3-D's released outputs file (.jsonl/.jsonl.gz).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the cells and the verdict as JSON.")] = False,
) -> None:
    """Our figures against the papers' published cells (tasks/<benchmark>/paper_results.yaml), graded
    as EASI grades: |Δ| ≤ 2.5 points strong, ≤ 5 acceptable, > 5 a discrepancy; released outputs
    must reproduce their cells exactly. Exit 0 when every checked cell passes, 1 otherwise (or
    when nothing matched a paper model)."""
    from spatial_tasks.results.verify import verify, verify_lines

    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
    result = verify(list(paths))
    typer.echo(json.dumps(result, indent=2) if as_json else "\n".join(verify_lines(result)))
    if not result["passed"]:
        raise typer.Exit(1)


@app.command("probe")
def probe_command(
    out: Annotated[Path, typer.Option(help="Probe folder: deltas, metrics, figures (an interrupted run resumes).")],
    model: Annotated[str | None, typer.Option(help="Hugging Face VLM: local folder or Hub id. Without --model and "
                                                   "--data, recompute metrics and figures from --out.")] = None,
    data: Annotated[str | None, typer.Option(help="Probing pairs: a .parquet/.tsv file or folder (our generator's "
                                                  "probing variant, EmbSpatial-style TSV) or cubec/spatialtunnel.")] = None,
    per_category: Annotated[int, typer.Option(help="At most this many pairs per answer, drawn as the authors draw "
                                                   "them (their default, 200); 0: every pair.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the distance references (the cap always draws with 42, as "
                                           "the authors).")] = 42,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse rows that cannot make a pair (default: skip "
                                                          "and count them, as the authors).")] = False,
    layer: Annotated[int | None, typer.Option(help="Report metrics and the PCA at this layer (default: the "
                                                  "paper's layer, else App. D.4's choice).")] = None,
    batch_size: Annotated[int, typer.Option(help="Pairs per forward pass (each pair is two prompts).")] = 8,
    device: Annotated[str, typer.Option(help="torch device: cpu, cuda, cuda:1 ...")] = "cpu",
    dtype: Annotated[str, typer.Option(help="Model weights dtype: bfloat16, float16, float32.")] = "bfloat16",
    family: Annotated[str | None, typer.Option(help="Model family (default: config.json's model_type).")] = None,
    trust_remote_code: Annotated[bool, typer.Option(help="Let transformers run the model's own code from its "
                                                         "folder or the Hub (Molmo-7B-O, NVILA).")] = False,
    layers: Annotated[str | None, typer.Option(help="Decoder layers to keep, 0-based: 20-28,30 (default: all).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace a probe of another model or data in --out.")] = False,
) -> None:
    """Contrastive probing (SpatialTunnel §5): axis coherence and VD-EI per layer, PCA of the deltas."""
    from spatial_tasks.spatialtunnel.probe.run import probe

    summary = probe(out, model=model, data=data, per_category=per_category, seed=seed, strict=strict, layer=layer,
                    batch_size=batch_size, device=device, dtype=dtype, family=family, layers=layers,
                    overwrite=overwrite, trust_remote_code=trust_remote_code, echo=typer.echo)
    for line in summary.describe():
        typer.echo(line)


@app.command("tiny-model")
def tiny_model_command(
    out: Annotated[Path, typer.Option(help="Folder to write the model into.")],
    family: Annotated[str, typer.Option(help="transformers model_type: qwen2_5_vl, qwen3_vl, qwen3_vl_moe, "
                                             "llava_onevision, internvl, gemma3, molmo2.")] = "qwen2_5_vl",
    seed: Annotated[int, typer.Option(help="Weights seed (same seed, same weights).")] = 0,
) -> None:
    """Build a tiny randomly initialised VLM of one family (offline; exercises the real model code)."""
    from spatial_tasks.models.tiny_models import build_tiny_model

    typer.echo(str(build_tiny_model(family, out, seed=seed)))


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option(help="Folder for lmms-eval outputs and the report (replaced on a rerun).")]
    = Path("demo-out"),
) -> None:
    """The main job offline: baselines and a tiny Qwen2.5-VL on the bundled samples, then the report."""
    from spatial_tasks.demo import run_demo

    run_demo(out)


# ------------------------------------------------------------------------------------------
# Errors: one line, exit 2


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Usage-error classes of the typer that is installed (it may bundle its own click)."""
    from typer.exceptions import TyperException

    classes: list[type[BaseException]] = [TyperException]
    try:
        import click

        classes.append(click.exceptions.ClickException)
    except ImportError:  # pragma: no cover - typer without click
        pass
    return tuple(classes)


def _expected() -> tuple[type[BaseException], ...]:
    """Errors a user can cause (bad input, a setting, a busy folder, a failed run, a missing GPU):
    shown as they are. Anything else is a bug."""
    from spatial_tasks.common.errors import UserError

    return (UserError, ValueError, LookupError, OSError, EOFError, ImportError, UnicodeError)


def describe(err: BaseException) -> str:
    """One line saying what went wrong, for any exception."""
    if isinstance(err, OSError) and err.filename is not None and not _custom_message(err):
        reason = {FileNotFoundError: "no such file or folder", PermissionError: "permission denied",
                  IsADirectoryError: "is a folder, expected a file", NotADirectoryError: "is not a folder",
                  FileExistsError: "already exists"}.get(type(err), err.strerror or str(err))
        text = f"{err.filename}: {reason}"
    elif isinstance(err, KeyError) and len(err.args) == 1 and isinstance(err.args[0], str):
        text = err.args[0]
    elif isinstance(err, RecursionError):  # deeply nested input that a reader did not catch itself
        text = "the input is nested too deeply to read (RecursionError); check the file you passed"
    else:
        text = str(err) or type(err).__name__
    if not isinstance(err, (*_expected(), RecursionError)):
        text = f"internal error ({type(err).__name__}: {text}); rerun with --debug and report the traceback"
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _custom_message(err: OSError) -> bool:
    """An OSError raised by our code with its own message (not errno + filename)."""
    return err.errno is None and bool(err.args) and isinstance(err.args[0], str)


def with_optional_values(args: list[str]) -> list[str]:
    """``--ray`` with no value (last, or followed by another option) gets its default value."""
    out: list[str] = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg in OPTIONAL_VALUES and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append(OPTIONAL_VALUES[arg])
    return out


def main(argv: list[str] | None = None) -> None:
    """Console entry (see the module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get(DEBUG_ENV) == "1"
    # huggingface_hub says so for every folder whose README has no YAML header: noise here.
    logging.getLogger("huggingface_hub.repocard").setLevel(logging.ERROR)
    args = with_optional_values([a for a in args if a != "--debug"])
    usage_errors = _usage_errors()
    try:
        code = app(args=args, prog_name="spatial-tasks", standalone_mode=False)
    except KeyboardInterrupt:
        print("spatial-tasks: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except usage_errors as err:
        if type(err).__name__ == "NoArgsIsHelpError":  # a group called without its command
            typer.echo(err.format_message())
            raise SystemExit(0 if not args else 2) from None
        ctx = getattr(err, "ctx", None)
        hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        message = err.format_message() if hasattr(err, "format_message") else str(err)
        print(f"error: {' '.join(str(message).split())}{hint}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as err:  # noqa: BLE001 - every error becomes one line (--debug: the traceback)
        if debug:
            traceback.print_exc()
        print(f"error: {describe(err)}", file=sys.stderr)
        raise SystemExit(2) from None
    if isinstance(code, int) and code:  # typer.Exit(code) comes back as the return value here
        raise SystemExit(code)


if __name__ == "__main__":
    main()
