"""A real vLLM in the loop (the ``.ci/vllm`` lane; skipped elsewhere).

The lane builds a random checkpoint (``spatial-tasks tiny-model --shape served``), serves it with
vLLM's CPU build on 127.0.0.1 in float32, and runs this file with

    SPATIAL_TASKS_VLLM_URL=http://127.0.0.1:PORT/v1      the server
    SPATIAL_TASKS_VLLM_CHECKPOINT=FOLDER                 the checkpoint it serves
    SPATIAL_TASKS_VLLM_DTYPE=float32|bfloat16            the dtype it serves in (default float32)
    SPATIAL_TASKS_VLLM_ANSWERING=1                       it is an answering checkpoint (tests/answering.py)

Everything goes through the real lmms-eval CLI: ``openai_yesno`` in each dialect against
``hf_yesno`` on the same checkpoint in-process, censoring, ``kill -9`` and resume, and lmms-eval's own
``openai`` model on the generation sample tasks. Questions the server answered are counted by the
server itself (vLLM's ``/metrics``), not by our client. Run the tests one at a time (``-n 0``): they
read that counter before and after each run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from lmms import LMMS_EVAL, run_env, run_lmms_eval

URL = os.environ.get("SPATIAL_TASKS_VLLM_URL", "")
CHECKPOINT = os.environ.get("SPATIAL_TASKS_VLLM_CHECKPOINT", "")
# The dtype the server runs in (vLLM --dtype), and hf_yesno with it. float32: the two agree to 1e-4
# (measured: to ~1e-6). bfloat16 keeps 8 bits of mantissa and the two implementations round at other
# places (fused kernels, attention): their p differ by a few 1e-3, so the stated tolerance is 2e-2.
DTYPE = os.environ.get("SPATIAL_TASKS_VLLM_DTYPE", "float32")
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}[DTYPE]
# The served checkpoint answers Yes or No (tests/answering.py): both labels lead its ranking, so a
# top-20 reply lists them. A plain random model's labels are outside its top 20 on every question.
ANSWERING = os.environ.get("SPATIAL_TASKS_VLLM_ANSWERING") == "1"
SLACK = {"float32": 1e-6, "bfloat16": 2e-2}[DTYPE]  # on a censored label's bound
PHASE, SIZE = "spatialtunnel_logit_sample_phase", "spatialtunnel_logit_sample_size"  # 256 and 88 questions
QUESTIONS = {PHASE: 256, SIZE: 88}
SPATIAL_TASKS = str(Path(LMMS_EVAL).with_name("spatial-tasks"))

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not URL, reason="needs a real vLLM: run bash .ci/vllm")]


@pytest.fixture(scope="module")
def server() -> dict:
    """The served model's identity (``/v1/models``), checked to be vLLM on this machine."""
    assert urlsplit(URL).hostname == "127.0.0.1", f"SPATIAL_TASKS_VLLM_URL={URL!r}: a local server only"
    assert CHECKPOINT and Path(CHECKPOINT, "config.json").is_file(), "SPATIAL_TASKS_VLLM_CHECKPOINT: the served folder"
    (model,) = httpx.get(URL.rstrip("/") + "/models", trust_env=False).json()["data"]
    assert model["owned_by"] == "vllm", model
    return model


def answered() -> int:
    """Requests the server has finished (vLLM's own counter, every finish reason)."""
    text = httpx.get(URL.rstrip("/").removesuffix("/v1") + "/metrics", trust_env=False).text
    return round(sum(float(v) for v in re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text, re.MULTILINE)))


def _args(server: dict, cache: Path, **more: object) -> str:
    args = {"model_version": server["id"], "base_url": URL, "num_concurrent": 4, "cache": str(cache), **more}
    return ",".join(f"{k}={v}" for k, v in args.items())


def _records(run, task: str) -> dict[str, dict]:
    return {s["v"]["question_id"]: s["v"] for s in run.samples[task]}


