"""Recompute SpatialTunnel metrics from lmms-eval ``--log_samples`` output."""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.common.samples import first_response, iter_samples, sample_files
from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.spatialtunnel import metrics
from spatial_tasks.spatialtunnel.tasks import exact_match_record, logit_record


def records_from_samples(path: Path, protocol: str = "auto") -> list[dict]:
    """Per-question records re-scored from the logged doc and response.

    protocol: "exact" (parse Yes/No text), "logit" (first-token payload required) or "auto"
    (logit when every response carries logits, else exact).
    """
    if protocol not in ("auto", "exact", "logit"):
        raise ValueError(f"protocol must be auto, exact or logit, not {protocol!r}")
    pairs = [(s["doc"], first_response(s)) for f in sample_files(path, "spatialtunnel") for s in iter_samples(f)]
    if not pairs:
        raise ValueError(f"{path}: no SpatialTunnel samples found (expected lmms-eval *_samples_spatialtunnel*.jsonl)")
    if protocol == "auto":
        protocol = "logit" if all(decode_payload(r) is not None for _, r in pairs) else "exact"
    score = logit_record if protocol == "logit" else exact_match_record
    return [score(doc, [response]) for doc, response in pairs]


def rescore(path: Path, protocol: str = "auto") -> dict:
    """Metrics per variant (and overall) from saved samples, as plain JSON-ready dicts."""
    records = records_from_samples(path, protocol)
    out = {"all": metrics.summary(records)}
    for variant in sorted({r["variant"] for r in records}):
        out[variant] = metrics.summary([r for r in records if r["variant"] == variant])
    return out
