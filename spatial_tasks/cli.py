"""spatial-tasks: spatial-reasoning benchmarks for lmms-eval. Generate, publish, rescore, report.

Every error a user can cause (a missing file, a malformed row, a bad flag, a refused upload)
prints ONE line on stderr and exits 2; ``--debug`` (anywhere on the command line, or
SPATIAL_TASKS_DEBUG=1) shows the traceback too. Heavy imports stay inside the commands so
--help is instant.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from spatial_tasks.cli_helpers import PLAIN, RAY_LOCAL, print_json

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, help=__doc__.split("\n")[0], **PLAIN)
# The command groups; a benchmark adds its own commands to them (``Benchmark.commands``), and a
# group no shared command has is made for it (``_group``).
GROUPS = {"generate": "Render a synthetic dataset (Blender).",
          "rescore": "Recompute metrics from saved model outputs.",
          "preview": "Look at a generated dataset: contact sheets.",
          "assets": "Fetch offline assets for the generators.",
          "known-model": "Train a tiny Qwen2.5-VL with a known behaviour on our own renders, and measure it through "
                         "lmms-eval (docs/known-models.md)."}
_groups: dict[str, typer.Typer] = {}


def _group(name: str, help_text: str | None = None) -> typer.Typer:
    if name not in _groups:
        _groups[name] = typer.Typer(help=help_text or GROUPS.get(name) or f"{name} tools.", **PLAIN)
        app.add_typer(_groups[name], name=name)
    return _groups[name]


for _name in GROUPS:
    _group(_name)

# Typer has no option with an optional value: main() turns a bare --ray into "--ray local".
OPTIONAL_VALUES = {"--ray": RAY_LOCAL}

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


def _one_of(flag: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{flag} must be one of {', '.join(choices)}, not {value!r}")
    return value


@app.command("tasks-dir")
def tasks_dir_command() -> None:
    """Print the folder holding our task YAMLs (for lmms-eval --include_path)."""
    from spatial_tasks.paths import tasks_dir

    typer.echo(str(tasks_dir()))


@app.command("list")
def list_command(
    models: Annotated[bool, typer.Option("--models", help="List our --model ids instead: per family each serves, "
                                                          "the scoring paths it offers, fastest first.")] = False,
) -> None:
    """List our lmms-eval tasks and groups: what a task scores (its protocol) and its default data."""
    if models:
        from spatial_tasks.models.model_table import table_lines

        for line in table_lines():
            typer.echo(line)
        return
    from spatial_tasks.catalog import scores_payloads, task_catalog

    rows = [("name", "kind", "scores", "default data")]
    for entry in task_catalog():
        scores = "-" if entry.kind == "group" else ("first-token logits" if scores_payloads(entry.name)
                                                     else "generated text")
        rows.append((entry.name, entry.kind, scores, entry.source))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]  # columns as wide as their longest entry
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3])


@app.command("inspect")
def inspect_command(
    source: Annotated[str, typer.Argument(help="A local dataset folder, or a Hub id in the local Hugging Face cache.")],
    benchmark: Annotated[str | None, typer.Option(help="Try only this benchmark's reader (see `spatial-tasks "
                                                       "benchmarks`).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """What a dataset holds (files, configs, splits, columns, a sample row) and which reader takes it."""
    from spatial_tasks.inspect_source import inspect_source, render

    report = inspect_source(source, benchmark)
    if as_json:
        print_json(report.as_dict())
    else:
        typer.echo(render(report))


@app.command("custom-task")
def custom_task_command(
    base_task: Annotated[str, typer.Argument(help="One of our tasks (see `list`).")],
    out: Annotated[Path, typer.Option(help="Folder to write the YAML into (pass it to --include_path).")],
    data: Annotated[str | None, typer.Option(help="Hub dataset id or local dataset folder "
                                                  "(default: the base task's data).")] = None,
    name: Annotated[str | None, typer.Option(help="New task name, letters/digits/_ (default: <base_task>_custom).")] = None,
    config: Annotated[str | None, typer.Option(help="Dataset config (default: the base task's); for SpatialTunnel also a "
                                                    "table file of the official layout, e.g. phase_variation.parquet.")] = None,
    split: Annotated[str | None, typer.Option(help="Split to evaluate (default: the one the data declares).")] = None,
    prompt: Annotated[list[str] | None, typer.Option(
        help="KEY=VALUE prompt parameter, repeatable (e.g. answer_instruction='Answer:').")] = None,
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












@app.command("publish")
def publish_command(
    path: Annotated[Path, typer.Argument(help="Dataset folder written by `generate` (card + parquet shards).")],
    repo: Annotated[str, typer.Option(help="Hub dataset repo, ORG/NAME.")],
    private: Annotated[bool, typer.Option(help="Create the repo private.")] = False,
    dry_run: Annotated[bool, typer.Option(help="List what would be uploaded; upload nothing.")] = False,
    replace: Annotated[bool, typer.Option(help="Replace repo files this folder did not upload (refused otherwise).")]
    = False,
) -> None:
    """Upload the card and the data files its configs declare (nothing else) to the Hub."""
    from spatial_tasks.generators.common.publish import publish, upload_plan

    files = upload_plan(path, repo)
    for file in files:
        typer.echo(f"  {file}")
    if dry_run:
        typer.echo(f"dry run: {len(files)} file(s) would go to {repo}; nothing uploaded")
        return
    typer.echo(publish(path, repo, private=private, files=files, replace=replace))












@app.command("prompts")
def prompts_command(benchmark: Annotated[str, typer.Argument(help="A benchmark (see `spatial-tasks benchmarks`).")]
                    ) -> None:
    """Print a benchmark's prompts as JSON lines: its whole prompt space where it has one
    ({"prompt", "tags"}: O3-D); else what a model is shown for each kind of question of the bundled
    samples ({"task", "id", "prompt"}, rendered by lmms-eval's task objects, offline)."""
    from loguru import logger

    from spatial_tasks.task_prompts import prompt_benchmarks, prompts

    _one_of("BENCHMARK", benchmark, prompt_benchmarks())
    logger.remove()  # lmms-eval indexes its ~2,000 tasks chattily at INFO: keep its warnings only
    logger.add(sys.stderr, level="WARNING")
    for line in prompts(benchmark):
        typer.echo(json.dumps(line, ensure_ascii=False))


@app.command("benchmarks")
def benchmarks_command() -> None:
    """List the registered benchmarks: name, title, default data, what each one provides."""
    from spatial_tasks.registry import benchmarks

    rows = [("name", "title", "default data", "provides")]
    for spec in benchmarks().values():
        parts = [p for p, present in (("scorecard", spec.scorecard), ("paper tables", spec.paper),
                                      ("report", spec.report), ("evaluate", spec.score), ("inspect", spec.inspect_split),
                                      ("baselines", spec.baselines)) if present]
        rows.append((spec.name, spec.title, spec.source.default if spec.source else "-", ", ".join(parts)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3])


@app.command("report")
def report_command(
    out: Annotated[Path, typer.Option(help="Folder for report.md and the PNGs (a report there is replaced).")],
    results_dir: Annotated[Path | None, typer.Argument(help="lmms-eval --output_path folder (run with --log_samples); "
                                                         "may be left out with --probe.")] = None,
    probe: Annotated[list[Path] | None, typer.Option(help="A `spatial-tasks probe` folder to add (repeatable).")] = None,
) -> None:
    """Turn lmms-eval results (and logged samples) and probe folders into report.md, plots, and
    index.html: one page with the scorecard, every figure and every sample with its image."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    if results_dir is None and not probe:
        raise ValueError("give an lmms-eval results folder, or --probe FOLDER, or both")
    runs = read_runs(results_dir) if results_dir is not None else None
    for path in write_report(runs, out, probes=probe or ()):
        typer.echo(str(path))


@app.command("results")
def results_command(
    paths: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folders (run with --log_samples).")],
    out: Annotated[Path, typer.Option(help="Folder for results.jsonl and results.csv (records already there are "
                                           "kept: a new record of the same run, task and metric replaces its old one).")],
    iterations: Annotated[int, typer.Option(min=100, help="Bootstrap resamples per interval.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Every headline figure of every task and group of every run, with its 95 % interval and
    provenance, as tidy records (schema: spatial_tasks/results/record.schema.json)."""
    from spatial_tasks.paths import output_folder
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.schema import merge_with_files, write_csv, write_jsonl
    from spatial_tasks.results.tidy import collect

    runs = read_runs(*paths)
    records = collect(runs, iterations=iterations, seed=seed)
    if not records:
        from spatial_tasks.common.samples import only_empty
        from spatial_tasks.registry import benchmarks

        empty = runs.empty()
        if empty:
            raise only_empty(empty, "no records to write")

        titles = ", ".join(b.title for b in benchmarks().values() if b.scorecard is not None)
        raise FileNotFoundError(f"{', '.join(map(str, paths))}: no logged samples of {titles} "
                                "(run lmms-eval with --log_samples)")
    folder = output_folder(out)
    jsonl, table = folder / "results.jsonl", folder / "results.csv"
    merged = merge_with_files(records, [table, jsonl])  # the .jsonl last: its exact floats win
    kept = f", and {len(merged) - len(records)} kept from before" if len(merged) > len(records) else ""
    for path in (write_jsonl(merged, jsonl), write_csv(merged, table)):
        typer.echo(f"{path}  ({len(records)} records{kept})")


@app.command("verify")
def verify_command(
    paths: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folders (with --log_samples), or "
                                                     "O3-D's released outputs file (.jsonl/.jsonl.gz).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the cells and the verdict as JSON.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 also when nothing matched a paper model.")] = False,
) -> None:
    """Our figures against the papers' published cells (tasks/<benchmark>/paper_results.yaml), graded
    as EASI grades: |Δ| ≤ 2.5 points strong, ≤ 5 acceptable, > 5 a discrepancy; released outputs
    must reproduce their cells exactly. Exit 1 when a checked cell fails; a run whose model has no
    paper row is said so and exits 0 (with --strict, 1 when nothing was verified)."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.results.verify import verify, verify_lines

    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
    result = verify(read_runs(*(p for p in paths if not p.is_file())), released=[p for p in paths if p.is_file()])
    typer.echo(json.dumps(result, indent=2) if as_json else "\n".join(verify_lines(result)))
    failed = result["checked"] and not result["passed"]  # a figure differs from a paper row
    if failed or (strict and not result["checked"]):
        raise typer.Exit(1)




@app.command("tiny-model")
def tiny_model_command(
    out: Annotated[Path, typer.Option(help="Folder to write the model into.")],
    family: Annotated[str, typer.Option(help="transformers model_type of a supported family "
                                             "(spatial_tasks/models/families.py; an unknown one is told the list).")]
    = "qwen2_5_vl",
    seed: Annotated[int, typer.Option(help="Weights seed (same seed, same weights).")] = 0,
    shape: Annotated[str, typer.Option(help="tiny (the tests'), served (head sizes a real serving engine takes: "
                                            "vLLM's CPU attention), or mid (CPU throughput figures).")] = "tiny",
) -> None:
    """Build a tiny randomly initialised VLM of one family (offline; exercises the real model code).
    It replaces only a tiny model it built there (the folder's ledger, ``common.owned``)."""
    from spatial_tasks.common.owned import Ledger
    from spatial_tasks.models.families import build_tiny_model
    from spatial_tasks.paths import output_folder

    if out.exists() and not out.is_dir():
        output_folder(out)  # its one line: "--out X: is a file, expected a folder"
    ledger = Ledger(out, "spatial-tasks tiny-model")  # nothing is made before the family is known
    ledger.check([out], what_to_do="Choose a new or empty --out, or move them away.")
    built = build_tiny_model(family, out, seed=seed, shape=shape)
    ledger.record(out)
    typer.echo(str(built))


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option(help="Folder for lmms-eval outputs and the report (replaced on a rerun; a folder "
                                             "of yours holding runs/, logs/ or report/ is refused).")]
    = Path("demo-out"),
) -> None:
    """The main job offline: baselines and a tiny Qwen2.5-VL on the bundled samples, then the report."""
    from spatial_tasks.demo import run_demo

    run_demo(out)