@pytest.fixture(scope="module")
def in_process(lmms_run) -> dict:
    """``hf_yesno`` on the served checkpoint in the server's dtype: {task: {question: record}}."""
    run = lmms_run("hf_yesno", f"pretrained={CHECKPOINT},device=cpu,dtype={DTYPE}", f"{PHASE},{SIZE}")
    assert run.results is not None, run.output[-3000:]
    return {task: _records(run, task) for task in QUESTIONS}


@pytest.fixture(scope="module")
def served_runs(server, tmp_path_factory):
    """``served_runs(dialect)``: one openai_yesno run of both logit tasks, made once per module, with
    the requests the server answered during it."""
    made: dict[str, tuple] = {}

    def run(dialect: str):
        if dialect not in made:
            folder = tmp_path_factory.mktemp(f"served_{dialect}")
            before = answered()
            done = run_lmms_eval(folder / "out", "openai_yesno", _args(server, folder / "cache", dialect=dialect),
                                 f"{PHASE},{SIZE}")
            made[dialect] = (done, answered() - before)
        return made[dialect]

    return run


@pytest.mark.parametrize("dialect", ["vllm", "auto", "top_logprobs"])
def test_served_scores_equal_in_process_scores(dialect, served_runs, in_process):
    """Every question's p equals hf_yesno's to 1e-4 (float32, same checkpoint; bfloat16: TOLERANCE);
    each question is one request the server answered. Under top_logprobs a censored label is a bound
    on the exact value and moves p only the way that bound allows."""
    if dialect == "top_logprobs" and not ANSWERING:
        pytest.skip("a random model's labels are outside its top 20 (every question censored): the lane compares "
                    "top_logprobs on an answering checkpoint, and checks censoring here")
    run, requests = served_runs(dialect)
    assert run.results is not None, run.output[-3000:]
    assert requests == sum(QUESTIONS.values())
    gaps = []
    for task, n in QUESTIONS.items():
        want, got = in_process[task], _records(run, task)
        assert set(got) == set(want) and len(run.samples[task]) == n
        assert max(r["p_yes"] for r in want.values()) - min(r["p_yes"] for r in want.values()) > 0.01
        for question, record in got.items():
            payload, truth = json.loads(record["response"]), want[question]
            assert payload["dialect"] == ("top_logprobs" if dialect == "top_logprobs" else "vllm")
            censored = record["censored"]
            if not censored:  # log-probabilities are log softmax: the same up to the normaliser
                gaps.append(abs(record["p_yes"] - truth["p_yes"]))
                assert gaps[-1] < TOLERANCE, (task, question, record, truth)
                assert abs(record["label_mass"] - truth["label_mass"]) < TOLERANCE, (task, question)
            elif censored == ["No"]:
                assert record["p_yes"] <= truth["p_yes"] + SLACK
                assert record["label_mass"] <= truth["label_mass"] + SLACK
            elif censored == ["Yes"]:
                assert record["p_yes"] >= truth["p_yes"] - SLACK
                assert record["label_mass"] <= truth["label_mass"] + SLACK
            else:
                assert censored == ["No", "Yes"] and record["p_yes"] == 0.5
                assert record["label_mass"] <= truth["label_mass"] + SLACK  # a lower bound
    assert gaps, "every question censored: nothing to compare"
    # the lane prints this line (pytest -s): docs/served.md's agreement figures
    print(f"\nagreement: {DTYPE}, dialect {dialect}: max |p_served - p_in_process| {max(gaps):.1e} over {len(gaps)} "
          f"questions (median {sorted(gaps)[len(gaps) // 2]:.1e})")


