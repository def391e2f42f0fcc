"""The re-splits' per-question record as logged (``tasks._record``), read back and checked. The
answer was read by lmms-eval's own reader when the task ran, so the logged score is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from spatial_tasks.common.samples import rescore_file
from spatial_tasks.spatialtunnel.resplit import metrics


class LoggedRecord(BaseModel):
    """What the re-split figures read of a logged record (``_record``), checked when it is read back."""

    model_config = ConfigDict(extra="allow")
    question_id: str
    relation: Literal["consistent", "counter", "ambiguous", "unknown"]
    score: float = Field(ge=0, le=1)
    parsed: str


def records_from_samples(path: Path) -> list[dict]:
    def checked(record: dict, sample: dict) -> dict:
        LoggedRecord.model_validate(record)
        return record

    return rescore_file(path, ("acc_all",), metrics.BENCHMARK, checked)


def sample_view(record: dict):
    """The report page's view: the source benchmark and the shortcut relation of the question."""
    from spatial_tasks.benchmark import SampleView

    return SampleView(key=f"{record.get('source')}/{record['question_id']}", gold=str(record.get("answer")),
                      correct=None if record.get("score") is None else record["score"] >= 1,
                      fields={"source": str(record.get("source")), "relation": record["relation"]})
