"""O3-D answer parsing: the authors' evaluator rule by rule (shared/data/o3d/README.md), on wordy answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spatial_tasks.o3d.parse import (
    LABELS,
    UNPARSEABLE,
    is_correct,
    parse_answer,
    question_options,
    short_answer,
    strip_cot,
    trace_answer,
)

Q_CLOSER_FIRST = (
    "Is the center object closer to or farther away from the viewer than the other objects? "
    "A. Closer. B. Farther. Answer A or B."
)
Q_FARTHER_FIRST = (
    "Is the center object closer to or farther away from the viewer than the other objects? "
    "A. Farther. B. Closer. Answer A or B."
)
Q_BEHIND = (
    "Is the center object behind or in front of the other objects? A. Behind. B. In front of. Answer A or B."
)
Q_REAR = "Is the center object at the rear of the other objects? A. Yes. B. No. Answer A or B."
Q_TRUE_FALSE = (
    "True or False: the center object is located in front of the other objects. "
    "A. False. B. True. Answer A or B."
)
Q_BEFORE = (
    "Does the center object come before or after the other objects? A. After. B. Before. Answer A or B."
)
Q_REAL_BEHIND = (
    "In this image, there is an object marked with a red circle. Is the object behind the objects "
    "marked with a blue square? A. Yes. B. No. Answer A or B."
)
Q_REAL_CROP = (
    "Answer a question about the left object. Is the object closer to the viewer or farther away than "
    "the other similar objects? A. farther. B. closer. Answer A or B."
)
Q_FOUR_OPTIONS = (
    "Is the center object closer or farther? A. Closer. B. Farther. C. Same. D. Behind. Answer A, B, C or D."
)
Q_KOSMOS = "Is the center object behind or in front of the other objects? A. Behind. B. In front of. Answer:"
COT = (
    "(Let's think step by step. The object of interest looks larger than the other objects. Based on the "
    "relative size pictorial cues, it is likely that the object is closer than the other objects.) "
)

CASES = [
    # rule 2a: a letter after a leading string, then "." or the end (also before a final newline)
    ("Answer: B", Q_CLOSER_FIRST, "farther"),
    ("Answer: B\n", Q_CLOSER_FIRST, "farther"),
    ("The answer is B.", Q_CLOSER_FIRST, "farther"),  # a shared letter regex would read "T"
    ("The correct answer is: A", Q_FARTHER_FIRST, "farther"),
    ("The correct answer is A", Q_FARTHER_FIRST, "farther"),
    ("I would say:\n\nB", Q_CLOSER_FIRST, "farther"),
    ("The correct answer is:\n\nA. Behind.", Q_BEHIND, "farther"),
    ("The best of the options is: B", Q_CLOSER_FIRST, "farther"),
    ("The object is positioned B.", Q_CLOSER_FIRST, "farther"),
    ("The red one comes B.", Q_CLOSER_FIRST, "farther"),
    ("Answer: Bigger", Q_CLOSER_FIRST, "farther"),  # not rule 2a, but the table's "Answer: B" is a substring
    # rule 2b: " X. Word." at the end (also before a final newline)
    ("So it is nearer. A. Closer.", Q_FARTHER_FIRST, "farther"),
    ("So: B. Farther.\n", Q_CLOSER_FIRST, "farther"),
    ("B. Farther.", Q_CLOSER_FIRST, "farther"),  # no space before the letter: rule 2d reads "B"...
    ("B. Farther.", Q_FARTHER_FIRST, "closer"),  # ...and the letter decides, not the word
    ("A. Closer", Q_FARTHER_FIRST, "farther"),
    ("B.. After", Q_BEFORE, "closer"),
    ("A", Q_BEFORE, "farther"),
    ("b", Q_REAL_CROP, "closer"),  # lower-case letters map case-insensitively
    ("a.", Q_REAL_CROP, "farther"),
    # rule 2c: only with a newline; the last line as written (not stripped)
    ("Closer\nB", Q_CLOSER_FIRST, "farther"),
    ("Closer\nB. Farther", Q_CLOSER_FIRST, "farther"),
    ("Closer\n B", Q_CLOSER_FIRST, UNPARSEABLE),
    ("B\n", Q_CLOSER_FIRST, UNPARSEABLE),  # the last line is empty; "B\n" is no option
    ("B. In front of.\n\nBecause it hides the others.", Q_BEHIND, "closer"),
    ("A. True. The red circle is located in front of the blue squares.", Q_TRUE_FALSE, "farther"),
    # rule 1: chain of thought, everything up to the first ")" dropped
    (COT + "A.", Q_CLOSER_FIRST, "closer"),
    (COT + "B.", Q_CLOSER_FIRST, "farther"),
    ("(Let me think step by step. It looks closer.) B", Q_FARTHER_FIRST, "closer"),
    ("(Let's think step by step, no closing bracket. B", Q_CLOSER_FIRST, UNPARSEABLE),
    # rule 3: the authors' phrase table, first phrase IN TABLE ORDER wins (case-insensitive)
    ("Answer B", Q_CLOSER_FIRST, "farther"),
    ("Answer A", Q_FARTHER_FIRST, "farther"),
    ("correct answer is b, Closer", Q_CLOSER_FIRST, "farther"),
    ("In front of the objects marked with a blue square.", Q_BEHIND, "closer"),
    ("front", Q_BEHIND, "closer"),
    ("The object in the middle is behind the other objects.", Q_CLOSER_FIRST, "farther"),
    ("behind the objects in front of it", Q_CLOSER_FIRST, "closer"),  # "in front of" precedes "behind"
    ("The object is closer to the viewer than the rest.", Q_CLOSER_FIRST, "closer"),
    ("Closer to the camera than the others.", Q_CLOSER_FIRST, "closer"),
    ("It is ahead of the others", Q_CLOSER_FIRST, "closer"),
    ("It has a greater depth", Q_CLOSER_FIRST, "farther"),
    ("It is further back", Q_CLOSER_FIRST, "farther"),
    ("It is FURTHEST FROM THE VIEWER", Q_CLOSER_FIRST, "farther"),
    ("The center object comes after the remaining objects.", Q_BEFORE, "farther"),
    ("The object is positioned before the other objects.", Q_BEFORE, "closer"),
    ("The object marked with a red circle feels nearer than the others.", Q_CLOSER_FIRST, "closer"),
    ("It appears closer than the rest", Q_CLOSER_FIRST, "closer"),
    ("It is on the right side.", Q_CLOSER_FIRST, UNPARSEABLE),  # "right"
    ("The top-left quadrant", Q_CLOSER_FIRST, UNPARSEABLE),
    ("It is not possible to tell.", Q_CLOSER_FIRST, UNPARSEABLE),  # "unsure"
    ("It has a similar depth as the others.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("I have to say 'Unsure'", Q_CLOSER_FIRST, UNPARSEABLE),
    # plain option words (rule 6 needs the whole short answer to be one)
    ("Nearer.", Q_CLOSER_FIRST, "closer"),
    ("before", Q_BEFORE, "closer"),
    ("Behind", Q_BEHIND, "farther"),
    (" Closer.", Q_CLOSER_FIRST, UNPARSEABLE),  # nothing is stripped
    # rule 4: yes / no / true / false through the question's relation word
    ("Yes", Q_REAR, "farther"),
    ("No.", Q_REAR, "closer"),
    ("B. No.", Q_REAR, "closer"),
    ("YES", Q_REAR, "farther"),
    ("Yes", Q_REAL_BEHIND, "farther"),
    ("no", Q_REAL_BEHIND, "closer"),
    ("No, the object is behind the blue square.", Q_REAL_BEHIND, "farther"),  # the phrase wins
    ("True", Q_TRUE_FALSE, "closer"),
    ("False.", Q_TRUE_FALSE, "farther"),
    ("A", Q_TRUE_FALSE, "farther"),
    ("Yes", Q_BEHIND, "closer"),  # both relations present: "in front of" is checked first
    ("Yes", Q_REAL_CROP, UNPARSEABLE),
    # unparseable: counted, scored wrong
    ("True", Q_REAL_BEHIND, UNPARSEABLE),  # true/false resolve only through "in front of"
    ("Yes", Q_CLOSER_FIRST, UNPARSEABLE),  # no relation word in the question
    ("farther away", Q_CLOSER_FIRST, UNPARSEABLE),  # not in the table, not an option word
    ("The object feels farther than the others.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("further", Q_CLOSER_FIRST, UNPARSEABLE),
    ("Both.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("C. D. E.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("C.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("d", Q_CLOSER_FIRST, UNPARSEABLE),
    ("red circle", Q_CLOSER_FIRST, UNPARSEABLE),
    ("A) Closer.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("", Q_CLOSER_FIRST, UNPARSEABLE),
    ("A", "Which one is closer?", UNPARSEABLE),  # a letter without options in the question
    ("A", "Which one? A. Closer or B. Farther", UNPARSEABLE),  # "A. " but no option block
    ("C", Q_FOUR_OPTIONS, UNPARSEABLE),  # "same"
    ("D", Q_FOUR_OPTIONS, "farther"),
    # the Kosmos2 prompt ("Answer:" instead of "Answer A or B."): free text through the table
    ("closer to the camera", Q_KOSMOS, "closer"),
    ("The object is farther away than the others", Q_KOSMOS, "farther"),
]


@pytest.mark.parametrize(("answer", "question", "label"), CASES)
def test_parse_table(answer, question, label):
    assert parse_answer(answer, question) == label


def test_trace_shows_every_step():
    trace = trace_answer("Answer B. Behind", Q_CLOSER_FIRST)
    assert (trace.short, trace.rewritten, trace.option, trace.label) == (
        "Answer B",
        "B",
        "Farther",  # the option text as the question writes it
        "farther",
    )


def test_helpers():
    assert strip_cot(COT + "A.") == "A."  # spaces stripped after the ")"
    assert strip_cot("(Let's think step by step with no closing bracket A.").startswith("(Let's")
    assert short_answer("Answer: C.") == "C"
    assert short_answer("Closer. Because...") == "Closer"
    assert question_options(Q_BEHIND) == {"a": "Behind", "b": "In front of"}
    assert question_options(Q_FOUR_OPTIONS) == {"a": "Closer", "b": "Farther", "c": "Same", "d": "Behind"}
    assert question_options("no options here") == {}


@pytest.mark.parametrize(
    ("label", "gt", "ok"),
    [
        ("closer", "near", True),
        ("farther", "far", True),
        ("closer", "far", False),
        ("farther", "near", False),
        (UNPARSEABLE, "near", False),
        ("closer", "none", False),
    ],
)
def test_is_correct(label, gt, ok):
    assert is_correct(label, gt) is ok


@pytest.mark.parametrize("answer", [None, 3, 2.5, b"A", ["A"], {"a": 1}, object()])
def test_non_text_is_unparseable(answer):
    assert parse_answer(answer, Q_CLOSER_FIRST) == UNPARSEABLE


@pytest.mark.parametrize("question", [None, 1, b"?", ""])
def test_odd_questions_never_raise(question):
    assert parse_answer("A", question) in LABELS
    assert parse_answer("Yes", question) in LABELS


_TEXT = st.text(alphabet=st.characters(codec=None), max_size=300)
_MIXED = st.one_of(_TEXT, st.none(), st.integers(), st.binary(max_size=20), st.floats(allow_nan=True))
_WORDY = st.lists(
    st.sampled_from(
        [
            "A",
            "B",
            "c",
            ".",
            " ",
            "\n",
            "\n\n",
            ")",
            "(Let's think step by step",
            "Answer: ",
            "swer is ",
            "Yes",
            "no",
            "True",
            "in front of",
            "behind",
            "farther",
            "nearer than",
            "comes ",
            "é",
            "\x00",
            "\ud800",
        ]
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(
    answer=_MIXED,
    question=st.one_of(_TEXT, st.none(), st.sampled_from([Q_CLOSER_FIRST, Q_REAR, Q_TRUE_FALSE])),
)
def test_never_raises_on_anything(answer, question):
    assert parse_answer(answer, question) in LABELS


@settings(max_examples=300, deadline=None)
@given(
    parts=_WORDY,
    question=st.sampled_from(
        [Q_CLOSER_FIRST, Q_FARTHER_FIRST, Q_BEHIND, Q_REAR, Q_TRUE_FALSE, Q_REAL_BEHIND, Q_REAL_CROP]
    ),
)
def test_never_raises_on_answer_like_text(parts, question):
    assert parse_answer("".join(parts), question) in LABELS
