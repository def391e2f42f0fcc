"""VAGUE's commands: spatial-tasks generate vague, spatial-tasks rescore vague, spatial-tasks vague tag-persons.

CLI level: listed by its ``Benchmark.commands``, registered by ``spatial_tasks.cli``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from spatial_tasks.benchmark import Command
from spatial_tasks.cli_helpers import (
    doc_preview,
    figures_line,
    print_json,
)


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


def rescore_vague(
    samples: Annotated[Path, typer.Argument(help="lmms-eval --output_path folder or one *_samples_*.jsonl.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """VAGUE metrics per run and task: accuracy, FS/SU/NE counts, valid answers, BLEU-1, BERTScore F1."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.tidy import benchmark_records
    from spatial_tasks.vague.rescore import rescore

    runs = read_runs(samples)
    result = rescore(runs)
    result["records"] = benchmark_records(runs, "vague")
    if as_json:
        print_json(result)
        return
    backbone_keys = ("bertscore_model", "bertscore_revision", "bertscore_layers")
    for label, tasks in result["runs"].items():
        typer.echo(label)
        for task, figures in tasks.items():
            # the same figure columns whatever the backbone; the backbone is named apart
            shown = figures_line({k: v for k, v in figures.items() if k not in backbone_keys})
            backbone = (f"  [BERTScore {figures['bertscore_model']} @ {figures.get('bertscore_revision') or '?'}, "
                        f"layer {figures.get('bertscore_layers')}]" if figures.get("bertscore_model") else "")
            typer.echo(f"  {task}: {shown}{backbone}")


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


def preview_docs(folder: Path) -> list[tuple[dict, object]]:
    """A VAGUE folder's questions with the visual a model gets (person tags drawn; ``preview``)."""
    from spatial_tasks.vague import load, tasks

    return [(d, tasks.doc_to_visual) for d in load.docs_from_folder(folder, check_images=False)]


COMMANDS = [
    Command("generate", "vague", generate_vague),
    Command("rescore", "vague", rescore_vague),
    Command("vague", "tag-persons", vague_tag_persons, group_help="VAGUE tools: person tags."),
    Command("preview", "vague", doc_preview("vague", "VAGUE (GitHub layout)", preview_docs)),
]
