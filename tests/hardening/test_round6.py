"""Reliability round 6 (issue 64), through the real CLI where a user would meet it.

Item 1: nothing outside ``--out`` is removed or replaced, whatever a ledger line says or a link
points to -- each command that removes or replaces runs once against such a tree (the property
of the layer itself: test_ledger_escapes.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lmms import SPATIAL_TASKS, run_cli
from spatial_tasks.common.owned import LEDGER, Ledger, digest

from .test_ledger_escapes import snapshot
from .test_round5 import cli


def outside_tree(base: Path, out: Path, writer: str) -> dict:
    """Beside ``out``: a victim file and a kept folder, vouched for by their own ledgers (as another
    report's would), and ``out``'s ledger naming the victim by ``..`` and by its absolute path, as
    ``writer``'s. Returns what lies outside ``out`` now."""
    (base / "outside" / "keep").mkdir(parents=True)
    victim = base / "outside" / "victim.txt"
    victim.write_text("the victim")
    (base / "outside" / "keep" / "a.png").write_bytes(b"kept")
    Ledger(base, writer).record(base / "outside")
    Ledger(base / "outside" / "keep", writer).record(base / "outside" / "keep")
    out.mkdir(parents=True, exist_ok=True)
    size, sha = digest(victim)
    with open(out / LEDGER, "a", encoding="utf-8") as ledger:
        for path in ("../outside/victim.txt", str(victim)):
            ledger.write(json.dumps({"path": path, "size": size, "sha256": sha, "by": writer}) + "\n")
    return outside_now(base, out)


def outside_now(base: Path, out: Path) -> dict:
    return {k: v for k, v in snapshot(base, skip=out).items() if not k.endswith(LEDGER)}


def refused(run: subprocess.CompletedProcess) -> str:
    """The refusal of a command: exit 2, no traceback, its last stderr line (lines before it may name
    ignored ledger lines)."""
    assert run.returncode == 2, (run.returncode, run.stderr[-3000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    return run.stderr.strip().splitlines()[-1]


def test_a_report_never_deletes_through_a_linked_thumbs_folder(baseline_run, tmp_path):
    """The issue's case: OUT/thumbs moved to keep/ and linked back; a later report deleted keep/."""
    run = baseline_run("vertical", "spatialtunnel_sample")
    assert run.results is not None, run.output[-3000:]
    out = tmp_path / "OUT"
    assert cli("report", str(run.out), "--out", str(out)).returncode == 0
    before = outside_tree(tmp_path, out, "spatial-tasks report")
    shutil.move(out / "thumbs", tmp_path / "keep")
    (out / "thumbs").symlink_to("../keep")
    kept = {p.name: p.read_bytes() for p in (tmp_path / "keep").iterdir()}
    assert kept
    done = cli("report", str(run.out), "--out", str(out))
    line = refused(done)
    assert line.startswith(f"error: spatial-tasks report: {out / 'thumbs'} is a link (to ../keep); spatial-tasks "
                           "never removes or replaces anything through a link"), line
    assert {p.name: p.read_bytes() for p in (tmp_path / "keep").iterdir()} == kept
    assert outside_now(tmp_path, out) == {**before, **{str(tmp_path / "keep" / k): v for k, v in kept.items()}}
    assert not list(out.glob(".report-*"))  # the staging folder went on the refusal too


def test_a_report_ignores_ledger_lines_outside_its_folder_naming_them(baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    out = tmp_path / "OUT"
    before = outside_tree(tmp_path, out, "spatial-tasks report")
    done = cli("report", str(run.out), "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{out / LEDGER}:1: ../outside/victim.txt lies outside {out}; ignored" in done.stderr, done.stderr
    assert outside_now(tmp_path, out) == before
    assert (out / "report.md").is_file()
    lines = (out / LEDGER).read_text().splitlines()  # compacted: one line per file the report left
    assert len(lines) == len({json.loads(line)["path"] for line in lines}) == len(
        [p for p in out.rglob("*") if p.is_file() and p.name != LEDGER])


def test_a_report_killed_midway_leaves_a_staging_folder_the_next_removes(baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    out = tmp_path / "OUT"
    out.mkdir()
    killed = subprocess.Popen([str(SPATIAL_TASKS), "report", str(run.out), "--out", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):  # until it has made its staging folder
        if list(out.glob(".report-*")):
            break
        if killed.poll() is not None:
            pytest.fail("the report ended before it staged anything")
        import time

        time.sleep(0.05)
    killed.kill()
    killed.wait()
    assert list(out.glob(".report-*")), "no staging folder left to remove"
    done = cli("report", str(run.out), "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert not list(out.glob(".report-*"))


def test_an_unreadable_ledger_is_named_and_the_report_leaves_no_staging(baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    out = tmp_path / "OUT"
    out.mkdir()
    (out / LEDGER).write_bytes(bytes(range(256)) * 3)  # random bytes, no ledger line in them
    done = cli("report", str(run.out), "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{out / LEDGER}:1: not a ledger line (not UTF-8 JSON); ignored" in done.stderr, done.stderr
    assert not list(out.glob(".report-*"))
    for _ in range(2):  # each rerun replaces the report, no staging left, the ledger stays one report long
        assert cli("report", str(run.out), "--out", str(out)).returncode == 0
    assert not list(out.glob(".report-*"))
    files = [p for p in out.rglob("*") if p.is_file() and p.name != LEDGER]
    assert len((out / LEDGER).read_text().splitlines()) == len(files)


def probe_args(tiny_qwen_dir: Path) -> list[str]:
    from spatial_tasks.paths import benchmark_tasks_dir

    return ["probe", "--model", str(tiny_qwen_dir), "--data",
            str(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing"), "--dtype", "float32"]


# command -> (its arguments before --out, the link made in OUT, what it points to, how the refusal starts)
LINKED = {
    "demo": (["demo"], "report", "outside/keep", "error: spatial-tasks demo: {out} holds report, which spatial-tasks "
                                                 "did not write"),
    "generate": (["generate", "spatialtunnel", "--variant", "phase", "--grid", "2", "--per-cell", "1", "--resolution",
                  "32", "--samples", "1"], "_work", "outside/keep", "error: spatial-tasks generate: {out}/_work is a link"),
    "tiny-model": (["tiny-model"], "config.json", "outside/victim.txt",
                   "error: spatial-tasks tiny-model: {out} holds config.json, which spatial-tasks did not write"),
    "probe": (None, "deltas.npy", "outside/victim.txt",
              "error: spatial-tasks probe: {out} holds deltas.npy, which spatial-tasks did not write"),
}


@pytest.mark.parametrize("command", list(LINKED))
def test_each_command_refuses_a_link_in_its_folder_and_leaves_outside_alone(command, tmp_path, request):
    args, link, target, said = LINKED[command]
    if args is None:
        args = probe_args(request.getfixturevalue("tiny_qwen_dir"))
    out = tmp_path / "OUT"
    before = outside_tree(tmp_path, out, f"spatial-tasks {command}")
    (out / link).symlink_to(tmp_path / target)
    line = refused(cli(*args, "--out", str(out), timeout=600))
    assert line.startswith(said.format(out=out)), line
    assert outside_now(tmp_path, out) == before


def test_publish_never_writes_its_record_through_a_link(tmp_path):
    import datasets

    from spatial_tasks.generators.common import dataset as ds

    root = tmp_path / "OUT"
    before = outside_tree(tmp_path, root, "spatial-tasks generate")
    (root / "phase_variation").mkdir()
    ds.write_parquet([{"x": 1}], datasets.Features({"x": datasets.Value("int32")}),
                     root / "phase_variation" / "test-00000-of-00001.parquet", {"seed": 0})
    (root / "README.md").write_text("---\nconfigs:\n- config_name: phase_variation\n  data_files:\n"
                                    "  - split: test\n    path: phase_variation/test-*.parquet\n---\n# card\n")
    (root / ".spatial-tasks-published.json").symlink_to(tmp_path / "outside" / "victim.txt")
    before = outside_now(tmp_path, root)
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0", "HF_TOKEN": "hf_x"}
    line = refused(run_cli([SPATIAL_TASKS, "publish", str(root), "--repo", "me/st"], capture_output=True, text=True,
                           env=env, timeout=120))
    assert "holds .spatial-tasks-published.json, which spatial-tasks did not write" in line, line
    assert outside_now(tmp_path, root) == before


# --------------------------------------------------------------------------- item 2: an added benchmark that fails

CLASHING = '''
import dataclasses

from toybench.benchmark import BENCHMARK as TOY

from spatial_tasks.benchmark import Later

TABLE = {"acc": lambda records: 0.0}  # registered as dori_acc: DORI's own name
BENCHMARK = dataclasses.replace(TOY, name="clashbench", metrics={"dori": Later("clash_extra:TABLE")})
'''
RAISING = CLASHING.replace('TABLE = {"acc": lambda records: 0.0}', 'raise_later = 1 / 0').replace(
    'Later("clash_extra:TABLE")', 'Later("clash_extra:NO_SUCH_TABLE")').replace("raise_later = 1 / 0", "")


@pytest.mark.cli
@pytest.mark.parametrize("module, why", [
    (CLASHING, "its lmms-eval metrics cannot be registered (ValueError: clashbench: the lmms-eval aggregation name "
               "'dori_acc' is already registered by spatial_tasks.harness.pooling"),
    (RAISING, "its lmms-eval metrics cannot be registered (AttributeError: module 'clash_extra' has no attribute "
              "'NO_SUCH_TABLE')"),
], ids=["clashing name", "table that fails to load"])
def test_an_added_benchmark_that_fails_to_register_leaves_our_runs_as_they_are(module, why, baseline_run, tmp_path):
    from lmms import run_lmms_eval

    (tmp_path / "clash_extra.py").write_text(module)
    toy = Path(__file__).resolve().parents[1] / "toybench"
    env = {"SPATIAL_TASKS_BENCHMARKS": "clash_extra",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(toy), os.environ.get("PYTHONPATH", "")])}
    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=always_a", "dori_sample", env=env)
    plain = baseline_run("always_a", "dori_sample")
    assert run.results is not None, run.output[-3000:]
    assert run.metrics("dori_sample") == plain.metrics("dori_sample")
    warnings = [line for line in run.output.splitlines() if "$SPATIAL_TASKS_BENCHMARKS: clash_extra:" in line]
    assert len(warnings) == 1 and all(why in line and line.endswith("left out, the other benchmarks are unaffected")
                            for line in warnings), run.output[-3000:]
    assert "not found" not in run.output


# --------------------------------------------------------------------------- item 3: every scorer checks every argument

SCORERS = ["qwen2_5_vl_yesno", "hf_yesno", "qwen3_vl_yesno", "gemma3_yesno", "llava_hf_yesno", "openai_yesno",
           "vllm_yesno"]
BAD_VALUES = {"packed": "maybe", "dtype": "float64x", "batch_size": "0", "group_window": "-3", "group_images": "perhaps",
              "share_prefix": "2", "trust_remote_code": "sure", "answer_rule": "fuzzy", "image_first": "later",
              "window": "abc"}
LOGIT_TASK = "spatialtunnel_logit_sample_phase"


def scorer_class(model: str) -> type:
    from spatial_tasks.harness import MODELS

    module, name = MODELS[model].rsplit(".", 1)
    return getattr(__import__(module, fromlist=[name]), name)


def stop_line(cls: type, arg_string: str, cli: dict | None = None) -> str:
    from spatial_tasks.common.errors import RunStopped

    with pytest.raises(RunStopped) as stop:
        cls.create_from_arg_string(arg_string, cli if cli is not None else {"batch_size": 1})
    assert stop.value.code == 2
    return str(stop.value)


def test_the_table_covers_every_registered_scorer():
    from spatial_tasks.harness import MODELS
    from spatial_tasks.models.arguments import RULES

    assert sorted(SCORERS) == sorted(m for m in MODELS if m != "spatial_baseline")  # the rule baseline takes rules
    assert sorted(BAD_VALUES) == sorted(RULES)


@pytest.mark.parametrize("model", SCORERS)
def test_every_scorer_refuses_every_bad_argument_in_one_line(model, capsys):
    import torch
    from lmms_eval.utils import handle_arg_string

    from spatial_tasks.models.arguments import accepted_args

    cls = scorer_class(model)
    accepted = accepted_args(cls)
    named = "model_version=m" if model == "openai_yesno" else "pretrained=/nowhere/needed"
    key = named.split("=")[0]
    for arg, bad in BAD_VALUES.items():  # every argument of the table: refused by value, or as one it does not take
        line = stop_line(cls, f"{named},{arg}={bad}")
        if accepted is not None and arg not in accepted:
            assert line.startswith(f"spatial-tasks: {model}: unknown --model_args {[arg]}; it takes "), line
        else:
            value = handle_arg_string(bad)  # as lmms-eval's parser reads it: "0" is 0
            assert line.startswith(f"spatial-tasks: {model}: {arg}={value!r} in --model_args; it takes "), line
    assert stop_line(cls, f"{named},{key}=other").startswith(
        f"spatial-tasks: {model}: {key} is given twice in --model_args ("), model
    assert stop_line(cls, f"{named},justaword").startswith(
        f"spatial-tasks: {model}: 'justaword' in --model_args is not name=value"), model
    line = stop_line(cls, f"{named}", {"batch_size": -1})
    assert line.startswith(f"spatial-tasks: {model}: --batch_size -1; it takes a whole number >= 1"), line
    if not torch.cuda.is_available() and model not in ("openai_yesno", "vllm_yesno"):
        line = stop_line(cls, f"{named}", {"device": "cuda:1"})
        assert line.startswith(f"spatial-tasks: {model}: device=cuda:1: torch sees no CUDA GPU") and "--device" in line
    if accepted is None:  # vllm_yesno hands any other argument to vLLM's engine, which names one it does not take
        assert "unknown --model_args" not in stop_line(cls, f"{named},foo=1")
    else:
        assert stop_line(cls, f"{named},foo=1").startswith(f"spatial-tasks: {model}: unknown --model_args ['foo']; it takes")
    capsys.readouterr()


def test_a_value_is_used_as_it_was_checked():
    from spatial_tasks.models.arguments import ScoringOptions, check_model_args

    read = check_model_args("qwen2_5_vl_yesno", {"dtype": "Float32", "packed": " AUTO", "batch_size": "8",
                                                 "group_images": "TRUE", "answer_rule": "Variants"})
    assert read == {"dtype": "float32", "packed": "auto", "batch_size": 8, "group_images": True,
                    "answer_rule": "variants"}
    kwargs = {"dtype": "Float32", "share_prefix": "No", "group_window": "16", "yes_text": "Ja", "other": 1}
    assert ScoringOptions.take("hf_yesno", kwargs) == ScoringOptions(yes_text="Ja", dtype="float32", share_prefix=False,
                                                                     group_window=16)
    assert kwargs == {"other": 1}  # the host's


@pytest.mark.parametrize("model_args, extra, said", [
    ("foo=1", (), "unknown --model_args ['foo']; it takes "),
    ("pretrained={tiny},pretrained={tiny}", (), "pretrained is given twice in --model_args"),
    ("", ("--batch_size", "-1"), "--batch_size -1; it takes a whole number >= 1"),
], ids=["unknown", "given twice", "cli flag"])
def test_the_twins_refuse_through_the_real_cli(model_args, extra, said, tmp_path, tiny_qwen_dir):
    from lmms import run_lmms_eval

    args = f"pretrained={tiny_qwen_dir}" + (f",{model_args}" if model_args and "{tiny}" not in model_args else "")
    if "{tiny}" in model_args:
        args = model_args.format(tiny=tiny_qwen_dir)
    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl_yesno", args, LOGIT_TASK, *extra, verbose=False)
    assert run.returncode == 2 and "Traceback" not in run.output, run.output[-3000:]
    line = run.output.strip().splitlines()[-1]
    assert line.startswith(f"spatial-tasks: qwen2_5_vl_yesno: {said}"), line
    assert not (tmp_path / "out").exists()


def test_a_dtype_in_capitals_is_read_as_float32_through_the_real_cli(tmp_path, tiny_qwen_dir):
    from lmms import run_lmms_eval

    run = run_lmms_eval(tmp_path / "out", "qwen2_5_vl_yesno", f"pretrained={tiny_qwen_dir},dtype=Float32", LOGIT_TASK)
    assert run.results is not None, run.output[-3000:]
    assert "Traceback" not in run.output
    assert len(run.samples[LOGIT_TASK]) > 0


# --------------------------------------------------------------------------- item 4: text from samples is never fatal


def with_lone_surrogates(sample: dict) -> tuple[dict, int]:
    """The sample with a lone surrogate in its prompt, its target and its response; and how many."""
    out, count = dict(sample), 0
    for key in ("input", "target"):
        if isinstance(out.get(key), str):
            out[key] += "\ud800"
            count += 1
    responses = out["filtered_resps"]
    if isinstance(responses, str):
        out["filtered_resps"] = responses.replace('"text": "', '"text": "\udfff', 1)
    else:
        out["filtered_resps"] = [responses[0] + "\udfff", *responses[1:]]
    return out, count + 1


def test_a_lone_surrogate_in_logged_text_is_replaced_counted_once_and_the_report_written(baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    copy = tmp_path / "run"
    shutil.copytree(run.out, copy)
    samples = next(copy.rglob("*_samples_*.jsonl"))
    lines = samples.read_text().splitlines()
    changed, expected = with_lone_surrogates(json.loads(lines[0]))
    samples.write_text("\n".join([json.dumps(changed), *lines[1:]]) + "\n")  # json.dumps writes \\ud800 escapes
    done = cli("report", str(copy), "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "lone surrogates" in line]
    assert said == [f"spatial-tasks: {samples}: {expected} character(s) that UTF-8 cannot hold (lone surrogates) in its "
                    "logged text, each read as U+FFFD"], done.stderr
    assert (tmp_path / "report" / "report.md").is_file() and (tmp_path / "report" / "index.html").is_file()
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "\ufffd" in page or "&#65533;" in page or "\\ufffd" in page


def test_an_empty_samples_file_is_named(baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    copy = tmp_path / "run"
    shutil.copytree(run.out, copy)
    first, *others = sorted(copy.rglob("*_samples_*.jsonl"))
    first.write_text("")
    done = cli("report", str(copy), "--out", str(tmp_path / "report"))  # the other tasks are still reported
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"spatial-tasks: {first}: empty, 0 lines; left out of the report" in done.stderr.splitlines(), done.stderr
    for path in others:
        path.write_text("\n")
    more = f" (and {len(others)} more samples file(s) likewise)" if others else ""
    line = refused(cli("report", str(copy), "--out", str(tmp_path / "report")))
    assert line == f"error: {first}: empty, 0 lines{more}; nothing to report", line
    line = refused(cli("results", str(copy), "--out", str(tmp_path / "records")))
    assert line == f"error: {first}: empty, 0 lines{more}; no records to write", line


# --------------------------------------------------------------------------- item 6: the default on a device has run there


def test_packed_auto_packs_only_where_packing_was_measured_fastest():
    import torch

    from spatial_tasks.models.packed import MEASURED, packed_by_default, unmeasured_packing
    from spatial_tasks.models.scoring_paths import GROUPED, ONE_BY_ONE, PACKED, PADDED, SHARED_PREFIX, choose

    for (device, dtype), entry in MEASURED.items():  # every entry names its card and date
        assert entry.card and len(entry.date) == 10 and entry.date.startswith("20") and entry.figures
    for dtype in (torch.bfloat16, torch.float16, torch.float32):  # packed has never run on a GPU
        assert not packed_by_default(torch.device("cuda"), dtype)
        assert "has not been measured on this device" in unmeasured_packing(torch.device("cuda"), dtype)
    assert packed_by_default(torch.device("cpu"), torch.float32) and not unmeasured_packing(torch.device("cpu"),
                                                                                            torch.float32)
    offered = (PACKED, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)
    on_cuda = choose(offered, packed="auto", group_images=True, share_prefix=True, block_mask=True,
                     packs_by_default=packed_by_default(torch.device("cuda"), torch.bfloat16))
    assert on_cuda.path == SHARED_PREFIX and PACKED not in on_cuda.order, on_cuda  # the path last measured there
    forced = choose(offered, packed=True, group_images=True, share_prefix=True, block_mask=True,
                    packs_by_default=False)
    assert forced.path == PACKED


def test_packed_true_where_it_was_never_measured_says_so_in_one_line(tiny_qwen_dir, monkeypatch):
    import torch
    from loguru import logger

    from spatial_tasks.models import packed
    from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo

    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message).strip()), level="WARNING")
    try:
        monkeypatch.delitem(packed.MEASURED, ("cpu", torch.float32))  # as a device never measured
        args = dict(pretrained=str(tiny_qwen_dir), device="cpu", device_map="cpu", dtype="float32")
        auto = Qwen2_5_VLYesNo(**args)
        assert auto.scoring.path != "packed"  # auto: the paths that have run everywhere
        assert not [line for line in lines if "has not been measured" in line]
        forced = Qwen2_5_VLYesNo(**args, packed=True)
        assert forced.scoring.path == "packed"
    finally:
        logger.remove(sink)
    said = [line for line in lines if "has not been measured on this device" in line]
    assert len(said) == 1 and "qwen2_5_vl_yesno: packed=true on cpu/float32: the packed path has not been measured" \
        in said[0], lines


# --------------------------------------------------------------------------- item 7: versions


def test_the_render_extra_pins_the_blender_our_datasets_record():
    import tomllib

    from spatial_tasks.generators.common.blender import TESTED_BPY, other_blender

    root = Path(__file__).resolve().parents[2]
    render = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["render"]
    assert render == [f"bpy=={TESTED_BPY}; python_version == '3.13'"]  # exactly: 5.2.4 would be admitted by a range
    assert f"\nbpy=={TESTED_BPY} \\" in (root / "requirements.lock").read_text()
    assert other_blender() is None  # the lock's Blender is the tested one: nothing to say, nothing recorded


@pytest.mark.render
def test_rendering_with_another_blender_says_so_once_before_rendering_and_the_dataset_records_it(tmp_path, monkeypatch):
    from spatial_tasks.generators.common import blender
    from spatial_tasks.generators.common import dataset as ds

    installed = blender.version_string().split()[0]
    monkeypatch.setattr(blender, "TESTED_BPY", "5.2.0")  # as if the installed bpy were another build
    monkeypatch.delenv("SPATIAL_TASKS_OTHER_BLENDER_SAID", raising=False)
    out = tmp_path / "st"
    done = cli("generate", "spatialtunnel", "--variant", "phase", "--grid", "2", "--per-cell", "1", "--resolution",
               "32", "--samples", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "the Blender our datasets were rendered and checked with" in line]
    assert said == [f"spatial-tasks: rendering with bpy {installed}, not 5.2.0, the Blender our datasets were rendered "
                    "and checked with: images may differ in their bytes from a dataset made with it; the dataset "
                    f"records blender_version {installed}"], done.stderr[-3000:]
    shard = next((out / "phase_variation").glob("*.parquet"))
    assert ds.read_generation(shard)["blender_untested"] == f"bpy {installed}; the datasets were checked with bpy 5.2.0"


@pytest.mark.parametrize("kind", ["link", "folder", "pipe"])
def test_a_ledger_that_is_not_a_file_of_ours_stops_the_report_in_one_line(kind, baseline_run, tmp_path):
    run = baseline_run("vertical", "spatialtunnel_sample")
    out = tmp_path / "OUT"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")
    if kind == "link":
        (out / LEDGER).symlink_to(elsewhere)
    elif kind == "folder":
        (out / LEDGER).mkdir()
    else:
        os.mkfifo(out / LEDGER)  # reading it would wait forever
    line = refused(cli("report", str(run.out), "--out", str(out), timeout=120))
    said = {"link": f"error: {out / LEDGER}: is a link (to {elsewhere}), and spatial-tasks never writes through a link",
            "folder": f"error: {out / LEDGER}: this ledger cannot be read (",
            "pipe": f"error: {out / LEDGER}: this ledger cannot be read (not a regular file)"}[kind]
    assert line.startswith(said), line
    assert elsewhere.read_text() == "" and sorted(p.name for p in out.iterdir()) == [LEDGER]
