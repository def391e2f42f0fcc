"""SpatialTunnel rules for ``spatial_baseline`` (responses carry first-token style logits).

Each rule decides which object it believes is farther, then answers the doc's question:
* always_yes — answers Yes (v = 0.5: the answers are polarity balanced);
* vertical   — the object higher in the image (smaller row) is farther: the shortcut the
               tunnel breaks (v_cons = 1, v_ctr = 0 by construction);
* size       — the object larger in the image is nearer;
* oracle     — obj1 is farther (ground truth): v = 1.
"""

from __future__ import annotations

from spatial_tasks.common.baseline_rules import rule
from spatial_tasks.common.yesno import YesNoLogits, encode_payload

CONFIDENT_LOGIT = 30.0  # sigma(30) = 1 - 1e-13: the rule is certain


def _answer(doc: dict, obj1_farther: bool) -> str:
    """Yes/No for the doc's question given a belief about which object is farther."""
    subject_farther = obj1_farther if doc["subject"] == "obj1" else not obj1_farther
    yes = subject_farther if doc["comparison"] == "farther" else not subject_farther
    logit = CONFIDENT_LOGIT if yes else -CONFIDENT_LOGIT
    return encode_payload(YesNoLogits(logit, 0.0, "Yes" if yes else "No"))


def _require(doc: dict, *fields: str) -> None:
    missing = [f for f in fields if doc.get(f) is None]
    if missing:
        raise ValueError(f"spatial_baseline: doc {doc.get('question_id')} has no {missing}; "
                         "this rule needs the objects' image geometry")


@rule("spatialtunnel", "always_yes")
def always_yes(doc: dict) -> str:
    return encode_payload(YesNoLogits(CONFIDENT_LOGIT, 0.0, "Yes"))


@rule("spatialtunnel", "vertical")
def vertical(doc: dict) -> str:
    """The shortcut as the split defines it: the farther object is the higher one, so obj1 is
    believed farther exactly on consistent images (positions measured in the pixels are level
    within their tolerance: counter); where the split is unknown, by the rows themselves, and
    without rows (objects the pixels did not show) it has no belief: p = 0.5."""
    if doc.get("relation_two_way") in ("consistent", "counter"):
        return _answer(doc, obj1_farther=doc["relation_two_way"] == "consistent")
    if doc.get("y1") is None or doc.get("y2") is None:
        return encode_payload(YesNoLogits(0.0, 0.0, "unknown"))
    return _answer(doc, obj1_farther=doc["y1"] < doc["y2"])


@rule("spatialtunnel", "size")
def size(doc: dict) -> str:
    _require(doc, "radius1_px", "radius2_px")
    return _answer(doc, obj1_farther=doc["radius1_px"] < doc["radius2_px"])


@rule("spatialtunnel", "oracle")
def oracle(doc: dict) -> str:
    return _answer(doc, obj1_farther=True)
