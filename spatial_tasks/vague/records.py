"""VAGUE's per-item record: what process_results logs and ``rescore`` re-makes from a logged sample
-- the letter read from an MCQ answer (and its wrong type), or the free-form intention with the
BERTScore backbone it is scored with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from spatial_tasks.common.choice import SELECTED, read_choice
from spatial_tasks.vague import metrics
from spatial_tasks.vague.parse import final_part
from spatial_tasks.vague.schema import FREEFORM_SETTINGS, MCQ_SETTINGS

_RECORD_FIELDS = ("benchmark", "item_id", "subset", "image_name", "answer", "letters", "option_texts", "option_types",
                  "listener", "correct_intention")


def socratic_parts(response: str) -> tuple[str | None, str]:
    """(caption, answer) of a Socratic response; (None, response) for any other text."""
    try:
        payload = json.loads(response)
    except (TypeError, ValueError, RecursionError):  # model output: never raises
        return None, response
    if isinstance(payload, dict) and isinstance(payload.get("answer"), str):
        caption = payload.get("caption")
        return (caption if isinstance(caption, str) else None), payload["answer"]
    return None, response


class LoggedRecord(BaseModel):
    """What re-scoring reads of a logged record, checked by ``spatial-tasks rescore vague``."""

    model_config = ConfigDict(extra="allow")
    item_id: str | int
    setting: str
    kind: Literal["mcq", "freeform"]
    letters: list[str] = Field(min_length=2)
    option_texts: list[str]
    option_types: list[str]
    answer: str
    correct_intention: str
    response: str | None = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.setting not in (*MCQ_SETTINGS, *FREEFORM_SETTINGS):
            raise ValueError(f"setting {self.setting!r} is not one of {[*MCQ_SETTINGS, *FREEFORM_SETTINGS]}")
        if not len(self.letters) == len(self.option_texts) == len(self.option_types):
            raise ValueError("letters, option_texts and option_types differ in length")
        if self.answer not in self.letters:
            raise ValueError(f"answer {self.answer!r} is not one of the letters {self.letters}")
        if (self.kind == "freeform") != self.setting.startswith("freeform"):
            raise ValueError(f"kind {self.kind!r} does not match setting {self.setting!r}")
        return self


def score_mcq(doc: Mapping, response: object, setting: str) -> dict:
    """The per-item record: the letter read (common.choice, after a CoT answer's "answer2" label),
    its option type, the outcome, and whether it is the answer."""
    text = response if isinstance(response, str) else ""
    caption, answer_text = socratic_parts(text) if setting in ("sm", "sm_cot") else (None, text)
    choice = read_choice(final_part(answer_text), doc["option_texts"])
    chosen = doc["letters"][choice.index] if choice.outcome == SELECTED else None
    chosen_type = None if chosen is None else doc["option_types"][choice.index]
    return {**{k: doc.get(k) for k in _RECORD_FIELDS}, "setting": setting, "kind": "mcq", "response": text,
            "caption": caption, "outcome": choice.outcome, "chosen": chosen, "chosen_type": chosen_type,
            "correct": int(chosen == doc["answer"])}


def freeform_answer(response: str) -> str:
    """The intention sentence: after the last "answer2 (intention):" label for CoT answers."""
    return final_part(response).strip()


def score_freeform(doc: Mapping, response: object, setting: str) -> dict:
    text = response if isinstance(response, str) else ""
    return {**{k: doc.get(k) for k in _RECORD_FIELDS}, "setting": setting, "kind": "freeform", "response": text,
            "prediction": freeform_answer(text), "reference": doc["correct_intention"],
            **metrics.bertscore_setting()}  # the backbone its BERTScore is computed with


def score_question(reference: dict, prediction: str, setting: str | None = None) -> dict:
    """One item's record (``Benchmark.score``); ``setting`` (lm, sm, vlm, freeform, ...) is needed
    for a doc (a logged record carries its own)."""
    setting = setting or reference.get("setting")
    if not setting:
        raise ValueError("no setting: pass setting=lm|sm|vlm|... (a doc carries none; a logged record does)")
    return (score_freeform if setting.startswith("freeform") else score_mcq)(reference, prediction, setting)


# How the page names what a wrong option is (the paper's failure types, Table 2).
FAILURE_NAMES = {"FS": "fake scene", "SU": "superficial", "NE": "nonexistent entity", "correct": "none (right)"}


def sample_view(record: Mapping):
    """The report page's view: the setting, the subset, and for multiple choice the failure type
    of the option chosen (fake scene / superficial / nonexistent entity, or unreadable). A free-form
    answer is scored by BERTScore over the whole set, so it is not right or wrong on its own."""
    from spatial_tasks.benchmark import SampleView

    fields = {"setting": str(record["setting"]), "subset": str(record.get("subset") or "—")}
    if record.get("kind") == "freeform":
        return SampleView(key=f"{record['item_id']}/{record['setting']}", gold=str(record["correct_intention"]),
                          correct=None, fields=fields)
    chosen = record.get("chosen_type")
    fields["failure type"] = FAILURE_NAMES.get(chosen, str(chosen)) if chosen is not None else "unreadable"
    return SampleView(key=f"{record['item_id']}/{record['setting']}",
                      gold=f"{record['answer']}. {record['correct_intention']}", correct=bool(record["correct"]),
                      fields=fields)
