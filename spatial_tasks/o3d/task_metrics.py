"""O3-D's lmms-eval aggregations (``agg_<metric>``; pooled-able for the group, see
``spatial_tasks.harness``) of the live metrics (``metric_sets.METRICS``)."""

from __future__ import annotations

from collections.abc import Callable

from spatial_tasks.harness import PooledValue, aggregation
from spatial_tasks.o3d.metric_sets import (  # noqa: F401
    BASIC_METRICS,
    CUE_METRICS,
    ICL_METRICS,
    LANGUAGE_METRICS,
    LANGUAGE_ONLY,
    MARKERS_METRICS,
    METRIC_SETS,
    METRICS,
    NUM_CUE_METRICS,
    REAL_METRICS,
    VISION_METRICS,
    unparseable_share,
)


def aggregate(name: str, items: list) -> PooledValue:
    """The metric ``name`` of the records (NaN when undefined), carrying the records for pooling."""
    return aggregation(name, METRICS[name])(items)


def _aggregation(name: str) -> Callable[[list], PooledValue]:
    return aggregation(name, METRICS[name])


agg_acc = _aggregation("acc")
agg_acc_near = _aggregation("acc_near")
agg_acc_far = _aggregation("acc_far")
agg_bias_nf = _aggregation("bias_nf")
agg_unparseable = _aggregation("unparseable")
agg_acc_HP = _aggregation("acc_HP")
agg_acc_OC = _aggregation("acc_OC")
agg_acc_RS = _aggregation("acc_RS")
agg_acc_TG = _aggregation("acc_TG")
agg_acc_SA = _aggregation("acc_SA")
agg_acc_LS = _aggregation("acc_LS")
agg_acc_FO = _aggregation("acc_FO")
agg_acc_FS = _aggregation("acc_FS")
agg_acc_0cue = _aggregation("acc_0cue")
agg_acc_1cue = _aggregation("acc_1cue")
agg_acc_2cue = _aggregation("acc_2cue")
agg_sdgm_vision = _aggregation("sdgm_vision")
agg_sdgm_language = _aggregation("sdgm_language")
agg_consistency = _aggregation("consistency")
agg_msdgm_query = _aggregation("msdgm_query")
agg_msdgm_order = _aggregation("msdgm_order")
agg_msdgm_formality = _aggregation("msdgm_formality")
agg_msdgm_vocabulary = _aggregation("msdgm_vocabulary")
agg_msdgm_clarity_level = _aggregation("msdgm_clarity_level")
