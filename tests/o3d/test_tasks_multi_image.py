"""The ICL+CoT prompt in lmms-eval's SIMPLE qwen2_5_vl (``--force_simple``): with
``interleave_visuals=True`` it puts each image at its ``<image N>`` placeholder; without it the
images come first and the placeholders stay as labels. Runs the real model class in-process on
the tiny random Qwen2.5-VL and captures the chat messages it builds."""

from __future__ import annotations

import datasets
import pytest

from spatial_tasks.harness import TaskData, load_docs
from spatial_tasks.o3d import tasks as T
from spatial_tasks.paths import benchmark_tasks_dir

TASK = "o3d_sample_icl_cot"


@pytest.fixture(scope="module")
def icl_docs() -> datasets.Dataset:
    """The task's docs, from its YAML, outside lmms-eval (the seam's plain-script path)."""
    data, hook = TaskData.from_yaml(benchmark_tasks_dir("o3d") / f"{TASK}.yaml")
    return load_docs(data, hook)


def _messages_built(tiny_qwen_dir, docs, interleave: bool) -> list:
    from lmms_eval.api.instance import Instance
    from lmms_eval.models.simple.qwen2_5_vl import Qwen2_5_VL

    model = Qwen2_5_VL(pretrained=str(tiny_qwen_dir), device="cpu", device_map="cpu", min_pixels=3136,
                       max_pixels=50176, interleave_visuals=interleave)
    model.task_dict = {TASK: {"train": docs}}
    seen = []
    original = model.processor.apply_chat_template

    def capture(messages, *args, **kwargs):
        seen.extend(messages)
        return original(messages, *args, **kwargs)

    model.processor.apply_chat_template = capture
    gen = {"max_new_tokens": 2, "temperature": 0, "do_sample": False}
    request = Instance(request_type="generate_until", idx=0, metadata={"task": TASK, "doc_id": 0, "repeats": 1},
                       arguments=(T.doc_to_text_icl(docs[0]), gen, T.doc_to_visual_icl, 0, TASK, "train"))
    (response,) = model.generate_until([request])
    assert isinstance(response, str)
    return seen


@pytest.mark.slow
def test_simple_qwen_interleaves_the_icl_images_at_their_placeholders(tiny_qwen_dir, icl_docs):
    (conversation,) = _messages_built(tiny_qwen_dir, icl_docs, interleave=True)
    user = conversation[-1]["content"]
    assert [part["type"] for part in user] == ["image", "text", "image", "text", "image", "text"]
    texts = [part["text"] for part in user if part["type"] == "text"]
    assert texts[0].count("(Let's think step by step.") == 1 and "<image" not in "".join(texts)
    assert texts[-1].strip() == icl_docs[0]["question"]


@pytest.mark.slow
def test_simple_qwen_without_interleaving_shows_the_images_first(tiny_qwen_dir, icl_docs):
    (conversation,) = _messages_built(tiny_qwen_dir, icl_docs, interleave=False)
    user = conversation[-1]["content"]
    assert [part["type"] for part in user] == ["image", "image", "image", "text"]
    assert user[-1]["text"].startswith("<image 1> ")  # the placeholders stay, as labels
