"""Reliability round 5 (issue 50), through the real CLI where a user would meet it.

Item 1: nothing a user made is deleted or overwritten -- each command that removes or replaces
files deletes only what its folder's ledger (spatial_tasks/common/owned.py) proves it wrote.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, run_cli

from spatial_tasks.common.owned import LEDGER, Ledger, NotOurs, owned

REFUSED = "which spatial-tasks did not write (or which changed since); nothing was deleted or replaced."


def console(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """The ``spatial-tasks`` console script in a process of its own, as a user runs it."""
    return run_cli([SPATIAL_TASKS, *args], capture_output=True, text=True, timeout=timeout,
                   env={**os.environ, **(env or {})})


def cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """The same command through the console script's entry (``spatial_tasks.cli.main``: typer, the
    one-line errors, the exit status) in this process: no second interpreter to start per call."""
    import contextlib
    import io

    from spatial_tasks.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return subprocess.CompletedProcess([SPATIAL_TASKS, *args], code, out.getvalue(), err.getvalue())


def one_line(run: subprocess.CompletedProcess) -> str:
    """The error of a refused command: exit 2, one line on stderr, no traceback."""
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return lines[0]


# --------------------------------------------------------------------------- the ledger itself


def test_the_ledger_owns_only_unchanged_files_it_lists(tmp_path):
    ledger = Ledger(tmp_path, "test")
    (tmp_path / "ours.txt").write_text("ours")
    (tmp_path / "theirs.txt").write_text("theirs")
    ledger.record(tmp_path / "ours.txt")
    assert owned(tmp_path / "ours.txt") and not owned(tmp_path / "theirs.txt")
    (tmp_path / "ours.txt").write_text("edited by the user")
    assert not owned(tmp_path / "ours.txt")  # changed since: the user's now
    with pytest.raises(NotOurs, match=re.escape("holds ours.txt, theirs.txt, " + REFUSED)):
        ledger.remove(tmp_path / "ours.txt", tmp_path / "theirs.txt")
    assert (tmp_path / "theirs.txt").exists()  # all or nothing
    (tmp_path / LEDGER).write_text("not json\n{}\n[1]\n")  # a broken ledger proves nothing
    assert not owned(tmp_path / "ours.txt")


def test_a_file_listed_by_a_ledger_above_is_owned_and_a_link_is_never(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.txt").write_text("x")
    Ledger(tmp_path, "test").record(tmp_path / "a")
    assert owned(tmp_path / "a" / "b" / "f.txt")
    (tmp_path / "a" / "b" / "link").symlink_to(tmp_path / "a" / "b" / "f.txt")
    assert not owned(tmp_path / "a" / "b" / "link")


# --------------------------------------------------------------------------- per command


def test_the_demo_keeps_a_users_notes_beside_a_tiny_model_of_theirs(tmp_path, tiny_qwen_dir):
    """The issue's case: X/tiny-qwen2_5_vl/config.json (built by the user with tiny-model) was taken as
    proof that X was the demo's, and X/report/my_notes.md was deleted."""
    folder = tmp_path / "X"
    shutil.copytree(tiny_qwen_dir, folder / "tiny-qwen2_5_vl")  # a checkpoint of the user's, config.json and all
    (folder / "report").mkdir()
    (folder / "report" / "my_notes.md").write_text("my notes")
    line = one_line(console("demo", "--out", str(folder)))
    assert line == (f"error: spatial-tasks demo: {folder} holds report/my_notes.md, {REFUSED} Choose another --out "
                    "(a new or empty folder), or move them away.")
    assert (folder / "report" / "my_notes.md").read_text() == "my notes"


