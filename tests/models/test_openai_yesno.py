"""``openai_yesno``: the first-token protocol against a served model (spatial_tasks.models.served).

The server is real and local: ``spatial_tasks.models.logprob_server`` on 127.0.0.1, in front of a
tiny random Qwen2.5-VL built here. It applies the model's chat template to each request, decodes
the images and answers with the model's own log-probabilities, in vLLM's, SGLang's or plain
OpenAI's dialect. Every run goes through the real lmms-eval CLI.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from lmms import LMMS_EVAL, SPATIAL_TASKS, run_cli, run_env, run_lmms_eval
from PIL import Image

from spatial_tasks.models import served
from spatial_tasks.models.logprob_server import Fault, LogprobServer

TASK = "spatialtunnel_logit_sample_phase"  # 256 questions on 64 images


@pytest.fixture(scope="session")
def answering_qwen_dir(tiny_qwen_dir, tmp_path_factory) -> Path:
    """The tiny Qwen2.5-VL with "Yes" and "No" made its two likeliest first tokens (tests/answering.py):
    a random model's Yes/No sit far down its ranking, where a top-20 reply does not list them."""
    from answering import make_answering
    from conftest import shared_across_workers

    return shared_across_workers(tmp_path_factory, "answering_qwen",
                                 lambda root: make_answering(tiny_qwen_dir, root / "model")) / "model"


@pytest.fixture(scope="session")
def reference(lmms_run, answering_qwen_dir):
    """The in-process scores: hf_yesno on the same checkpoint, float32."""
    return lmms_run("hf_yesno", f"pretrained={answering_qwen_dir},device=cpu,dtype=float32", TASK)


def _p_by_question(run, task: str = TASK) -> dict[str, float]:
    return {s["v"]["question_id"]: s["v"]["p_yes"] for s in run.samples[task]}


def _args(server: LogprobServer, cache: Path | str, **more: object) -> str:
    args = {"model_version": server.model_id, "base_url": server.base_url, "num_concurrent": 4,
            "cache": str(cache), "retry_backoff_s": 0.05, **more}
    return ",".join(f"{k}={v}" for k, v in args.items())


@pytest.mark.parametrize("kind", ["vllm", "sglang", "openai"])
def test_served_scores_equal_in_process_scores(kind, answering_qwen_dir, reference, tmp_path):
    """Through the real CLI, each dialect gives hf_yesno's p on every question to 1e-4; the server
    sees one request per question, images first and unresized, then the question."""
    extra = {"tokenizer": answering_qwen_dir} if kind == "sglang" else {}
    with LogprobServer(answering_qwen_dir, kind=kind) as server:
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, tmp_path / "cache", **extra), TASK)
        bodies = list(server.requests)
    want, got = _p_by_question(reference), _p_by_question(run)
    assert set(got) == set(want) and len(run.samples[TASK]) == len(want) == 256
    assert max(want.values()) - min(want.values()) > 0.01  # p differs by question, 100x the tolerance
    bad = sorted((round(abs(got[q] - want[q]), 4), q) for q in want if abs(got[q] - want[q]) >= 1e-4)
    assert not bad, (len(bad), bad[:3], bad[-3:])
    assert len(bodies) == len(want)  # each question once
    payload = json.loads(run.samples[TASK][0]["v"]["response"])
    dialect = {"vllm": "vllm", "sglang": "sglang", "openai": "top_logprobs"}[kind]
    assert payload["dialect"] == dialect and payload["censored"] == [] and payload["served_model"]["id"] == "tiny"
    assert not any(s["v"].get("censored") for s in run.samples[TASK])  # the two labels lead this model's ranking
    body = bodies[0]
    if kind == "sglang":
        assert body["sampling_params"]["max_new_tokens"] == 1 and body["token_ids_logprob"] == payload["yes_ids"] + payload["no_ids"]
        urls = body["image_data"]
    else:
        assert body["max_tokens"] == 1
        (turn,) = body["messages"]
        assert [p["type"] for p in turn["content"]] == ["image_url", "text"]
        urls = [turn["content"][0]["image_url"]["url"]]
    assert urls[0].startswith("data:image/png;base64,")
    image = Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))
    assert image.size == (128, 128)  # the bundled renders' own size: never shrunk


