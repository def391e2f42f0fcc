"""The report page at scale: a report over 4 runs x 5,000 questions (20,000 logged samples), built
by ``spatial-tasks report`` and opened in headless Chromium.

The data is SpatialTunnel's official schema: the bundled phase renders, each copied under new ids
with its pixels jittered (so every copy is a distinct image, as in a real release), 4 questions an
image. Each run's samples file is what lmms-eval logs for ``spatialtunnel_logit_sample_phase``:
the prompt as ``doc_to_text`` makes it, a first-token payload drawn at random (seeded, a different
skill per run) and the record ``process_results`` logs for it. Prints the page's size (index.html
and thumbs/), the report's build time, and the page's load time: from opening the file to the
first screen of samples drawn, and to a filter applied (SpatialTunnel, two-way = counter, wrong only).

    .venv/bin/python benchmarks/report_page.py [--questions 5000] [--runs 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
TASK = "spatialtunnel_logit_sample_phase"
BUNDLED = ROOT / "tasks/spatialtunnel/sample/phase_variation/test-00000-of-00001.parquet"


def jittered(png: bytes, seed: int) -> bytes:
    """The render with every pixel nudged by a seeded amount: another image, the same scene."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    rng = random.Random(seed)
    noise = Image.effect_noise(image.size, 12 + rng.random() * 20).convert("RGB")
    out = io.BytesIO()
    Image.blend(image, noise, 0.08 + rng.random() * 0.05).save(out, "PNG")
    return out.getvalue()


def make_data(folder: Path, images: int) -> Path:
    table = pq.read_table(BUNDLED)
    rows = table.to_pylist()
    made = []
    for i in range(images):
        row = dict(rows[i % len(rows)])
        row["image_id"] = f"{row['image_id']}-copy{i:05d}"
        row["image"] = {"bytes": jittered(row["image"]["bytes"], i), "path": None}
        made.append(row)
    path = folder / "data" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(made, schema=table.schema), path)
    return path


def make_runs(folder: Path, data: Path, runs: int, questions: int | None = None) -> Path:
    """``runs`` fake runs over the task's docs of ``data``; ``questions``: that many logged samples per
    run, the docs repeated under new question ids (many questions per image, no more images)."""
    from spatial_tasks.catalog import task_config
    from spatial_tasks.common.environment import DATA_KEY, software
    from spatial_tasks.common.yesno import encode_payload_fields
    from spatial_tasks.harness.data import TaskData, load_docs
    from spatial_tasks.spatialtunnel.records import logit_record

    path, config = task_config(TASK)
    task_data, hook = TaskData.from_config(path, config)
    kwargs = {"data_files": {"test": str(data)}}
    task_data = TaskData(task=TASK, path="parquet", split="test", kwargs=kwargs, prompt_kwargs=task_data.prompt_kwargs,
                         metadata=task_data.metadata, metrics=task_data.metrics)
    docs = load_docs(task_data, hook)
    prompts = [config["doc_to_text"](doc, dict(task_data.prompt_kwargs)) for doc in docs]
    root = folder / "runs"
    for r in range(runs):
        rng = random.Random(r)
        skill = 0.5 + 0.12 * r  # how often the run leans to the right answer
        run_dir = root / f"model-{r}" / f"model-{r}"
        run_dir.mkdir(parents=True)
        stamp = f"20261129_10000{r}"
        with open(run_dir / f"{stamp}_samples_{TASK}.jsonl", "w", encoding="utf-8") as out:
            for doc_id in range(questions or len(docs)):
                doc, prompt = docs[doc_id % len(docs)], prompts[doc_id % len(docs)]
                if doc_id >= len(docs):
                    doc = {**doc, "question_id": f"{doc['question_id']}~{doc_id // len(docs)}"}
                right = rng.random() < skill
                yes = (doc["answer"] == "Yes") == right
                margin = rng.uniform(0.2, 4.0) * (1 if yes else -1)
                response = encode_payload_fields("Yes" if yes else "No", margin, 0.0, "Yes" if yes else "No",
                                                 label_mass=round(rng.uniform(0.3, 1.0), 4))
                record = logit_record(doc, [response])
                out.write(json.dumps({"doc_id": doc_id, "target": doc["answer"], "filtered_resps": [response],
                                      "v": record, "input": prompt}) + "\n")
        metadata = {**dict(task_data.metadata), "spatial_tasks_environment": software(),
                    DATA_KEY: task_data.as_recorded()}
        results = {"results": {TASK: {"alias": TASK}}, "configs": {TASK: {
            "task": TASK, "dataset_path": "parquet", "dataset_kwargs": kwargs, "test_split": "test",
            "metadata": metadata}}, "config": {"model": "fake_vlm", "model_args": f"pretrained=model-{r}"},
            "n-samples": {TASK: {"original": questions or len(docs), "effective": questions or len(docs)}}}
        (run_dir / f"{stamp}_results.json").write_text(json.dumps(results), encoding="utf-8")
    return root


def load_time(index: Path) -> tuple[float, float, int]:
    """(seconds to the first screen of samples, seconds to a filter applied, samples after it)."""
    import shutil as which

    from playwright.sync_api import sync_playwright

    chromium = which.which("chromium") or which.which("chromium-browser")
    if chromium is None:
        sys.exit("no Chromium here: install Debian's chromium (.ci/setup does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        start = time.perf_counter()
        page.goto(index.as_uri(), wait_until="commit")
        page.wait_for_selector("#sample-list article")
        first = time.perf_counter() - start
        page.select_option("#filter-benchmark", index=1)  # SpatialTunnel, the only benchmark
        page.select_option("select[data-field='two-way']", value="counter")
        page.check("#wrong-only")
        page.wait_for_selector("#sample-list article")
        count = int(page.get_attribute("#sample-count", "data-count"))
        filtered = time.perf_counter() - start
        browser.close()
    return first, filtered, count


def size_of(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000, help="questions per run (4 per image)")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="make everything here and keep it (default: a temporary folder)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="report-page-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        data = make_data(folder, -(-args.questions // 4))
        runs = make_runs(folder, data, args.runs)
        print(f"made {args.runs} runs x {args.questions} questions in {time.perf_counter() - t:.1f} s")
        from spatial_tasks.registry import read_runs
        from spatial_tasks.report import write_report

        t = time.perf_counter()
        write_report(read_runs(runs), folder / "report")
        build = time.perf_counter() - t
        index, thumbs = folder / "report" / "index.html", folder / "report" / "thumbs"
        first, filtered, count = load_time(index)
        print(f"samples: {args.runs * args.questions} ({args.runs} runs); thumbnails: {len(list(thumbs.iterdir()))}")
        print(f"size: index.html {size_of(index) / 1e6:.1f} MB + thumbs/ {size_of(thumbs) / 1e6:.1f} MB = "
              f"{(size_of(index) + size_of(thumbs)) / 1e6:.1f} MB (limit 50 MB)")
        print(f"build: spatial-tasks report {build:.1f} s (figures, leaderboard and page)")
        print(f"load (headless Chromium): first screen of samples {first:.2f} s; a filter applied "
              f"(two-way = counter, wrong only: {count} samples) {filtered:.2f} s (limit 3 s)")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