def test_the_report_replaces_its_own_files_only(baseline_run, tmp_path):
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    run = baseline_run("vertical", "spatialtunnel_sample")
    assert run.results is not None, run.output[-3000:]
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("my own report")
    line = one_line(cli("report", str(run.out), "--out", str(out)))
    assert line.startswith(f"error: spatial-tasks report: {out} holds report.md, {REFUSED}"), line
    assert (out / "report.md").read_text() == "my own report"
    assert sorted(p.name for p in out.iterdir()) == [LEDGER, "report.md"]  # the staging folder went too
    (out / "report.md").unlink()
    write_report(read_runs(run.out), out)  # (a report replacing its own: tests/hardening/test_runs_and_report.py)
    figure = next(p for p in out.glob("*.png"))
    figure.write_bytes(b"edited by hand")
    with pytest.raises(NotOurs, match=re.escape(f"holds {figure.name}, {REFUSED}")):
        write_report(read_runs(run.out), out)
    assert figure.read_bytes() == b"edited by hand"


def test_generate_refuses_a_users_readme_before_rendering(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "README.md").write_text("my project")
    line = one_line(cli("generate", "spatialtunnel", "--variant", "phase", "--grid", "2", "--per-cell", "1",
                        "--resolution", "32", "--samples", "1", "--out", str(folder)))
    assert line.startswith(f"error: spatial-tasks generate: {folder} holds README.md, {REFUSED}"), line
    assert (folder / "README.md").read_text() == "my project"
    assert sorted(p.name for p in folder.iterdir()) == [".spatial-tasks.lock", "README.md"]


def test_generate_overwrite_keeps_a_users_file_in_the_config(tmp_path):
    from generators.fake_renders import write_fake_renders
    from spatial_tasks.generators.spatialtunnel import generate as gen

    flags = {"grid": 2, "per_cell": 1, "resolution": 32, "samples": 1, "seed": 0, "shard": "1/1"}
    out = tmp_path / "st"
    write_fake_renders(out, "phase", grid=2, per_cell=1, seed=0, shard="1/1", resolution=32)
    gen.generate("phase", out, **flags, steps=("build",))
    shard = next((out / "phase_variation").glob("*.parquet"))
    shutil.copy(shard, tmp_path / "keep.parquet")
    shard.write_bytes(b"the user's own file, under our name")
    with pytest.raises(NotOurs, match=re.escape(f"holds phase_variation/{shard.name}, " + REFUSED)):
        gen.generate("phase", out, **{**flags, "seed": 1}, overwrite=True, steps=("build",))
    assert shard.read_bytes() == b"the user's own file, under our name"
    assert (out / "_work" / "phase_variation" / "dataset.json").exists()  # nothing of the config went


