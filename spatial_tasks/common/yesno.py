"""Yes/No answers: parsing free text, and the first-token logit payload our *_yesno models return.

lmms-eval 0.7.3 can only score generated text (its loglikelihood path is broken, see
environment.md), so a ``*_yesno`` model returns its first-token logits serialised in the
response string. ``decode_payload`` is the single reader of that format.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

PAYLOAD_KEY = "spatial_tasks_yesno"  # marks a response string as a logit payload
UNPARSEABLE = "unparseable"


@dataclass(frozen=True)
class YesNoLogits:
    logit_yes: float
    logit_no: float
    text: str = ""  # what the model would say first (decoded first token), for the sample log

    @property
    def p_yes(self) -> float:
        """p = sigma(l_Yes - l_No) (SpatialTunnel paper §4, first-token protocol)."""
        return sigmoid(self.logit_yes - self.logit_no)

    @property
    def answer(self) -> str:
        return "Yes" if self.logit_yes >= self.logit_no else "No"


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def encode_payload(logits: YesNoLogits) -> str:
    return json.dumps(
        {PAYLOAD_KEY: 1, "answer": logits.answer, "logit_yes": logits.logit_yes,
         "logit_no": logits.logit_no, "text": logits.text}
    )


def decode_payload(response: str) -> YesNoLogits | None:
    """The logits in a *_yesno model's response, or None if the response is plain text."""
    if not isinstance(response, str) or PAYLOAD_KEY not in response:
        return None
    try:
        data = json.loads(response)
        return YesNoLogits(float(data["logit_yes"]), float(data["logit_no"]), str(data.get("text", "")))
    except (ValueError, KeyError, TypeError):
        return None


_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(response: object) -> str:
    """'Yes', 'No' or UNPARSEABLE for any model output; never raises.

    A logit payload yields its argmax answer. Otherwise the first standalone yes/no word wins
    ("No, the red cube is ..." -> No); text with neither is unparseable and scored wrong.
    """
    if not isinstance(response, str):
        return UNPARSEABLE
    payload = decode_payload(response)
    if payload is not None:
        return payload.answer
    m = _YES_NO.search(response)
    if m is None:
        return UNPARSEABLE
    return "Yes" if m.group(1).lower() == "yes" else "No"
