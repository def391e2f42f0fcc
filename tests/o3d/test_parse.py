"""O3-D answer parsing: the README's rules on wordy answers, and never raising."""

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
COT = (
    "(Let's think step by step. The object of interest looks larger than the other objects. Based on the "
    "relative size pictorial cues, it is likely that the object is closer than the other objects.) "
)

CASES = [
    # letters after cue strings, at the end, on the last line, before the first "."
    ("Answer: B", Q_CLOSER_FIRST, "farther"),
    ("The answer is B.", Q_CLOSER_FIRST, "farther"),  # a shared letter regex would read "T"
    ("The correct answer is: A", Q_FARTHER_FIRST, "farther"),
    ("I would say:\n\nB", Q_CLOSER_FIRST, "farther"),
    ("The correct answer is:\n\nA. Behind.", Q_BEHIND, "farther"),
    ("The object is positioned B.", Q_CLOSER_FIRST, "farther"),
    ("The red one comes B.", Q_CLOSER_FIRST, "farther"),
    ("So it is nearer. A. Closer.", Q_FARTHER_FIRST, "farther"),  # " X. Word." at the end wins
    ("B. Farther.", Q_CLOSER_FIRST, "farther"),
    ("B. Farther.", Q_FARTHER_FIRST, "closer"),  # the letter decides, not the word
    ("A. Closer", Q_FARTHER_FIRST, "farther"),
    ("B.. After", Q_BEFORE, "closer"),
    ("A", Q_BEFORE, "farther"),
    ("b", Q_REAL_CROP, "closer"),  # lower-case letters map case-insensitively
    ("a", Q_REAL_CROP, "farther"),
    ("B. In front of.\n\nBecause it hides the others.", Q_BEHIND, "closer"),
    ("A. True. The red circle is located in front of the blue squares.", Q_TRUE_FALSE, "farther"),
    # chain of thought: everything up to the first ")" is dropped
    (COT + "A.", Q_CLOSER_FIRST, "closer"),
    (COT + "B.", Q_CLOSER_FIRST, "farther"),
    ("(Let me think step by step. It looks closer.) B", Q_FARTHER_FIRST, "closer"),
    # phrase table
    ("Answer B", Q_CLOSER_FIRST, "farther"),
    ("Answer A", Q_FARTHER_FIRST, "farther"),
    ("In front of the objects marked with a blue square.", Q_BEHIND, "closer"),
    ("front", Q_BEHIND, "closer"),
    ("The object in the middle is behind the other objects.", Q_CLOSER_FIRST, "farther"),
    ("The center object comes after the remaining objects.", Q_BEFORE, "farther"),
    ("The object is positioned before the other objects.", Q_BEFORE, "closer"),
    ("The object marked with a red circle feels nearer than the others.", Q_CLOSER_FIRST, "closer"),
    # plain option words
    ("Nearer.", Q_CLOSER_FIRST, "closer"),
    ("before", Q_BEFORE, "closer"),
    ("Behind", Q_BEHIND, "farther"),
    # yes / no / true / false through the question's relation word
    ("Yes", Q_REAR, "farther"),
    ("No.", Q_REAR, "closer"),
    ("B. No.", Q_REAR, "closer"),
    ("Yes", Q_REAL_BEHIND, "farther"),
    ("no", Q_REAL_BEHIND, "closer"),
    ("True", Q_TRUE_FALSE, "closer"),
    ("False.", Q_TRUE_FALSE, "farther"),
    ("A", Q_TRUE_FALSE, "farther"),
    ("Yes", Q_BEHIND, "closer"),  # both relations present: "in front of" is checked first
    # unparseable: counted, scored wrong
    ("True", Q_REAL_BEHIND, UNPARSEABLE),  # true/false resolve only through "in front of"
    ("Yes", Q_CLOSER_FIRST, UNPARSEABLE),  # no relation word in the question
    ("farther away", Q_CLOSER_FIRST, UNPARSEABLE),  # the paper counts this wrong
    ("The object feels farther than the others.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("further", Q_CLOSER_FIRST, UNPARSEABLE),
    ("both", Q_CLOSER_FIRST, UNPARSEABLE),
    ("C.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("d", Q_CLOSER_FIRST, UNPARSEABLE),
    ("red circle", Q_CLOSER_FIRST, UNPARSEABLE),
    ("A) Closer.", Q_CLOSER_FIRST, UNPARSEABLE),
    ("", Q_CLOSER_FIRST, UNPARSEABLE),
    ("A", "Which one is closer?", UNPARSEABLE),  # a letter without options in the question
]


@pytest.mark.parametrize(("answer", "question", "label"), CASES)
def test_parse_table(answer, question, label):
    assert parse_answer(answer, question) == label


def test_trace_shows_every_step():
    trace = trace_answer("Answer B. Behind", Q_CLOSER_FIRST)
    assert (trace.short, trace.rewritten, trace.option, trace.label) == (
        "Answer B",
        "B",
        "Farther",
        "farther",
    )


def test_helpers():
    assert strip_cot(COT + "A.") == " A."
    assert strip_cot("(Let's think step by step with no closing bracket A.").startswith("(Let's")
    assert short_answer("Answer: C.") == "C"
    assert short_answer("Closer. Because...") == "Closer"
    assert question_options(Q_BEHIND) == {"A": "Behind", "B": "In front of"}
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
