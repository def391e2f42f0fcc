"""O3-D through the real lmms-eval console script: baselines on the bundled sample, a task pointed
at a local dataset folder with `spatial-tasks custom-task`, rescoring of the saved samples, the
report, an OpenAI-compatible chat model (multi-image ICL), and the tiny Qwen2.5-VL.

Six lmms-eval invocations in all. Each baseline run happens once per test session, even under
pytest-xdist: the first worker that needs it runs it under a file lock in a folder shared by the
workers, the others read what it wrote.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock
from lmms import (
    SPATIAL_TASKS,
    TINY_QWEN_ARGS,
    Run,
    assert_all_finite,
    declared_metrics,
    run_cli,
    run_lmms_eval,
)
from openai_server import image_urls, prompt_text
from spatial_tasks.generators.o3d import standins as fixture

pytestmark = pytest.mark.cli
SAMPLE_TASKS = "o3d_sample,o3d_sample_real,o3d_sample_icl_cot"
SUBTASKS = ("o3d_sample_clarity_low", "o3d_sample_clarity_med", "o3d_sample_clarity_high", "o3d_sample_markers",
            "o3d_sample_real", "o3d_sample_icl_cot")
DECLARED = {task: declared_metrics(task) for task in SUBTASKS}
DECLARED["o3d_sample"] = DECLARED["o3d_sample_markers"] + DECLARED["o3d_sample_clarity_med"]  # the group: pooled
GROUP = ("o3d_sample_clarity_low", "o3d_sample_clarity_med", "o3d_sample_clarity_high", "o3d_sample_markers")
# Figures the sample cannot define whatever the answers: Eq. 3 across one level is undefined, and
# one clarity level per subtask means the clarity tag never varies there; the sample's clarity-3.5
# questions never ask one (order, formality, ...) group both as mcq and yes-no, or in two vocabularies.
UNDEFINED_ON_THE_SAMPLE = {
    "o3d_sample_clarity_med": ("msdgm_clarity_level",),
    "o3d_sample_clarity_high": ("msdgm_clarity_level", "msdgm_query", "msdgm_vocabulary"),
    "o3d_sample_markers": ("msdgm_clarity_level",),
}
# ...and what a model none of whose answers parse leaves undefined: every figure that compares accuracies.
UNREADABLE = ("bias_nf", "sdgm_vision", "sdgm_language", "consistency", "msdgm_query", "msdgm_order",
              "msdgm_formality", "msdgm_vocabulary", "msdgm_clarity_level")


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the folder every xdist worker's basetemp lives in
    root = base / "o3d_cli"
    root.mkdir(exist_ok=True)
    return root


def _read(out: Path, log: Path) -> Run:
    results = sorted(out.rglob("*_results.json"))
    samples = {p.stem.split("_samples_", 1)[1]: [json.loads(line) for line in p.read_text().splitlines() if line]
               for p in sorted(out.rglob("*_samples_*.jsonl"))}
    return Run(out, int((log.parent / "rc").read_text()), log.read_text(),
               json.loads(results[-1].read_text()) if results else None, samples)


def _once(root: Path, name: str, run) -> Run:
    """``run(out_dir) -> Run`` exactly once per session (across xdist workers)."""
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (folder / "done").exists():
            folder.mkdir(exist_ok=True)
            result = run(folder / "out")
            (folder / "log.txt").write_text(result.output)
            (folder / "rc").write_text(str(result.returncode))
            (folder / "done").touch()
    return _read(folder / "out", folder / "log.txt")


@pytest.fixture(scope="session")
def custom_data(shared_root) -> Path:
    """A local dataset folder in the official layout (fixture: 8 kb-1cue images, unlike the sample's 32)."""
    data = shared_root / "my_o3d"
    with FileLock(str(shared_root / "my_o3d.lock")):
        if not (data / "README.md").exists():
            fixture.build_fixture(data, seed=1)
    return data


@pytest.fixture(scope="session")
def oracle(shared_root, custom_data) -> Run:
    """depth_oracle on every sample task, plus o3d_markers pointed at ``custom_data`` by custom-task."""
    def run(out: Path) -> Run:
        made = run_cli([SPATIAL_TASKS, "custom-task", "o3d_markers", "--data", str(custom_data),
                        "--out", str(out.parent / "my_tasks"), "--name", "o3d_markers_mine"],
                       capture_output=True, text=True, check=True)
        assert Path(made.stdout.strip()).name == "o3d_markers_mine.yaml"
        return run_lmms_eval(out, "spatial_baseline", "rule=depth_oracle", f"{SAMPLE_TASKS},o3d_markers_mine",
                             "--include_path", str(out.parent / "my_tasks"))
    return _once(shared_root, "depth_oracle", run)


@pytest.fixture(scope="session")
def always(baseline_run) -> dict[str, Run]:
    return {rule: baseline_run(rule, "o3d_sample,o3d_sample_real") for rule in ("always_near", "always_far")}


@pytest.fixture(scope="session")
def depth_model(shared_root) -> Run:
    from .test_depth import _tiny_depth_anything

    def run(out: Path) -> Run:
        model = _tiny_depth_anything(out.parent / "tiny_depth_anything")
        return run_lmms_eval(out, "spatial_baseline", f"rule=depth_model,pretrained={model}",
                             "o3d_sample,o3d_sample_real")
    return _once(shared_root, "depth_model", run)


def _metrics(run: Run, name: str) -> dict:
    """A task's or a group's {metric: value} (groups appear under "results" too)."""
    return run.metrics(name)


def test_depth_oracle_is_perfect_on_every_sample_task(oracle):
    for task in ("o3d_sample", *GROUP, "o3d_sample_real", "o3d_sample_icl_cot"):
        m = _metrics(oracle, task)
        assert_all_finite(m, DECLARED[task], UNDEFINED_ON_THE_SAMPLE.get(task, ()))
        assert m["acc"] == pytest.approx(1.0) and m["bias_nf"] == pytest.approx(0.0), task
        assert m["unparseable"] == 0.0
        if "acc_HP" in DECLARED[task]:
            assert all(m[f"acc_{c}"] == pytest.approx(1.0) for c in ("HP", "OC", "RS", "TG", "SA", "LS", "FO", "FS"))
    n = oracle.results["n-samples"]
    assert n["o3d_sample_markers"]["effective"] == 45 and n["o3d_sample_icl_cot"]["effective"] == 36
    for task, samples in oracle.samples.items():
        assert len(samples) == n[task]["effective"] > 0


def test_custom_task_reads_questions_and_images_from_a_local_folder(oracle, custom_data):
    m = _metrics(oracle, "o3d_markers_mine")
    assert m["acc"] == pytest.approx(1.0) and set(DECLARED["o3d_sample_markers"]) <= set(m)
    # the fixture folder's marked synthetic questions (20 images x 2), not the bundled sample's 45
    assert len(oracle.samples["o3d_markers_mine"]) == 40
    assert f"O3-D image subsets from '{custom_data}'" in oracle.output


@pytest.mark.parametrize("rule, bias", [("always_near", -1.0), ("always_far", 1.0)])
def test_always_near_and_always_far_are_the_extreme_biases(always, rule, bias):
    run = always[rule]
    for task in ("o3d_sample", *GROUP, "o3d_sample_real"):
        m = _metrics(run, task)
        assert m["bias_nf"] == pytest.approx(bias), task
        assert (m["acc_near"], m["acc_far"]) == ((1.0, 0.0) if bias < 0 else (0.0, 1.0))


def test_depth_model_with_a_tiny_random_checkpoint_gives_finite_metrics(depth_model):
    for task in ("o3d_sample", *GROUP, "o3d_sample_real"):
        assert_all_finite(_metrics(depth_model, task), DECLARED[task], UNDEFINED_ON_THE_SAMPLE.get(task, ()))
    assert 0.0 < _metrics(depth_model, "o3d_sample")["acc"] < 1.0  # a real (random) depth model, not an oracle


def _same(a, b) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return a == pytest.approx(b, abs=1e-12)


def test_rescore_of_saved_samples_equals_the_live_run(depth_model):
    out = run_cli([SPATIAL_TASKS, "rescore", "o3d", str(depth_model.out), "--format", "lmms-samples",
                   "--json"], capture_output=True, text=True, check=True)
    (label, model), = json.loads(out.stdout)["models"].items()
    assert label.startswith("spatial_baseline(rule=depth_model")
    for task in (*GROUP, "o3d_sample_real"):
        live = _metrics(depth_model, task)
        assert set(model["tasks"][task]) - {"n", "n_scored"} == set(live), task
        for key, value in live.items():
            assert _same(model["tasks"][task][key], value), (task, key)
    live_group = _metrics(depth_model, "o3d_sample")
    for key, value in live_group.items():
        assert _same(model["groups"]["o3d_sample"][key], value), key
    # the group's figures are pooled-record metrics, not lmms-eval's size-weighted mean of subtasks:
    # the SDGM over the question groups of all clarities differs from the mean of per-clarity SDGMs
    # (the sample asks each clarity once per image, so accuracies alone pool like a weighted mean)
    reporting = [t for t in GROUP if isinstance(_metrics(depth_model, t).get("sdgm_language"), float)]
    sizes = {t: depth_model.results["n-samples"][t]["effective"] for t in reporting}
    mean = sum(_metrics(depth_model, t)["sdgm_language"] * sizes[t] for t in reporting) / sum(sizes.values())
    assert len(reporting) >= 2 and live_group["sdgm_language"] != pytest.approx(mean)
    assert model["HP"] is not None and model["n"]["all_rows"] == sum(len(s) for s in depth_model.samples.values())


def test_report_draws_the_o3d_figures(oracle, always, depth_model, tmp_path):
    runs = tmp_path / "runs"  # the four rules' runs side by side
    for name, run in (("depth_oracle", oracle), *always.items(), ("depth_model", depth_model)):
        shutil.copytree(run.out, runs / name)
    out = run_cli([SPATIAL_TASKS, "report", str(runs), "--out", str(tmp_path / "rep")],
                  capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in (tmp_path / "rep").glob("o3d_*.png"))
    assert "o3d_near_far_bias.png" in names and "o3d_sdgm.png" in names
    for rule in ("always_near", "always_far", "depth_oracle", "depth_model"):
        assert any(n.startswith(f"o3d_cue_heatmap_spatial_baseline_rule_{rule}") for n in names), names
    assert all((tmp_path / "rep" / n).stat().st_size > 15_000 for n in names)
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "## O3-D" in report and "| spatial_baseline(rule=always_near) | o3d_sample_markers | 44 |" in report


def test_openai_chat_model_gets_the_icl_images_interleaved(openai_server, tmp_path):
    args = (f"model_version=stub,base_url={openai_server.base_url},api_key=test,num_concurrent=1,"
            "max_retries=1,retry_backoff_s=0,httpx_trust_env=False")
    run = run_lmms_eval(tmp_path / "api", "openai", args, "o3d_sample_icl_cot,o3d_sample_real")
    assert_all_finite(_metrics(run, "o3d_sample_icl_cot"), ("acc", "acc_near", "acc_far", "bias_nf", "unparseable"))
    assert_all_finite(_metrics(run, "o3d_sample_real"), ("acc", "unparseable"))
    icl = [b for b in openai_server.requests if "(Let's think step by step" in prompt_text(b)]
    plain = [b for b in openai_server.requests if "(Let's think step by step" not in prompt_text(b)]
    assert len(icl) == 36 and len(plain) == 12
    for body in icl:
        (message,) = body["messages"]
        kinds = [part["type"] for part in message["content"]]
        assert kinds == ["image_url", "text", "image_url", "text", "image_url", "text"]
        assert len(set(image_urls(body))) == 3  # two demonstrations and the query, all different
        assert "<image" not in prompt_text(body)  # placeholders are replaced by the images
    assert [part["type"] for part in plain[0]["messages"][0]["content"]] == ["image_url", "text"]


@pytest.mark.slow
def test_tiny_qwen2_5_vl_on_the_whole_sample(tiny_qwen_dir, tmp_path):
    """The chat qwen2_5_vl (lmms-eval's default for --model qwen2_5_vl) on every sample task; the
    ICL task sends three images per prompt. max_new_tokens=8 keeps the random model's run short."""
    run = run_lmms_eval(tmp_path / "qwen", "qwen2_5_vl", f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS}",
                        SAMPLE_TASKS, "--gen_kwargs", "max_new_tokens=8", env={"OMP_NUM_THREADS": "1"})
    for task, declared in DECLARED.items():
        m = _metrics(run, task)
        unreadable = m["unparseable"] == 1.0  # the random model's answers: nothing the parser can read
        assert_all_finite(m, declared, UNDEFINED_ON_THE_SAMPLE.get(task, ()) + (UNREADABLE if unreadable else ()))
    for task in DECLARED:
        if task != "o3d_sample":
            assert len(run.samples[task]) == run.results["n-samples"][task]["effective"] > 0
            assert all(isinstance(s["acc"], dict) and s["acc"]["benchmark"] == "o3d" for s in run.samples[task])
