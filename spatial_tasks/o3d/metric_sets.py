"""O3-D's live metrics by name: one pure function per figure the lmms-eval tasks report, each a thin
wrapper over ``spatial_tasks.o3d.metrics`` (``METRICS``); each task's YAML picks its own. No
lmms-eval here: ``rescore`` and the tidy records use the same functions, and ``METRICS`` is the
table lmms-eval aggregates by name (``o3d_<metric>``, registered by ``spatial_tasks.harness``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from spatial_tasks.common.stats import share
from spatial_tasks.o3d import metrics


def _acc(rows) -> float:
    """Accuracy over the scored rows (Table 12's cells); unparseable answers are wrong."""
    return metrics.accuracy(rows)["acc"]


def _acc_near(rows) -> float:
    """Acc_N: accuracy on target-near rows (the quantity every SDGM is taken of)."""
    return metrics.near_far_bias(rows)["acc_near"]


def _acc_far(rows) -> float:
    """Acc_F: accuracy on target-far rows."""
    return metrics.near_far_bias(rows)["acc_far"]


def _bias_nf(rows) -> float:
    """Near-far bias (paper Eq. 1): Acc_F - Acc_N over the given rows."""
    return metrics.near_far_bias(rows)["bias"]


def _by_cue(cue: str) -> Callable[[Sequence[Mapping]], float]:
    def fn(rows):
        return (metrics.accuracy_by_cue(rows).get(cue) or {}).get("acc")

    fn.__doc__ = f"Table 12 column {cue}: single-cue records with cue {cue}, all strengths."
    return fn


def _by_num_cues(n: int) -> Callable[[Sequence[Mapping]], float]:
    def fn(rows):
        return (metrics.accuracy_by_num_cues(rows).get(n) or {}).get("acc")

    fn.__doc__ = f"Table 12 column {n}cue: {n}-cue records" + (" (all)." if n == 0 else " at regular strength.")
    return fn


def _sdgm_vision(rows) -> float:
    """Vision influence (paper Eq. 2): SDGM of Acc_N over the cue groups, SDGM population."""
    return metrics.sdgm_vision(rows)["sdgm"]


def _sdgm_language(rows) -> float:
    """Language influence (paper Eq. 2): SDGM of Acc_N over the question groups, SDGM population."""
    return metrics.sdgm_language(rows)["sdgm"]


def _msdgm(variation: str) -> Callable[[Sequence[Mapping]], float]:
    def fn(rows):
        return metrics.modified_sdgm(rows, variation)["sdgm"]

    fn.__doc__ = f"Modified SDGM (paper Eq. 3) for the variation type {variation}."
    return fn


def unparseable_share(rows: Sequence[Mapping]) -> float:
    """Share of unparseable answers over ALL records (gt 'none' included), as the O3-D README counts."""
    return share(rows, lambda r: r.get("label") == "unparseable")


METRICS: dict[str, Callable[[Sequence[Mapping]], float]] = {
    "acc": _acc,
    "acc_near": _acc_near,
    "acc_far": _acc_far,
    "bias_nf": _bias_nf,
    "unparseable": unparseable_share,
    **{f"acc_{cue}": _by_cue(cue) for cue in metrics.VISION_CUES},
    **{f"acc_{n}cue": _by_num_cues(n) for n in (0, 1, 2)},
    "sdgm_vision": _sdgm_vision,
    "sdgm_language": _sdgm_language,
    "consistency": metrics.language_consistency,
    **{f"msdgm_{tag}": _msdgm(tag) for tag in metrics.LANGUAGE_TAGS},
}