def test_censored_labels_are_bounds_and_counted(tiny_qwen_dir, lmms_run, tmp_path):
    """On a random model's ranking the No token is outside the top 20: the reply bounds it, each
    sample says so, p moves only the way the bound allows, and rescore, the report and verify count it."""
    model = tiny_qwen_dir
    plain = lmms_run("hf_yesno", f"pretrained={model},device=cpu,dtype=float32", TASK)
    with LogprobServer(model, kind="openai") as server:
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, tmp_path / "cache"), TASK)
    want, records = _p_by_question(plain), {s["v"]["question_id"]: s["v"] for s in run.samples[TASK]}
    censored = {q: r["censored"] for q, r in records.items() if r["censored"]}
    assert censored, "the plain tiny model should leave a label out of its top 20"
    for question, record in records.items():
        p, truth = record["p_yes"], want[question]
        if record["censored"] == ["No"]:  # No's value is bounded above: p can only be too low
            assert p <= truth + 1e-6
        elif record["censored"] == ["Yes"]:
            assert p >= truth - 1e-6
        elif record["censored"] == ["No", "Yes"]:
            assert p == 0.5
        else:
            assert abs(p - truth) < 1e-4
    rescored = json.loads(run_cli([SPATIAL_TASKS, "rescore", "spatialtunnel", str(run.out), "--json"],
                                  capture_output=True, text=True, check=True).stdout)
    (figures,) = rescored["runs"].values()
    assert figures["tasks"][TASK]["n_censored"] == len(censored)
    report = run_cli([SPATIAL_TASKS, "report", str(run.out), "--out", str(tmp_path / "report")],
                     check=False, capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| censored |" in text and f"| {len(censored)} |" in text and "**censored**" in text
    verify = run_cli([SPATIAL_TASKS, "verify", str(run.out)], check=False, capture_output=True, text=True)
    assert f"{TASK}: {len(censored)} of 256 questions scored from a censored label" in verify.stdout


def test_faults_are_retried_and_every_question_is_scored_once(answering_qwen_dir, reference, tmp_path):
    """429 with Retry-After, 500, 503, a reply slower than the timeout and a dropped connection are
    each retried; the run ends with every question scored once, as in-process."""
    with LogprobServer(answering_qwen_dir, kind="vllm") as server:
        server.faults.extend([Fault("status", 429, retry_after=0.3), Fault("status", 500), Fault("slow", seconds=3),
                              Fault("drop"), Fault("status", 503, retry_after=0)])
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, tmp_path / "cache", timeout=1), TASK)
        sent = server.scored()
    want, got = _p_by_question(reference), _p_by_question(run)
    assert len(run.samples[TASK]) == 256 and set(got) == set(want)
    assert max(abs(got[q] - want[q]) for q in want) < 1e-4
    assert sent == 256 + 5  # each fault cost exactly one more request
    # issue 44, item 6: one closing line says what happened
    assert ("256 questions: 261 requests sent, 0 answered from the cache, 5 retried (HTTP 429 1, HTTP 500 1, "
            "HTTP 503 1, connection 1, timeout 1), 0 with a censored label") in run.output, run.output[-3000:]


def test_a_bad_reply_stops_the_run_in_one_line_naming_the_question(answering_qwen_dir, tmp_path):
    with LogprobServer(answering_qwen_dir, kind="vllm") as server:
        server.faults.append(Fault("html"))
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, tmp_path / "cache", num_concurrent=1),
                            TASK, verbose=False)
    assert run.results is None and run.returncode == 2
    last = run.output.strip().splitlines()[-1]
    assert last.startswith("spatial-tasks: openai_yesno: task spatialtunnel_logit_sample_phase, doc ")
    assert "is not JSON (text/html)" in last


def test_a_stop_with_questions_in_flight_prints_no_asyncio_traceback(answering_qwen_dir, tmp_path):
    """Issue 44: after the one-line stop on an HTML reply, asyncio printed "Task exception was never
    retrieved" with a traceback for every other question in flight."""
    with LogprobServer(answering_qwen_dir, kind="vllm") as server:
        server.faults.extend([Fault("html")] * 6)
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, tmp_path / "cache", num_concurrent=8),
                            TASK, verbose=False)
    assert run.results is None and run.returncode == 2
    assert "never retrieved" not in run.output and "Traceback" not in run.output, run.output[-3000:]
    assert "is not JSON (text/html)" in run.output.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def image_question():
    from spatial_tasks.models.lmms_requests import image_key

    image = Image.new("RGB", (64, 64), (120, 30, 30))
    return served.Question("task t, doc 7", "Is the red object closer to the camera? Answer with yes or no.",
                           [image_key(image)], lambda: [image])


