"""DORI metrics (metrics.py) as pure functions of records."""

from __future__ import annotations

import math

import pytest

from spatial_tasks.common.choice import DECLINED, REFUSED, SELECTED, UNPARSEABLE
from spatial_tasks.dori import metrics
from spatial_tasks.dori.schema import TASKS


def record(task="single_axis_rotation", granularity="coarse", correct=0, soft=None, outcome=SELECTED, n=4,
           source="COCO", classes=("Vehicle",), natural=True, shown=1, seed=42):
    return {"task": task, "granularity": granularity, "correct": correct, "soft": correct if soft is None else soft,
            "outcome": outcome, "n_options": n, "source": source, "broad_classes": list(classes), "natural": natural,
            "answer_shown": shown, "seed": seed}


def records_with_accuracy(task: str, granularity: str, percent: float, n: int = 1000) -> list[dict]:
    right = round(percent * n / 100)
    return [record(task, granularity, correct=int(k < right)) for k in range(n)]


# Table 2, Mantis-CLIP coarse: the task columns' mean is 26.5 while the paper prints Avg 23.8.
MANTIS_CLIP_COARSE = (60.1, 26.1, 15.4, 9.1, 13.2, 37.7, 23.7)


def test_task_average_is_computed_not_copied():
    records = [r for task, pct in zip(TASKS, MANTIS_CLIP_COARSE) for r in records_with_accuracy(task, "coarse", pct)]
    average = metrics.task_average(records, "coarse")
    assert average == pytest.approx(sum(MANTIS_CLIP_COARSE) / 700)
    assert round(100 * average, 1) == 26.5 != 23.8


def test_task_average_weights_tasks_equally():
    records = records_with_accuracy("view_parallelism", "coarse", 100, n=10) + \
        records_with_accuracy("directional_facing", "coarse", 0, n=990)
    assert metrics.task_average(records, "coarse") == 0.5
    assert metrics.accuracy(records) == pytest.approx(0.01)


def test_per_task_and_undefined():
    assert math.isnan(metrics.accuracy([])) and math.isnan(metrics.task_average([], "coarse"))  # undefined: NaN
    records = [record(correct=1), record(granularity="granular", correct=0, soft=0.5)]
    assert metrics.per_task(records) == {("single_axis_rotation", "coarse"): 1.0,
                                         ("single_axis_rotation", "granular"): 0.0}
    assert metrics.per_task(records, metrics.soft_accuracy)[("single_axis_rotation", "granular")] == 0.5


def test_unparseable_and_declined_are_wrong_and_counted():
    records = [record(outcome=UNPARSEABLE), record(outcome=DECLINED), record(outcome=REFUSED),
               record(correct=1)]
    assert metrics.accuracy(records) == 0.25
    assert metrics.unparseable_share(records) == 0.25
    assert metrics.declined_share(records) == 0.25 and metrics.refused_share(records) == 0.25


def test_breakdowns():
    records = [record(correct=1, source="COCO", classes=("Food", "Containers"), natural=True, n=3),
               record(correct=0, source="ShapeNet", classes=("Furniture",), natural=False, n=16)]
    assert metrics.breakdown(records, "source") == {"COCO": (1.0, 1), "ShapeNet": (0.0, 1)}
    assert metrics.breakdown(records, "broad_class") == {"Containers": (1.0, 1), "Food": (1.0, 1),
                                                         "Furniture": (0.0, 1)}
    assert metrics.breakdown(records, "natural") == {"natural": (1.0, 1), "simulated": (0.0, 1)}
    assert metrics.breakdown(records, "n_options") == {3: (1.0, 1), 16: (0.0, 1)}


def test_chance_and_always_first():
    records = [record(n=2, shown=0), record(n=4, shown=3)]
    assert metrics.chance(records) == pytest.approx(0.375)
    assert metrics.expected_always_first(records) == 0.5


def test_seed_summary_is_std_over_sqrt_k():
    mean, error = metrics.seed_summary([0.30, 0.36, 0.33])
    std = math.sqrt(((0.30 - 0.33) ** 2 + (0.36 - 0.33) ** 2) / 3)
    assert mean == pytest.approx(0.33) and error == pytest.approx(std / math.sqrt(3))
    assert metrics.seed_summary([0.30, 0.36, 0.33], ddof=1)[1] == pytest.approx(
        math.sqrt(((0.03) ** 2 * 2) / 2) / math.sqrt(3))
    centre, error = metrics.seed_summary([0.4])
    assert centre == 0.4 and math.isnan(error)
    assert all(math.isnan(v) for v in metrics.seed_summary([None, float("nan")]))