def test_tiny_model_and_custom_task_replace_only_their_own(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text("{}")
    line = one_line(cli("tiny-model", "--out", str(mine)))
    assert line.startswith(f"error: spatial-tasks tiny-model: {mine} holds config.json, {REFUSED}"), line
    assert (mine / "config.json").read_text() == "{}"

    from spatial_tasks.catalog import write_yaml

    tasks = tmp_path / "tasks"
    yaml_file = write_yaml(tasks, "spatialtunnel_phase_custom", {"include": "x.yaml", "dataset_path": "me/st"}, False)
    write_yaml(tasks, "spatialtunnel_phase_custom", {"include": "x.yaml", "dataset_path": "me/st2"}, False)  # its own
    yaml_file.write_text(yaml_file.read_text() + "# my edit\n")
    line = one_line(cli("custom-task", "spatialtunnel_phase", "--data", "hub:me/st3", "--out", str(tasks)))
    assert "was not written by custom-task (or was edited since); pass --overwrite to replace it" in line, line
    assert yaml_file.read_text().endswith("# my edit\n")


def test_the_probe_overwrites_only_its_own_files(tmp_path, tiny_qwen_dir):
    from spatial_tasks.paths import benchmark_tasks_dir

    out = tmp_path / "probe"
    probe = ("probe", "--model", str(tiny_qwen_dir), "--data",
             str(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing"), "--out", str(out),
             "--dtype", "float32")
    done = cli(*probe, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (out / "metrics.json").write_text("{\"mine\": 1}")
    line = one_line(cli(*probe, "--overwrite", timeout=600))
    assert f"holds metrics.json, {REFUSED}" in line, line
    assert (out / "metrics.json").read_text() == "{\"mine\": 1}" and (out / "probe.json").exists()
    (out / "metrics.json").unlink()
    from spatial_tasks.common.owned import Ledger
    from spatial_tasks.spatialtunnel.probe.run import FILES, PROBE

    Ledger(out, PROBE).check([out / name for name in FILES])  # the rest is the probe's own: --overwrite may go


def test_the_asset_cache_replaces_only_a_cache_it_made(tmp_path):
    from spatial_tasks.generators.o3d import assets

    archive = tmp_path / f"pybullet-{assets.PYBULLET_VERSION}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for rel in [rel for _, rel, *_ in assets._PYBULLET] + list(assets._PYBULLET_EXTRA):
            info = tarfile.TarInfo(assets.PYBULLET_PREFIX + rel)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    target = assets.pybullet_dir(tmp_path / "cache")
    target.mkdir(parents=True)
    (target / "my_mesh.obj").write_text("mine")  # a folder of the user's at the cache's path
    env = {"SPATIAL_TASKS_ASSETS": str(tmp_path / "cache")}
    line = one_line(console("assets", "pybullet", "--archive", str(archive), env=env))
    assert f"holds {target.name}/my_mesh.obj, {REFUSED}" in line, line
    assert (target / "my_mesh.obj").read_text() == "mine"
    (target / "my_mesh.obj").unlink()
    target.rmdir()
    assert assets.fetch_pybullet(tmp_path / "cache", archive=archive) == target
    first = next(p for p in target.rglob("*.obj"))
    first.unlink()  # an incomplete cache of ours: replaced whole
    assert assets.fetch_pybullet(tmp_path / "cache", archive=archive) == target
    assert first.exists()


# --------------------------------------------------------------------------- item 2: model arguments

LOGIT_TASK = "spatialtunnel_logit_sample_phase"


def stopped(run) -> str:
    """The one line an lmms-eval run that was stopped before its model loaded ends with (exit 2)."""
    assert run.returncode == 2, (run.returncode, run.output[-3000:])
    assert "Traceback" not in run.output, run.output[-3000:]
    return run.output.strip().splitlines()[-1]


BAD_ARGS = [
    ("packed=maybe", "packed='maybe' in --model_args; it takes true, false or auto"),
    ("dtype=float64x", "dtype='float64x' in --model_args; it takes bfloat16, float16, float32"),
    ("batch_size=abc", "batch_size='abc' in --model_args; it takes a whole number >= 1"),
    ("batch_size=0", "batch_size=0 in --model_args; it takes a whole number >= 1"),
    ("group_images=perhaps", "group_images='perhaps' in --model_args; it takes true or false"),
    ("share_prefix=2", "share_prefix=2 in --model_args; it takes true or false"),
    ("answer_rule=fuzzy", "answer_rule='fuzzy' in --model_args; it takes exact or variants"),
    ("device=cuda", "device=cuda: torch sees no CUDA GPU on this machine"),
    ("device=cuda:3", "device=cuda:3: torch sees no CUDA GPU on this machine"),
]


# The cases through the real lmms-eval CLI; every argument of the table on every twin through
# the entry lmms-eval calls (create_from_arg_string), which is where the CLI's line comes from.
CLI_CASES = [arg for arg, _ in BAD_ARGS if arg.startswith(("packed=", "dtype=", "device=cuda"))]


@pytest.mark.parametrize("arg", CLI_CASES)
def test_a_bad_model_argument_is_one_line_and_exit_2_before_the_model_loads(arg, tmp_path, tiny_qwen_dir):
    import torch
    from lmms import run_lmms_eval

    if arg.startswith("device=cuda") and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    said = dict(BAD_ARGS)[arg]
    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl_yesno", f"pretrained={tiny_qwen_dir},{arg}", LOGIT_TASK,
                        verbose=False)
    line = stopped(run)
    assert line.startswith(f"spatial-tasks: qwen2_5_vl_yesno: {said}"), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("model", ["qwen2_5_vl_yesno", "hf_yesno", "gemma3_yesno", "qwen3_vl_yesno",
                                   "llava_hf_yesno", "openai_yesno", "vllm_yesno"])
def test_every_scorer_checks_every_argument_before_it_loads(model, capsys):
    import torch

    from spatial_tasks.common.errors import RunStopped
    from spatial_tasks.harness import MODELS
    from spatial_tasks.models.arguments import model_id

    module, name = MODELS[model].rsplit(".", 1)
    cls = getattr(__import__(module, fromlist=[name]), name)
    assert model_id(cls) == model
    for arg, said in BAD_ARGS:
        if model == "openai_yesno" and arg.startswith(("device=", "packed=", "dtype=", "group_images=", "share_prefix=")):
            continue  # a server's: no torch device; its own settings are checked by Settings
        if model == "vllm_yesno" and arg.startswith(("device=", "packed=", "group_images=", "share_prefix=")):
            continue  # vLLM's engine picks its device and has one scoring path
        if arg.startswith("device=cuda") and torch.cuda.is_available():
            continue
        with pytest.raises(RunStopped) as stop:
            named = "model_version=m" if model == "openai_yesno" else "pretrained=/nowhere/needed"  # what each takes
            cls.create_from_arg_string(f"{named},{arg}", {"batch_size": 1})
        assert stop.value.code == 2 and str(stop.value).startswith(f"spatial-tasks: {model}: {said}"), str(stop.value)
    capsys.readouterr()


def test_every_scorer_reads_the_answer_words_in_one_place():
    """Issue 53: the answer words and rule are read by ``arguments.AnswerOptions`` for every scorer,
    also when it is built directly (not through lmms-eval's create_from_arg_string)."""
    from spatial_tasks.models.arguments import AnswerOptions, ModelArgsError, ScoringOptions
    from spatial_tasks.models.openai_yesno import Settings
    from spatial_tasks.models.vllm_yesno import VLLMYesNo

    assert issubclass(ScoringOptions, AnswerOptions)
    with pytest.raises(ModelArgsError, match=r"^openai_yesno: answer_rule='fuzzy' in --model_args; it takes exact"):
        Settings.from_args({"model": "m", "base_url": "http://127.0.0.1:9/v1", "answer_rule": "fuzzy"}, "openai_yesno")
    with pytest.raises(ModelArgsError, match=r"^vllm_yesno: answer_rule='fuzzy' in --model_args; it takes exact"):
        VLLMYesNo(model="m", answer_rule="fuzzy")  # refused before it looks for vLLM
    read = Settings.from_args({"model": "m", "base_url": "http://127.0.0.1:9/v1", "yes_text": "Ja", "no_text": "Nein"},
                              "openai_yesno")
    assert read.answer == AnswerOptions("Ja", "Nein", "exact")


def test_openai_yesno_checks_its_arguments_before_asking_the_server(tmp_path):
    from lmms import run_lmms_eval

    for arg, said in BAD_ARGS[6:7]:
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", f"base_url=http://127.0.0.1:9/v1,model=m,{arg}",
                            LOGIT_TASK, verbose=False)
        assert stopped(run) == f"spatial-tasks: openai_yesno: {said}"


def test_device_implies_its_device_map_on_every_scoring_path(lmms_run, tiny_qwen_dir):
    """Issue 50: device=cpu without device_map=cpu ran packed, and died at batch 8 unpacked ("Found
    no NVIDIA driver")."""
    runs = {packed: lmms_run("qwen2_5_vl_yesno", f"pretrained={tiny_qwen_dir},device=cpu,packed={packed},"
                             "min_pixels=3136,max_pixels=50176", LOGIT_TASK, "--batch_size", "8", "--limit", "8")
            for packed in ("true", "false")}
    for packed, run in runs.items():
        assert run.returncode == 0 and run.results is not None, (packed, run.output[-3000:])
    p = {packed: [s["v"]["p_yes"] for s in run.samples[LOGIT_TASK]] for packed, run in runs.items()}
    assert len(p["true"]) == 8 and p["true"] == pytest.approx(p["false"], abs=1e-3)  # bfloat16 on 2 paths


# --------------------------------------------------------------------------- item 3: the preflight


def test_the_preflight_names_a_local_checkpoint_that_cannot_be(tmp_path, tiny_family_dirs):
    from lmms import run_lmms_eval

    empty = tmp_path / "notes"
    empty.mkdir()
    (empty / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    cases = [
        ("qwen2_5_vl", tmp_path / "no" / "such" / "dir", "no such folder (a local checkpoint folder, or a Hub id ORG/NAME)"),
        ("qwen2_5_vl", empty, "not a model checkpoint folder: it lacks weights (*.safetensors or *.bin), processor "
                              "files (preprocessor_config.json or processor_config.json), tokenizer files"),
        ("qwen2_5_vl_yesno", tiny_family_dirs("gemma3"), "is a 'gemma3' checkpoint, but --model qwen2_5_vl_yesno "
                                                         "loads qwen2_5_vl; --model hf_yesno reads the family"),
    ]
    from spatial_tasks.preflight import local_checkpoint_problem

    for model, checkpoint, said in cases:
        line = local_checkpoint_problem(model, str(checkpoint))
        assert line.startswith(f"spatial-tasks: --model {model}: pretrained={checkpoint}: {said}"), line
    model, checkpoint, said = cases[0]  # and the line a user meets, through the CLI
    run = run_lmms_eval(tmp_path / "out", model, f"pretrained={checkpoint}", "spatialtunnel_sample_phase", verbose=False)
    assert stopped(run).startswith(f"spatial-tasks: --model {model}: pretrained={checkpoint}: {said}")
    assert local_checkpoint_problem("qwen2_5_vl", "Qwen/Qwen2.5-VL-3B-Instruct") is None  # a Hub id: not a path


def test_a_near_miss_of_our_task_names_ours_and_other_names_are_lmms_evals(tmp_path):
    from lmms import run_lmms_eval

    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=oracle", "o3d_markerz", verbose=False)
    assert stopped(run) == ("spatial-tasks: --tasks o3d_markerz: no such task; did you mean o3d_markers? "
                            "(`spatial-tasks list` lists ours)")
    from spatial_tasks.preflight import closest_task

    assert closest_task("completely_unrelated_xyz") is None  # left to lmms-eval's own "Tasks not found"
    assert closest_task("spatialtunel_phase") == "spatialtunnel_phase"


@pytest.mark.slow
def test_a_hub_that_accepts_and_never_answers_gets_its_line_within_15_s(tmp_path):
    import socket
    import threading
    import time

    from lmms import run_lmms_eval

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    asked: list[float] = []  # when each connection was accepted
    stop = threading.Event()

    def accept() -> None:  # accepts and never answers
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
                asked.append(time.monotonic())
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        env = {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
               "HF_ENDPOINT": f"http://127.0.0.1:{listener.getsockname()[1]}"}
        run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl", "pretrained=someorg/not-cached-anywhere",
                            "spatialtunnel_sample_phase", env=env, verbose=False, timeout=120)
        ended = time.monotonic()
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
    line = stopped(run)
    assert "checkpoint 'someorg/not-cached-anywhere' is not in the local Hugging Face cache" in line, line
    # 15 s from the Hub's first accepted connection to the run's end: lmms-eval's own start-up before
    # it (a fresh process: this environment is not the fork server's) is not the Hub's wait
    assert asked, "the run never asked the Hub"
    took = ended - asked[0]
    assert "did not answer within 5 s" in line and took < 15, (took, line)


# --------------------------------------------------------------------------- item 4: an added benchmark that fails

BROKEN = '''
import dataclasses

from toybench.benchmark import BENCHMARK as TOY

from spatial_tasks.benchmark import FolderInspection


def inspect(folder):
    raise RuntimeError("boom in inspect")


def inspect_split(ds, name, files=()):
    raise RuntimeError("boom in split")


BENCHMARK = dataclasses.replace(TOY, name="brokenbench", capabilities=(FolderInspection(inspect),),
                                inspect_split=inspect_split)
'''


def test_inspect_names_a_failing_added_benchmark_and_still_gives_the_others_verdicts(tmp_path, monkeypatch):
    from spatial_tasks import registry
    from spatial_tasks.paths import benchmark_tasks_dir

    (tmp_path / "broken_inspect.py").write_text(BROKEN)
    toy = Path(__file__).resolve().parents[1] / "toybench"
    env = {"SPATIAL_TASKS_BENCHMARKS": "broken_inspect",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(toy), os.environ.get("PYTHONPATH", "")])}
    sample = str(benchmark_tasks_dir("dori") / "sample")
    folder_verdict = ("as a folder, brokenbench: cannot judge: benchmark brokenbench (broken_inspect): its inspect "
                      "capability failed: RuntimeError: boom in inspect")
    split_verdict = ("brokenbench: cannot judge: benchmark brokenbench (broken_inspect): its split reader failed: "
                     "RuntimeError: boom in split")
    run = console("inspect", sample, env=env)  # every benchmark, as a user's shell runs it
    assert run.returncode == 0 and "internal error" not in run.stderr, run.stderr[-2000:]
    assert folder_verdict in run.stdout and split_verdict in run.stdout, run.stdout
    assert "  dori: accepted: DORI" in run.stdout and run.stdout.strip().endswith("read by: dori"), run.stdout

    monkeypatch.setenv("SPATIAL_TASKS_BENCHMARKS", "broken_inspect")  # only the broken one (--benchmark)
    monkeypatch.syspath_prepend(str(toy))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._load.cache_clear()
    try:
        only = cli("inspect", sample, "--benchmark", "brokenbench")
    finally:
        monkeypatch.delenv("SPATIAL_TASKS_BENCHMARKS")
        registry._load.cache_clear()
    assert only.returncode == 0 and folder_verdict in only.stdout and split_verdict in only.stdout, only.stdout


