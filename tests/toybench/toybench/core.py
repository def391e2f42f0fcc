"""ToyBench's loader, record, metric and report section: Yes/No questions about a coloured square."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from spatial_tasks.benchmark import Headline, Scorecard, binary

NAME = "toybench"
COLUMNS = ("question_id", "question", "answer", "image")


class ToyRecord(BaseModel):
    """One question's outcome, as process_results logs it."""

    model_config = ConfigDict(extra="forbid")
    benchmark: str
    question_id: str
    answer: str
    response: str
    correct: bool


def docs(dataset, data):
    """The loader: every row checked (a clear error names the row), mapped onto the doc."""
    from spatial_tasks.common.validate import DataError

    missing = [c for c in COLUMNS if c not in dataset.column_names]
    if missing:
        raise DataError(f"{data.label}: missing column(s) {missing}")
    for i, answer in enumerate(dataset["answer"]):
        if answer not in ("Yes", "No"):
            raise DataError(f"{data.label}: row {i}: answer {answer!r} is not Yes or No")
    return dataset.map(lambda row: {"benchmark": NAME})


def record(doc: dict, response: str) -> dict:
    said = response.strip().split()[0].strip(".,").capitalize() if response.strip() else ""
    return ToyRecord(benchmark=NAME, question_id=doc["question_id"], answer=doc["answer"], response=response,
                     correct=said == doc["answer"]).model_dump()


def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return f"{doc['question']} Answer Yes or No."


def process_results(doc, results):
    return {"acc": record(doc, results[0] if results else "")}


def agg_acc(items):
    return accuracy(items)


def accuracy(records) -> float:
    """The one metric: the share of right answers (NaN without records)."""
    return sum(r["correct"] for r in records) / len(records) if records else float("nan")


SCORECARD = Scorecard(unit=lambda r: r["question_id"], headlines=(
    Headline("acc", "acc", accuracy, lambda rows: binary([float(r["correct"]) for r in rows])),))


def records_from_samples(path: Path) -> list[dict]:
    from spatial_tasks.common.samples import rescore_file

    return rescore_file(path, ("acc",), NAME, lambda logged, sample: record(
        logged, ToyRecord.model_validate(logged).response))


def report(runs, out: Path):
    lines = ["| run | task | n | acc |", "|---|---|---:|---:|"]
    for entry in runs.tasks:
        records = entry.records()
        lines.append(f"| {entry.run.label} | {entry.task} | {len(records)} | {accuracy(records):.3f} |")
    return [], lines


def write_sample(folder: Path, n: int = 6) -> Path:
    """The sample's parquet: n questions, alternating answers, on 16 px squares."""
    import io

    import datasets
    from PIL import Image

    rows = []
    for i in range(n):
        buffer = io.BytesIO()
        Image.new("RGB", (16, 16), (200, 40 * i, 30)).save(buffer, format="PNG")
        rows.append({"question_id": f"toy-{i}", "question": f"Is square {i} red?", "answer": "Yes" if i % 2 else "No",
                     "image": {"bytes": buffer.getvalue(), "path": None}})
    features = datasets.Features({"question_id": datasets.Value("string"), "question": datasets.Value("string"),
                                  "answer": datasets.Value("string"), "image": datasets.Image()})
    path = folder / "sample" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path
