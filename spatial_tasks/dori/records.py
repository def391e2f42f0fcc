"""DORI's per-question record: what process_results logs and ``rescore`` re-makes from a logged
sample -- the option chosen (the project's one multiple-choice reader), hard and soft credit, and
the breakdown keys -- and the question's shown option order."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from spatial_tasks.common.choice import DECLINED, SELECTED, is_cannot_determine, read_choice
from spatial_tasks.dori import soft
from spatial_tasks.dori.schema import TASKS


def shown_options(doc: Mapping) -> list[str]:
    return [doc["options"][k] for k in doc["shown_order"]]


def answer_position(doc: Mapping) -> int:
    """Where the correct option is shown (0 = A)."""
    return list(doc["shown_order"]).index(doc["answer_index"])


# The record keeps what scoring reads from the doc (options, order, values), so `rescore dori`
# re-parses saved responses without the dataset.
_RECORD_FIELDS = ("benchmark", "question_id", "task", "granularity", "seed", "source", "category", "broad_classes",
                  "natural", "n_options", "options", "shown_order", "option_values", "answer_index")


class LoggedRecord(BaseModel):
    """What re-scoring reads of a logged record (``_RECORD_FIELDS``), checked by ``spatial-tasks
    rescore dori``: an edited or foreign record is an error naming its field, never a score."""

    model_config = ConfigDict(extra="allow")
    question_id: str
    task: str
    granularity: Literal["coarse", "granular"]
    options: list[str] = Field(min_length=2)
    shown_order: list[int]
    answer_index: int = Field(ge=0)
    option_values: str | None = None
    seed: int | None = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.task not in TASKS:
            raise ValueError(f"task {self.task!r} is not one of DORI's {list(TASKS)}")
        n = len(self.options)
        if sorted(self.shown_order) != list(range(n)):
            raise ValueError(f"shown_order {self.shown_order} is not an order of the {n} options")
        if self.answer_index >= n:
            raise ValueError(f"answer_index {self.answer_index} is not one of the {n} options")
        if self.option_values is not None:
            values = json.loads(self.option_values)
            if not isinstance(values, list) or len(values) != n:
                raise ValueError(f"option_values holds no value per option ({n})")
        return self


def score(doc: Mapping, response: object) -> dict:
    """The per-answer record: what was chosen, hard and soft credit, and the breakdown keys.

    "Cannot be determined" (the paper's Fig. 24; its human study's third option) is an answer
    like any other: chosen when it is the gold answer, it is correct; chosen when it is not, it is
    a decline -- scored wrong and counted (``outcome`` DECLINED), as is saying so without an
    option to choose."""
    shown = shown_options(doc)
    choice = read_choice(response, shown)
    values = json.loads(doc["option_values"]) if doc.get("option_values") else [None] * len(shown)
    chosen = doc["shown_order"][choice.index] if choice.index is not None else None
    outcome = choice.outcome
    if outcome == SELECTED and is_cannot_determine(doc["options"][chosen]) and chosen != doc["answer_index"]:
        outcome = DECLINED
    correct = outcome == SELECTED and chosen == doc["answer_index"]
    truth = values[doc["answer_index"]]
    predicted = values[chosen] if chosen is not None and outcome == SELECTED else None
    return {
        **{k: doc.get(k) for k in _RECORD_FIELDS},
        "response": response if isinstance(response, str) else str(response),
        "outcome": outcome,
        "chosen": chosen,
        "chosen_text": doc["options"][chosen] if chosen is not None else None,
        "answer": doc["options"][doc["answer_index"]],
        "answer_shown": answer_position(doc),
        "predicted_value": predicted,
        "truth_value": truth,
        "correct": int(correct),
        "soft": soft.soft_credit(doc["task"], doc["granularity"], correct, predicted, truth),
    }


def score_question(reference: dict, prediction: str) -> dict:
    """One question's record (``Benchmark.score``) from its logged record and a model output."""
    LoggedRecord.model_validate(reference)
    return score(reference, prediction)


def sample_view(record: Mapping):
    """The report page's view: the orientation task, its granularity and the object's category."""
    from spatial_tasks.benchmark import SampleView

    fields = {"task": str(record["task"]), "granularity": str(record["granularity"]),
              "category": str(record.get("category") or "—")}
    return SampleView(key=str(record["question_id"]), gold=str(record.get("answer")),
                      correct=bool(record["correct"]), fields=fields)