def test_an_added_benchmark_failing_elsewhere_is_named_by_its_module(tmp_path, monkeypatch):
    """Any other command: the CLI's one line blames the added benchmark's module, not an internal error."""
    from spatial_tasks import registry
    from spatial_tasks.cli import describe

    (tmp_path / "bad_summary.py").write_text(BROKEN.replace(
        "BENCHMARK = dataclasses.replace(TOY,",
        "def summary(*a, **k):\n    raise ZeroDivisionError('its own bug')\n\n\nBENCHMARK = dataclasses.replace(TOY, "
        "summary=summary,"))
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "toybench"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SPATIAL_TASKS_BENCHMARKS", "bad_summary")
    registry._load.cache_clear()
    try:
        with pytest.raises(ZeroDivisionError) as caught:
            registry.benchmarks()["brokenbench"].summary()
        assert registry.extra_module_in(caught.value) == ("bad_summary", "bad_summary")
        assert describe(caught.value).startswith(
            "the benchmark of bad_summary ($SPATIAL_TASKS_BENCHMARKS) failed in bad_summary (ZeroDivisionError: its "
            "own bug); fix it, or leave it out of $SPATIAL_TASKS_BENCHMARKS")
        assert describe(ZeroDivisionError("ours")).startswith("internal error")  # not raised by its code
    finally:
        monkeypatch.delenv("SPATIAL_TASKS_BENCHMARKS")
        registry._load.cache_clear()