def _scorer(server: LogprobServer, **more) -> served.Scorer:
    import httpx

    with httpx.Client(trust_env=False) as client:
        found = served.discover(client, server.base_url, server.model_id)
        labels = served.labels_from_tokenizer(served.ServerTokenizer(client, found.root, found.model_version),
                                              "Yes", "No", "exact")
    policy = served.RetryPolicy(more.pop("max_retries", 2), backoff_s=0.01)
    return served.Scorer(found, served.dialect_for("vllm", found.model_version, labels), num_concurrent=1, retry=policy,
                         **more)


@pytest.mark.parametrize("faults, said", [
    ([Fault("no_logprobs")], "it has no logprobs"),
    ([Fault("status", 400)], "refused the request with HTTP 400"),
    ([Fault("status", 500)] * 3, "after 3 tries; last: HTTP 500"),
    ([Fault("slow", seconds=2)] * 3, "after 3 tries; last: timed out after 0.5 s"),
    ([Fault("drop")] * 3, "after 3 tries; last: RemoteProtocolError"),
])
def test_a_question_without_a_usable_reply_is_named(faults, said, answering_qwen_dir, image_question, tmp_path):
    with LogprobServer(answering_qwen_dir, kind="vllm") as server:
        server.faults.extend(faults)
        scorer = _scorer(server, timeout_s=0.5, cache=served.ReplyCache(tmp_path))
        with pytest.raises(served.ServerFailed) as failed:
            scorer.score([image_question])
        assert len(scorer.cache) == 0  # nothing unusable is kept
        assert scorer.score([image_question])[0].logits.finite  # the next try gets its reply
    message = str(failed.value)
    assert message.startswith("spatial-tasks: openai_yesno: task t, doc 7: ") and said in message, message
    assert "\n" not in message


@pytest.mark.slow
def test_kill_9_then_the_same_command_sends_only_the_missing_questions(answering_qwen_dir, reference, tmp_path):
    cache = tmp_path / "cache"
    with LogprobServer(answering_qwen_dir, kind="vllm", latency_s=0.02) as server:
        argv = [LMMS_EVAL, "--model", "openai_yesno", "--model_args", _args(server, cache, num_concurrent=2),
                "--tasks", TASK, "--output_path", str(tmp_path / "out"), "--log_samples"]
        proc = subprocess.Popen(argv, env=run_env(), cwd=tmp_path, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 240
            while server.scored() < 100 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with sqlite3.connect(cache / "replies.sqlite3") as db:
            kept = db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
        assert 100 <= server.scored() < 256 and 0 < kept <= server.scored()
        before = server.scored()
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, cache, num_concurrent=2), TASK)
        resent = server.scored() - before
    assert resent == 256 - kept  # only the missing questions
    want, got = _p_by_question(reference), _p_by_question(run)
    assert set(got) == set(want) and max(abs(got[q] - want[q]) for q in want) < 1e-4


def test_the_cache_answers_only_the_same_model_and_prompt(answering_qwen_dir, image_question, tmp_path):
    """Through the CLI: a second run is answered from the cache, another prompt is asked again. At
    the scorer: cache=off, and another model behind the same id, are asked again."""
    small, n = "spatialtunnel_logit_sample_size", 88
    cache = tmp_path / "cache"
    with LogprobServer(answering_qwen_dir, kind="vllm") as server:
        first = run_lmms_eval(tmp_path / "a", "openai_yesno", _args(server, cache), small)
        again = run_lmms_eval(tmp_path / "b", "openai_yesno", _args(server, cache), small)
        assert len(first.samples[small]) == n and server.scored() == n  # the second run: from the cache
        assert _p_by_question(again, small) == _p_by_question(first, small)
        run_lmms_eval(tmp_path / "c", "openai_yesno", _args(server, cache, system_prompt="Be brief."), small)
        assert server.scored() == 2 * n  # another prompt: asked again
        kept = served.ReplyCache(tmp_path / "unit")
        _scorer(server, cache=kept).score([image_question])
        _scorer(server, cache=kept).score([image_question])
        assert server.scored() == 2 * n + 1
        _scorer(server, cache=None).score([image_question])
        assert server.scored() == 2 * n + 2  # cache=off
    with LogprobServer(answering_qwen_dir, kind="vllm", root="/models/other-weights") as other:  # same id
        _scorer(other, cache=kept).score([image_question])
        assert other.scored() == 1  # another model behind the same id: never answered from the cache


