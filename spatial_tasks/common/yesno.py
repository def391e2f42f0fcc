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
from dataclasses import dataclass
from typing import Any

UNPARSEABLE = "unparseable"

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
    """A *_yesno model's response for these logits (``extra``: more fields to log, e.g. token ids)."""
    return encode_payload_fields(logits.answer, logits.logit_yes, logits.logit_no, logits.text, **extra)




def decode_payload(response: object) -> YesNoLogits | None:
    """The logits in a *_yesno model's response; None for plain text and for a malformed payload
    (tell them apart with ``is_payload``). Never raises, whatever the stored text holds."""
    data = decode_payload_fields(response)
    if data is None:
        return None
    return YesNoLogits(data["logit_yes"], data["logit_no"], data["text"])


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