# --------------------------------------------------------------------------- item 5: values read from samples


def test_every_label_mass_that_is_not_a_probability_is_named():
    from spatial_tasks.common.yesno import label_mass_problem

    def payload(mass: str) -> str:
        return '{"spatial_tasks_yesno": 1, "logit_yes": 1.0, "logit_no": 0.0, "text": "Yes", "label_mass": ' + mass + "}"

    assert label_mass_problem(payload("1.5")) == "label_mass 1.5 is outside [0, 1]"
    assert label_mass_problem(payload("-0.2")) == "label_mass -0.2 is outside [0, 1]"
    assert label_mass_problem(payload("NaN")) == "label_mass NaN is not a number"
    assert label_mass_problem(payload('"lots"')) == "label_mass 'lots' is not a number"
    assert label_mass_problem(payload("true")) == "label_mass True is not a number"
    assert label_mass_problem(payload("0.75")) is None and label_mass_problem("Yes, it is.") is None


def test_a_label_mass_that_is_not_a_probability_is_named_once_per_file(baseline_run, tmp_path):
    import json

    mass = "1.5"

    run = baseline_run("oracle", LOGIT_TASK)
    assert run.results is not None, run.output[-3000:]
    copy = tmp_path / "runs" / "run"
    shutil.copytree(run.out, copy)
    samples = next(copy.rglob(f"*_samples_{LOGIT_TASK}.jsonl"))
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    payload = json.loads(first["v"]["response"])
    payload["label_mass"] = "@@"
    text = json.dumps(payload).replace('"@@"', mass)
    first["filtered_resps"] = first["v"]["response"] = text  # as a scorer would have logged it
    samples.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    said = f"spatial-tasks: {samples}: doc {first['doc_id']}: label_mass 1.5 is outside [0, 1]; counted as malformed"
    for command in (("rescore", "spatialtunnel", str(copy)), ("report", str(tmp_path / "runs"), "--out",
                                                                  str(tmp_path / "report")),
                    ("verify", str(tmp_path / "runs"))):
        done = console(*command)  # each command a process: each says it once
        assert done.returncode in (0, 1), (command, done.stderr[-2000:])
        assert done.stderr.count(said) == 1, (command, done.stderr[-2000:])


