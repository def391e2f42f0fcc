"""O3-D answer parsing: raw model text -> "closer" | "farther" | "unparseable".

This is the authors' evaluator (the analysis notebook of github.com/lyiqian/o3-d), rule for rule,
as tasks/o3d/README.md lists it; with it the paper's Table 12 is reproduced from the
authors' released raw outputs (all 65 reproducible cells, tests/o3d/test_rescore.py). Applied in
order, on the text exactly as the model wrote it (nothing is stripped unless a rule says so):

1. Chain of thought: if the answer contains "(Let me think step by step" or "(Let's think step
   by step", keep what follows the first ")" (the whole answer if there is none), spaces stripped.
2. Short answer, the first rule that applies:
   a. a letter A-D right after one of ``LEADING_STRINGS`` (each 8 characters; ``\\w comes `` is a
      word character then " comes "), followed by "." or the end of the text (``$``: also just
      before a final newline);
   b. " X. Word." at the end of the text (``$`` as above);
   c. only when the text contains a newline: a letter A-D at the very start of its last line
      (the text after the last newline, unstripped), followed by "." or the end of that line
      (the notebook's regex ``([ABCD])(?=\\.(\\w+)?|$)``);
   d. the text before the first ".".
3. ``PHRASES``: the authors' ordered table; the first phrase contained in the short answer
   (case-insensitive substring) replaces it with its short answer ("closer", "farther",
   "unsure", "left", ... or a letter). No hit: unchanged.
4. Multiple choice: if the question contains "A. ", its options are read from the first
   "[?.] X. text. Y. text. [Z. text. [W. text. ]]" block (up to four) and the answer, lower-cased,
   becomes the option text of that letter (case-insensitive) or stays lower-cased. Then a
   "yes" / "no" / "true" / "false" answer resolves through the first relation word that the
   lower-cased question contains, in ``YES_NO`` order ("in front of": yes/true -> closer;
   "behind", "at the rear of": yes -> farther).
5. The notebook's separate yes/no step: only for a question containing both "Yes" and "True"
   (none of the official ones does), the same table again.
6. Label: the lower-cased result must be exactly one of ``LABEL_OF`` (closer / nearer / before /
   in front of -> closer; farther / behind / after -> farther); anything else -- "unsure", "left",
   an unresolved "yes", "c", a sentence -- is unparseable, scored wrong and counted.

Differences from the notebook, where it would crash or cannot apply: a non-string answer or
question is unparseable / empty (the notebook assumes strings), a question with "A. " whose
options the block regex cannot read keeps the lower-cased answer (the notebook raises), and an
option text longer than ``MAX_OPTION_TEXT`` characters is not read as an option (so that a
hostile question cannot make the search quadratic; official options are at most 11 characters).

``parse_answer`` never raises, and runs in time linear in the answer's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spatial_tasks.common.choice import UNPARSEABLE  # the one definition of an unread answer

CLOSER = "closer"
FARTHER = "farther"
LABELS = (CLOSER, FARTHER, UNPARSEABLE)

COT_MARKERS = ("(Let me think step by step", "(Let's think step by step")

# Rule 2a: text that may stand right before the answer letter (a fixed-width look-behind).
LEADING_STRINGS = ("Answer: ", "wer is: ", "swer is ", "d say:\n\n", "er is:\n\n", "ons is: ", "itioned ")
_LEADING_WORD_COMES = r"\w comes "
_AFTER_LEADING = re.compile(
    "(?<=" + "|".join([*map(re.escape, LEADING_STRINGS), _LEADING_WORD_COMES]) + r")([ABCD])(?=\.|$)")
_LETTER_WORD_AT_END = re.compile(r" ([ABCD])\. \w+\.$")  # rule 2b
_LAST_LINE_LETTER = re.compile(r"([ABCD])(?=\.(\w+)?|$)")  # rule 2c, matched at the start of the line

# Rule 3: the authors' table, in their order (the first phrase found wins).
_CLOSER_PHRASES = ("closer to the viewer", "closer to the viewpoint", "closer to viewpoint",
                   "closer to the camera", "in front of", "front", "ahead of the others", "closer to you",
                   "closer to viewer", "closer to us")
_FARTHER_PHRASES = ("farther from the viewpoint", "farther from the observer", "farther away from the viewer",
                    "further away from the viewer", "farther away from the camera", "farther from the viewer",
                    "furthest from the viewer", "farther away than", "is farther away", "behind",
                    "greater depth", "farther away compared to", "further back", "appear farther away",
                    "positioned further", "positioned farther", "positioned after")
PHRASES: tuple[tuple[str, str], ...] = (
    ("right side", "right"),
    ("left side", "left"),
    ("top-left quadrant", "top-left"),
    ("top-right quadrant", "top-right"),
    ("'top-right' quadrant", "top-right"),
    ("bottom-right quadrant", "bottom-right"),
    ("'bottom-right' quadrant", "bottom-right"),
    ("bottom-left quadrant", "bottom-left"),
    *((phrase, CLOSER) for phrase in _CLOSER_PHRASES),
    *((phrase, FARTHER) for phrase in _FARTHER_PHRASES),
    ("positioned before", CLOSER),
    ("positioned closer to", CLOSER),
    ("comes before", CLOSER),
    ("comes after", FARTHER),
    ("nearer than", CLOSER),
    ("appears closer than", CLOSER),
    ("not possible", "unsure"),
    ("similar depth as", "unsure"),
    ("have to say 'Unsure'", "unsure"),
    ("correct answer is A", "A"),  # Cambrian
    ("correct answer is B", "B"),
    ("correct answer is C", "C"),
    ("correct answer is D", "D"),
    ("Answer A", "A"),  # GPT
    ("Answer B", "B"),
    ("Answer: A", "A"),
    ("Answer: B", "B"),
)
_PHRASES_LOWER = tuple((phrase.lower(), short) for phrase, short in PHRASES)

# Rule 4: the option block: two to four "X. text. " items after a "?" or ".". An option's text is
# bounded (500 characters; the official ones have at most 11) so the search stays linear in the
# length of a hostile question.
MAX_OPTION_TEXT = 500
_OPTION = rf"([A-Z]\. [^\.]{{1,{MAX_OPTION_TEXT}}}\. )"
_OPTION_BLOCK = re.compile(rf"(?:\?|\.) {_OPTION}{_OPTION}{_OPTION}?{_OPTION}?")

# Rules 4-5: (relation word in the lower-cased question, answer) -> label, in the authors' order.
YES_NO: tuple[tuple[tuple[str, str], str], ...] = (
    (("in front of", "yes"), CLOSER),
    (("in front of", "no"), FARTHER),
    (("behind", "yes"), FARTHER),
    (("behind", "no"), CLOSER),
    (("at the rear of", "yes"), FARTHER),
    (("at the rear of", "no"), CLOSER),
    (("in front of", "true"), CLOSER),
    (("in front of", "false"), FARTHER),
)

# Rule 6.
LABEL_OF = {"closer": CLOSER, "farther": FARTHER, "behind": FARTHER, "before": CLOSER, "after": FARTHER,
            "nearer": CLOSER, "in front of": CLOSER}


@dataclass(frozen=True)
class ParseTrace:
    """Every intermediate step, for sample logs and debugging."""

    short: str  # rule 2
    rewritten: str  # rule 3
    option: str  # rules 4-5: the option text / resolved yes-no, lower-cased where rule 4 applied
    label: str  # rule 6


def strip_cot(answer: str) -> str:
    """Rule 1: drop a chain of thought up to its first ")"; spaces around the rest stripped."""
    if any(marker in answer for marker in COT_MARKERS):
        return answer.split(")", 1)[-1].strip(" ")
    return answer


def short_answer(answer: str) -> str:
    """Rule 2: the short answer of a (CoT-stripped) model output."""
    for pattern in (_AFTER_LEADING, _LETTER_WORD_AT_END):
        m = pattern.search(answer)
        if m:
            return m.group(1)
    if "\n" in answer:
        m = _LAST_LINE_LETTER.match(answer.rsplit("\n", 1)[-1])
        if m:
            return m.group(1)
    return answer.split(".", 1)[0]


def rewrite(short: str) -> str:
    """Rule 3: the short answer of the first phrase the text contains, else the text unchanged."""
    lowered = short.lower()
    for phrase, replacement in _PHRASES_LOWER:
        if phrase in lowered:
            return replacement
    return short


def question_options(question: str) -> dict[str, str]:
    """Rule 4: {"a": text, "b": text, ...} from the question's first option block ({} if none).

    Keys are lower-case letters; texts are as written in the question, without spaces and dots
    at their ends."""
    if "A. " not in question:
        return {}
    m = _OPTION_BLOCK.search(question)
    if not m:
        return {}
    options = {}
    for item in m.groups():
        if item is not None:
            options[item[0].lower()] = item.split(" ", 1)[1].strip(" .")
    return options


def _resolve_yes_no(answer: str, question_lower: str, *, first_only: bool) -> str:
    for (relation, word), label in YES_NO:
        if answer.lower() == word and relation in question_lower:
            answer = label
            if first_only:
                break
    return answer


def trace_answer(answer: object, question: object) -> ParseTrace:
    """All parsing steps for one answer to one question; never raises."""
    if not isinstance(answer, str):
        return ParseTrace("", "", "", UNPARSEABLE)
    question = question if isinstance(question, str) else ""
    short = short_answer(strip_cot(answer))
    rewritten = rewrite(short)
    option = rewritten
    if "A. " in question:  # rule 4 (only a one-character answer can be an option letter)
        lowered = rewritten.lower()
        option = question_options(question).get(lowered, lowered) if len(lowered) == 1 else lowered
        option = _resolve_yes_no(option, question.lower(), first_only=True)
    if "Yes" in question and "True" in question:  # rule 5
        option = _resolve_yes_no(option, question.lower(), first_only=False)
    return ParseTrace(short, rewritten, option, LABEL_OF.get(option.lower(), UNPARSEABLE))


def parse_answer(answer: object, question: object) -> str:
    """"closer" | "farther" | "unparseable" for any model output to an O3-D question."""
    try:
        return trace_answer(answer, question).label
    except Exception:  # noqa: BLE001 -- model output must never crash scoring
        return UNPARSEABLE


def is_correct(label: str, gt_position: str) -> bool:
    """Correct iff the label is closer for a near target, farther for a far target."""
    return (label == CLOSER and gt_position == "near") or (label == FARTHER and gt_position == "far")
