"""What the CLI's commands share -- the flags every Blender generator takes, JSON output, a line of
figures -- so a benchmark's own commands (``<benchmark>/commands.py``) read like the shared ones."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

# Help text is plain text: rich markup would eat square brackets ("the [render] extra").
PLAIN = {"no_args_is_help": True, "rich_markup_mode": None}

# --ray alone starts a local Ray cluster; --ray ADDRESS joins one. Typer has no option with an
# optional value, so cli.main() turns a bare --ray into "--ray local".
RAY_LOCAL = "local"
RayOption = Annotated[str | None, typer.Option(
    "--ray", metavar="[ADDRESS]",
    help="Render on a Ray cluster: --ray alone starts a local one, --ray HOST:PORT (or auto) joins one.")]
DeviceOption = Annotated[str, typer.Option(help="Cycles device: auto (a GPU if any, else CPU), cpu, cuda, optix, "
                                                "hip, metal, oneapi.")]
SamplesOption = Annotated[int, typer.Option(help="Cycles samples per pixel.")]
ShardOption = Annotated[str, typer.Option(help="K/N: render only shard K of N.")]
WorkersOption = Annotated[int, typer.Option(help="Parallel Blender processes (with --ray: actors).")]
OverwriteOption = Annotated[bool, typer.Option(help="Replace a dataset made with other flags in --out.")]


def json_safe(value):
    """NaN/inf -> None so the output is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def print_json(data) -> None:
    typer.echo(json.dumps(json_safe(data), indent=2))


def figures_line(values: dict) -> str:
    """"name=value  name=value" of the scalar figures (4 significant decimals)."""
    from spatial_tasks.common.formatting import number

    return "  ".join(f"{k}={number(v, 4)}" for k, v in values.items() if isinstance(v, (int, float)) or v is None)


def doc_preview(benchmark: str, what: str, read):
    """``spatial-tasks preview BENCHMARK``: a contact sheet of a folder's first questions, read by the
    benchmark's own ``read(folder) -> [(doc, doc_to_visual)]``."""
    def command(
        folder: Annotated[Path, typer.Argument(help="A dataset folder (generated or downloaded).")],
        out: Annotated[Path, typer.Option(help="PNG to write.")],
        count: Annotated[int, typer.Option(help="Questions to show (1-100).")] = 9,
        size: Annotated[int, typer.Option(help="Panel side in pixels.")] = 200,
    ) -> None:
        from spatial_tasks.generators.common.preview import doc_sheet

        typer.echo(str(doc_sheet(benchmark, folder, out, read=read, count=count, size=size,
                                 warn=lambda line: typer.echo(line, err=True))))

    command.__doc__ = f"A contact sheet of the first questions of a {what} folder, as a model sees their images."
    return command


def known_model(name: str, what: str, build):
    """``spatial-tasks known-model NAME``: train a tiny Qwen2.5-VL to a known behaviour on the benchmark's own
    renders and measure it (``build(name, out, renders=, seed=)``: the benchmark's ``known_models/build.py``).
    It replaces only a model and figures it made in --out (the folder's ledger, ``common.owned``)."""
    def command(
        out: Annotated[Path, typer.Option(help="Folder for the model (DIR/model: weights, processor, card), its "
                                                 "lmms-eval figures (DIR/eval) and, unless --renders, the renders.")],
        renders: Annotated[Path | None, typer.Option(help="Folder of the renders, made or resumed there (share it "
                                                           "between models of one benchmark).")] = None,
        seed: Annotated[int, typer.Option(help="Weights, held-out split and batch order seed.")] = 0,
    ) -> None:
        from spatial_tasks.common.owned import Ledger
        from spatial_tasks.paths import output_folder

        if out.exists() and not out.is_dir():
            output_folder(out)  # its one line: "--out X: is a file, expected a folder"
        ledger = Ledger(out, "spatial-tasks known-model")
        ledger.check([out / "model", out / "eval"], what_to_do="Choose a new or empty --out, or move them away.")
        ledger.remove(out / "model", out / "eval")
        try:
            build(name, out, renders=renders, seed=seed)
        finally:
            ledger.record(out / "model", out / "eval")
        typer.echo(str(out / "model"))

    command.__doc__ = f"{what} (docs/known-models.md; the shipped one is in its benchmark's known_models/checkpoints/)."
    return command