def test_a_data_file_that_is_a_link_names_its_target_and_what_it_is(tmp_path):
    from spatial_tasks.paths import benchmark_tasks_dir

    data = tmp_path / "st"
    shutil.copytree(benchmark_tasks_dir("spatialtunnel") / "sample", data)
    shard = data / "phase_variation" / "test-00000-of-00001.parquet"
    notes = tmp_path / "notes.txt"
    notes.write_text("not a table")
    cases = [(notes, "which is a text file (not a parquet file)"), (tmp_path / "gone.parquet", "which does not exist"),
             (tmp_path, "which is a folder")]
    from spatial_tasks.common.validate import folder_link_problem

    for target, what in cases:
        shard.unlink()
        shard.symlink_to(target)
        assert folder_link_problem(data) == f"{shard} is a link to {target}, {what}"
    shard.unlink()
    shard.symlink_to(notes)
    line = one_line(cli("custom-task", "spatialtunnel_phase", "--data", str(data), "--out", str(tmp_path / "t")))
    assert line == f"error: --data {data}: {shard} is a link to {notes}, which is a text file (not a parquet file)"


def test_a_preview_replaces_only_a_sheet_it_drew(tmp_path):
    from spatial_tasks.paths import benchmark_tasks_dir

    sample = str(benchmark_tasks_dir("dori") / "sample")
    (tmp_path / "mine.png").write_bytes(b"a picture of mine")
    line = one_line(cli("preview", "dori", sample, "--out", str(tmp_path / "mine.png"), "--count", "1"))
    assert line == (f"error: spatial-tasks preview: {tmp_path} holds mine.png, {REFUSED} Choose another --out, or "
                    "move it away.")
    assert (tmp_path / "mine.png").read_bytes() == b"a picture of mine"
    for _ in range(2):  # the second replaces the first: its own
        assert cli("preview", "dori", sample, "--out", str(tmp_path / "sheet.png"), "--count", "1").returncode == 0
