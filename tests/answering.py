"""A random checkpoint made to answer Yes or No: its "Yes" and "No" output rows become the two likeliest
first tokens (its likeliest token's row, scaled, plus noise of its own for each). A random model's
Yes and No sit far down its ranking, where a top-20 reply does not list them; this one's lead it, so a
``top_logprobs`` reply holds both and p can be compared exactly.

    .venv/bin/python tests/answering.py SOURCE_FOLDER OUT_FOLDER     # what the .ci/vllm lane runs
"""

from __future__ import annotations

import sys
from pathlib import Path


def make_answering(source: Path, out: Path) -> Path:
    """Write ``source`` with Yes/No made the likeliest first tokens to ``out`` (weights and processor)."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from spatial_tasks.models import families

    processor = AutoProcessor.from_pretrained(source)
    model = AutoModelForImageTextToText.from_pretrained(source, dtype=torch.float32)
    tokenizer = processor.tokenizer
    yes, no = (tokenizer.encode(w, add_special_tokens=False)[0] for w in ("Yes", "No"))
    head = model.get_output_embeddings().weight
    with torch.no_grad():
        inputs = families.chat_inputs(processor, [("Is the red object closer to the camera than the blue one?",
                                                    [Image.new("RGB", (128, 128), (90, 90, 90))])])
        top = model(**inputs).logits[0, -1].topk(2).indices.tolist()
        lead = head[top[0]].clone() * 4  # both labels well above every other token, apart by noise
        gen = torch.Generator().manual_seed(0)
        for token in (yes, no):
            head[token] = lead + 0.5 * lead.abs().mean() * torch.randn(lead.shape, generator=gen)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(make_answering(Path(sys.argv[1]), Path(sys.argv[2])))
