"""O3-D answer parsing: raw model text -> "closer" | "farther" | "unparseable".

These are the scoring rules that reproduce the paper's Table 12 from the authors' released raw
outputs (shared/data/o3d/README.md; checked on all 65 reproducible cells in
tests/o3d/test_rescore.py). Applied in order:

1. Chain of thought: if the answer contains "(Let's think step by step" or "(Let me think step
   by step", keep only the text after the first ")" (no ")" -> the whole text).
2. Short answer, first rule that applies:
   a. a letter A-D right after one of the cue strings in ``CUE_STRINGS`` (or a word character
      followed by " comes "), followed by "." or the end of the text;
   b. " X. Word." at the very end of the text;
   c. the last line, if it starts with a letter A-D followed by "." or the end of the line;
   d. the text before the first ".".
3. ``PHRASES``: an ordered, case-insensitive table that rewrites the short answer (first hit
   wins). Beyond the README's examples the entries were fitted to the release: "farther away",
   "feels farther than", "is closer to the viewer than" are NOT rewritten (the paper counts
   them wrong), "nearer than" is.
4. If the question has "A. ", its options are read from the first "[?.] X. text. Y. text."
   block and a one-letter short answer (any case) becomes that option's text.
5. Yes / No / True / False resolve through the relation word of the question, checked in the
   order "in front of", "behind", "at the rear of" (yes: closer, farther, farther); True / False
   only through "in front of" (true: closer).
6. Label: closer / nearer / before / in front of -> closer; farther / behind / after -> farther;
   anything else (a bare "further", "both", "farther away", an unresolved yes, "C", ...) ->
   unparseable, which is scored wrong and counted.

``parse_answer`` never raises: non-string input is unparseable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CLOSER = "closer"
FARTHER = "farther"
UNPARSEABLE = "unparseable"
LABELS = (CLOSER, FARTHER, UNPARSEABLE)

COT_MARKERS = ("(Let's think step by step", "(Let me think step by step")
CUE_STRINGS = ("Answer: ", "wer is: ", "swer is ", "d say:\n\n", "er is:\n\n", "ons is: ", "itioned ")

_CUE = re.compile("(?:" + "|".join(re.escape(c) for c in CUE_STRINGS) + r"|\w comes )([A-D])(?:\.|\Z)")
_LETTER_WORD_AT_END = re.compile(r" ([A-D])\. \w+\.\Z")
_LEADING_LETTER = re.compile(r"([A-D])(?:\.|\Z)")

# (pattern, replacement). Patterns are regular expressions searched case-insensitively in the
# short answer. Letters come first: "Answer B. Behind" means B, not "behind".
PHRASES: tuple[tuple[str, str], ...] = (
    (r"correct answer is a\b", "A"),
    (r"correct answer is b\b", "B"),
    (r"answer: a\b", "A"),
    (r"answer: b\b", "B"),
    (r"\banswer a\b", "A"),
    (r"\banswer b\b", "B"),
    (r"in front of", "in front of"),
    (r"front", "in front of"),
    (r"behind", "behind"),
    (r"positioned after", "after"),
    (r"positioned before", "before"),
    (r"comes after", "after"),
    (r"comes before", "before"),
    (r"positioned farther", "farther"),
    (r"positioned closer", "closer"),
    (r"nearer than", "nearer"),
)
_PHRASES = tuple((re.compile(p, re.IGNORECASE), r) for p, r in PHRASES)

_OPTIONS = re.compile(r"[?.] ([A-D])\. ([^.]*)\. ([A-D])\. ([^.]*)\.")

# Rule 5: (relation word in the question, label for yes/true, label for no/false).
YES_NO_RELATIONS = (("in front of", CLOSER, FARTHER), ("behind", FARTHER, CLOSER),
                    ("at the rear of", FARTHER, CLOSER))
TRUE_FALSE_RELATIONS = (("in front of", CLOSER, FARTHER),)

FINAL_LABELS = {"closer": CLOSER, "nearer": CLOSER, "before": CLOSER, "in front of": CLOSER,
                "farther": FARTHER, "behind": FARTHER, "after": FARTHER}


@dataclass(frozen=True)
class ParseTrace:
    """Every intermediate step, for sample logs and debugging."""

    short: str  # rule 2
    rewritten: str  # rule 3
    option: str  # rule 4 (the option text, or the rewritten answer when no letter / no options)
    label: str  # rules 5-6


def strip_cot(answer: str) -> str:
    """Rule 1: drop a chain of thought up to its first ")"."""
    if any(marker in answer for marker in COT_MARKERS):
        close = answer.find(")")
        if close >= 0:
            return answer[close + 1:]
    return answer


def short_answer(answer: str) -> str:
    """Rule 2: the short answer of a (CoT-stripped) model output."""
    m = _CUE.search(answer)
    if m:
        return m.group(1)
    m = _LETTER_WORD_AT_END.search(answer)
    if m:
        return m.group(1)
    stripped = answer.strip()
    last_line = stripped.split("\n")[-1].strip() if stripped else ""
    m = _LEADING_LETTER.match(last_line)
    if m:
        return m.group(1)
    return answer.split(".", 1)[0]


def rewrite(short: str) -> str:
    """Rule 3: the first matching phrase's replacement, else the short answer unchanged."""
    for pattern, replacement in _PHRASES:
        if pattern.search(short):
            return replacement
    return short


def question_options(question: str) -> dict[str, str]:
    """Rule 4: {"A": text, "B": text} from the question's first option block ({} if none)."""
    if "A. " not in question:
        return {}
    m = _OPTIONS.search(question)
    if not m:
        return {}
    return {m.group(1): m.group(2), m.group(3): m.group(4)}


def _resolve_polar(word: str, question: str) -> str:
    relations = YES_NO_RELATIONS if word in ("yes", "no") else TRUE_FALSE_RELATIONS
    for relation, if_yes, if_no in relations:
        if relation in question:
            return if_yes if word in ("yes", "true") else if_no
    return word


def trace_answer(answer: object, question: object) -> ParseTrace:
    """All parsing steps for one answer to one question; never raises."""
    if not isinstance(answer, str):
        return ParseTrace("", "", "", UNPARSEABLE)
    question = question if isinstance(question, str) else ""
    short = short_answer(strip_cot(answer)).strip()
    rewritten = rewrite(short).strip()
    option = rewritten
    if len(rewritten) == 1:
        option = question_options(question).get(rewritten.upper(), rewritten)
    word = option.strip().lower()
    if word in ("yes", "no", "true", "false"):
        word = _resolve_polar(word, question)
    return ParseTrace(short, rewritten, option, FINAL_LABELS.get(word, UNPARSEABLE))


def parse_answer(answer: object, question: object) -> str:
    """"closer" | "farther" | "unparseable" for any model output to an O3-D question."""
    try:
        return trace_answer(answer, question).label
    except Exception:  # noqa: BLE001 -- defensive: model output must never crash scoring
        return UNPARSEABLE


def is_correct(label: str, gt_position: str) -> bool:
    """Correct iff the label is closer for a near target, farther for a far target."""
    return (label == CLOSER and gt_position == "near") or (label == FARTHER and gt_position == "far")
