"""Each benchmark's metrics from (predictions, references), for Hugging Face ``evaluate``.

``evaluate.load(spatial_tasks.metric_module("spatialtunnel"))`` loads a local, offline module
(``spatial_tasks/metric_modules/<benchmark>.py``) whose ``compute`` lands here:

- ``predictions``: the model's outputs, one string per question (for SpatialTunnel's logit
  protocol, the first-token payload ``hf_yesno`` returns);
- ``references``: the questions, one JSON object string (or dict) per question -- the record the
  task logs under its first metric with ``--log_samples``, or the question's doc as the
  benchmark's loader makes it (image columns left out). The prediction replaces any logged response.

Each question is scored with the function the lmms-eval task and ``spatial-tasks rescore`` use,
and the figures are the ones ``rescore`` reports for the set of questions (scalars only):
SpatialTunnel ``metrics.summary``; O3-D ``rescore.summarise_model`` (Table 12 cells, bias, SDGMs);
DORI and VAGUE their ``rescore.summary``. Nothing is re-implemented here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.samples import record_problem

BENCHMARKS = ("o3d", "dori", "vague", "spatialtunnel")
OPTIONS = {"spatialtunnel": ("protocol",), "o3d": (), "dori": (), "vague": ("setting",)}


class NotAQuestionError(UserError, ValueError):
    """A reference that is not a question of the benchmark."""


def _as_dict(reference: str | Mapping, index: int) -> dict:
    if isinstance(reference, Mapping):
        return dict(reference)
    try:
        value = json.loads(reference)
    except (TypeError, ValueError):
        raise NotAQuestionError(f"references[{index}]: not a JSON object string ({str(reference)[:60]!r})") from None
    if not isinstance(value, dict):
        raise NotAQuestionError(f"references[{index}]: a JSON {type(value).__name__}, not an object")
    return value


def _spatialtunnel(reference: dict, prediction: str, protocol: str = "auto") -> dict:
    from spatial_tasks.common.yesno import is_payload
    from spatial_tasks.spatialtunnel.tasks import LoggedQuestion, exact_match_record, logit_record

    LoggedQuestion.model_validate(reference)
    # auto, as rescore: the protocol the record logged; for a doc, logit when the answer is a payload
    chosen = protocol if protocol != "auto" else reference.get("protocol") or ("logit" if is_payload(prediction)
                                                                                else "exact")
    if chosen not in ("logit", "exact"):
        raise ValueError(f"protocol must be auto, exact or logit, not {protocol!r}")
    return (logit_record if chosen == "logit" else exact_match_record)(reference, [prediction])


def _o3d(reference: dict, prediction: str) -> dict:
    from spatial_tasks.o3d.records import LoggedRecord, record, rescored

    if "released_family" in reference:  # a doc as the O3-D loader makes it
        return record(reference, prediction, icl=bool(reference.get("icl", False)))
    LoggedRecord.model_validate({**reference, "response": prediction})
    return rescored({**reference, "response": prediction})


def _dori(reference: dict, prediction: str) -> dict:
    from spatial_tasks.dori.tasks import LoggedQuestion, score

    LoggedQuestion.model_validate(reference)
    return score(reference, prediction)


def _vague(reference: dict, prediction: str, setting: str | None = None) -> dict:
    from spatial_tasks.vague.tasks import score_freeform, score_mcq

    setting = setting or reference.get("setting")
    if not setting:
        raise ValueError("no setting: pass setting=lm|sm|vlm|... (a doc carries none; a logged record does)")
    kind = "freeform" if setting.startswith("freeform") else "mcq"
    return (score_freeform if kind == "freeform" else score_mcq)(reference, prediction, setting)


def _figures(benchmark: str, records: list[dict], ddof: int) -> dict:
    if benchmark == "spatialtunnel":
        from spatial_tasks.spatialtunnel.metrics import summary
        return summary(records)
    if benchmark == "o3d":
        from spatial_tasks.o3d.rescore import summarise_model
        return summarise_model(records, ddof)
    if benchmark == "dori":
        from spatial_tasks.dori.rescore import summary as dori_summary
        return dori_summary(records)
    from spatial_tasks.vague.rescore import summary as vague_summary
    return vague_summary(records)


SCORERS: dict[str, Callable[..., dict]] = {"spatialtunnel": _spatialtunnel, "o3d": _o3d, "dori": _dori,
                                           "vague": _vague}


def compute(benchmark: str, predictions: Sequence[str], references: Sequence[str | Mapping],
            ddof: int = 0, **options: Any) -> dict[str, float | int | None]:
    """The benchmark's figures for these questions (module docstring). ``options``: SpatialTunnel
    ``protocol`` (auto | exact | logit); VAGUE ``setting`` (needed for docs); O3-D ``ddof`` (0: the
    paper's population standard deviation in SDGM, 1: the authors' pandas)."""
    if benchmark not in SCORERS:
        raise ValueError(f"no metric module for {benchmark!r}; benchmarks: {', '.join(BENCHMARKS)}")
    unknown = sorted(set(options) - set(OPTIONS[benchmark]))
    if unknown:
        raise ValueError(f"{benchmark}: unknown option(s) {unknown}; it takes {list(OPTIONS[benchmark]) or 'none'}"
                         f"{' and ddof' if benchmark == 'o3d' else ''}")
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    records = []
    for index, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        try:
            records.append(SCORERS[benchmark](_as_dict(reference, index), prediction, **options))
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, NotAQuestionError):
                raise
            raise NotAQuestionError(f"references[{index}]: not a {benchmark} question ({record_problem(error)})") from None
    figures = _figures(benchmark, records, ddof)
    return {key: _scalar(value) for key, value in figures.items() if _is_scalar(value)}


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _scalar(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value
