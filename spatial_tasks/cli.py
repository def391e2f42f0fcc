"""spatial-tasks: spatial-reasoning benchmarks for lmms-eval. Generate, publish, rescore, report.

Heavy imports stay inside the commands so --help is instant.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import click
import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False,
                  help=__doc__.split("\n")[0])
generate_app = typer.Typer(no_args_is_help=True, help="Render a synthetic dataset (Blender).")
rescore_app = typer.Typer(no_args_is_help=True, help="Recompute metrics from saved model outputs.")
app.add_typer(generate_app, name="generate")
app.add_typer(rescore_app, name="rescore")


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


@app.command("custom-task")
def custom_task_command(
    base_task: Annotated[str, typer.Argument(help="One of our tasks, e.g. spatialtunnel_phase.")],
    data: Annotated[str, typer.Option(help="Hub dataset id or local dataset directory.")],
    out: Annotated[Path, typer.Option(help="Folder to write the YAML into (pass it to --include_path).")],
    name: Annotated[str | None, typer.Option(help="New task name (default: <base_task>_custom).")] = None,
    config: Annotated[str | None, typer.Option(help="Dataset config (default: the base task's).")] = None,
    split: Annotated[str | None, typer.Option(help="Split to evaluate (default: the one the data declares).")] = None,
) -> None:
    """Write a tiny YAML that runs one of our tasks on other data (Hub repo or local dir)."""
    from spatial_tasks.catalog import write_custom_task

    path = write_custom_task(base_task, data, out, name=name, config=config, split=split)
    typer.echo(str(path))


@generate_app.command("spatialtunnel")
def generate_spatialtunnel(
    out: Annotated[Path, typer.Option(help="Dataset directory to write (resumes if it exists).")],
    variant: Annotated[str, typer.Option(help="phase, size or all.")] = "all",
    grid: Annotated[int, typer.Option(help="Angular positions per object.")] = 16,
    per_cell: Annotated[int | None, typer.Option(help="Images per grid cell (phase) or per s1 value (size).")] = None,
    resolution: Annotated[int, typer.Option(help="Image side in pixels.")] = 512,
    samples: Annotated[int, typer.Option(help="Cycles samples per pixel.")] = 16,
    seed: Annotated[int, typer.Option(help="Run seed; per-image seeds derive from it and the image id.")] = 0,
    shard: Annotated[str, typer.Option(help="K/N: render only shard K of N.")] = "1/1",
    workers: Annotated[int, typer.Option(help="Parallel Blender processes.")] = 1,
) -> None:
    """Render the SpatialTunnel dataset (needs the [render] extra: bpy)."""
    from spatial_tasks.generators.spatialtunnel.generate import generate

    variants = ["phase", "size"] if variant == "all" else [variant]
    for v in variants:
        path = generate(v, out, grid=grid, per_cell=per_cell, resolution=resolution, samples=samples,
                        seed=seed, shard=shard, workers=workers)
    typer.echo(str(path))


@app.command("publish")
def publish_command(
    path: Annotated[Path, typer.Argument(help="Dataset directory written by `generate`.")],
    repo: Annotated[str, typer.Option(help="Hub dataset repo, ORG/NAME.")],
    private: Annotated[bool, typer.Option(help="Create the repo private.")] = False,
) -> None:
    """Upload a generated dataset directory to the Hugging Face Hub."""
    from spatial_tasks.generators.common.publish import publish

    typer.echo(publish(path, repo, private=private))


@rescore_app.command("spatialtunnel")
def rescore_spatialtunnel(
    samples: Annotated[Path, typer.Argument(help="lmms-eval --log_samples JSONL file or output folder.")],
    protocol: Annotated[str, typer.Option(help="auto, exact or logit.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """SpatialTunnel metrics (v, v_cons, v_ctr, delta, grid, size sweep) from saved samples."""
    from spatial_tasks.spatialtunnel.rescore import rescore

    result = rescore(samples, protocol)
    if as_json:
        _print_json(result)
        return
    for subset, figures in result.items():
        scalars = {k: v for k, v in figures.items() if isinstance(v, (int, float))}
        typer.echo(f"[{subset}] " + "  ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                              for k, v in scalars.items()))


@rescore_app.command("o3d")
def rescore_o3d(
    file: Annotated[Path, typer.Argument(help="Released outputs (jsonl[.gz]) or lmms-eval samples.")],
    format: Annotated[str, typer.Option(help="o3d-released or lmms-samples.")] = "o3d-released",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """O3-D metrics (Table 12 columns, near-far bias, SDGM) from saved outputs."""
    from spatial_tasks.o3d import rescore

    if format == "o3d-released":
        result = rescore.rescore_released(file)
    elif format == "lmms-samples":
        result = rescore.rescore_samples(file)
    else:
        raise typer.BadParameter(f"unknown format {format!r}: choose o3d-released or lmms-samples")
    if as_json:
        _print_json(result)
        return
    for model, figures in result["models"].items():
        scalars = {k: v for k, v in figures.items() if isinstance(v, float)}
        typer.echo(f"{model}: " + "  ".join(f"{k}={v:.4f}" for k, v in scalars.items()))


@app.command("prompts")
def prompts_command(benchmark: Annotated[str, typer.Argument(help="o3d")]) -> None:
    """Print a benchmark's prompt space as JSON lines ({"prompt", "tags"})."""
    if benchmark != "o3d":
        raise typer.BadParameter("only o3d has a prompt space")
    from spatial_tasks.o3d.prompts import prompt_space

    for prompt in prompt_space():
        typer.echo(json.dumps({"prompt": prompt.text, "tags": prompt.tags.as_dict()}, ensure_ascii=False))


@app.command("report")
def report_command(
    results_dir: Annotated[Path, typer.Argument(help="lmms-eval --output_path folder.")],
    out: Annotated[Path, typer.Option(help="Folder for the PNGs.")],
) -> None:
    """Turn lmms-eval results (and logged samples) into plots."""
    from spatial_tasks.report import write_report

    for path in write_report(results_dir, out):
        typer.echo(str(path))


@app.command("tiny-model")
def tiny_model_command(out: Annotated[Path, typer.Option(help="Folder to write the model into.")]) -> None:
    """Build a tiny randomly initialised Qwen2.5-VL (offline; exercises the real model code)."""
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    typer.echo(str(build_tiny_qwen2_5_vl(out)))


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option(help="Folder for lmms-eval outputs and the report.")] = Path("demo-out"),
) -> None:
    """The main job offline: baselines and a tiny Qwen2.5-VL on the bundled samples, then the report."""
    from spatial_tasks.demo import run_demo

    run_demo(out)


def main() -> None:
    """Console entry: bad input (a missing file, a malformed row, a bad flag) prints one clear
    line naming it and exits 2; anything else is a bug and keeps its traceback."""
    try:
        app(standalone_mode=False)
    except (ValueError, KeyError, FileNotFoundError) as err:
        typer.echo(f"error: {err}", err=True)
        raise SystemExit(2) from None
    except click.exceptions.ClickException as err:
        err.show()
        raise SystemExit(err.exit_code) from None
    except click.exceptions.Abort:
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
