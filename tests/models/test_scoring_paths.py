"""The scoring paths as strategies of one interface, chosen once per run (issue 53, item 1): the
choice's rules, each class's declared paths backed by their hooks, the choice logged and recorded
in a real run's config, and no class of the models package over 15 methods. (That every path a
family offers equals one by one, float32 logits to 1e-5, is ``tests/scoring.check_batch_invariance``,
run over every family by test_families.py and every twin by test_lmms_yesno.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from spatial_tasks.models import families
from spatial_tasks.models.scoring_paths import (
    GROUPED,
    ONE_BY_ONE,
    PACKED,
    PADDED,
    PREPARED_ONCE,
    SHARED_PREFIX,
    STRATEGIES,
    choose,
)

QWEN = (PACKED, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)
MODELS = Path(families.__file__).parent


def _choose(offered=QWEN, **given):
    args = {"packed": "auto", "group_images": True, "share_prefix": True, "packs_by_default": True, "block_mask": True}
    return choose(offered, **{**args, **given})


@pytest.mark.parametrize(("given", "order"), [
    ({}, QWEN),
    ({"packs_by_default": False}, (SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)),
    ({"packed": False}, (SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)),
    ({"packed": True, "group_images": False}, (PACKED, PADDED, ONE_BY_ONE)),
    ({"group_images": False}, (PADDED, ONE_BY_ONE)),  # packed=auto packs only where images are grouped
    ({"share_prefix": False}, (PACKED, GROUPED, PADDED, ONE_BY_ONE)),
    ({"block_mask": False}, (SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)),
])
def test_the_arguments_choose_the_path_and_the_fallbacks(given, order):
    choice = _choose(**given)
    assert choice.order == order and choice.path == order[0]
    assert choice.line("m").startswith(f"m: scoring path {order[0]} (offered: packed > shared_prefix > grouped")


def test_a_family_without_a_pipeline_or_features_gets_the_basic_paths():
    assert _choose(offered=(PREPARED_ONCE, PADDED, ONE_BY_ONE)).order == (PREPARED_ONCE, PADDED, ONE_BY_ONE)
    assert _choose(offered=(PREPARED_ONCE, PADDED, ONE_BY_ONE), block_mask=False).path == PREPARED_ONCE
    assert _choose(offered=()).order == (ONE_BY_ONE,)  # a Hub-code adapter prepares one prompt at a time
    dropped = _choose().without(PACKED, "image_token_pooling: values differ")
    assert dropped.path == SHARED_PREFIX and dropped.recorded("m")["dropped"] == [
        "packed: image_token_pooling: values differ"]


def test_every_family_is_one_entry_whose_paths_are_known_and_end_in_the_basic_ones():
    for family in families.FAMILIES.values():
        assert set(family.paths) <= set(STRATEGIES) and family.paths[-2:] == (PADDED, ONE_BY_ONE), family
    assert families.family_of("a_family_nobody_listed").paths == (PADDED, ONE_BY_ONE)


def test_each_class_implements_the_hooks_of_the_paths_its_entry_declares():
    """Issue 66, item 2: the paths an id implements stand in its one entry (``model_table``); its host class
    has each of their hooks."""
    import importlib

    from spatial_tasks.models.model_table import MODEL_TABLE

    scorers = [entry for entry in MODEL_TABLE.values() if entry.paths]
    assert {e.id for e in scorers} == {"qwen2_5_vl_yesno", "hf_yesno", "qwen3_vl_yesno", "gemma3_yesno", "llava_hf_yesno"}
    for entry in scorers:
        module, name = entry.host.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), name)
        for path in entry.paths:
            missing = [hook for hook in STRATEGIES[path].needs if not callable(getattr(cls, hook, None))]
            assert not missing, f"{entry.id} declares {path} without {missing}"


def test_no_class_in_the_models_package_has_more_than_15_methods():
    big = []
    for path in sorted(MODELS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                count = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                if count > 15:
                    big.append(f"{path.name}:{node.name} ({count})")
    assert not big, big


def test_a_hook_that_cannot_serve_raises_and_its_questions_go_to_the_next_path(tiny_family_dirs):
    """A prepare hook that cannot take a batch raises ``PathUnavailable`` (never returns None); the path hands
    those questions to the next one, which scores them as one at a time does (issue 66 item 6: this was a
    grep of the source)."""
    import torch
    from PIL import Image

    from spatial_tasks.models.hf_yesno import HFYesNo
    from spatial_tasks.models.scoring_paths import PathUnavailable

    model = HFYesNo(pretrained=str(tiny_family_dirs("qwen2_5_vl")), device="cpu", dtype="float32")
    items = [("<image>Is the square red? Answer Yes or No.", [Image.new("RGB", (56, 56), "red")]),
             ("Is the sky blue? Answer Yes or No.", [])]  # one prompt without an image beside one with
    with pytest.raises(PathUnavailable, match="without an image"):
        model.yesno_prepare_batch(items)
    handed_on = model.score_items(items, 2, paths=(PADDED, ONE_BY_ONE))
    alone = model.score_items(items, 1, paths=(ONE_BY_ONE,))
    assert torch.allclose(torch.tensor([s.p_yes for s in handed_on]), torch.tensor([s.p_yes for s in alone]), atol=1e-6)


def test_a_real_run_logs_its_path_in_one_line_and_records_it_in_its_config(lmms_run, tiny_family_dirs):
    run = lmms_run("hf_yesno", f"pretrained={tiny_family_dirs('qwen3_vl')},device=cpu,dtype=float32",
                   "spatialtunnel_logit_sample_phase", "--batch_size", "4")
    assert run.results is not None, run.output[-3000:]
    recorded = run.results["configs"]["spatialtunnel_logit_sample_phase"]["metadata"]["spatial_tasks_scoring"]
    assert recorded["model"] == "hf_yesno" and recorded["path"] == PACKED  # packed=auto on a CPU in float32
    assert recorded["fallbacks"] == [GROUPED, PADDED, ONE_BY_ONE] and "packed=auto" in recorded["reason"]
    lines = [line for line in run.output.splitlines() if "hf_yesno: scoring path " in line]
    assert len(lines) == 1 and "fallbacks: grouped, padded, one_by_one" in lines[0], lines


def test_a_path_subclasses_another_only_when_it_is_one():
    """The shared-prefix path is the grouped path with a forward that shares prompt prefixes (and falls back
    to the grouped forward when no image is asked about twice): it is a kind of grouped. The prepared-once
    pipeline does not pack, so it is not a kind of packed; the two share a base that is no path."""
    kinds = {(a.name, b.name) for a in STRATEGIES.values() for b in STRATEGIES.values()
             if a is not b and issubclass(a, b)}
    assert kinds == {(SHARED_PREFIX, GROUPED)}


def test_list_models_prints_each_id_by_family_with_the_paths_it_offers():
    """Issue 66, item 2: ``spatial-tasks list --models``: per id and family the paths offered (the family's
    that the id implements, fastest first): the Qwen3-VL twin groups but does not pack, hf_yesno packs it."""
    import subprocess

    from lmms import SPATIAL_TASKS

    from spatial_tasks.harness import MODELS, YESNO_TWINS
    from spatial_tasks.models.model_table import MODEL_TABLE

    out = subprocess.run([SPATIAL_TASKS, "list", "--models"], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert "qwen3_vl_yesno x qwen3_vl_moe: grouped, padded, one_by_one" in lines
    assert "hf_yesno x qwen3_vl_moe: packed, grouped, padded, one_by_one" in lines
    assert "hf_yesno x gemma3: prepared_once, padded, one_by_one" in lines
    assert "vllm_yesno: the engine's own scoring" in lines
    assert {line.split(" ")[0].rstrip(":") for line in lines} == set(MODEL_TABLE) == set(MODELS)
    assert set(YESNO_TWINS) == {"qwen2_5_vl", "qwen3_vl", "gemma3", "llava_hf"}  # derived from the entries


def test_the_scoring_record_is_handed_to_each_of_our_tasks_and_a_dropped_path_reaches_it():
    """Issue 66, item 2: the path choice reaches the run's config by a hand-off, not a module global: before
    lmms-eval evaluates, the seam gives each of our tasks the model's own record; the model updates it in
    place when it drops a path, so the task's config (what lmms-eval writes out) shows the final choice."""
    import subprocess
    import sys

    from spatial_tasks.paths import tasks_dir

    code = ("import json, types\n"
            "from lmms_eval.evaluator import TaskManager, get_task_dict\n"
            "from spatial_tasks.harness.before_run import hand_over_scoring\n"
            f"tm = TaskManager(include_path={str(tasks_dir() / 'spatialtunnel')!r}, include_defaults=False)\n"
            "tasks = get_task_dict(['spatialtunnel_logit_sample'], tm)\n"
            "lm = types.SimpleNamespace(scoring_record={'model': 'hf_yesno', 'path': 'packed'})\n"
            "hand_over_scoring(lm, tasks)\n"
            "lm.scoring_record.update(path='grouped', dropped=['packed'])  # what drop_path does, in place\n"
            "hand_over_scoring(types.SimpleNamespace(), tasks)  # a model without a record changes nothing\n"
            "leaves = [t for group in tasks.values() for t in (group.values() if isinstance(group, dict) else [group])]\n"
            "print(json.dumps(sorted((t.config.task, t.dump_config()['metadata']['spatial_tasks_scoring']['path'])"
            " for t in leaves)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == (
        '[["spatialtunnel_logit_sample_phase", "grouped"], ["spatialtunnel_logit_sample_size", "grouped"]]')
