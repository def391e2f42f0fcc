"""Served first-token scoring: questions per second against a server of fixed latency.

    .venv/bin/python benchmarks/server_throughput.py [--latency 0.2] [--concurrency 1 4 16 64] [--dialect vllm]

A local server (``spatial_tasks.models.logprob_server`` without a model, in its own process) waits
``--latency`` seconds and answers every question with the same reply, so the figures measure the
client (``spatial_tasks.models.served.Scorer``: PNG encoding, request bodies, the cache key, the
HTTP connections, reading replies), not a model. For each concurrency: questions per second, the
ideal (concurrency / latency), the share of it reached, and the client's CPU milliseconds per
question (this process's CPU time, the server's excluded). The questions ask about 128 px images,
four questions per image, as SpatialTunnel does; no reply cache (it would answer the repeats).
Target (issue 31): at 16 in flight, at least 85 % of 16 / latency.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import httpx
from PIL import Image, ImageDraw

from spatial_tasks.models import served
from spatial_tasks.models.lmms_requests import image_key

TARGET_CONCURRENCY, TARGET_SHARE = 16, 0.85


def _questions(n: int) -> list[served.Question]:
    out = []
    for i in range(n):
        image = Image.new("RGB", (128, 128), (40 + (i // 4) % 200, 60, 90))
        draw = ImageDraw.Draw(image)
        draw.ellipse([10 + i % 40, 50, 40 + i % 40, 80], fill=(220, 40, 40))
        draw.rectangle([80, 20 + (i // 4) % 50, 110, 50 + (i // 4) % 50], fill=(40, 40, 220))
        out.append(served.Question(f"question {i}", f"Is the red object closer to the camera than the blue one? ({i % 4})",
                                   [image_key(image)], lambda image=image: [image]))
    return out


def _start_server(latency: float, kind: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "spatial_tasks.models.logprob_server", "--kind", kind,
                             "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"the local server did not start (it printed {line!r})")
    return proc, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server waits per question")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--dialect", choices=served.DIALECTS, default="vllm")
    parser.add_argument("--seconds", type=float, default=4.0, help="about how long each concurrency runs")
    args = parser.parse_args()
    kind = "sglang" if args.dialect == "sglang" else "vllm"
    proc, base_url = _start_server(args.latency, kind)
    try:
        with httpx.Client(trust_env=False) as client:
            server = served.discover(client, base_url, "tiny")
            labels = served.labels_from_tokenizer(served.ServerTokenizer(client, server.root, "tiny"), "Yes", "No", "exact")
        render = (lambda question, n, system: f"<image>{question}") if args.dialect == "sglang" else None
        dialect = served.dialect_for(args.dialect, "tiny", labels, render_prompt=render)
        print(f"server latency {args.latency * 1000:.0f} ms, dialect {args.dialect}, 128 px PNG images, 4 questions per image")
        print(f"{'in flight':>9} {'questions':>9} {'q/s':>8} {'ideal q/s':>9} {'share':>6} {'client CPU ms/q':>15}")
        reached = {}
        for concurrency in args.concurrency:
            n = max(32, int(args.seconds * concurrency / args.latency) // 4 * 4)
            questions = _questions(n)
            scorer = served.Scorer(server, dialect, num_concurrent=concurrency, cache=None)
            scorer.score(questions[: min(n, 2 * concurrency)])  # warm: connections open
            cpu, wall = time.process_time(), time.perf_counter()
            readings = scorer.score(questions)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert len(readings) == n
            rate, ideal = n / wall, concurrency / args.latency
            reached[concurrency] = rate / ideal
            print(f"{concurrency:>9} {n:>9} {rate:>8.1f} {ideal:>9.1f} {rate / ideal:>6.0%} {1000 * cpu / n:>15.2f}")
        if TARGET_CONCURRENCY in reached:
            share = reached[TARGET_CONCURRENCY]
            verdict = "met" if share >= TARGET_SHARE else "NOT met"
            print(f"target: at {TARGET_CONCURRENCY} in flight, >= {TARGET_SHARE:.0%} of the ideal: {share:.0%}, {verdict}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
