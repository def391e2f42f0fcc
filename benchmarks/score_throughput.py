"""First-token Yes/No scoring throughput per setting, with where the time goes.

    .venv/bin/python benchmarks/score_throughput.py [--shape mid] [--images 12] [--device cpu]
    python benchmarks/score_throughput.py --shape 3b --device cuda --images 64      # on a GPU (benchmarks/gpu.sh)
    .venv/bin/python benchmarks/score_throughput.py --family gemma3                 # any family, "all" for each

``qwen2_5_vl_yesno`` scores SpatialTunnel-shaped requests -- ``--images`` distinct 512 x 512
images, 4 questions each (the logit task asks 4 per image), as lmms-eval hands them over -- with
a randomly initialised Qwen2.5-VL of the given shape (spatial_tasks.models.tiny_qwen.SHAPES:
"mid" scales the 3B down so that a CPU run takes minutes; "3b" is the real architecture). One
model is loaded; each setting is a set of its model args:

* batch 1; batch 8 ungrouped (padded batches, every image encoded per question);
* batch 8 grouped (each distinct image through the vision tower once);
* batch 8 grouped, shared prefix (also the prompt up to the image once per image, KV cache reused);
* batch 8 / batch 32 packed (``spatial_tasks.models.packed``: each image prepared once in a worker
  pool, one vision call and one language-model forward per window, the block mask).

Per setting it prints questions/s, the time per question of each stage (host stages in wall
time; device stages in device time from CUDA events, or wall time on a CPU), the max |Δ| of
l_Yes/l_No against batch 1, and how many argmax tokens agree with batch 1. It ends with two lines:

    input preparation: X ms CPU per question    (packed at batch 8: every CPU second spent
                                                 preparing inputs, the image pool's workers summed)
    packed/shared-prefix at batch 8: Y.YYx

``--family`` other than qwen2_5_vl scores with ``hf_yesno`` on a random "mid" build of that family
(spatial_tasks.models.tiny_models.SHAPES; each family's own image geometry).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.models import families
from spatial_tasks.models.families import FAMILIES, build_tiny_model
from spatial_tasks.models.hf_yesno import HFYesNo
from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo
from spatial_tasks.models.packed import PREPARE, Stages
from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

TASK, SPLIT = "bench", "test"
TEMPLATES = ("Is the {a} closer to the camera than the {b}?", "Is the {b} closer to the camera than the {a}?",
             "Is the {b} farther from the camera than the {a}?", "Is the {a} farther from the camera than the {b}?")
SETTINGS = {
    "batch 1": dict(batch_size=1, group_images=False, share_prefix=False, packed=False),
    "batch 8 ungrouped": dict(batch_size=8, group_images=False, share_prefix=False, packed=False),
    "batch 8 grouped": dict(batch_size=8, group_images=True, share_prefix=False, packed=False),
    "batch 8 shared prefix": dict(batch_size=8, group_images=True, share_prefix=True, packed=False),
    "batch 8 packed": dict(batch_size=8, group_images=True, share_prefix=False, packed=True),
    "batch 32 packed": dict(batch_size=32, group_images=True, share_prefix=False, packed=True),
}


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


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _run(model, requests: list[Instance], settings: dict) -> tuple[float, list, Stages]:
    """Questions/s, the scores and the stage times of one setting on the loaded model."""
    model.batch_size_per_gpu = settings["batch_size"]
    model.options = replace(model.options, **{k: settings[k] for k in ("group_images", "share_prefix", "packed")})
    model.scoring = model.choose_path()  # the path these settings choose, as a model loaded with them would
    model.stages = None
    model.generate_until(requests[:8])  # warm-up (kernels, allocator, the prefix cache)
    model.stages = Stages(model.model.device)
    _sync()
    start = time.perf_counter()
    out = model.generate_until(requests)
    _sync()
    rate = len(requests) / (time.perf_counter() - start)
    stages, model.stages = model.stages, None
    return rate, [decode_payload(r) for r in out], stages


def _breakdown(stages: Stages, n: int) -> str:
    seconds = stages.seconds()
    parts = [f"{name} {1000 * s / n:.2f}" for name, s in seconds.items()]
    if "prepare (workers)" in stages.cpu:
        parts.append(f"prepare (workers, CPU) {1000 * stages.cpu['prepare (workers)'] / n:.2f}")
    return ", ".join(parts) + " ms/q"


def _difference(scores: list, reference: list) -> tuple[float, int]:
    diff = max(max(abs(a.logit_yes - b.logit_yes), abs(a.logit_no - b.logit_no))
               for a, b in zip(scores, reference, strict=True))
    return diff, sum(a.text == b.text for a, b in zip(scores, reference, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="mid", choices=["tiny", "mid", "3b"])
    parser.add_argument("--images", type=int, default=12, help="distinct images (4 questions each)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default=None, help="default: float32 on CPU, bfloat16 on CUDA")
    parser.add_argument("--attn", default="sdpa", help="attn_implementation (sdpa, eager)")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help=f"comma-separated subset of: {', '.join(SETTINGS)} (batch 1 is always run)")
    parser.add_argument("--family", default="qwen2_5_vl", choices=[*FAMILIES, "all"],
                        help="model family (transformers model_type); 'all': each in turn")
    args = parser.parse_args()
    dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    docs = _docs(args.images)
    requests = _requests(docs)
    if args.family != "qwen2_5_vl":
        for family in (FAMILIES if args.family == "all" else [args.family]):
            _family_rates(family, docs, requests, args, dtype)
        return
    chosen = ["batch 1", *(s.strip() for s in args.settings.split(",") if s.strip() and s.strip() != "batch 1")]
    unknown = [s for s in chosen if s not in SETTINGS]
    if unknown:
        raise SystemExit(f"--settings: unknown {unknown}; choose from {', '.join(SETTINGS)}")
    with tempfile.TemporaryDirectory() as tmp:
        built = time.perf_counter()
        pretrained = str(build_tiny_qwen2_5_vl(Path(tmp) / args.shape, seed=0, shape=args.shape, dtype=dtype))
        model = Qwen2_5_VLYesNo(pretrained=pretrained, device=args.device, device_map=args.device, dtype=dtype,
                                attn_implementation=args.attn, max_pixels=512 * 512)
        model.task_dict = {TASK: {SPLIT: docs}}
        device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
        print(f"{len(requests)} questions on {args.images} distinct 512 x 512 images (4 each); random Qwen2.5-VL "
              f"shape {args.shape!r}, {dtype}, {args.attn}, {device}; torch {torch.__version__}, torch threads "
              f"{torch.get_num_threads()}, CPUs {os.cpu_count()}; built and loaded in {time.perf_counter() - built:.0f} s",
              flush=True)
        rates, scores, stages = {}, {}, {}
        for name in chosen:
            rates[name], scores[name], stages[name] = _run(model, requests, SETTINGS[name])
            diff, same = _difference(scores[name], scores["batch 1"])
            print(f"{name:>22}: {rates[name]:8.2f} q/s | max |Δ logit| vs batch 1 {diff:.2e}, argmax equal "
                  f"{same}/{len(requests)} | {_breakdown(stages[name], len(requests))}", flush=True)
    n = len(requests)
    for name in ("batch 8 packed", "batch 8 grouped"):
        if name in stages:
            cpu = stages[name].cpu
            spent = cpu[PREPARE] + cpu.get("prepare (workers)", 0.0)
            label = "" if name == "batch 8 packed" else f" ({name}, for comparison)"
            print(f"input preparation: {1000 * spent / n:.2f} ms CPU per question{label}")
    if "batch 8 packed" in rates and "batch 8 shared prefix" in rates:
        print(f"packed/shared-prefix at batch 8: {rates['batch 8 packed'] / rates['batch 8 shared prefix']:.2f}x")
    print(measured_entry(args, dtype, device, rates))


def measured_entry(args, dtype: str, card: str, rates: dict[str, float]) -> str:
    """The line to add to spatial_tasks/models/packed.py's MEASURED for this card: packed=auto packs
    there only if packing was the fastest batch-8 setting."""
    batch8 = {name.removeprefix("batch 8 "): rate for name, rate in rates.items() if name.startswith("batch 8 ")}
    if "packed" not in batch8:
        return "MEASURED: packed was not among the settings run; no entry to add"
    packs = batch8["packed"] >= max(batch8.values())
    figures = ", ".join(f"{name} {rate:.1f} q/s" for name, rate in sorted(batch8.items(), key=lambda kv: -kv[1]))
    kind = "cuda" if args.device.startswith("cuda") else args.device
    return (f'MEASURED entry to add: ("{kind}", torch.{dtype}): Measured({packs}, "{card}", '
            f'"{time.strftime("%Y-%m-%d")}", "{args.shape} shape, batch 8: {figures}"),')


def _family_rates(family: str, docs: list[dict], requests: list[Instance], args, dtype: str) -> None:
    """Batch 1, ungrouped, grouped (where the family takes image features) and packed questions/s of
    one family through hf_yesno, one model per setting."""
    if args.shape != "mid":
        raise SystemExit(f"--family {family}: only the 'mid' shape is built for families other than qwen2_5_vl")
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = str(build_tiny_model(family, Path(tmp) / family, seed=0, shape="mid"))
        common = {"pretrained": pretrained, "device": args.device, "dtype": dtype, "attn_implementation": args.attn}
        settings = {"batch 1": dict(batch_size=1, group_images=False, packed=False),
                    "batch 8 ungrouped": dict(batch_size=8, group_images=False, packed=False)}
        if families.FAMILIES[family].grouping:
            settings["batch 8 grouped"] = dict(batch_size=8, group_images=True, packed=False)
        settings["batch 8 packed"] = dict(batch_size=8, packed=True)  # Molmo2's entry offers no pipeline: padded
        rates, scores = {}, {}
        for name, kwargs in settings.items():
            model = HFYesNo(**common, **kwargs)
            model.task_dict = {TASK: {SPLIT: docs}}
            model.generate_until(requests[:8])
            start = time.perf_counter()
            scores[name] = [decode_payload(r) for r in model.generate_until(requests)]
            rates[name] = len(requests) / (time.perf_counter() - start)
            del model
        diff = max(_difference(scores[name], scores["batch 1"])[0] for name in settings)
        shown = ", ".join(f"{name} {rate:7.2f} q/s" for name, rate in rates.items())
        print(f"{family:>16} mid, {dtype}, {args.device}, {len(requests)} questions on {args.images} images: "
              f"{shown}; max |Δ logit| vs batch 1 {diff:.1e}")


if __name__ == "__main__":
    main()
