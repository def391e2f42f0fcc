"""Recompute VAGUE metrics from lmms-eval ``--log_samples`` output: per run, per task (subset x
setting), every answer re-scored from its logged response with the live run's functions."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.common.choice import DECLINED, REFUSED, UNPARSEABLE, outcome_share
from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import SamplesError, first_response, rescore_file
from spatial_tasks.vague import metrics
from spatial_tasks.vague.records import LoggedRecord, score_freeform, score_mcq
from spatial_tasks.vague.schema import BENCHMARK, SUBSETS, WRONG_TYPES


def records_from_samples(path: Path) -> list[dict]:
    """Every logged answer of one samples file, checked (``records.LoggedRecord``) and re-scored."""
    def rescored(record: dict, sample: dict) -> dict:
        LoggedRecord.model_validate(record)
        scorer = score_freeform if record["kind"] == "freeform" else score_mcq
        return scorer(record, record.get("response", first_response(sample)), record["setting"])

    return rescore_file(path, ("acc", "bleu1"), BENCHMARK, rescored)


def summary(records: list[dict], setting: str | None = None) -> dict:
    """Every figure of one task's records: MCQ accuracy, wrong-type counts and shares, the shares
    without a letter (unparseable, declined, refused) and the valid count (Tables 1-3, H3/H4,
    Fig. 4); free-form BLEU-1 and BERTScore F1. (``setting`` is accepted so that every figure
    function takes the benchmark's options; the records carry their own.)"""
    out: dict = {"n": len(records), "setting": records[0]["setting"] if records else None}
    mcq = [r for r in records if r["kind"] == "mcq"]
    free = [r for r in records if r["kind"] == "freeform"]
    if mcq:
        counts = metrics.wrong_type_counts(mcq)
        out.update(acc=metrics.accuracy(mcq), unparseable=outcome_share(mcq, UNPARSEABLE),
                   declined=outcome_share(mcq, DECLINED), refused=outcome_share(mcq, REFUSED),
                   valid=metrics.valid_count(mcq),
                   correct=sum(r["correct"] for r in mcq),
                   **{f"n_{t.lower()}": counts[t] for t in WRONG_TYPES},
                   **{f"{t.lower()}_rate": metrics.wrong_type_share(mcq, t) for t in WRONG_TYPES})
    if free:
        out.update(bleu1=metrics.mean_bleu1(free), bertscore_f1=metrics.mean_bertscore(free),
                   **{key: free[0].get(key) for key in ("bertscore_model", "bertscore_revision", "bertscore_layers")})
    return out


TABLE1_SETTINGS = ("lm", "sm", "vlm")


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per task whose records are one subset (vcr, ego4d) in one of the paper's settings (lm, sm,
    vlm): Table 1's MCQ accuracy, cell ``<subset>_<setting>``."""
    out = []
    for task, records in per_task.items():
        kinds = {(r.get("subset"), r.get("setting")) for r in records}
        if len(kinds) == 1 and (kind := kinds.pop())[0] in SUBSETS and kind[1] in TABLE1_SETTINGS:
            out.append(("table1", task, {f"{kind[0]}_{kind[1]}": summary(records).get("acc")}))
    return out


def rescore(runs: RunSet) -> dict:
    """``{"runs": {label: {task: summary}}}`` for every run of ``runs`` (the CLI adds the tidy
    result records: ``spatial_tasks.results.tidy.benchmark_records``)."""
    figures: dict[str, dict] = {}
    for entry in runs.only(BENCHMARK).tasks:
        figures.setdefault(entry.run.label, {})[entry.task] = summary(entry.records())
    if not figures:
        raise SamplesError(f"{runs.source}: no VAGUE samples found (expected lmms-eval --log_samples output: "
                           "<stamp>_samples_vague_*.jsonl)")
    return {"runs": figures}
