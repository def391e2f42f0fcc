"""Recompute DORI metrics from lmms-eval ``--log_samples`` output, per run and over seeds.

Each run (``common.samples.find_runs``) is scored on its own: every logged record is re-scored
from its response with the live run's functions (``tasks.score``). Runs that differ only in the
option-order seed (the same model label, other ``seed`` in the records) are then summarised as
mean +- std/sqrt(k) over the k seeds (the paper's error bars).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import SamplesError, first_response, rescore_file
from spatial_tasks.dori import metrics
from spatial_tasks.dori.records import LoggedRecord, score
from spatial_tasks.dori.schema import BENCHMARK, GRANULARITIES


def records_from_samples(path: Path) -> list[dict]:
    """Every logged answer of one samples file, checked (``records.LoggedRecord``) and re-scored."""
    def rescored(record: dict, sample: dict) -> dict:
        LoggedRecord.model_validate(record)
        return score(record, record.get("response", first_response(sample)))

    return rescore_file(path, ("acc",), BENCHMARK, rescored)


def summary(records: list[dict]) -> dict:
    """Every DORI figure of a set of records (one run): per task x granularity, the averages over
    tasks, and the breakdowns of §5."""
    figures: dict = {"n": len(records)}
    for (task, granularity), acc in metrics.per_task(records).items():
        figures[f"{task}_{granularity}"] = acc
    for (task, granularity), value in metrics.per_task(records, metrics.soft_accuracy).items():
        if granularity == "granular":
            figures[f"{task}_granular_soft"] = value
    for granularity in GRANULARITIES:
        figures[f"avg_{granularity}"] = metrics.task_average(records, granularity)
    figures["avg_granular_soft"] = metrics.task_average(records, "granular", metrics.soft_accuracy)
    figures["unparseable"] = metrics.unparseable_share(records)
    figures["declined"] = metrics.declined_share(records)
    figures["refused"] = metrics.refused_share(records)
    figures["breakdowns"] = {name: {str(k): {"acc": v, "n": n} for k, (v, n) in metrics.breakdown(records, name).items()}
                             for name in metrics.BREAKDOWNS}
    return figures


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per run: Table 2's per-task coarse / granular accuracies."""
    records = [r for rows in per_task.values() for r in rows]
    return [("table2", "run (all DORI tasks)", summary(records))] if records else []


def split_by_seed(label: str, records: list[dict]) -> dict[str, list[dict]]:
    """One run's records per option-order seed ("LABEL seed=S" when a run holds several seeds,
    e.g. the three-seed groups of `spatial-tasks dori-seeds`)."""
    seeds = sorted({r.get("seed") for r in records}, key=str)
    if len(seeds) <= 1:
        return {label: records}
    return {f"{label} seed={seed}": [r for r in records if r.get("seed") == seed] for seed in seeds}


def records_by_run(runs: RunSet, root: Path) -> dict[str, list[dict]]:
    """Run label (and seed) -> the pooled records of all its DORI tasks, for the runs under ``root``."""
    found: dict[str, list[dict]] = {}
    ours = runs.only(BENCHMARK)
    for run in runs.by_root[root]:
        records = [r for entry in ours.of_run(run) for r in entry.records()]
        if not records:
            continue
        label = run.label if run.label not in found else f"{run.label} [{run.stamp}]"
        found.update(split_by_seed(label, records))
    return found


def over_seeds(runs: dict[str, list[dict]], ddof: int = 0) -> dict:
    """Figures as mean and error = std/sqrt(k) over the runs of one model (its label, with any
    " seed=S" or " [stamp]" suffix removed) that used k different seeds. ``runs`` hold one seed
    each (``split_by_seed``)."""
    by_model: dict[str, dict] = defaultdict(dict)
    first_label: dict[tuple[str, object], str] = {}
    for label, records in runs.items():
        model = re.sub(r"( seed=\S+| \[[^\]]*\])+$", "", label)
        seed = records[0].get("seed")
        if (model, seed) in first_label:  # two runs of one seed: averaging them as two seeds would be wrong
            raise SamplesError(f"{model}: two runs with option-order seed {seed} ({first_label[model, seed]!r} and "
                               f"{label!r}); a seed summary needs one run per seed -- rescore them apart")
        first_label[model, seed] = label
        by_model[model][seed] = summary(records)
    out = {}
    for model, per_seed in by_model.items():
        if len(per_seed) < 2:
            continue
        keys = [k for k in next(iter(per_seed.values())) if k not in ("n", "breakdowns")]
        out[model] = {"seeds": sorted(per_seed, key=lambda s: (not isinstance(s, int), str(s) if not isinstance(s, int) else s)), **{
            key: dict(zip(("mean", "error"), metrics.seed_summary([s.get(key) for s in per_seed.values()], ddof)))
            for key in keys}}
    return out


def rescore(runs: RunSet, ddof: int = 0) -> dict:
    """``spatial-tasks rescore dori``: every run's figures, and mean +- error over seeds."""
    if ddof not in (0, 1):
        raise ValueError(f"--ddof must be 0 (numpy's default, the paper's formula) or 1 (the sample std), not {ddof}")
    labelled: dict[str, list[dict]] = {}
    for path in runs.roots:  # one folder per seed, as `spatial-tasks dori-seeds` runs may be saved
        for label, records in records_by_run(runs, path).items():
            labelled[label if label not in labelled else f"{label} [{path}]"] = records
    if not labelled:
        raise SamplesError(f"{runs.source}: no DORI samples found (expected lmms-eval --log_samples "
                           "output: <stamp>_samples_dori_*.jsonl)")
    return {"runs": {label: summary(records) for label, records in labelled.items()}, "seeds": over_seeds(labelled, ddof)}
