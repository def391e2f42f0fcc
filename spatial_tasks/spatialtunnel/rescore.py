"""Recompute SpatialTunnel metrics from lmms-eval ``--log_samples`` output.

Every run (``common.samples.find_runs``: one folder + one timestamp) and every task is scored on
its own -- samples of different models, model_args, runs, protocols or variants are never
pooled. Groups (``spatialtunnel``, ``spatialtunnel_logit``, ...) are recomputed from the pooled
records of their subtasks, as the live run reports them.
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import SamplesError, first_response, rescore_file
from spatial_tasks.common.yesno import is_payload
from spatial_tasks.spatialtunnel import metrics
from spatial_tasks.spatialtunnel.records import PROTOCOLS, LoggedRecord, exact_match_record, logit_record

BENCHMARK = "spatialtunnel"


def check_protocol(protocol: str) -> None:
    """``--protocol`` is one this benchmark knows (checked before any file is read)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"--protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")


def _summary(records: list[dict]) -> dict:
    """``metrics.summary`` and the protocol the records were scored with (a mix is named as such)."""
    return {**metrics.summary(records), "protocol": "+".join(sorted({r["protocol"] for r in records}))}


def records_from_samples(path: Path, protocol: str = "auto") -> list[dict]:
    """Per-question records of ONE samples file, re-scored from the logged record and response.

    protocol: "exact" (parse Yes/No text), "logit" (first-token payload required) or "auto"
    (each record's logged protocol; for records without one, logit when every response is a
    logit payload, else exact). A protocol named for records that logged another one is refused
    (naming the file and question): a task's protocol is part of the task, and figures scored with
    the other one would belong to neither.
    """
    check_protocol(protocol)

    def checked(record: dict, sample: dict) -> tuple[dict, str]:
        LoggedRecord.model_validate(record)
        return record, record.get("response", first_response(sample))

    pairs = rescore_file(path, ("v",), BENCHMARK, checked)
    scorers = {"logit": logit_record, "exact": exact_match_record}
    fallback = "logit" if pairs and all(is_payload(r) for _, r in pairs) else "exact"
    out = []
    for record, response in pairs:
        logged = record.get("protocol")
        if protocol != "auto" and logged is not None and logged != protocol:
            raise SamplesError(f"{path}: question {record.get('question_id')!r} was run with protocol {logged!r} "
                               f"(its logged record says so), not {protocol!r}: --protocol only chooses for records "
                               "that logged none; leave it at auto")
        chosen = protocol if protocol != "auto" else logged or fallback
        if chosen not in scorers:
            raise SamplesError(f"{path}: record {record.get('question_id')!r} has unknown protocol {chosen!r}")
        out.append(scorers[chosen](record, [response]))
    return out


def rescore(runs: RunSet, protocol: str = "auto") -> dict:
    """Metrics per run, per task and per group from saved samples, as plain JSON-ready dicts:

    ``{"runs": {label: {"tasks": {task: summary}, "groups": {group: summary}}}}`` where a summary
    is ``metrics.summary`` (v, v_cons, v_ctr, delta, v_amb, n per subset, cell_grid, the size
    sweep, unparseable). The CLI adds ``"records"``, the headline figures with intervals as tidy result
    records (``spatial_tasks.results.tidy.benchmark_records``).
    """
    check_protocol(protocol)
    found = {}
    ours = runs.only(BENCHMARK)
    for run in ours.runs:
        per_task = {entry.task: entry.records(protocol=protocol) for entry in ours.of_run(run)}
        groups = {}
        for group, subtasks in sorted((run.results().get("group_subtasks") or {}).items()):
            if subtasks and all(t in per_task for t in subtasks):
                groups[group] = _summary([r for t in subtasks for r in per_task[t]])
        found[run.label] = {"tasks": {t: _summary(r) for t, r in per_task.items()}, "groups": groups}
    if not found:
        raise SamplesError(f"{runs.source}: no SpatialTunnel samples found (expected lmms-eval --log_samples "
                           "output: <stamp>_samples_spatialtunnel*.jsonl)")
    return {"format": "lmms-samples", "source": runs.source, "runs": found}


def summary(records: list[dict], protocol: str = "auto") -> dict:
    """``Benchmark.summary``: ``metrics.summary`` (the records carry their protocol; the option is
    accepted so that every figure function takes the same options)."""
    return metrics.summary(records)
