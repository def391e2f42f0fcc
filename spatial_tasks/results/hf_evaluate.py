"""Each benchmark's metrics from (predictions, references), for Hugging Face ``evaluate``.

``evaluate.load(spatial_tasks.metric_module("spatialtunnel"))`` loads a local, offline module
(``spatial_tasks.metric_modules.module_file``: a few lines naming the benchmark) whose ``compute``
lands here:

- ``predictions``: the model's outputs, one string per question (for SpatialTunnel's logit
  protocol, the first-token payload ``hf_yesno`` returns);
- ``references``: the questions, one JSON object string (or dict) per question -- the record the
  task logs under its first metric with ``--log_samples``, or the question's doc as the
  benchmark's loader makes it (image columns left out). The prediction replaces any logged response.

Each question is scored with the benchmark's ``score`` (the function the lmms-eval task and
``spatial-tasks rescore`` use) and the figures are its ``summary`` of the set of questions (scalars
only), both from the benchmark's description (``spatial_tasks/<benchmark>/benchmark.py``). Nothing
is re-implemented here.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spatial_tasks.benchmark import Benchmark
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.samples import record_problem
from spatial_tasks.registry import benchmarks


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


def scoring_benchmarks() -> dict[str, Benchmark]:
    """The registered benchmarks that score a question from a model output (``score`` and ``summary``)."""
    return {name: b for name, b in benchmarks().items() if b.score is not None and b.summary is not None}


def compute(benchmark: str, predictions: Sequence[str], references: Sequence[str | Mapping],
            **options: Any) -> dict[str, float | int | None]:
    """The benchmark's figures for these questions (module docstring). ``options``: what the
    benchmark's ``score`` and ``summary`` take (``Benchmark.options``): SpatialTunnel ``protocol``
    (auto | exact | logit); VAGUE ``setting`` (needed for docs); O3-D ``ddof`` (0: the paper's
    population standard deviation in SDGM, 1: the authors' pandas)."""
    found = scoring_benchmarks()
    if benchmark not in found:
        raise ValueError(f"no metric module for {benchmark!r}; benchmarks: {', '.join(found)}")
    spec = found[benchmark]
    spec.check_options(options)
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    score_options = _accepted(spec.score, options)
    records = []
    for index, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        try:
            records.append(spec.score(_as_dict(reference, index), prediction, **score_options))
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, NotAQuestionError):
                raise
            raise NotAQuestionError(f"references[{index}]: not a {benchmark} question ({record_problem(error)})") from None
    figures = spec.summary(records, **_accepted(spec.summary, options))
    return {key: _scalar(value) for key, value in figures.items() if _is_scalar(value)}


def _accepted(function: Callable[..., Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The options ``function`` has a parameter for (a benchmark's score and summary may take
    different ones: O3-D's ddof is a summary option)."""
    parameters = inspect.signature(function).parameters
    return {k: v for k, v in options.items() if k in parameters}


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _scalar(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value
