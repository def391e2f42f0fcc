"""p(Yes) through transformers' own ``pipeline("decision")``, given our exact prompt as its template.

transformers (5.23+) answers a yes/no ("noul") question from the next-token logits of the labels
"Yes" and "No", softmaxed: exactly the SpatialTunnel logit protocol's p = sigma(l_Yes - l_No). Its
prompt template can be replaced, so we hand it the one lmms-eval's ``qwen2_5_vl`` builds (system turn,
the image before the question, the generation prompt) and the image as lmms-eval sends it (JPEG data
URL, ``qwen_vl_utils`` resizing). An independent route to the same figure: the parity test
(tests/models/test_known_models.py) and ``benchmarks/engines.py`` compare it with ours.

    decide = decision_pipeline("spatial_tasks/spatialtunnel/known_models/checkpoints/shortcut")
    p_yes(decide, question_text, image)
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from spatial_tasks.models.lmms_requests import lmms_eval_image

IMAGE = "<image>"  # the asset placeholder in the state
# Qwen2.5-VL's chat format around the state's parts (the image block where IMAGE was, then the text).
QWEN2_5_VL_TEMPLATE = (
    "<|im_start|>system\n{{ system }}<|im_end|>\n<|im_start|>user\n"
    "{% if state is string %}{{ state }}{% else %}{% for part in state %}"
    "{% if part.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ part.text }}{% endif %}"
    # the generation prompt's newline printed, not literal: Jinja drops a template's last newline
    "{% endfor %}{% endif %}<|im_end|>\n<|im_start|>assistant{{ '\\n' }}"
)


def decision_pipeline(pretrained: str, system_prompt: str = "You are a helpful assistant."):
    """transformers' decision pipeline over a Qwen2.5-VL checkpoint, with our prompt as its template."""
    import torch
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration, pipeline
    from transformers.decision import DecisionConfig

    processor = AutoProcessor.from_pretrained(pretrained)
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(pretrained, dtype=torch.float32).eval()
    template = QWEN2_5_VL_TEMPLATE.replace("{{ system }}", system_prompt)
    config = DecisionConfig(chat_template=template, labels={"noul": ["Yes", "No"]})
    return pipeline("decision", model=model, tokenizer=processor.tokenizer, processor=processor,
                    decision_config=config)


def p_yes(decide: Any, text: str, image: Image.Image, **pixels: int) -> float:
    """p(Yes) of one prompt (the task's ``doc_to_text``) over one image."""
    request = {"state": IMAGE + text, "questions": {"answer": {"type": "noul", "instructions": text}},
               "assets": {IMAGE: lmms_eval_image(image, **pixels)}}
    return float(decide(request)["answer"]["noul"])
