"""SpatialTunnel's per-question record: what process_results logs and ``rescore`` re-makes from a
logged sample -- exact match on the Yes/No text (Table 8) or the first-token logit score (Table 3)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.yesno import (
    UNPARSEABLE,
    YesNoLogits,
    decode_payload_fields,
    is_payload,
    parse_yes_no,
    payload_label_mass,
)

# How a question is scored: from the answer's text, from the first token's Yes/No logits, or as
# each logged record says (the option of rescore and of the evaluate module).
PROTOCOLS = ("auto", "exact", "logit")

_RECORD_FIELDS = ("benchmark", "question_id", "image_id", "variant", "template_id", "answer", "relation",
                  "relation_two_way", "theta1_index", "theta2_index", "grid", "size1_nominal")


class LogitsMissingError(UserError, RuntimeError):
    pass


class LoggedRecord(BaseModel):
    """What re-scoring reads of a logged record (``_RECORD_FIELDS`` + response), checked by
    ``spatial-tasks rescore`` so that an edited or foreign record is an error, never a score."""

    model_config = ConfigDict(extra="allow")
    question_id: str
    variant: Literal["phase", "size"]
    template_id: int = Field(ge=1, le=4)
    answer: Literal["Yes", "No"]
    relation: Literal["consistent", "counter", "ambiguous", "unknown"]
    relation_two_way: Literal["consistent", "counter", "unknown"]
    grid: int | None = Field(default=None, ge=2)
    theta1_index: int | None = Field(default=None, ge=0)
    theta2_index: int | None = Field(default=None, ge=0)
    size1_nominal: float | None = Field(default=None, allow_inf_nan=False)
    protocol: Literal["exact", "logit"] | None = None
    response: str | None = None

    @model_validator(mode="after")
    def _cell_in_grid(self) -> LoggedRecord:
        """A cell is two angular positions of the record's grid (the heatmap would drop any other)."""
        for field in ("theta1_index", "theta2_index"):
            index = getattr(self, field)
            if index is not None and (self.grid is None or index >= self.grid):
                grid = "no grid" if self.grid is None else f"grid {self.grid} (positions 0..{self.grid - 1})"
                raise ValueError(f"{field} {index} is not a position of its {grid}")
        return self


def _record(doc: dict, response: str) -> dict:
    """Everything the metrics need, so saved samples can be re-scored without the dataset."""
    return {**{k: doc.get(k) for k in _RECORD_FIELDS}, "response": response}


def exact_match_record(doc: dict, results: list[str]) -> dict:
    response = results[0] if results else ""
    parsed = parse_yes_no(response)
    return {**_record(doc, response), "protocol": "exact", "parsed": parsed, "score": float(parsed == doc["answer"])}


def logit_record(doc: dict, results: list[str]) -> dict:
    """The first-token record: score = p (answer Yes) or 1 - p (answer No). A payload whose logits
    are NaN, or that is malformed, is unparseable and scores 0 (wrong), like unparseable text. A
    served model's record also says which labels were ``censored`` (outside the server's top
    log-probabilities, so p is computed from a bound: ``spatial_tasks.models.served``), and a model's
    record its ``label_mass`` m = p(Yes) + p(No) where the payload carries it."""
    response = results[0] if results else ""
    if not is_payload(response):
        raise LogitsMissingError(
            "spatialtunnel_logit scores first-token Yes/No logits, but the model returned plain text "
            f"({str(response)[:60]!r}). Run it with a model that returns logits: --model hf_yesno (any "
            "transformers image-text model), openai_yesno (a vLLM, SGLang or OpenAI-compatible server), "
            "qwen2_5_vl_yesno (or spatial_baseline); use the exact-match task 'spatialtunnel' for any other model."
        )
    fields = decode_payload_fields(response)
    censored = fields.get("censored", []) if fields is not None else []
    if not isinstance(censored, list) or not set(censored) <= {"Yes", "No"}:
        fields = None  # a served payload's censored labels are a list of Yes / No; anything else is malformed
    valid_mass, mass = payload_label_mass(fields) if fields is not None else (True, None)
    if not valid_mass:
        fields = None  # a label mass that is not a probability: the payload is malformed
    payload = None if fields is None else YesNoLogits(fields["logit_yes"], fields["logit_no"], fields["text"], mass)
    if payload is None or not payload.finite:
        return {**_record(doc, response), "protocol": "logit", "parsed": UNPARSEABLE, "p_yes": None, "score": 0.0}
    p = payload.p_yes
    score = p if doc["answer"] == "Yes" else 1.0 - p
    record = {**_record(doc, response), "protocol": "logit", "parsed": payload.answer, "p_yes": p, "score": score}
    if fields is not None and "censored" in fields:  # a served model's top_logprobs reply (models/served.py)
        record["censored"] = sorted(censored)
    if mass is not None:  # p(Yes) + p(No): how much of the model's answer p reads (models scoring logits)
        record["label_mass"] = mass
    return record


def score_question(reference: dict, prediction: str, protocol: str = "auto") -> dict:
    """One question's record (``Benchmark.score``): its logged record (or doc) and the model's
    output; ``protocol`` auto takes the record's own, and for a doc logit when the output is a
    first-token payload."""
    LoggedRecord.model_validate(reference)
    chosen = protocol if protocol != "auto" else reference.get("protocol") or ("logit" if is_payload(prediction)
                                                                                else "exact")
    if chosen not in ("logit", "exact"):
        raise ValueError(f"protocol must be auto, exact or logit, not {protocol!r}")
    return (logit_record if chosen == "logit" else exact_match_record)(reference, [prediction])


def sample_view(record: dict):
    """The report page's view of a question: its relation three ways and two ways (the paper's
    consistent / counter split), and for the size variant the farther object's size step s1.
    Right when the score (1/0 under exact match, p of the right answer under logit) is over 1/2."""
    from spatial_tasks.benchmark import SampleView

    fields = {"variant": record["variant"], "relation": record["relation"],
              "two-way": record["relation_two_way"], "template": str(record["template_id"])}
    if record["variant"] == "size" and record.get("size1_nominal") is not None:
        fields["size step"] = f"{record['size1_nominal']:g}"
    score = record.get("score")
    return SampleView(key=record["question_id"], gold=record["answer"],
                      correct=None if score is None else score > 0.5, fields=fields)
