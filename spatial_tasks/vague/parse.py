"""VAGUE's one reading step of its own: a CoT answer's intention follows its last "answer2" label
("Your answer2 (intention) : C"). The letter is then read by the project's one multiple-choice
reader (``spatial_tasks.common.choice``)."""

from __future__ import annotations

import re

_ANSWER2 = re.compile(r"(?i)answer\s*2")
_LABEL = re.compile(r"^\s*(?:\((?:intention|reasoning)\))?\s*:?\s*", re.IGNORECASE)  # "(intention) : "


def final_part(text: str) -> str:
    """What follows the last "answer2" label of a CoT answer ("Your answer2 (intention) : C" -> "C");
    the whole text when there is none."""
    parts = _ANSWER2.split(text)
    return _LABEL.sub("", parts[-1], count=1) if len(parts) > 1 else text
