"""Metrics of the re-splits (SpatialTunnel paper Tables 1 and 2): pure functions over per-question
records (``resplit.tasks`` makes them), and the paper's figures to compare with. Undefined
figures are NaN."""

from __future__ import annotations

import math
from collections.abc import Sequence

from spatial_tasks.common.stats import mean, share

BENCHMARK = "spatialtunnel_resplit"
PAPER_TABLE1 = {"embspatial": {"consistent": 976, "counter": 129, "ambiguous": 101},
                "cv_bench_3d": {"consistent": 363, "counter": 65, "ambiguous": 172}}


def paper_table2() -> dict[str, dict[str, tuple[float, float]]]:
    """Table 2 (accuracy %, consistent / counter) per paper model and source (embspatial,
    cv_bench_3d), from tasks/spatialtunnel/paper_results.yaml."""
    from spatial_tasks.common.paper import paper_results

    table = paper_results("spatialtunnel").tables["table2"]
    return {model: {source: (table.rows[model][table.columns.index(f"{source}_consistent")],
                             table.rows[model][table.columns.index(f"{source}_counter")])
                    for source in ("embspatial", "cv_bench_3d")} for model in table.rows}


def accuracy(records: Sequence[dict], relation: str | None = None) -> float:
    """Acc (Table 2) over the records of ``relation`` (all when None); NaN without records."""
    return mean(float(r["score"]) for r in records if relation is None or r["relation"] == relation)


def gap(records: Sequence[dict]) -> float:
    """Δ = Acc_con − Acc_ctr (Table 2's two columns); NaN without both kinds or without any
    readable answer (a gap between unreadable answers says nothing)."""
    if not any(r.get("parsed") != "unparseable" for r in records):
        return math.nan
    return accuracy(records, "consistent") - accuracy(records, "counter")


def count(records: Sequence[dict], relation: str) -> int:
    """How many questions have ``relation`` (Table 1's counts)."""
    return sum(1 for r in records if r["relation"] == relation)


def summary(records: Sequence[dict]) -> dict:
    return {"n": len(records), "acc_all": accuracy(records), "acc_cons": accuracy(records, "consistent"),
            "acc_ctr": accuracy(records, "counter"), "delta": gap(records), "acc_amb": accuracy(records, "ambiguous"),
            **{f"n_{name}": count(records, relation) for name, relation in
               (("cons", "consistent"), ("ctr", "counter"), ("amb", "ambiguous"), ("unknown", "unknown"))},
            "unparseable": unparseable_share(records)}


def acc_consistent(records: Sequence[dict]) -> float:
    """Acc_con (Table 2): accuracy on questions whose farther object is higher in the image."""
    return accuracy(records, "consistent")


def acc_counter(records: Sequence[dict]) -> float:
    """Acc_ctr (Table 2): accuracy on questions whose farther object is lower in the image."""
    return accuracy(records, "counter")


def acc_ambiguous(records: Sequence[dict]) -> float:
    """Accuracy on the ambiguous questions (|dy| < 5 % of the height; Table 1's third column)."""
    return accuracy(records, "ambiguous")


def n_consistent(records: Sequence[dict]) -> int:
    """Table 1's consistent count (EmbSpatial 976, CV-Bench-3D 363)."""
    return count(records, "consistent")


def n_counter(records: Sequence[dict]) -> int:
    """Table 1's counter count (EmbSpatial 129, CV-Bench-3D 65)."""
    return count(records, "counter")


def n_ambiguous(records: Sequence[dict]) -> int:
    """Table 1's ambiguous count (EmbSpatial 101, CV-Bench-3D 172)."""
    return count(records, "ambiguous")


def unparseable_share(records: Sequence[dict]) -> float:
    """Share of answers without a readable option letter (they count as wrong); NaN without records."""
    return share(records, lambda r: r.get("parsed") == "unparseable")


# The re-split tasks' metrics lmms-eval aggregates, by name: registered as
# ``spatialtunnel_resplit_<name>`` (``Benchmark.metrics``), named so in their YAMLs.
TASK_METRICS = {
    "acc_all": accuracy,
    "acc_cons": acc_consistent,
    "acc_ctr": acc_counter,
    "delta": gap,
    "acc_amb": acc_ambiguous,
    "n_cons": n_consistent,
    "n_ctr": n_counter,
    "n_amb": n_ambiguous,
    "unparseable": unparseable_share,
}


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per task: Table 2's consistent / counter accuracy of its source benchmark."""
    out = []
    for task, records in per_task.items():
        sources = {r.get("source") for r in records}
        if len(sources) == 1 and records:
            figures = summary(records)
            source = sources.pop()
            out.append(("table2", task, {f"{source}_consistent": figures["acc_cons"],
                                         f"{source}_counter": figures["acc_ctr"]}))
    return out