def _add_benchmark_commands() -> None:
    """Every registered benchmark's own commands (``Benchmark.commands``: a list of ``Command``)."""
    from spatial_tasks.registry import benchmarks

    for spec in benchmarks().values():
        commands = spec.commands.load() if spec.commands is not None else []
        for command in commands:
            target = app if not command.group else _group(command.group, command.group_help)
            target.command(command.name)(command.function)
        if spec.summary is not None and not any((c.group, c.name) == ("rescore", spec.name) for c in commands):
            _group("rescore").command(spec.name)(_rescore_command(spec.name, spec.title))


def _rescore_command(name: str, title: str):
    """``spatial-tasks rescore NAME`` for a benchmark without a command of its own: its ``summary``
    of each task of each run, and with --json the tidy result records too."""
    def command(
        samples: Annotated[list[Path], typer.Argument(help="lmms-eval --output_path folder(s) or *_samples_*.jsonl.")],
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        from spatial_tasks.cli_helpers import figures_line
        from spatial_tasks.common.samples import SamplesError
        from spatial_tasks.registry import get, read_runs
        from spatial_tasks.results.tidy import benchmark_records

        spec, runs = get(name), read_runs(*samples)
        per_run: dict[str, dict] = {}
        for entry in runs.only(name).tasks:
            per_run.setdefault(entry.run.label, {})[entry.task] = spec.summary(entry.records())
        if not per_run:
            raise SamplesError(f"{', '.join(map(str, samples))}: no {title} samples found (expected lmms-eval "
                               "--log_samples output)")
        if as_json:
            print_json({"runs": per_run, "records": benchmark_records(runs, name)})
            return
        for label, tasks in per_run.items():
            typer.echo(label)
            for task, figures in tasks.items():
                typer.echo(f"  {task}: {figures_line(figures)}")

    command.__doc__ = f"{title} figures per run and task, re-scored from saved samples."
    return command


_add_benchmark_commands()


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
        from spatial_tasks.registry import EXTRA_ENV, extra_module_in

        extra = extra_module_in(err)
        if extra is not None:  # an added benchmark's own code: its module is named, not ours blamed
            text = (f"the benchmark of {extra[0]} (${EXTRA_ENV}) failed in {extra[1]} ({type(err).__name__}: "
                    f"{text}); fix it, or leave it out of ${EXTRA_ENV}: the other benchmarks are unaffected")
        else:
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
    # datasets logs a bad parquet file before raising; our one line names it (and a link's target).
    logging.getLogger("datasets.packaged_modules.parquet.parquet").setLevel(logging.CRITICAL)
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
