"""Yes/No answers: parsing free text, and the first-token logit payload our *_yesno models return.

lmms-eval 0.7.3 can only score generated text (its loglikelihood path is broken, see
environment.md), so a ``*_yesno`` model returns its first-token logits serialised in the
response string (``encode_payload``): JSON marked with ``PAYLOAD_KEY``. The format and its Yes/No
meaning are both here; the lmms-eval seam (``spatial_tasks.harness``, section 6) only relies on the
string reaching ``process_results`` untouched.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spatial_tasks.common.choice import UNPARSEABLE  # the one definition of an unread answer

# --- the response-string format

PAYLOAD_KEY = "spatial_tasks_yesno"  # marks a response string as a logit payload


def encode_payload_fields(answer: str, logit_yes: float, logit_no: float, text: str = "", **extra: Any) -> str:
    """A *_yesno model's response: the first-token logits as JSON (``extra``: e.g. the token ids)."""
    return json.dumps({PAYLOAD_KEY: 1, "answer": answer, "logit_yes": logit_yes, "logit_no": logit_no,
                       "text": text, **extra})


def is_payload(response: object) -> bool:
    """Whether a response claims to be a logit payload (it may still be malformed)."""
    return isinstance(response, str) and PAYLOAD_KEY in response


def decode_payload_fields(response: object) -> dict | None:
    """The payload of a *_yesno response as a dict (logit_yes, logit_no as floats, text, and any
    extra fields); None for plain text and a malformed payload. Never raises."""
    if not is_payload(response):
        return None
    try:
        data = json.loads(response)
        if not isinstance(data, dict):
            return None
        logit_yes, logit_no = data["logit_yes"], data["logit_no"]
        if isinstance(logit_yes, bool) or isinstance(logit_no, bool):
            return None
        return {**data, "logit_yes": float(logit_yes), "logit_no": float(logit_no),
                "text": str(data.get("text", ""))[:200]}
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return None


@dataclass(frozen=True)
class YesNoLogits:
    logit_yes: float
    logit_no: float
    text: str = ""  # what the model would say first (decoded first token), for the sample log
    # m = p(Yes) + p(No) of the first token (every answer spelling counted): how much of the model's
    # answer p = sigma(l_Yes - l_No) reads. None where unknown (a rule baseline has no distribution).
    label_mass: float | None = None

    @property
    def p_yes(self) -> float:
        """p = sigma(l_Yes - l_No) (SpatialTunnel paper §4, first-token protocol); NaN when the
        logits are NaN (or both infinite alike)."""
        return sigmoid(self.logit_yes - self.logit_no)

    @property
    def finite(self) -> bool:
        """Whether the logits say anything: p is a number (an infinite logit against a finite one
        is a certain answer; NaN, or +inf against +inf, is none)."""
        return not math.isnan(self.p_yes)

    @property
    def answer(self) -> str:
        """Yes, No, or UNPARSEABLE when the logits are not numbers (never a silent "No")."""
        if not self.finite:
            return UNPARSEABLE
        return "Yes" if self.logit_yes >= self.logit_no else "No"


def sigmoid(x: float) -> float:
    if math.isnan(x):
        return math.nan
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def encode_payload(logits: YesNoLogits, **extra) -> str:
    """A *_yesno model's response for these logits (``extra``: more fields to log, e.g. token ids),
    with the label mass where it is known."""
    if logits.label_mass is not None:
        extra = {"label_mass": logits.label_mass, **extra}
    return encode_payload_fields(logits.answer, logits.logit_yes, logits.logit_no, logits.text, **extra)


MASS_SLACK = 1e-6  # float rounding of a sum of two probabilities may pass 1 by this much


def label_mass(log_p_yes: float, log_p_no: float) -> float | None:
    """m = p(Yes) + p(No) from the labels' log-probabilities (each already the logsumexp over its
    spellings), at most 1; None when they are not numbers."""
    mass = math.exp(log_p_yes) + math.exp(log_p_no)
    return None if math.isnan(mass) else min(1.0, mass)


