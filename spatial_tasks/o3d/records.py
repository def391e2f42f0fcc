"""O3-D's ``process_results``: one record per doc, holding what the metrics and
``spatial-tasks rescore o3d --format lmms-samples`` need, fanned out to the task's metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from spatial_tasks.o3d.parse import is_correct, parse_answer
from spatial_tasks.o3d.prompts import parse_prompt
from spatial_tasks.o3d.schema import BENCHMARK, CLARITY_LEVELS, CUE_CODES

RECORD_FIELDS = (
    "benchmark", "question_id", "subset_name", "image_name", "image_family", "in_paper", "synthetic",
    "is_real", "is_marked", "icl", "question", "ques_clarity", "clarity_level", "query", "order",
    "formality", "vocabulary", "cues", "cue_strength", "gt_position", "response", "label", "correct",
)


def record(doc: Mapping[str, Any], response: str, *, icl: bool = False) -> dict:
    """The per-doc record (fields of ``spatial_tasks.o3d.metrics`` plus what re-scoring needs)."""
    response = response if isinstance(response, str) else ("" if response is None else str(response))
    label = parse_answer(response, doc["question"])
    tags = parse_prompt(doc["question"])
    return {
        "benchmark": BENCHMARK,
        "question_id": doc["question_id"],
        "subset_name": doc["subset_name"],
        "image_name": doc["image_name"],
        "image_family": doc["released_family"],  # the authors' family name (kb-1cue, o3dcf-real, ...)
        "in_paper": True,  # an official-layout row (rescore.summary's Table 12 selection)
        "synthetic": bool(doc["synthetic"]),
        "is_real": not doc["synthetic"],
        "is_marked": bool(doc["is_marked"]),
        "icl": icl,
        "question": doc["question"],
        "ques_clarity": doc["ques_clarity"],
        "clarity_level": tags.clarity_level if tags else doc["clarity_level"],
        "query": tags.query if tags else None,
        "order": tags.order if tags else None,
        "formality": tags.formality if tags else None,
        "vocabulary": tags.vocabulary if tags else None,
        "cues": list(doc["cues"] or []),
        "cue_strength": doc["cue_strength"],
        "gt_position": doc["gt_position"],
        "response": response,
        "label": label,
        "correct": is_correct(label, doc["gt_position"]),
    }


class LoggedRecord(BaseModel):
    """What re-scoring and the metrics read of a logged record (``RECORD_FIELDS``), checked by
    ``spatial-tasks rescore o3d``: an edited or foreign record is an error, never a score."""

    model_config = ConfigDict(extra="allow")
    question_id: str
    subset_name: str
    question: str = Field(min_length=1)
    response: str | None = None
    gt_position: Literal["near", "far", "none"]
    cues: list[str]
    cue_strength: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    ques_clarity: float
    is_marked: bool
    is_real: bool
    icl: bool = False

    @model_validator(mode="after")
    def _values(self):
        unknown = [c for c in self.cues if c not in CUE_CODES]
        if unknown:
            raise ValueError(f"cues {unknown} are not O3-D cue codes {list(CUE_CODES)}")
        if float(self.ques_clarity) not in CLARITY_LEVELS:
            raise ValueError(f"ques_clarity {self.ques_clarity} is not one of {sorted(CLARITY_LEVELS)}")
        return self


def rescored(rec: Mapping[str, Any]) -> dict:
    """A logged record re-parsed from its own response and question (what rescoring does)."""
    label = parse_answer(rec.get("response"), rec.get("question"))
    return {**rec, "label": label, "correct": is_correct(label, rec.get("gt_position"))}


def score_question(reference: dict, prediction: str) -> dict:
    """One question's record (``Benchmark.score``): from a logged record, or from a doc as the O3-D
    loader makes it."""
    if "released_family" in reference:  # a doc as the O3-D loader makes it
        return record(reference, prediction, icl=bool(reference.get("icl", False)))
    LoggedRecord.model_validate({**reference, "response": prediction})
    return rescored({**reference, "response": prediction})


def sample_view(record: Mapping[str, Any]):
    """The report page's view: the pictorial cues and their strength, the question's clarity, whether
    the image is marked, real, and which subset it comes from."""
    from spatial_tasks.benchmark import SampleView

    strength = record.get("cue_strength")
    fields = {"cue": ", ".join(record.get("cues") or ()) or "none",
              "strength": "—" if strength is None else f"{strength:g}",
              "clarity": str(record.get("clarity_level") or record.get("ques_clarity")),
              "subset": str(record.get("subset_name")), "marked": "yes" if record.get("is_marked") else "no",
              "real": "yes" if record.get("is_real") else "no"}
    return SampleView(key=str(record["question_id"]), gold=str(record["gt_position"]),
                      correct=bool(record["correct"]), fields=fields)
