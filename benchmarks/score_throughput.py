"""First-token Yes/No scoring throughput: batch 1, batch 8 ungrouped, batch 8 grouped by image.

    .venv/bin/python benchmarks/score_throughput.py [--shape mid] [--images 12] [--device cpu]
    python benchmarks/score_throughput.py --shape 3b --device cuda --images 64      # on a GPU
    .venv/bin/python benchmarks/score_throughput.py --family gemma3                 # any family, "all" for each

``--family`` other than qwen2_5_vl (the default) scores with ``hf_yesno`` on a random "mid" build
of that family (spatial_tasks.models.tiny_models.SHAPES; each family's own image geometry), and
groups by image only where the family accepts precomputed image features (the Qwen families).

``qwen2_5_vl_yesno`` scores SpatialTunnel-shaped requests -- ``--images`` distinct 512 x 512
images, 4 questions each (the logit task asks 4 per image), as lmms-eval hands them over -- with
a randomly initialised Qwen2.5-VL of the given shape (spatial_tasks.models.tiny_qwen.SHAPES:
"mid" scales the 3B down so that a CPU run takes minutes; "3b" is the real architecture). With
``group_images`` each distinct image goes through the vision tower once and its features serve
all its questions ("grouped"); ``share_prefix`` (the scorer's default) also runs the prompt up to
the image once per image and only the question suffixes in a batch. Also checks that every
setting gives the logits of batch 1 (max |Δ|). Prints questions/s per setting and ends with
``grouped/ungrouped at batch 8: X.XXx`` (grouping by image alone, without prefix sharing).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch
from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.models import families
from spatial_tasks.models.hf_auto import HFYesNo
from spatial_tasks.models.hf_yesno import Qwen2_5_VLYesNo
from spatial_tasks.models.tiny_models import TINY_FAMILIES, build_tiny_model
from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

TASK, SPLIT = "bench", "test"
TEMPLATES = ("Is the {a} closer to the camera than the {b}?", "Is the {b} closer to the camera than the {a}?",
             "Is the {b} farther from the camera than the {a}?", "Is the {a} farther from the camera than the {b}?")


def _docs(images: int) -> list[dict]:
    docs = []
    for i in range(images):
        image = Image.new("RGB", (512, 512), (70 + i % 50, 70, 80))
        draw = ImageDraw.Draw(image)
        draw.ellipse([60 + 3 * i % 200, 300, 140 + 3 * i % 200, 380], fill=(220, 30, 30))
        draw.rectangle([320, 80 + 5 * i % 200, 380, 140 + 5 * i % 200], fill=(30, 30, 220))
        for template in TEMPLATES:
            question = template.format(a="red sphere", b="blue cube") + " Answer with yes or no."
            docs.append({"image": image, "question": question})
    return docs


def _requests(docs: list[dict]) -> list[Instance]:
    return [Instance(request_type="generate_until",
                     arguments=(doc["question"], {}, lambda d: [d["image"]], i, TASK, SPLIT), idx=0,
                     metadata={"task": TASK, "doc_id": i, "repeats": 1}) for i, doc in enumerate(docs)]


def _run(model: Qwen2_5_VLYesNo, requests: list[Instance]) -> tuple[float, list]:
    model.generate_until(requests[:8])  # warm-up
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = model.generate_until(requests)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return len(requests) / (time.perf_counter() - start), [decode_payload(r) for r in out]


def _measure(model_class, common: dict, settings: dict[str, dict], docs: list[dict],
             requests: list[Instance]) -> tuple[dict[str, float], dict[str, list]]:
    """Questions/s and the scores of each setting (one model loaded at a time)."""
    rates, scores = {}, {}
    for name, kwargs in settings.items():
        model = model_class(**common, **kwargs)
        model.task_dict = {TASK: {SPLIT: docs}}
        rates[name], scores[name] = _run(model, requests)
        del model
    return rates, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="mid", choices=["tiny", "mid", "3b"])
    parser.add_argument("--images", type=int, default=12, help="distinct images (4 questions each)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default=None, help="default: float32 on CPU, bfloat16 on CUDA")
    parser.add_argument("--attn", default="sdpa", help="attn_implementation (sdpa, eager, flash_attention_2)")
    parser.add_argument("--family", default="qwen2_5_vl", choices=[*TINY_FAMILIES, "all"],
                        help="model family (transformers model_type); 'all': each in turn")
    args = parser.parse_args()
    dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    docs = _docs(args.images)
    requests = _requests(docs)
    if args.family != "qwen2_5_vl":
        for family in (TINY_FAMILIES if args.family == "all" else [args.family]):
            _family_rates(family, docs, requests, args, dtype)
        return
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = str(build_tiny_qwen2_5_vl(Path(tmp) / args.shape, seed=0, shape=args.shape, dtype=dtype))
        common = {"pretrained": pretrained, "device": args.device, "device_map": args.device, "dtype": dtype,
                  "attn_implementation": args.attn, "max_pixels": 512 * 512}
        print(f"{len(requests)} questions on {args.images} distinct 512 x 512 images (4 each); random Qwen2.5-VL "
              f"shape {args.shape!r}, {dtype}, {args.attn}, device {args.device}, torch threads {torch.get_num_threads()}")
        settings = {"batch 1": dict(batch_size=1, group_images=False),
                    "batch 8 ungrouped": dict(batch_size=8, group_images=False),
                    "batch 8 grouped": dict(batch_size=8, group_images=True, share_prefix=False),
                    "batch 8 grouped, shared prefix": dict(batch_size=8, group_images=True, share_prefix=True)}
        rates, scores = _measure(Qwen2_5_VLYesNo, common, settings, docs, requests)
        for name, rate in rates.items():
            print(f"{name:>30}: {rate:8.2f} questions/s")
        for name in ("batch 8 ungrouped", "batch 8 grouped", "batch 8 grouped, shared prefix"):
            diff = max(max(abs(a.logit_yes - b.logit_yes), abs(a.logit_no - b.logit_no))
                       for a, b in zip(scores[name], scores["batch 1"], strict=True))
            print(f"max |Δ logit| {name} vs batch 1: {diff:.2e}")
    ungrouped = rates["batch 8 ungrouped"]
    print(f"grouped + shared prefix (the default)/ungrouped at batch 8: "
          f"{rates['batch 8 grouped, shared prefix'] / ungrouped:.2f}x")
    print(f"grouped/ungrouped at batch 8: {rates['batch 8 grouped'] / ungrouped:.2f}x")


def _family_rates(family: str, docs: list[dict], requests: list[Instance], args, dtype: str) -> None:
    """Ungrouped vs grouped questions/s of one family through hf_yesno (grouped only where it can)."""
    if args.shape != "mid":
        raise SystemExit(f"--family {family}: only the 'mid' shape is built for families other than qwen2_5_vl")
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = str(build_tiny_model(family, Path(tmp) / family, seed=0, shape="mid"))
        common = {"pretrained": pretrained, "device": args.device, "dtype": dtype, "attn_implementation": args.attn}
        settings = {"batch 1": dict(batch_size=1, group_images=False),
                    "batch 8 ungrouped": dict(batch_size=8, group_images=False)}
        if families.FAMILIES[family].grouping:
            settings["batch 8 grouped"] = dict(batch_size=8, group_images=True)
        rates, scores = _measure(HFYesNo, common, settings, docs, requests)
        diff = max(max(abs(a.logit_yes - b.logit_yes), abs(a.logit_no - b.logit_no))
                   for name in settings for a, b in zip(scores[name], scores["batch 1"], strict=True))
        grouped = (f"grouped {rates['batch 8 grouped']:7.2f} q/s ({rates['batch 8 grouped'] / rates['batch 8 ungrouped']:.2f}x)"
                   if "batch 8 grouped" in rates else "grouped: n/a (no precomputed image features)")
        print(f"{family:>16} mid, {dtype}, {args.device}, {len(requests)} questions on {args.images} images: "
              f"batch 1 {rates['batch 1']:7.2f} q/s, batch 8 ungrouped {rates['batch 8 ungrouped']:7.2f} q/s, "
              f"{grouped}; max |Δ logit| vs batch 1 {diff:.1e}")


if __name__ == "__main__":
    main()
