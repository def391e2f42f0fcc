"""Recompute SpatialTunnel metrics from lmms-eval ``--log_samples`` output."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.common.samples import first_response, iter_samples, logged_record, sample_files
from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.spatialtunnel import metrics
from spatial_tasks.spatialtunnel.tasks import exact_match_record, logit_record


def records_from_samples(path: Path, protocol: str = "auto") -> list[dict]:
    """Per-question records re-scored from the logged doc and response.

    protocol: "exact" (parse Yes/No text), "logit" (first-token payload required) or "auto"
    (each record's logged protocol; for records without one, logit when every response
    carries logits, else exact).
    """
    if protocol not in ("auto", "exact", "logit"):
        raise ValueError(f"protocol must be auto, exact or logit, not {protocol!r}")
    pairs = []
    for file in sample_files(path):
        for sample in iter_samples(file):
            record = logged_record(sample, "v", "spatialtunnel")
            if record is not None:
                pairs.append((record, record.get("response", first_response(sample))))
    if not pairs:
        raise ValueError(f"{path}: no SpatialTunnel samples found (expected lmms-eval --log_samples *_samples_*.jsonl)")
    scorers = {"logit": logit_record, "exact": exact_match_record}
    fallback = "logit" if all(decode_payload(r) is not None for _, r in pairs) else "exact"
    return [scorers[protocol if protocol != "auto" else record.get("protocol", fallback)](record, [response])
            for record, response in pairs]


def rescore(path: Path, protocol: str = "auto") -> dict:
    """Metrics per variant (and overall) from saved samples, as plain JSON-ready dicts."""
    records = records_from_samples(path, protocol)
    out = {"all": metrics.summary(records)}
    for variant in sorted({r["variant"] for r in records}):
        out[variant] = metrics.summary([r for r in records if r["variant"] == variant])
    return out
