"""SpatialTunnel metrics: pure functions over per-question records.

Paper: Min et al., "Why Far Looks Up: Probing Spatial Representation in Vision-Language Models"
(ECCV 2026), §4 and Tables 3, 8, 9. A record is what ``tasks.process_results`` returns:

    score            correctness in [0, 1]: v = p (answer Yes) or 1 - p (answer No) under the
                     first-token logit protocol (Table 3); 1/0 under exact match (Table 8)
    relation         consistent | counter | ambiguous | unknown (three-way, |dy| < 5% H)
    relation_two_way consistent | counter | unknown (the paper's split in the tunnel)
    theta1_index, theta2_index, grid    the cell of the 16 x 16 grid
    variant          phase | size
    size1_nominal    s1 of the size sweep (used for the size variant)

The same functions back the lmms-eval aggregations and ``spatial-tasks rescore``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from spatial_tasks.benchmark import Headline, Scorecard, binary
from spatial_tasks.common.stats import mean, share
from spatial_tasks.common.yesno import label_mass_below_half, label_mass_median
from spatial_tasks.common.intervals import GroupedMeans

SIZE_SMALL_FAR = 0.10  # s1 = 0.1: far object small, size consistent with depth
SIZE_LARGE_FAR = 0.30  # s1 = 0.3: far object large, size conflicts with depth


def mean_score(records: Iterable[dict]) -> float:
    """v (Table 3) / Acc_all (Table 8): the mean correctness over all image-question pairs.

    Equal to the mean of per-cell means because every cell has the same number of pairs.
    NaN when there are no records.
    """
    return mean(float(r["score"]) for r in records)


def standard_error(records: Sequence[dict]) -> float:
    """Standard error of the mean score (sample std / sqrt(n))."""
    scores = [float(r["score"]) for r in records]
    n = len(scores)
    if n < 2:
        return math.nan
    centre = mean(scores)
    return math.sqrt(sum((s - centre) ** 2 for s in scores) / (n - 1) / n)


def mean_by_relation(records: Iterable[dict], relation: str, two_way: bool = True) -> float:
    """v_cons / v_ctr (Table 3; Acc_con / Acc_ctr in Table 8), or v over the ambiguous subset.

    ``two_way=True`` is the paper's split in the tunnel (farther object higher => consistent,
    else counter); ``two_way=False`` uses the three-way label, where |dy| < 5% of the image
    height is "ambiguous" (the paper's rule for the real benchmarks, reported here too).
    """
    key = "relation_two_way" if two_way else "relation"
    return mean_score(r for r in records if r[key] == relation)


def answered(records: Iterable[dict]) -> bool:
    """Whether any record has a readable answer (records without ``parsed`` count as answered).
    A gap between two accuracies says nothing about a model none of whose answers could be read:
    it is undefined (NaN), not a neutral 0."""
    return any(r.get("parsed") != "unparseable" for r in records)


def consistency_gap(records: Sequence[dict]) -> float:
    """Delta = v_cons - v_ctr (Table 3, Table 8): how much the vertical shortcut helps; NaN
    without consistent or counter pairs, or without a readable answer."""
    if not answered(records):
        return math.nan
    return mean_by_relation(records, "consistent") - mean_by_relation(records, "counter")


def cell_grid(records: Iterable[dict]) -> list[list[float]]:
    """The grid x grid matrix of per-cell v (paper Fig. 3): row = theta1 index (farther object),
    column = theta2 index (nearer object), each cell the mean over its images' 4 templates.
    Cells without records are NaN."""
    sums: dict[tuple[int, int], list[float]] = defaultdict(list)
    grid = 0
    for r in records:
        if r.get("theta1_index") is None or r.get("theta2_index") is None:
            continue
        grid = max(grid, int(r["grid"]))
        sums[(int(r["theta1_index"]), int(r["theta2_index"]))].append(float(r["score"]))
    return [[mean(sums.get((i, j), ())) for j in range(grid)] for i in range(grid)]


def cell_relations(records: Iterable[dict], two_way: bool = True) -> list[list[str | None]]:
    """Per-cell relation, for drawing: two-way (consistent | counter, the split of v_cons / v_ctr)
    or three-way (adds ambiguous, the pairs of v_amb)."""
    key = "relation_two_way" if two_way else "relation"
    grid, rel = 0, {}
    for r in records:
        if r.get("theta1_index") is None or r.get("theta2_index") is None:
            continue
        grid = max(grid, int(r["grid"]))
        rel[(int(r["theta1_index"]), int(r["theta2_index"]))] = r[key]
    return [[rel.get((i, j)) for j in range(grid)] for i in range(grid)]


def size_curve(records: Iterable[dict]) -> dict[float, float]:
    """Mean v per s1 of the size sweep (Table 9, s1 + s2 = 0.4), keyed by s1 rounded to 2 dp."""
    by: dict[float, list[float]] = defaultdict(list)
    for r in records:
        if r.get("variant") == "size" and r.get("size1_nominal") is not None:
            by[round(float(r["size1_nominal"]), 2)].append(float(r["score"]))
    return {s: mean(v) for s, v in sorted(by.items())}


def mean_at_size(records: Iterable[dict], s1: float) -> float:
    """v(s1) (Table 9): mean v over the images whose far object has nominal size s1."""
    return size_curve(records).get(round(s1, 2), math.nan)


def size_gap(records: Sequence[dict]) -> float:
    """Delta_s = v(s1=0.1) - v(s1=0.3) (Table 9): how much the size cue helps; NaN without those
    sizes or without a readable answer."""
    if not answered(records):
        return math.nan
    curve = size_curve(records)
    return curve.get(SIZE_SMALL_FAR, math.nan) - curve.get(SIZE_LARGE_FAR, math.nan)


def unparseable_share(records: Sequence[dict]) -> float:
    """Share of exact-match answers with neither yes nor no (scored wrong, counted here)."""
    return share(records, lambda r: r.get("parsed") == "unparseable")


def censored_count(records: Sequence[dict]) -> int:
    """Questions of a served run whose Yes or No label was outside the server's top log-probabilities:
    their p comes from a bound, not the label's value (``spatial_tasks.models.served``)."""
    return sum(bool(r.get("censored")) for r in records)


def summary(records: Sequence[dict]) -> dict:
    """Every figure of Tables 3/8/9 for one set of records, plus n per subset."""
    out = {
        "v": mean_score(records),
        "v_stderr": standard_error(records),
        "v_cons": mean_by_relation(records, "consistent"),
        "v_ctr": mean_by_relation(records, "counter"),
        "delta": consistency_gap(records),
        "v_amb": mean_by_relation(records, "ambiguous", two_way=False),
        "n": len(records),
        "n_cons": sum(r["relation_two_way"] == "consistent" for r in records),
        "n_ctr": sum(r["relation_two_way"] == "counter" for r in records),
        "n_amb": sum(r["relation"] == "ambiguous" for r in records),
        "cell_grid": cell_grid(records),
    }
    if any(r.get("variant") == "size" for r in records):
        out.update(v_s010=mean_at_size(records, SIZE_SMALL_FAR), v_s030=mean_at_size(records, SIZE_LARGE_FAR),
                   delta_s=size_gap(records), size_curve=size_curve(records))
    if any("parsed" in r for r in records):
        out["unparseable"] = unparseable_share(records)
    if any("censored" in r for r in records):  # only served runs (top_logprobs) can censor a label
        out["n_censored"] = censored_count(records)
    if any("label_mass" in r for r in records):  # models that score logits (not rule baselines)
        out["label_mass_median"] = label_mass_median(records)
        out["label_mass_below_half"] = label_mass_below_half(records)
    return out


# --- The scorecard: v and Δ (Tables 3 / 8 / 9), v_cons and v_ctr with intervals in its own tables.
# Each figure is defined once here (a GroupedMeans: its value and its bootstrap); the tests check
# that each equals the function above that the live lmms-eval task reports.

def _score_value(row: dict) -> float:
    return float(row["score"])


def _relation(relation: str) -> Headline:
    """v on the consistent / counter pairs (Table 3's v_cons, v_ctr)."""
    return Headline(f"v_{'cons' if relation == 'consistent' else 'ctr'}", relation,
                    GroupedMeans(lambda r: r["relation_two_way"] if r["relation_two_way"] == relation else None,
                                 _score_value, lambda means: means.get(relation, math.nan)),
                    lambda rows: binary([_score_value(r) for r in rows if r.get("relation_two_way") == relation]))


def _of_variant(variant: str) -> Callable[[Sequence[dict]], bool]:
    """A scope: every row of the task or group is of this variant. The papers' v and Δ (Tables 3 and
    8) are the phase variant's; the size variant's figures are Table 9's. A group pooling both is
    neither, so the scorecard never shows a pooled figure beside a paper's."""
    return lambda rows: bool(rows) and all(r.get("variant") == variant for r in rows)


def _size_group(row: dict) -> float | None:
    """The row's s1 as size_curve keys it (size-variant rows only)."""
    size = row.get("size1_nominal")
    return None if row.get("variant") != "size" or size is None else round(float(size), 2)


SCORECARD = Scorecard(
    unit=lambda r: r.get("image_id") or r["question_id"],  # an image's four questions are paired
    headlines=(
        Headline("v", "v (phase)", GroupedMeans(lambda r: "all", _score_value, lambda means: means["all"]),
                 lambda rows: binary([_score_value(r) for r in rows]), scope=_of_variant("phase")),
        Headline("delta", "Δ (phase)", GroupedMeans(
            lambda r: r["relation_two_way"], _score_value,
            lambda means: means.get("consistent", math.nan) - means.get("counter", math.nan),
            readable=lambda r: r.get("parsed") != "unparseable"), scope=_of_variant("phase")),
        # Table 9: v over the size sweep, and Δ_s = v(s1 = 0.1) - v(s1 = 0.3) (size_gap)
        Headline("v_size", "v (size)", GroupedMeans(lambda r: "all" if r.get("variant") == "size" else None,
                                                    _score_value, lambda means: means.get("all", math.nan)),
                 lambda rows: binary([_score_value(r) for r in rows if r.get("variant") == "size"]),
                 scope=_of_variant("size")),
        Headline("delta_s", "Δ_s (size)", GroupedMeans(
            _size_group, _score_value,
            lambda means: means.get(SIZE_SMALL_FAR, math.nan) - means.get(SIZE_LARGE_FAR, math.nan),
            readable=lambda r: r.get("parsed") != "unparseable"), scope=_of_variant("size")),
    ),
    details=(_relation("consistent"), _relation("counter")),
)


# Which paper table a task's figures are: (protocol, variant) -> table.
TABLES = {("logit", "phase"): "table3", ("exact", "phase"): "table8", ("logit", "size"): "table9"}


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per task: logit on the phase variant -> Table 3, exact match -> Table 8, logit on size -> Table 9."""
    out = []
    for task, records in per_task.items():
        kinds = {(r.get("protocol"), r.get("variant")) for r in records}
        if len(kinds) == 1 and (kind := kinds.pop()) in TABLES:
            out.append((TABLES[kind], task, summary(records)))
    return out


def _v_cons(records):
    """v_cons (Table 3) / Acc_con (Table 8): consistent pairs (the farther object higher)."""
    return mean_by_relation(records, "consistent")


def _v_ctr(records):
    """v_ctr (Table 3) / Acc_ctr (Table 8): counter pairs (the farther object lower)."""
    return mean_by_relation(records, "counter")


def _v_amb(records):
    """v over the ambiguous pairs (|dy| < 5% of the image height), reported separately."""
    return mean_by_relation(records, "ambiguous", two_way=False)


def _v_s010(records):
    """v(s1 = 0.1) (Table 9): the far object small, size consistent with depth."""
    return mean_at_size(records, SIZE_SMALL_FAR)


def _v_s030(records):
    """v(s1 = 0.3) (Table 9): the far object large, size conflicting with depth."""
    return mean_at_size(records, SIZE_LARGE_FAR)


# The task metrics lmms-eval aggregates, by name: registered as ``spatialtunnel_<name>``
# (``Benchmark.metrics``), named so in the task YAMLs, recomputed over the pooled records for a group.
TASK_METRICS = {
    "v": mean_score,
    "v_cons": _v_cons,
    "v_ctr": _v_ctr,
    "delta": consistency_gap,
    "v_amb": _v_amb,
    "v_s010": _v_s010,
    "v_s030": _v_s030,
    "delta_s": size_gap,
    "unparseable": unparseable_share,
}