def test_bad_settings_stop_before_any_question(answering_qwen_dir, tmp_path, capsys):
    """Each bad setting is one line, printed last, exit status 2, before any question is sent: the
    model built directly for each case, and one case through the CLI."""
    from spatial_tasks.models.openai_yesno import OpenAIYesNo

    with LogprobServer(answering_qwen_dir, kind="vllm") as server:
        base = {"model_version": "tiny", "base_url": server.base_url, "cache": str(tmp_path / "c")}
        cases = [
            ({"colour": "red"}, "unknown --model_args ['colour']"),
            ({"model_version": "other"}, "serves ['tiny'], not model_version='other'"),
            ({"dialect": "grpc"}, "dialect='grpc'"),
            ({"num_concurrent": "many"}, "num_concurrent='many'"),
            ({"yes_text": "Absolutely"}, "'Absolutely' is not a single token"),
            ({"base_url": "http://127.0.0.1:9/v1"}, "cannot reach the server at http://127.0.0.1:9/v1"),
            ({"base_url": "not-a-url"}, "base_url='not-a-url'"),
            ({"timeout": "-1"}, "timeout must be > 0"),
        ]
        for more, said in cases:
            with pytest.raises(served.ServerFailed) as failed:
                OpenAIYesNo(**{**base, **more})
            assert failed.value.code == 2 and said in str(failed.value), (more, str(failed.value))
            assert capsys.readouterr().err.strip().splitlines()[-1] == str(failed.value)
        run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, tmp_path / "c", colour="red"), TASK,
                            verbose=False)
        assert server.scored() == 0
    last = run.output.strip().splitlines()[-1]
    assert run.results is None and run.returncode == 2
    assert last == "spatial-tasks: openai_yesno: unknown --model_args ['colour']; it takes " + ", ".join(
        __import__("spatial_tasks.models.openai_yesno", fromlist=["x"]).KNOWN_ARGS)


def test_generation_tasks_run_through_lmms_evals_openai_model(openai_server, tmp_path):
    """O3-D, DORI and VAGUE (multiple choice and free form) through lmms-eval's own ``openai`` model."""
    from spatial_tasks.demo import offline_bertscore

    openai_server.responder = lambda body: "A"
    tasks = ("o3d_sample_markers", "dori_sample", "vague_sample_vlm", "vague_sample_freeform")
    args = (f"model_version=stub,base_url={openai_server.base_url},api_key=test,num_concurrent=2,"
            "max_retries=1,retry_backoff_s=0,httpx_trust_env=False")
    run = run_lmms_eval(tmp_path / "out", "openai", args, ",".join(tasks), env=offline_bertscore())
    assert run.results is not None, run.output[-3000:]
    scored = 0
    for task in run.samples:
        n = run.results["n-samples"][task]["effective"]
        assert len(run.samples[task]) == n > 0, task
        scored += n
        values = [v for k, v in run.results["results"][task].items() if "," in k and "stderr" not in k]
        assert all(isinstance(v, (int, float)) or v is None for v in values), (task, run.results["results"][task])
        assert any(isinstance(v, (int, float)) and math.isfinite(v) for v in values), task  # NaN only where undefined
    assert {t.split("_sample")[0] for t in run.samples} == {"o3d", "dori", "vague"}
    assert len(openai_server.requests) == scored
    assert sum("data:image" in json.dumps(body) for body in openai_server.requests) >= scored // 2


# --- the protocol's pieces -------------------------------------------------------------------------

LABELS = served.Labels(("Yes",), ("No",))


def test_a_label_outside_the_top_list_takes_its_last_value():
    both = served.Reading.from_top(LABELS, {"Yes": -0.5, "No": -1.5, "The": -3.0}, "Yes")
    assert (both.logits.logit_yes, both.logits.logit_no, both.censored) == (-0.5, -1.5, ())
    one = served.Reading.from_top(LABELS, {"Yes": -0.5, "The": -3.0}, "Yes")
    assert (one.logits.logit_no, one.censored) == (-3.0, ("No",))
    none = served.Reading.from_top(LABELS, {"The": -0.1, "A": -3.0}, "The")
    assert none.censored == ("Yes", "No") and none.logits.p_yes == 0.5
    variants = served.Labels(("Yes", " Yes"), ("No", " No"), rule="variants")
    summed = served.Reading.from_top(variants, {"Yes": math.log(0.3), " Yes": math.log(0.2), "No": math.log(0.1)}, "")
    assert summed.logits.logit_yes == pytest.approx(math.log(0.5)) and summed.censored == ()


