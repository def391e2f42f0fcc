"""Round 2 of careless and hostile use (issue 20): endpoints that answer nonsense or hang, names
that would leave their folder, deep input, prompt fields that are None, docs our loaders did not
make, metric settings checked before generation and metric failures that keep the run."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from openai_server import RawReply
from PIL import Image
from spatial_tasks.generators.vague import pipeline

from spatial_tasks.common import prompts
from spatial_tasks.common.validate import DataError
from spatial_tasks.dori import load as dori_load
from spatial_tasks.spatialtunnel import tasks as st_tasks
from spatial_tasks.vague import records as vague_records
from spatial_tasks.vague import tasks as vague_tasks
from lmms import SPATIAL_TASKS, run_cli

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a": ' * 1_000_000 + "1" + "}" * 1_000_000


# ---- endpoints that do not answer with a chat completion ------------------------------------------


ODD_REPLIES = [
    ("an HTML page", RawReply("<html><body>Welcome to nginx!</body></html>", "text/html"), r"."),
    ("an empty object", RawReply("{}"), r"no choices|did not answer with a chat completion"),
    ("no choices", RawReply(json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                        "choices": []})), r"the endpoint's reply has no choices"),
    ("a body that is not JSON", RawReply("oops, not json", "application/json"), r"."),
    ("a JSON list", RawReply("[1, 2, 3]"), r"."),
]


@pytest.mark.parametrize(("case", "reply", "message"), ODD_REPLIES, ids=[c[0] for c in ODD_REPLIES])
def test_an_endpoint_that_answers_nonsense_is_one_pipeline_error(openai_server, case, reply, message):
    openai_server.responder = lambda body: reply
    client = pipeline.Client("stub", openai_server.base_url, "test", rpm=6000, max_retries=0, timeout=10)
    with pytest.raises(pipeline.PipelineError, match=message) as err:
        client("Write one direct request.", None)
    assert "\n" not in str(err.value)


def test_a_hung_endpoint_gives_up_after_the_timeout(openai_server):
    openai_server.responder = lambda body: time.sleep(4) or "late"
    client = pipeline.Client("stub", openai_server.base_url, "test", rpm=6000, max_retries=0, timeout=1)
    start = time.monotonic()
    with pytest.raises(pipeline.PipelineError, match=r"the API call failed \(APITimeoutError"):
        client("hello", None)
    assert time.monotonic() - start < 3.5


# ---- names that become paths ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../../../outside/x", "/etc/passwd", "a/b", "..", "x\\y", ""])
def test_a_scene_name_that_would_leave_the_folder_is_refused(tmp_path, name):
    scenes = tmp_path / "scenes.json"
    scenes.write_text(json.dumps([{"image_name": name, "ram_entity": ["desk"], "person_bbox": [[1, 2, 30, 40]]}]))
    with pytest.raises(pipeline.PipelineError, match=r"entry 0, field image_name"):
        pipeline.read_scenes(scenes)


def test_generate_vague_writes_nothing_outside_out(tmp_path):

    frames = tmp_path / "frames"
    frames.mkdir()
    Image.new("RGB", (40, 30)).save(frames / "a.jpg")
    scenes = tmp_path / "scenes.json"
    scenes.write_text(json.dumps([{"image_name": "../../escaped", "ram_entity": ["desk"],
                                   "person_bbox": [[1, 2, 30, 20]]}]))
    run = run_cli([SPATIAL_TASKS, "generate", "vague", "--out",
                   str(tmp_path / "deep" / "er" / "out"), "--scenes", str(scenes), "--images", str(frames),
                   "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "PATH"],
                  capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "image_name" in run.stderr, run.stderr
    assert not (tmp_path / "escaped").exists() and not list(tmp_path.glob("**/escaped*"))


# ---- deep input -----------------------------------------------------------------------------------


def test_parsers_of_model_output_survive_deep_nesting():
    assert vague_records.socratic_parts(DEEP) == (None, DEEP)
    start = time.monotonic()
    with pytest.raises(ValueError, match="no JSON object"):
        pipeline.first_json_object(DEEP_OBJECT)  # a million starts, each too deep: bounded, not quadratic
    assert time.monotonic() - start < 5
    assert pipeline.first_json_object("[" * 100_000 + ' {"ok": 1}') == {"ok": 1}


def test_a_dori_box_cell_nested_too_deep_is_named():
    def bad(field, problem):
        return dori_load.SourceError(f"row 0, field {field!r}: {problem}")
    with pytest.raises(dori_load.SourceError, match=r"field 'boxes': .* is not a JSON box list"):
        dori_load._check_boxes(DEEP, "view_parallelism", bad)


# ---- prompts and docs -----------------------------------------------------------------------------


def test_a_none_prompt_field_is_an_error_not_the_word_none():
    doc = {"question_id": "q", "question": "Is the red cube farther than the blue ball?", "answer": "Yes",
           "image": None}
    assert "None" not in st_tasks.doc_to_text(doc)
    with pytest.raises(prompts.PromptError, match=r"spatialtunnel/prompts/question\.jinja: a field it prints is None "
                                                  r"\(answer_suffix\)"):
        st_tasks.doc_to_text(doc, {"answer_suffix": None})
    with pytest.raises(prompts.PromptError, match=r"is None \(question\)"):
        st_tasks.doc_to_text({**doc, "question": None})


@pytest.mark.parametrize("hook", [st_tasks.doc_to_text, st_tasks.doc_to_target, vague_tasks.doc_to_text_vlm,
                                  vague_tasks.doc_to_target])
def test_a_doc_our_loader_did_not_make_is_named(hook):
    with pytest.raises(DataError, match=r"the doc lacks field\(s\) \[.*\]; docs come from the task's process_docs"):
        hook({"id": 3})
    with pytest.raises(DataError, match="a doc is a mapping of fields, got str"):
        hook("question")


# ---- metric settings: before generation; failures later keep the run -------------------------------


def test_a_bad_bertscore_setting_stops_the_run_before_generation(tmp_path):
    """SPATIAL_TASKS_BERTSCORE_LAYERS=abc / 999 on the free-form task: one line, exit 2, at load."""
    from lmms import run_lmms_eval

    for value, message in (("abc", "the BERTScore layer is a whole number"), ("999", "has layers 1-")):
        run = run_lmms_eval(tmp_path / value, "spatial_baseline", "rule=oracle", "vague_sample_freeform",
                            env={"SPATIAL_TASKS_BERTSCORE_LAYERS": value, "SPATIAL_TASKS_BERTSCORE_MODEL": "minilm"},
                            verbose=False)
        last = run.output.strip().splitlines()[-1]
        assert run.returncode == 2 and "SPATIAL_TASKS_BERTSCORE_LAYERS" in last and message in last, run.output[-2000:]
        assert "Running generate_until requests" not in run.output and not run.samples


def test_a_metric_that_fails_after_generation_is_na_and_the_run_is_kept(tmp_path):
    """A BERTScore model that is not on this machine (offline) fails in aggregation, after the
    answers exist: results and samples are written, BERTScore is n/a, the other metrics stand."""
    from lmms import is_undefined, run_lmms_eval

    run = run_lmms_eval(tmp_path / "out", "spatial_baseline", "rule=oracle", "vague_sample_freeform",
                        env={"SPATIAL_TASKS_BERTSCORE_MODEL": "nobody/no-such-scorer"}, verbose=False)
    assert run.returncode == 0 and run.results is not None, run.output[-2000:]
    metrics = run.metrics("vague_sample_freeform")
    assert is_undefined(metrics["bertscore_f1"])
    assert len(run.samples["vague_sample_freeform"]) > 0
    assert "nobody/no-such-scorer" in run.output and "n/a" in run.output


def test_the_aggregation_guard_logs_one_line_and_gives_nan():
    from loguru import logger

    from spatial_tasks.harness import aggregation

    def broken(records):
        raise RuntimeError("the scorer model went away\nsecond line")

    said: list[str] = []
    sink = logger.add(lambda m: said.append(str(m)), level="ERROR")
    try:
        value = aggregation("bertscore_f1", broken)([{"x": 1}])
    finally:
        logger.remove(sink)
    assert math.isnan(value)
    assert len(said) == 1 and "metric bertscore_f1: could not be computed (RuntimeError: the scorer model went " \
                               "away); reporting n/a" in said[0]


# ---- runaway flags ---------------------------------------------------------------------------------


def test_an_unreachable_ray_address_fails_at_once():
    import socket

    from spatial_tasks.generators.common.jobs import check_reachable

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(ConnectionError, match=rf"--ray 127\.0\.0\.1:{port}: nothing answers at 127\.0\.0\.1:{port}"):
        check_reachable(f"127.0.0.1:{port}")
    assert time.monotonic() - start < 6
    with pytest.raises(ValueError, match=r"expected HOST:PORT"):
        check_reachable("ray://head-node")


# ---- progress when the output is not a terminal ----------------------------------------------------


def test_progress_is_plain_lines_when_stderr_is_redirected(capsys, monkeypatch):
    from spatial_tasks.generators.common.jobs import _progress

    monkeypatch.setenv("SPATIAL_TASKS_PROGRESS_EVERY", "3600")
    with _progress(5, "phase_variation 1/1", True) as advance:
        for _ in range(5):
            advance()
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "phase_variation 1/1: 0/5 (0.0%), started"
    assert lines[1].startswith("phase_variation 1/1: 1/5 (20.0%), ") and "/s, ETA " in lines[1]
    assert lines[2].startswith("phase_variation 1/1: 5/5 (100.0%), ") and lines[2].endswith("ETA 0:00:00")
    assert len(lines) == 3  # not one line per job
    with pytest.raises(KeyboardInterrupt), _progress(4, "O3-D 1/1", True) as advance:
        advance()
        raise KeyboardInterrupt
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "O3-D 1/1: 1/4 (25.0%), stopped (finished jobs are kept; rerun the command to resume)")


# ---- first use: prompts, previews, help text --------------------------------------------------------


def test_prompts_for_a_benchmark_without_a_prompt_space(tmp_path):
    """One prompt per kind of DORI question of the bundled sample, as lmms-eval's task renders it."""

    run = run_cli([SPATIAL_TASKS, "prompts", "dori"], capture_output=True,
                  text=True, timeout=300, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1",
                                               "HF_DATASETS_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    kinds = {(d["task"], d["granularity"]) for d in dori_load.load_source("tasks/dori/sample", check_images=False)}
    assert len(lines) == len(kinds) >= 8 and {line["task"] for line in lines} == {"dori_sample"}
    assert all(isinstance(line["id"], str) and line["id"] for line in lines)
    assert len({line["prompt"] for line in lines}) == len(lines)


def test_preview_sheets_and_an_unfinished_run(tmp_path):
    import shutil

    from spatial_tasks.dori.commands import preview_docs as dori_docs
    from spatial_tasks.generators.common.preview import doc_sheet
    from spatial_tasks.spatialtunnel.commands import preview_docs as spatialtunnel_docs

    said: list[str] = []
    sheet = doc_sheet("dori", Path("tasks/dori/sample"), tmp_path / "dori.png", read=dori_docs, count=4,
                      warn=said.append)
    assert Image.open(sheet).size[0] > 300 and not said
    folder = tmp_path / "st"
    shutil.copytree("tasks/spatialtunnel/sample/phase_variation", folder / "phase_variation")
    (folder / "_work").mkdir()
    (folder / "_work" / "phase-0001.json").write_text("{}")  # a render of a run that never wrote its card
    doc_sheet("spatialtunnel", folder, tmp_path / "st.png", read=spatialtunnel_docs, count=2, warn=said.append)
    assert len(said) == 1 and "the generation run here is unfinished" in said[0]
    with pytest.raises(Exception, match=r"--count must be a whole number from 1 to 100"):
        doc_sheet("spatialtunnel", folder, tmp_path / "x.png", read=spatialtunnel_docs, count=0)


def test_help_text_keeps_square_brackets():
    from typer.testing import CliRunner

    from spatial_tasks.cli import app

    shown = CliRunner().invoke(app, ["generate", "spatialtunnel", "--help"]).output
    assert "[render] extra" in shown
