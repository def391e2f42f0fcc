"""Each benchmark's headline figures: what the scorecard and the leaderboard show, computed from
the per-question records ``rescore`` makes, each with its interval (``intervals``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from spatial_tasks.results.intervals import (
    ITERATIONS,
    SEED,
    GroupedMeans,
    cluster_bootstrap,
    grouped_bootstrap,
    wilson,
)

Rows = Sequence[dict]


@dataclass(frozen=True)
class Headline:
    metric: str
    label: str  # as the scorecard heads its column
    compute: Callable[[Rows], float]
    # (right answers, questions) when the figure is a plain share of 0/1 outcomes over these rows
    # (then the Wilson interval), else None (then the cluster bootstrap)
    proportion: Callable[[Rows], tuple[float, int] | None] | None = None
    # whether a task or group with these rows is one the scorecard may show this figure for
    # (O3-D: accuracy, bias and SDGM vision of the marked images; SDGM language of the rest)
    scope: Callable[[Rows], bool] = lambda rows: True
    # the figure as a function of per-group means (then the bootstrap runs as matrix products;
    # GroupedMeans.figure(rows) == compute(rows), checked by the tests on real records)
    grouped: GroupedMeans | None = None

    def interval(self, rows: Rows, unit: Callable[[dict], Hashable], iterations: int, seed: int
                 ) -> tuple[float, float, str]:
        counts = self.proportion(rows) if self.proportion is not None else None
        if counts is not None:
            return *wilson(*counts), "wilson"
        if self.grouped is not None:
            return *grouped_bootstrap(rows, self.grouped, unit, iterations, seed), "cluster_bootstrap"
        return *cluster_bootstrap(rows, self.compute, unit, iterations, seed), "cluster_bootstrap"


@dataclass(frozen=True)
class BenchmarkHeadlines:
    benchmark: str
    title: str
    unit: Callable[[dict], Hashable]  # the resampling unit: rows of one unit are paired
    headlines: tuple[Headline, ...]
    applies: Callable[[Rows], bool] = lambda rows: bool(rows)
    # figures with intervals in the benchmark's own tables and plots, not on the scorecard
    details: tuple[Headline, ...] = ()

    def intervals(self, rows: Rows, iterations: int = ITERATIONS, seed: int = SEED,
                  figures: Sequence[Headline] | None = None) -> dict[str, tuple[float, float, float, str]]:
        """metric -> (value, low, high, method) of ``figures`` (default: every headline and detail
        figure) over these rows; NaN where the figure is undefined."""
        out = {}
        for figure in (*self.headlines, *self.details) if figures is None else figures:
            value = figure.compute(rows)
            if isinstance(value, (int, float)) and math.isfinite(value):
                out[figure.metric] = (float(value), *figure.interval(rows, self.unit, iterations, seed))
            else:
                out[figure.metric] = (math.nan, math.nan, math.nan, "none")
        return out


def _binary(values: list[float]) -> tuple[float, int] | None:
    return (sum(values), len(values)) if values and all(v in (0.0, 1.0) for v in values) else None


# --- SpatialTunnel: v and Δ (Tables 3 / 8) -------------------------------------------------------

def _spatialtunnel() -> BenchmarkHeadlines:
    from spatial_tasks.spatialtunnel import metrics

    def score(row: dict) -> float:
        return float(row["score"])

    def subset(metric: str, relation: str) -> Headline:  # v on the consistent / counter pairs
        def rows_of(rows: Rows) -> list[dict]:
            return [r for r in rows if r.get("relation_two_way") == relation]
        return Headline(metric, metric, lambda rows: metrics.mean_by_relation(rows, relation),
                        lambda rows: _binary([score(r) for r in rows_of(rows)]),
                        grouped=GroupedMeans(lambda r: r["relation_two_way"] if r["relation_two_way"] == relation
                                             else None, score, lambda means: means.get(relation, math.nan)))

    gap = GroupedMeans(lambda r: r["relation_two_way"], score,
                       lambda means: means.get("consistent", math.nan) - means.get("counter", math.nan),
                       readable=lambda r: r.get("parsed") != "unparseable")
    return BenchmarkHeadlines("spatialtunnel", "SpatialTunnel", lambda r: r.get("image_id") or r["question_id"], (
        Headline("v", "v", metrics.mean_score, lambda rows: _binary([score(r) for r in rows]),
                 grouped=GroupedMeans(lambda r: "all", score, lambda means: means["all"])),
        Headline("delta", "Δ", metrics.consistency_gap, grouped=gap)),
        details=(subset("v_cons", "consistent"), subset("v_ctr", "counter")))


# --- O3-D: accuracy, near-far bias, SDGM vision / language (Table 12, Eqs. 1-2) -------------------

def _o3d() -> BenchmarkHeadlines:
    from spatial_tasks.o3d import metrics
    from spatial_tasks.o3d.task_metrics import METRICS

    def correct(rows: Rows) -> tuple[float, int] | None:
        scored = metrics.scored(rows)
        return sum(bool(r.get("correct")) for r in scored), len(scored)

    def marked(rows: Rows) -> bool:
        return all(r.get("is_marked") for r in rows)

    def language(rows: Rows) -> bool:
        return not any(r.get("is_marked") or r.get("is_real") for r in rows)

    def correct_value(row: dict) -> float:
        return float(bool(row.get("correct")))

    def readable(row: dict) -> bool:
        return row.get("label") != "unparseable"

    def acc_n_groups(group: Callable[[dict], Hashable | None]) -> GroupedMeans:  # Eq. 2 over Acc_N groups
        return GroupedMeans(lambda r: group(r) if metrics.in_sdgm_population(r) and r["gt_position"] == "near"
                            else None, correct_value, lambda means: metrics.sdgm(list(means.values())), readable)

    bias = GroupedMeans(lambda r: r["gt_position"] if r.get("gt_position") in ("near", "far") else None,
                        correct_value, lambda means: means.get("far", math.nan) - means.get("near", math.nan),
                        readable)

    return BenchmarkHeadlines("o3d", "O3-D", lambda r: (r.get("subset_name"), r.get("image_name")), (
        Headline("acc", "marked acc", METRICS["acc"], correct, scope=marked),
        Headline("bias_nf", "bias", METRICS["bias_nf"], scope=marked, grouped=bias),
        Headline("sdgm_vision", "SDGM V", METRICS["sdgm_vision"], scope=marked,
                 grouped=acc_n_groups(metrics.cue_group)),
        Headline("sdgm_language", "SDGM L", METRICS["sdgm_language"], scope=language,
                 grouped=acc_n_groups(metrics.question_group))))


# --- DORI: coarse / granular task averages (Table 2) ----------------------------------------------

def _dori() -> BenchmarkHeadlines:
    from spatial_tasks.dori import metrics
    from spatial_tasks.dori.schema import TASKS

    def average(granularity: str) -> GroupedMeans:  # Table 2's Avg: mean over tasks of their accuracy
        return GroupedMeans(lambda r: r["task"] if r["granularity"] == granularity and r["task"] in TASKS else None,
                            lambda r: float(r["correct"]),
                            lambda means: sum(means.values()) / len(means) if means else math.nan)

    return BenchmarkHeadlines("dori", "DORI", lambda r: r["question_id"], (
        Headline("avg_coarse", "coarse", lambda rows: metrics.task_average(rows, "coarse"), grouped=average("coarse")),
        Headline("avg_granular", "granular", lambda rows: metrics.task_average(rows, "granular"),
                 grouped=average("granular"))))


# --- VAGUE: MCQ accuracy (Table 1) -----------------------------------------------------------------

def _vague() -> BenchmarkHeadlines:
    from spatial_tasks.vague import metrics

    def mcq(rows: Rows) -> list[dict]:
        return [r for r in rows if r.get("kind") == "mcq"]

    return BenchmarkHeadlines("vague", "VAGUE", lambda r: r["item_id"], (
        Headline("acc", "VLM acc", lambda rows: metrics.accuracy(mcq(rows)) if mcq(rows) else math.nan,
                 lambda rows: _binary([float(r["chosen"] == r["answer"]) for r in mcq(rows)]),
                 scope=lambda rows: all(r.get("setting") == "vlm" for r in rows)),),
        applies=lambda rows: bool(mcq(rows)))


def headlines() -> dict[str, BenchmarkHeadlines]:
    return {b.benchmark: b for b in (_spatialtunnel(), _o3d(), _dori(), _vague())}
