"""Reading a multiple-choice selection out of a free-form answer: one parser for every benchmark
(DORI, VAGUE, the SpatialTunnel re-splits). Never raises.

Every benchmark's prompt asks for the option's letter first ("Give your selection first as the
option's letter, then ...", "Output only the letter among A,B,C and D"), so a letter that opens
the answer IS the answer: a letter named later in the reasoning ("B. ...; option A would be
wrong") never overrides it. Rules, first match wins:

1. an answer that opens by hedging between two options ("(A) or (B)", "A/B") selects nothing;
2. a letter that opens the answer: "B", "B.", "(B)", "B)", "**B**", "B: text" -- but not the
   article ("A 90 degree turn": a bare letter needs punctuation, the end of the line, or a word
   that does not start in lower case after it);
3. an explicit marker anywhere: "Answer: B", "the answer is (B)", "Selection - B", "Option B",
   "I choose B", "**B**" (the first one);
4. option text: the options whose text occurs in the answer (case-insensitive, on word
   boundaries; an occurrence inside a longer option's occurrence -- "clockwise" inside
   "counterclockwise" -- does not count); exactly one must remain;
5. one distinct tagged letter anywhere: "(B)" or "B:";
6. "cannot be determined" phrasing selects the option that says so when there is one, and is
   otherwise a decline, as is "I don't know"; a refusal ("I'm sorry", "I cannot ...") is refused;
   anything else is unparseable.

Outcomes (the project's one vocabulary, every benchmark's records use it):

* ``SELECTED`` -- an option was read (``index``); whether it is right is the benchmark's call;
* ``DECLINED`` -- the answer says the question cannot be answered ("cannot be determined"
  without such an option, "I don't know"; DORI also calls choosing a "Cannot be determined"
  option that is not the answer a decline);
* ``REFUSED`` -- the model refused;
* ``UNPARSEABLE`` -- nothing could be read.

All but a correct selection score 0 and are counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from spatial_tasks.common.stats import share

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

SELECTED = "selected"
UNPARSEABLE = "unparseable"
DECLINED = "declined"
REFUSED = "refused"
OUTCOMES = (SELECTED, UNPARSEABLE, DECLINED, REFUSED)

_HEDGE_AT_START = re.compile(r"^[\s\*]*\(?([A-Z])\)?\s*(?:or|/)\s*\(?([A-Z])\)?(?![A-Za-z])")
_LEADING = re.compile(r"^[\s\*\(\[\"']*([A-Z])(?:[\)\]:.,\-\"'\*]|\s*$|\s*\n|\s+(?![a-z0-9]))")
_MARKER = re.compile(
    r"(?i:\b(?:final answer|answer|selection|selected|choice|option|i choose|i select|i pick))"
    r"(?:\s*+(?:is|would be|:|-|=))*+\s*+[\(\[\*]*+\s*+([A-Z])(?![A-Za-z])")  # possessive: no backtracking
_BOLD = re.compile(r"\*\*\s*\(?([A-Z])\)?[\.\):]?\s*\*\*")
_TAGGED = re.compile(r"(?<![A-Za-z])(?:\(([A-Z])\)|([A-Z]):)")
_CANNOT = re.compile(r"(?i)\b(cannot|can't|can not|unable to|impossible to|not possible to)\s+(be\s+)?determin")
_DONT_KNOW = re.compile(r"(?i)\b(i don'?t know|i do not know|not sure|unsure)\b")
_MARKER_WORDS = ("answer", "select", "choice", "option", "i choose", "i pick")  # every _MARKER match contains one
_DONT_KNOW_WORDS = ("know", "sure")  # every _DONT_KNOW match contains one
_REFUSAL_WORDS = ("sorry", "i can", "i am unable", "i'm unable", "as an ai", "apologi", "unable to")  # likewise
_REFUSAL = re.compile(r"(?i)\b(i'?m sorry|i am sorry|i cannot|i can't|i can not|i am unable|i'm unable|"
                      r"as an ai|i apologi[sz]e|unable to (answer|assist|help))")
_SPACES = re.compile(r"\s+")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # the boundary of an option's text


@dataclass(frozen=True)
class Choice:
    outcome: str  # SELECTED, DECLINED, REFUSED or UNPARSEABLE
    index: int | None = None  # the chosen option's index in the shown order


def is_cannot_determine(option: object) -> bool:
    """Whether an option's text is "Cannot be determined" (any case, "can't", a final period)."""
    return bool(re.fullmatch(r"\s*(cannot|can't|can not) be determined\.?\s*", str(option), re.IGNORECASE))


