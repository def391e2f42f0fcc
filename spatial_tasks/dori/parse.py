"""Reading a DORI selection out of a free-form answer. Never raises.

The paper asks for "an answer selection and a short reasoning", so answers look like
"B. 90 degrees clockwise -- the chair's back faces us", "Answer: (C)" or only the option text.
Rules, first match wins:

0. hedging between two options ("(A) or (B)", "A/B") selects nothing: UNPARSEABLE;
1. an explicit marker: "Answer: B", "answer is (B)", "Selection - B", "Option B", "**B**";
2. a letter that opens the answer: "B", "B.", "(B)", "B)" (the prompt puts the selection first);
3. option text: the options whose text occurs in the answer (case-insensitive, on word
   boundaries; an occurrence inside a longer option's occurrence -- "clockwise" inside
   "counterclockwise" -- does not count); exactly one must remain;
4. a single distinct parenthesised letter "(B)" anywhere;
5. otherwise "cannot be determined" phrasing is CANNOT_DETERMINE, a refusal ("I'm sorry", "I
   cannot ...") is REFUSAL, anything else UNPARSEABLE.

Choosing an option whose text is "Cannot be determined" is CANNOT_DETERMINE too. All three
outcomes score 0 and are counted (metrics: ``declined``, ``unparseable``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

SELECTED = "selected"
CANNOT_DETERMINE = "cannot_determine"
REFUSAL = "refusal"
UNPARSEABLE = "unparseable"

_MARKER = re.compile(
    r"(?i:\b(?:final answer|answer|selection|selected|choice|option|i choose|i select|i pick))"
    r"(?:\s*+(?:is|would be|:|-|=))*+\s*+[\(\[\*]*+\s*+([A-Z])(?![A-Za-z])")  # possessive: no backtracking
_BOLD = re.compile(r"\*\*\s*\(?([A-Z])\)?[\.\):]?\s*\*\*")
# "A 90 degree turn" opens with the article, not option A: a bare letter needs punctuation, the
# end of the line, or a non-lowercase word after it.
_LEADING = re.compile(r"^[\s\*\(\[]*([A-Z])(?:[\)\].:,\-]|\s*$|\s*\n|\s+(?![a-z0-9]))")
# "(A) or (B)", "A/B": hedging between two options selects neither.
_HEDGE = re.compile(r"(?<![A-Za-z])\(?([A-Z])\)?\s*(?:or|/)\s*\(?([A-Z])\)?(?![A-Za-z])")
_PAREN = re.compile(r"\(([A-Z])\)")
_CANNOT = re.compile(r"(?i)\b(cannot|can't|can not|unable to|impossible to|not possible to)\s+(be\s+)?determin")
_REFUSAL = re.compile(r"(?i)\b(i'?m sorry|i am sorry|i cannot|i can't|i can not|i am unable|i'm unable|"
                      r"as an ai|i apologi[sz]e|unable to (answer|assist|help))")


@dataclass(frozen=True)
class Parsed:
    outcome: str  # SELECTED, CANNOT_DETERMINE, REFUSAL or UNPARSEABLE
    index: int | None = None  # the chosen option's index in the shown order


def is_cannot_determine(option: str) -> bool:
    return bool(re.fullmatch(r"\s*(cannot|can't|can not) be determined\.?\s*", str(option), re.IGNORECASE))


def _letter(letter: str, n: int) -> int | None:
    k = LETTERS.find(letter)
    return k if 0 <= k < n else None


def _text_matches(text: str, options: Sequence[str]) -> set[int]:
    """Options with an occurrence in ``text`` that no longer option's occurrence contains.
    Sorting and prefix maxima keep this O(m log m) in the number of occurrences m."""
    low = text.lower()
    spans = []
    for k, option in enumerate(options):
        needle = str(option).strip().lower().rstrip(".")
        if not needle:
            continue
        pattern = r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])"
        spans += [(m.start(), m.end(), k) for m in re.finditer(pattern, low)]
    found = {k for _, _, k in spans}
    if len(found) <= 1:  # nothing to be contained in
        return found
    spans.sort()
    kept: set[int] = set()
    reach = -1  # the furthest end of the spans that start before the current start
    i = 0
    while i < len(spans):
        j = i
        while j < len(spans) and spans[j][0] == spans[i][0]:
            j += 1
        longest_here = spans[j - 1][1]  # sorted: the last span with this start ends furthest
        for start, end, k in spans[i:j]:
            if reach < end and end == longest_here:
                kept.add(k)
        reach = max(reach, longest_here)
        i = j
    return kept


def _selected(k: int, options: Sequence[str]) -> Parsed:
    if is_cannot_determine(options[k]):
        return Parsed(CANNOT_DETERMINE, k)
    return Parsed(SELECTED, k)


def parse_selection(response: object, options: Sequence[str]) -> Parsed:
    """The option an answer selects (index in ``options``, the shown order), or why none."""
    try:
        return _parse(response, options)
    except Exception:  # noqa: BLE001 - model output must never crash scoring
        return Parsed(UNPARSEABLE)


def _parse(response: object, options: Sequence[str]) -> Parsed:
    text = response if isinstance(response, str) else ("" if response is None else str(response))
    n = len(options)
    if not text.strip() or n == 0:
        return Parsed(UNPARSEABLE)
    for match in _HEDGE.finditer(text):
        a, b = _letter(match.group(1), n), _letter(match.group(2), n)
        if a is not None and b is not None and a != b:
            return Parsed(UNPARSEABLE)
    for pattern in (_MARKER, _BOLD):
        for match in pattern.finditer(text):
            k = _letter(match.group(1), n)
            if k is not None:
                return _selected(k, options)
    match = _LEADING.match(text)
    if match:
        k = _letter(match.group(1), n)
        if k is not None:
            return _selected(k, options)
    found = _text_matches(text, options)
    if len(found) == 1:
        return _selected(found.pop(), options)
    letters = {_letter(m.group(1), n) for m in _PAREN.finditer(text)} - {None}
    if len(letters) == 1:
        return _selected(letters.pop(), options)
    if _CANNOT.search(text):
        return Parsed(CANNOT_DETERMINE)
    if _REFUSAL.search(text):
        return Parsed(REFUSAL)
    return Parsed(UNPARSEABLE)
