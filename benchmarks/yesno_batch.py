"""First-token Yes/No scoring vs lmms-eval's own generation: requests/s at batch size 1, 4 and 8.

    .venv/bin/python benchmarks/yesno_batch.py [--requests 48] [--pretrained PATH] [--device cpu|cuda]

``qwen2_5_vl_yesno`` (one forward pass per batch, logits of the last position) against lmms-eval's
``qwen2_5_vl`` answering the same SpatialTunnel-style requests by generation (greedy,
max_new_tokens 8, the exact-match task's setting), both at the same batch size. Without
``--pretrained`` it builds the tiny random Qwen2.5-VL (spatial_tasks.models.tiny_qwen): the
figures then measure the pipeline's overheads (image processing, padding), not a real model's
compute; pass a real checkpoint on a GPU machine for those. One warm-up batch per setting.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch
from lmms_eval.api.instance import Instance
from lmms_eval.models.simple.qwen2_5_vl import Qwen2_5_VL
from PIL import Image, ImageDraw

from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo
from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

TASK, SPLIT = "bench", "test"
QUESTIONS = ("Is the red object closer to the camera than the blue object?",
             "Is the blue object farther from the camera than the red object?",
             "Is the red object farther away than the blue one?",
             "Is the blue object nearer to the viewer than the red one?")


def _docs(n: int) -> list[dict]:
    docs = []
    for i in range(n):
        image = Image.new("RGB", (256, 256), (60 + i % 40, 60, 60))
        draw = ImageDraw.Draw(image)
        draw.ellipse([30 + i % 50, 120, 80 + i % 50, 170], fill=(220, 30, 30))
        draw.rectangle([150, 40 + i % 60, 190, 80 + i % 60], fill=(30, 30, 220))
        docs.append({"image": image, "question": QUESTIONS[i % 4] + " Answer with yes or no."})
    return docs


def _requests(docs: list[dict]) -> list[Instance]:
    out = []
    for i, doc in enumerate(docs):
        args = (doc["question"], {"max_new_tokens": 8, "temperature": 0, "do_sample": False},
                lambda d: [d["image"]], i, TASK, SPLIT)
        out.append(Instance(request_type="generate_until", arguments=args, idx=0,
                            metadata={"task": TASK, "doc_id": i, "repeats": 1}))
    return out


def _rate(model, requests: list[Instance], batch: int) -> float:
    model.generate_until(requests[:batch])  # warm-up
    start = time.perf_counter()
    model.generate_until(requests)
    return len(requests) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--pretrained", default=None, help="a Qwen2.5-VL checkpoint (default: the tiny random one)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = args.pretrained or str(build_tiny_qwen2_5_vl(Path(tmp) / "tiny", seed=0))
        docs = _docs(args.requests)
        requests = _requests(docs)
        common = {"device": args.device, "device_map": args.device, "min_pixels": 3136, "max_pixels": 50176}
        print(f"{args.requests} requests, 256 x 256 images, {'tiny random Qwen2.5-VL' if not args.pretrained else pretrained}, "
              f"device {args.device}, torch threads {torch.get_num_threads()}")
        print(f"{'batch':>5} {'yes/no logits req/s':>20} {'qwen2_5_vl generation req/s':>28} {'ratio':>6}")
        for batch in (1, 4, 8):
            rates = []
            for cls in (Qwen2_5_VLYesNo, Qwen2_5_VL):
                model = cls(pretrained=pretrained, batch_size=batch, **common)
                model.task_dict = {TASK: {SPLIT: docs}}
                rates.append(_rate(model, requests, batch))
                del model
            print(f"{batch:>5} {rates[0]:>20.2f} {rates[1]:>28.2f} {rates[0] / rates[1]:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
