"""SpatialTunnel's commands: spatial-tasks generate spatialtunnel, spatial-tasks rescore spatialtunnel, spatial-tasks probe.

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
    doc_preview,
    figures_line,
    known_model,
    print_json,
)


BUILD = Later("spatial_tasks.spatialtunnel.known_models.build:build")  # the known models' build, imported when run


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


def rescore_spatialtunnel(
    samples: Annotated[Path, typer.Argument(help="lmms-eval --output_path folder or one *_samples_*.jsonl.")],
    protocol: Annotated[str, typer.Option(help="auto, exact or logit.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """SpatialTunnel metrics (v, v_cons, v_ctr, delta, grid, size sweep) per run and task."""
    from spatial_tasks.common.yesno import label_mass_warning
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.tidy import benchmark_records
    from spatial_tasks.spatialtunnel.rescore import check_protocol, rescore

    check_protocol(protocol)
    runs = read_runs(samples)
    result = rescore(runs, protocol)
    result["records"] = benchmark_records(runs, "spatialtunnel", {"protocol": protocol})
    if as_json:
        print_json(result)
        return
    for label, run in result["runs"].items():
        typer.echo(label)
        for kind in ("tasks", "groups"):
            for task, figures in run[kind].items():
                typer.echo(f"  {task} [{figures.get('protocol', '?')}]: {figures_line(figures)}")
                if kind == "tasks" and (warning := label_mass_warning(figures.get("label_mass_median"))):
                    typer.echo(f"  warning: {task}: {warning}")


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
    empty_options: Annotated[str, typer.Option(help="Far/close rows with empty options: skip (ours) or as-nan (the "
                                                    "authors' code: an empty cell is the object 'nan', as pandas "
                                                    "reads it; to match the paper's Coh_D pair for pair).")] = "skip",
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
    from spatial_tasks.spatialtunnel.probe.commands import probe

    summary = probe(out, model=model, data=data, per_category=per_category, seed=seed, strict=strict,
                    empty_options=empty_options, layer=layer,
                    batch_size=batch_size, device=device, dtype=dtype, family=family, layers=layers,
                    overwrite=overwrite, trust_remote_code=trust_remote_code, echo=typer.echo)
    for line in summary.describe():
        typer.echo(line)


def preview_docs(folder: Path) -> list[tuple[dict, object]]:
    """A generated folder's questions (phase, then size) with the visual a model gets (``preview``)."""
    import datasets

    from spatial_tasks.spatialtunnel import load, tasks
    from spatial_tasks.spatialtunnel.schema import CONFIG_FOR_VARIANT

    out = []
    for variant in ("phase", "size"):
        files = sorted((folder / CONFIG_FOR_VARIANT[variant]).glob("test-*.parquet"))
        if files:
            split = datasets.load_dataset("parquet", data_files={"test": [str(f) for f in files]}, split="test")
            out += [(d, tasks.doc_to_visual) for d in load.to_docs(split, variant=variant, check_images=False)]
    return out


COMMANDS = [
    Command("generate", "spatialtunnel", generate_spatialtunnel),
    Command("rescore", "spatialtunnel", rescore_spatialtunnel),
    Command("", "probe", probe_command),
    Command("preview", "spatialtunnel", doc_preview("spatialtunnel", "SpatialTunnel", preview_docs)),
    Command("known-model", "shortcut", known_model(
        "shortcut", "SpatialTunnel: a model that answers 'the object higher in the image is farther' (the photo "
        "shortcut); the 1,024 renders take about 15 minutes on 2 cores, shared with depth through --renders, then "
        "12-15 minutes", BUILD)),
    Command("known-model", "depth", known_model(
        "depth", "SpatialTunnel: a model that answers from the true depths (distance to the vanishing point); "
        "the renders as for shortcut, then 12-15 minutes", BUILD)),
]