def test_censoring_appears_where_a_label_is_outside_the_top_20_and_is_counted(served_runs, in_process):
    """A random model puts Yes or No far down its ranking: the top-20 reply leaves them out, each such
    sample names the label, and the closing line and rescore count them."""
    if ANSWERING:
        pytest.skip("an answering checkpoint lists both labels in its top 20")
    run, _ = served_runs("top_logprobs")
    exact, _ = served_runs("vllm")
    censored = {task: {q: r["censored"] for q, r in _records(run, task).items() if r["censored"]} for task in QUESTIONS}
    total = sum(len(c) for c in censored.values())
    assert total > 0, "a random model should leave a label out of its top 20"
    for task in QUESTIONS:
        values = _records(exact, task)
        for question, labels in censored[task].items():
            payload = json.loads(values[question]["response"])
            bound = json.loads(_records(run, task)[question]["response"])
            for label in labels:  # the exact value is below the 20th value the top-20 reply gave instead
                key = "logit_yes" if label == "Yes" else "logit_no"
                assert payload[key] <= bound[key] + 1e-4
    lines = [line for line in run.output.splitlines() if "with a censored label" in line]
    assert sum(int(re.search(r"(\d+) with a censored label", line).group(1)) for line in lines) == total, lines
    rescored = json.loads(subprocess.run([SPATIAL_TASKS, "rescore", "spatialtunnel", str(run.out), "--json"],
                                         capture_output=True, text=True, check=True).stdout)
    (figures,) = rescored["runs"].values()
    assert {task: figures["tasks"][task]["n_censored"] for task in QUESTIONS} == {t: len(c) for t, c in censored.items()}


def test_kill_9_then_the_same_command_sends_only_the_missing_questions(server, in_process, tmp_path):
    cache = tmp_path / "cache"
    argv = [LMMS_EVAL, "--model", "openai_yesno", "--model_args", _args(server, cache, num_concurrent=1),
            "--tasks", PHASE, "--output_path", str(tmp_path / "out"), "--log_samples"]
    start = answered()
    proc = subprocess.Popen(argv, env=run_env(), cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while answered() - start < 40 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(1)  # a request in flight at the kill still finishes on the server
    with sqlite3.connect(cache / "replies.sqlite3") as db:
        kept = db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
    assert 40 <= kept < 256, kept
    before = answered()
    run = run_lmms_eval(tmp_path / "out", "openai_yesno", _args(server, cache), PHASE)
    assert answered() - before == 256 - kept  # only the missing questions, counted by the server
    assert f"256 questions: {256 - kept} requests sent, {kept} answered from the cache" in run.output
    got = _records(run, PHASE)
    assert set(got) == set(in_process[PHASE])
    assert max(abs(got[q]["p_yes"] - in_process[PHASE][q]["p_yes"]) for q in got) < 1e-4


GENERATION = ("o3d_sample_markers", "dori_sample", "vague_sample_vlm", "vague_sample_freeform",
              "spatialtunnel_embspatial_depth_split_sample")


def test_lmms_evals_own_openai_model_answers_every_doc(server, tmp_path):
    """O3-D, DORI, VAGUE (multiple choice and free form) and a SpatialTunnel re-split, generated by the
    real server through lmms-eval's ``openai`` model: every doc answered once, none failed, and the
    results files hold every doc."""
    from spatial_tasks.demo import offline_bertscore

    before = answered()
    args = f"model_version={server['id']},base_url={URL},api_key=EMPTY,num_concurrent=4,max_retries=1,httpx_trust_env=False"
    run = run_lmms_eval(tmp_path / "out", "openai", args, ",".join(GENERATION), env=offline_bertscore(), timeout=1800)
    assert run.results is not None, run.output[-3000:]
    assert set(run.samples) == set(GENERATION)
    docs = 0
    for task in GENERATION:
        n = run.results["n-samples"][task]
        assert n["effective"] == n["original"] == len(run.samples[task]) > 0, (task, n)
        replies = [json.dumps(s.get("resps", s["filtered_resps"])) for s in run.samples[task]]
        assert not [r for r in replies if "LMMS_EVAL_REQUEST_FAILED" in r], task  # lmms-eval's failed request
        docs += n["effective"]
    assert answered() - before == docs
