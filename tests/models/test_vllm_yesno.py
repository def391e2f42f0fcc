"""``vllm_yesno`` where vLLM is not installed (every CI machine): it says so in one line, its arguments
are checked before anything loads, and the engine's output is read as the served ``vllm`` dialect reads
a reply. The engine itself runs in the .ci/vllm lane (tests/engines/test_vllm_in_process.py: every
question against hf_yesno on the same checkpoint)."""

from __future__ import annotations

import importlib.util
import math
from types import SimpleNamespace

import pytest
from lmms import run_lmms_eval

LOGIT_TASK = "spatialtunnel_logit_sample_size"


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_run_stops_in_one_line_naming_the_way_to_install_it(tmp_path, tiny_qwen_dir):
    run = run_lmms_eval(tmp_path / "out", "vllm_yesno", f"model={tiny_qwen_dir}", LOGIT_TASK, "--limit", "2",
                        verbose=False)
    last = run.output.strip().splitlines()[-1]
    assert run.returncode == 2 and run.results is None, run.output[-2000:]
    assert last == ("spatial-tasks: vllm_yesno runs vLLM's engine in this process, and vLLM is not "
                    "installed here: install spatial-tasks beside vLLM (docs/served.md, 'Scoring through vLLM'), or serve "
                    "the model and use openai_yesno"), last


@pytest.mark.parametrize(("arg", "said"), [
    ("window=0", "window=0 in --model_args; it takes a whole number >= 1"),
    ("image_first=sideways", "image_first='sideways' in --model_args; it takes true or false"),
    ("dtype=float8", "dtype='float8' in --model_args; it takes bfloat16, float16, float32"),
])
def test_its_own_arguments_are_checked_before_vllm_loads(arg, said):
    from spatial_tasks.common.errors import RunStopped
    from spatial_tasks.models.vllm_yesno import VLLMYesNo

    with pytest.raises(RunStopped) as stop:
        VLLMYesNo.create_from_arg_string(f"model=/nowhere/needed,{arg}", {"batch_size": 1})
    assert str(stop.value) == f"spatial-tasks: vllm_yesno: {said}"


def _scorer(answer_rule: str = "exact"):
    """A VLLMYesNo with its label tokens set, as __init__ leaves it (no engine: only the reading is tested)."""
    from spatial_tasks.models import served
    from spatial_tasks.models.vllm_yesno import VLLMYesNo

    scorer = VLLMYesNo.__new__(VLLMYesNo)
    yes, no = ((9454,), (2753,)) if answer_rule == "exact" else ((9454, 9693), (2753, 902))
    scorer.labels = served.Labels(("Yes",) * len(yes), ("No",) * len(no), yes, no, answer_rule)
    scorer.engine = "vllm 0.32.0"
    return scorer


def _output(logprobs: dict[int, float], text: str = "Yes"):
    """What ``LLM.chat`` returns per request: outputs[0].logprobs[0] maps token id -> Logprob."""
    position = {token: SimpleNamespace(logprob=value, rank=1, decoded_token=None) for token, value in logprobs.items()}
    return SimpleNamespace(outputs=[SimpleNamespace(text=text, logprobs=[position])])


def _request():
    return SimpleNamespace(args=("ctx", {}, None, 7, LOGIT_TASK, "test"), idx=0)


def test_the_first_positions_label_logprobs_are_read_exactly_as_the_served_dialect_reads_them():
    from spatial_tasks.models import served

    reading = _scorer()._read(_request(), _output({9454: -0.5, 2753: -1.5, 151645: -3.0}))
    want = served.Reading.exact(_scorer().labels, {9454: -0.5, 2753: -1.5}, "Yes")
    assert reading == want and not reading.censored
    assert reading.logits.label_mass == pytest.approx(math.exp(-0.5) + math.exp(-1.5))
    variants = _scorer("variants")._read(_request(), _output({9454: -1.0, 9693: -2.0, 2753: -3.0, 902: -4.0}))
    assert variants.logits.logit_yes == pytest.approx(math.log(math.exp(-1.0) + math.exp(-2.0)))


def test_a_label_id_the_engine_did_not_return_names_the_doc_and_the_version():
    from spatial_tasks.common.errors import UserError

    with pytest.raises(UserError) as error:
        _scorer()._read(_request(), _output({9454: -0.5}))
    assert str(error.value) == (f"task {LOGIT_TASK}, doc 7: vLLM returned no logprob for the label token ids [2753]; "
                                "vllm 0.32.0 does not honour logprob_token_ids (0.32 and later do)")
