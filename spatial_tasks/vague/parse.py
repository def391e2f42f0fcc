"""Reading the chosen letter out of a VAGUE answer. Never raises.

The prompts ask for "only the letter among A,B,C and D" (CoT: "Your answer2 (intention) : ...").
Rules, first match wins, on the part after the last "answer2" marker when there is one:

1. the letter alone or opening the answer: "B", "B:", "(B)", "B. Move the car" (a bare "A"
   followed by a lower-case word is the article);
2. an explicit marker: "Answer: B", "answer is (B)", "Your answer : C", "**C**";
3. option text: exactly one option's text occurs in the answer ("Move the sedan out of the
   handicapped spot" without its letter);
4. one distinct parenthesised letter "(B)" or "B:" anywhere.

Anything else -- empty answers, "I don't know", refusals, two letters -- is INVALID: scored
wrong and counted (the paper's denominator is all items; Tables H3/H4 report the valid count).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from spatial_tasks.vague.schema import LETTERS

INVALID = "invalid"

_ANSWER2 = re.compile(r"(?i)answer\s*2")
_LABEL = re.compile(r"^\s*(?:\((?:intention|reasoning)\))?\s*:?\s*", re.IGNORECASE)  # "(intention) : "
_LEADING = re.compile(r"^[\s\*\(\[\"']*([ABCD])(?:[\)\]:.,\-\"'\*]|\s*$|\s*\n|\s+(?![a-z0-9]))")
_MARKER = re.compile(r"(?i:\b(?:final answer|answer|choice|option|selection|i choose|i select))"
                     r"(?:\s*+(?:is|would be|:|-|=))*+\s*+[\(\[\*]*+\s*+([ABCD])(?![A-Za-z])")
_BOLD = re.compile(r"\*\*\s*\(?([ABCD])\)?[\.\):]?\s*\*\*")
_TAGGED = re.compile(r"(?<![A-Za-z])(?:\(([ABCD])\)|([ABCD]):)")


def _by_text(text: str, options: Sequence[str]) -> set[int]:
    low = re.sub(r"\s+", " ", text.lower())
    found = set()
    for k, option in enumerate(options):
        needle = re.sub(r"\s+", " ", str(option).strip().lower().rstrip("."))
        if needle and needle in low:
            found.add(k)
    return found


def final_part(text: str) -> str:
    """What follows the last "answer2" label of a CoT answer ("Your answer2 (intention) : C" -> "C");
    the whole text when there is none."""
    parts = _ANSWER2.split(text)
    return _LABEL.sub("", parts[-1], count=1) if len(parts) > 1 else text


def parse_letter(response: object, options: Sequence[str] = ()) -> str:
    """"A".."D" or INVALID. ``options`` are the option texts in letter order (A first)."""
    try:
        return _parse(response, options)
    except Exception:  # noqa: BLE001 - model output must never crash scoring
        return INVALID


def _parse(response: object, options: Sequence[str]) -> str:
    text = final_part(response if isinstance(response, str) else "")
    if not text.strip():
        return INVALID
    match = _LEADING.match(text)
    if match:
        return match.group(1)
    for pattern in (_MARKER, _BOLD):
        match = pattern.search(text)
        if match:
            return match.group(1)
    found = _by_text(text, options)
    if len(found) == 1:
        return LETTERS[found.pop()]
    letters = {a or b for a, b in _TAGGED.findall(text)}
    if len(letters) == 1:
        return letters.pop()
    return INVALID
