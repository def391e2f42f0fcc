"""Seconds per first-token question against a running server, by image size (the .ci/vllm lane's figures).

    .venv/bin/python benchmarks/served_latency.py --base-url http://127.0.0.1:PORT/v1 [--sizes 224 512]
        [--questions 16] [--concurrency 1 8] [--dialect vllm]

Each question asks about an image of its own (random pixels, so no server-side image cache answers
it), ``--sizes`` pixels square, through ``spatial_tasks.models.served.Scorer`` with no reply cache:
what ``openai_yesno`` does per question. Prints, per size and number in flight, the wall seconds per
question and questions per second, the server included (unlike benchmarks/server_throughput.py,
which measures our client against a server of fixed latency). One warm-up question per size runs
first and is not counted.
"""

from __future__ import annotations

import argparse
import time

import httpx
import numpy as np
from PIL import Image

from spatial_tasks.models import served
from spatial_tasks.models.lmms_requests import image_key


def _questions(side: int, n: int, seed: int) -> list[served.Question]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        image = Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8))
        out.append(served.Question(f"{side} px question {i}", "Is the red object closer to the camera than the blue "
                                   "one? Answer with yes or no.", [image_key(image)], lambda image=image: [image]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the server's OpenAI-compatible root, ending in /v1")
    parser.add_argument("--model", default=None, help="model id (default: the one the server serves)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[224, 512], help="image sides in pixels")
    parser.add_argument("--questions", type=int, default=16, help="questions per size and concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--dialect", choices=served.DIALECTS, default="vllm")
    args = parser.parse_args()

    with httpx.Client(trust_env=False, timeout=60) as client:
        model = args.model or client.get(args.base_url.rstrip("/") + "/models").json()["data"][0]["id"]
        found = served.discover(client, args.base_url, model)
        labels = served.labels_from_tokenizer(served.ServerTokenizer(client, found.root, found.model_version),
                                              "Yes", "No", "exact")
    print(f"server {args.base_url}, model {found.model_version!r}, dialect {args.dialect}, "
          f"{args.questions} questions each, one image per question")
    print("| image | in flight | s per question | questions/s |\n|---:|---:|---:|---:|")
    seed = 0
    for side in args.sizes:
        for concurrency in args.concurrency:
            scorer = served.Scorer(found, served.dialect_for(args.dialect, found.model_version, labels),
                                   num_concurrent=concurrency, cache=None)
            seed += 1
            scorer.score(_questions(side, 1, seed=1000 + seed))  # warm-up: not counted
            questions = _questions(side, args.questions, seed=seed)
            started = time.perf_counter()
            readings = scorer.score(questions)
            took = time.perf_counter() - started
            assert len(readings) == len(questions) and all(r.logits.finite for r in readings)
            print(f"| {side} px | {concurrency} | {took / len(questions):.3f} | {len(questions) / took:.1f} |")


if __name__ == "__main__":
    main()