def test_a_model_answering_in_lower_case_under_exact_is_said_in_the_closing_line():
    """Issue 44's kit: "yes"/"no" in lower case under answer_rule=exact gave p = 0.5 and no word. The
    reading names the spellings it saw, and the run's closing line says what reads them."""
    lower = served.Reading.from_top(LABELS, {"yes": -0.2, "no": -1.9, "The": -4.0}, "yes")
    assert lower.censored == ("Yes", "No") and lower.logits.p_yes == 0.5 and lower.other_spellings == ("yes", "no")
    plain = served.Reading.from_top(LABELS, {"The": -0.1, "A": -3.0}, "The")
    assert plain.other_spellings == ()
    variants = served.labels_by_text("Yes", "No", "variants")
    read = served.Reading.from_top(variants, {"yes": -0.2, "no": -1.9, "The": -4.0}, "yes")
    assert read.censored == () and read.other_spellings == () and read.logits.p_yes > 0.8
    scorer = served.Scorer(served.Server("http://127.0.0.1:9/v1", "m", {"id": "m"}, "other"),
                           served.dialect_for("top_logprobs", "m", LABELS), cache=None)
    line = scorer.summary([lower, plain, lower])
    assert line.endswith("3 with a censored label; 2 of them list a label only as 'no', 'yes': the model answers in a "
                         "spelling answer_rule=exact does not read (answer_rule=variants reads it)"), line


@pytest.mark.parametrize("reply, said", [
    ({}, "no choices"),
    ({"choices": [{"message": {"content": "Yes"}}]}, "no logprobs"),
    ({"choices": [{"logprobs": {"content": [{"token": "Yes", "top_logprobs": []}]}}]}, "no top_logprobs"),
    ({"choices": [{"logprobs": {"content": [{"token": "Yes", "top_logprobs": [{"token": "Yes", "logprob": "x"}]}]}}]},
     "not a number"),
    ({"choices": [{"logprobs": {"content": [{"token": "Yes", "top_logprobs": [{"token": "Yes", "logprob": 0.7}]}]}}]},
     "not a number <= 0"),
])
def test_malformed_replies_say_what_is_missing(reply, said):
    with pytest.raises(served.MalformedReply, match=said):
        served.dialect_for("top_logprobs", "m", LABELS).read(reply)


def test_each_dialect_owns_its_endpoint_body_and_reader():
    """Issue 45: one class per dialect; the scorer asks the dialect (url, body, read), and "auto" picks it from
    what the server says it is."""
    server = served.Server("http://127.0.0.1:9/v1", "m", {"id": "m"}, "vllm")
    labels = served.Labels(("Yes",), ("No",), (5,), (7,))
    made = {name: served.dialect_for(name, "m", labels, render_prompt=lambda q, n, s: q) for name in served.DIALECTS}
    assert {name: d.url(server) for name, d in made.items()} == {
        "top_logprobs": "http://127.0.0.1:9/v1/chat/completions", "vllm": "http://127.0.0.1:9/v1/chat/completions",
        "sglang": "http://127.0.0.1:9/generate"}
    assert "logprob_token_ids" in made["vllm"].body("q", []) and "logprob_token_ids" not in made["top_logprobs"].body("q", [])
    assert made["sglang"].body("q", [])["token_ids_logprob"] == [5, 7]
    auto = {kind: served.choose_dialect("auto", served.Server("http://127.0.0.1:9/v1", "m", {}, kind))
            for kind in ("vllm", "sglang", "other")}
    assert auto == {"vllm": "vllm", "sglang": "sglang", "other": "top_logprobs"}
    with pytest.raises(served.ServedError, match="dialect='grpc'"):
        served.dialect_for("grpc", "m", labels)