def _letter(letter: str, n: int) -> int | None:
    k = LETTERS.find(letter)
    return k if 0 <= k < n else None


def _word_occurrences(text: str, needle: str) -> list[int]:
    """Where ``needle`` occurs in ``text`` with no ASCII letter or digit on either side, left to
    right without overlaps: what ``re.finditer(r"(?<![a-z0-9])NEEDLE(?![a-z0-9])")`` finds, without
    compiling a pattern for each option (options vary from question to question)."""
    if text.count(needle) > 64:  # many candidates, maybe inside words: the regex engine rejects those faster
        return [m.start() for m in re.finditer(r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])", text)]
    starts = []
    at = text.find(needle)
    while at >= 0:
        end = at + len(needle)
        if (at == 0 or text[at - 1] not in _WORD_CHARS) and (end == len(text) or text[end] not in _WORD_CHARS):
            starts.append(at)
            at = text.find(needle, end)
        else:
            at = text.find(needle, at + 1)
    return starts


def option_text_matches(text: str, options: Sequence[str]) -> set[int]:
    """Options with an occurrence in ``text`` that no longer option's occurrence contains.
    Sorting and prefix maxima keep this O(m log m) in the number of occurrences m."""
    low = _SPACES.sub(" ", text.lower())
    spans = []
    for k, option in enumerate(options):
        needle = _SPACES.sub(" ", str(option).strip().lower().rstrip("."))
        if needle:
            spans += [(start, start + len(needle), k) for start in _word_occurrences(low, needle)]
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


def read_choice(response: object, options: Sequence[str]) -> Choice:
    """The option an answer selects (index in ``options``, the shown order), or why none."""
    try:
        return _read(response, options)
    except Exception:  # noqa: BLE001 - model output must never crash scoring
        return Choice(UNPARSEABLE)


def _read(response: object, options: Sequence[str]) -> Choice:
    text = response if isinstance(response, str) else ""
    n = len(options)
    if not text.strip() or n == 0:
        return Choice(UNPARSEABLE)
    hedge = _HEDGE_AT_START.match(text)
    if hedge:
        a, b = _letter(hedge.group(1), n), _letter(hedge.group(2), n)
        if a is not None and b is not None and a != b:
            return Choice(UNPARSEABLE)
    match = _LEADING.match(text)
    if match and _letter(match.group(1), n) is not None:
        return Choice(SELECTED, _letter(match.group(1), n))
    low = text.lower()  # plain substring tests first: each regex below costs ~0.05-0.1 s on a megabyte
    markers = [p for p, words in ((_MARKER, _MARKER_WORDS), (_BOLD, ("**",))) if any(w in low for w in words)]
    for pattern in markers:
        for match in pattern.finditer(text):
            k = _letter(match.group(1), n)
            if k is not None:
                return Choice(SELECTED, k)
    found = option_text_matches(text, options)
    if len(found) == 1:
        return Choice(SELECTED, found.pop())
    letters = {_letter(a or b, n) for a, b in _TAGGED.findall(text)} - {None}
    if len(letters) == 1:
        return Choice(SELECTED, letters.pop())
    if "determin" in low and _CANNOT.search(text):
        undeterminable = [k for k, option in enumerate(options) if is_cannot_determine(option)]
        return Choice(SELECTED, undeterminable[0]) if len(undeterminable) == 1 else Choice(DECLINED)
    if any(word in low for word in _DONT_KNOW_WORDS) and _DONT_KNOW.search(text):
        return Choice(DECLINED)
    if any(word in low for word in _REFUSAL_WORDS) and _REFUSAL.search(text):
        return Choice(REFUSED)
    return Choice(UNPARSEABLE)


def outcome_share(records: Sequence[dict], outcome: str) -> float:
    """The share of records with this ``outcome`` (NaN without records)."""
    return share(records, lambda r: r.get("outcome") == outcome)