def label_mass_problem(response: object) -> str | None:
    """What is wrong with the ``label_mass`` a logged first-token payload carries (outside [0, 1],
    NaN, not a number), in words naming the value; None when it is fine, absent, or no payload."""
    fields = decode_payload_fields(response)
    if fields is None or payload_label_mass(fields)[0]:
        return None
    value = fields["label_mass"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"label_mass {value!r} is not a number"
    if math.isnan(value):
        return "label_mass NaN is not a number"
    return f"label_mass {value!r} is outside [0, 1]"


def payload_label_mass(fields: dict) -> tuple[bool, float | None]:
    """(valid, m) of a decoded payload's ``label_mass``: absent is valid and None; a number in [0, 1]
    (to MASS_SLACK) is valid; anything else (text, NaN, out of range) is not."""
    if "label_mass" not in fields:
        return True, None
    value = fields["label_mass"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0 + MASS_SLACK:
        return False, None
    return True, min(1.0, float(value))




# --- which tasks score a first-token payload


def scores_payloads(process_results):
    """Marks a task's ``process_results`` as one that scores a first-token payload (the SpatialTunnel
    logit tasks). The first-token scorers refuse, before asking anything, the tasks of ours whose
    process_results is not marked: those score generated text, and a payload there scores 0."""
    process_results.scores_first_token_payload = True
    return process_results


# --- the label mass over a set of records (rescore, report, verify, and a scorer's closing warning)


def warn_on_label_mass(scored: Sequence[YesNoLogits], who: str) -> str | None:
    """The one warning a scorer logs after a run whose median label mass is under 1/2 (returned too)."""
    warning = label_mass_warning(label_mass_median([{"label_mass": s.label_mass} for s in scored]))
    if warning:
        from loguru import logger

        logger.warning(f"{who}: {warning}")
    return warning


MASS_WARNING_BELOW = 0.5  # a median label mass under this: p reads a minority of the model's answer


def label_mass_median(records: Sequence[dict]) -> float:
    """Median label mass m = p(Yes) + p(No) of the first token over the records that carry it
    (``label_mass``; NaN if none does). Not a paper figure: it says how much of the model's answer
    p = σ(ℓ_Yes − ℓ_No) (SpatialTunnel paper §4) reads -- with m = 0.1, p compares two words the
    model almost never says first."""
    masses = sorted(r["label_mass"] for r in records if r.get("label_mass") is not None)
    if not masses:
        return math.nan
    middle = len(masses) // 2
    return masses[middle] if len(masses) % 2 else (masses[middle - 1] + masses[middle]) / 2


def label_mass_below_half(records: Sequence[dict]) -> float:
    """Share of the questions carrying a label mass whose m is under 1/2 (NaN if none carries it)."""
    masses = [r["label_mass"] for r in records if r.get("label_mass") is not None]
    return sum(m < MASS_WARNING_BELOW for m in masses) / len(masses) if masses else math.nan


def label_mass_warning(median: float | None) -> str | None:
    """The one warning line for a run and task whose median label mass is under 1/2, else None."""
    if median is None or math.isnan(median) or median >= MASS_WARNING_BELOW:
        return None
    return (f"median label mass {median:.3f} < {MASS_WARNING_BELOW}: the model mostly does not answer Yes or No "
            "first, so p = σ(ℓ_Yes − ℓ_No) reads a minority of its answer")


def decode_payload(response: object) -> YesNoLogits | None:
    """The logits in a *_yesno model's response; None for plain text and for a malformed payload
    (tell them apart with ``is_payload``). Never raises, whatever the stored text holds."""
    data = decode_payload_fields(response)
    if data is None:
        return None
    valid, mass = payload_label_mass(data)
    if not valid:
        return None
    return YesNoLogits(data["logit_yes"], data["logit_no"], data["text"], mass)


_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(response: object) -> str:
    """'Yes', 'No' or UNPARSEABLE for any model output; never raises.

    A logit payload yields its argmax answer (UNPARSEABLE for NaN logits or a malformed payload,
    whose text is never searched for words). Otherwise the first standalone yes/no word wins
    ("No, the red cube is ..." -> No); text with neither is unparseable and scored wrong.
    """
    if not isinstance(response, str):
        return UNPARSEABLE
    if is_payload(response):
        payload = decode_payload(response)
        return UNPARSEABLE if payload is None else payload.answer
    m = _YES_NO.search(response)
    if m is None:
        return UNPARSEABLE
    return "Yes" if m.group(1).lower() == "yes" else "No"