def test_vllm_dialect_needs_every_label_id():
    labels = served.Labels(("Yes",), ("No",), (7,), (8,))
    reply = {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [
        {"token": "token_id:7", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1}]}]}}]}
    with pytest.raises(served.MalformedReply, match="ignores logprob_token_ids"):
        served.dialect_for("vllm", "m", labels).read(reply)


def test_retry_after_and_backoff():
    assert served.retry_after_seconds("3") == 3.0 and served.retry_after_seconds(None) is None
    in_two = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 2))
    assert 0.5 < served.retry_after_seconds(in_two) <= 2.5
    policy = served.RetryPolicy(max_retries=5, backoff_s=1.0, max_wait_s=10)
    assert [policy.wait(n, None) for n in (1, 2, 3, 5)] == [1.0, 2.0, 4.0, 10]
    assert policy.wait(1, 30.0) == 10 and policy.wait(1, -5) == 0.0


def test_the_cache_key_covers_model_dialect_and_body():
    server = served.Server("http://h/v1", "m", {"id": "m", "root": "/w"}, "vllm")
    key = served.ReplyCache.key(server, "vllm", "b1")
    assert key == served.ReplyCache.key(served.Server("http://other/v1", "m", {"id": "m", "root": "/w"}, "vllm"), "vllm", "b1")
    assert len({key, served.ReplyCache.key(server, "top_logprobs", "b1"), served.ReplyCache.key(server, "vllm", "b2"),
                served.ReplyCache.key(served.Server("http://h/v1", "m", {"id": "m", "root": "/x"}, "vllm"), "vllm", "b1"),
                served.ReplyCache.key(served.Server("http://h/v1", "n", {"id": "m", "root": "/w"}, "vllm"), "vllm", "b1")}) == 5
    # issue 44: a server that names no weights is told apart by its address (two such servers, one model id)
    bare = served.Server("http://127.0.0.1:8000/v1", "m", {"id": "m"}, "other")
    elsewhere = served.Server("http://127.0.0.1:9000/v1", "m", {"id": "m"}, "other")
    assert served.ReplyCache.key(bare, "top_logprobs", "b1") != served.ReplyCache.key(elsewhere, "top_logprobs", "b1")
    url = "data:image/png;base64,AAAA"
    body = {"messages": [{"content": [{"image_url": {"url": url}}]}]}
    assert served.body_digest(body, {url: "d1"}) != served.body_digest(body, {url: "d2"})


def test_a_cache_of_another_layout_is_named_and_left_alone(tmp_path):
    """Issue 44: a reply cache whose table has another layout ended the run in a traceback (exit 0)."""
    path = tmp_path / "replies.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE replies (id INTEGER, body BLOB)")
    before = path.read_bytes()
    with pytest.raises(served.ServedError, match=r"replies\.sqlite3: its table 'replies' has the columns \['id', "
                                                 r"'body'\], not \['key', 'reply', 'saved'\] \(not a spatial-tasks"):
        served.ReplyCache(tmp_path)
    assert path.read_bytes() == before
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "replies.sqlite3").write_text("not a database at all")
    with pytest.raises(served.ServedError, match="cannot use the reply cache .*other/replies.sqlite3: "):
        served.ReplyCache(tmp_path / "other")


@pytest.mark.parametrize("stored", ["{not json", json.dumps({"choices": []})])
def test_a_stored_reply_that_does_not_read_is_asked_again(stored, answering_qwen_dir, image_question, tmp_path):
    """Issue 44: a stored reply that is not JSON (or not this dialect's reply) ended the run in a
    traceback; now the question is asked again, its new reply replaces the old one, and it is said."""
    from loguru import logger

    said: list[str] = []
    sink = logger.add(lambda m: said.append(str(m)), level="WARNING")
    try:
        with LogprobServer(answering_qwen_dir, kind="vllm") as server:
            cache = served.ReplyCache(tmp_path)
            want = _scorer(server, cache=cache).score([image_question])[0]
            cache.db.execute("UPDATE replies SET reply = ?", (stored,))
            again = _scorer(server, cache=served.ReplyCache(tmp_path)).score([image_question])[0]
            assert server.scored() == 2 and again.logits.logit_yes == want.logits.logit_yes
            third = _scorer(server, cache=served.ReplyCache(tmp_path))
            third.score([image_question])
            assert server.scored() == 2 and third.answered_from_cache == 1  # the replaced reply reads again
    finally:
        logger.remove(sink)
    assert sum("1 stored replies did not read" in m for m in said) == 1
