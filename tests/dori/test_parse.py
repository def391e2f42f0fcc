"""Reading the selection out of free-form answers (parse.py): never raises, reads letters, option
text or both, and counts "Cannot be determined" and refusals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spatial_tasks.dori.parse import CANNOT_DETERMINE, REFUSAL, SELECTED, UNPARSEABLE, parse_selection

OPTIONS = ["90 degrees clockwise", "90 degrees counterclockwise", "180 degrees clockwise", "Cannot be determined"]


@pytest.mark.parametrize(("response", "index"), [
    ("B", 1), ("B.", 1), ("(C)", 2), ("C) because the back is visible", 2), ("**A**", 0),
    ("Answer: C", 2), ("The answer is (B).", 1), ("Selection - A\nReason: the front points right.", 0),
    ("I choose B since the chair turned the other way.", 1),
    ("B. 90 degrees counterclockwise -- its front now points left.", 1),
    ("90 degrees counterclockwise, because the marker moved left.", 1),   # text only; not "clockwise" inside it
    ("The object turned 180 degrees clockwise.", 2),
    ("Looking at both images, the rotation is (A).", 0),
    ("A 90 degrees clockwise turn explains the change.", 0),               # the article "A" is not read; the text is
])
def test_selection(response, index):
    parsed = parse_selection(response, OPTIONS)
    assert (parsed.outcome, parsed.index) == (SELECTED, index)


def test_an_explicit_letter_wins_over_option_text():
    assert parse_selection("Answer: A (not 180 degrees clockwise)", OPTIONS).index == 0


@pytest.mark.parametrize("response", ["D", "Answer: D. Cannot be determined", "It cannot be determined from the image.",
                                      "Cannot be determined"])
def test_cannot_be_determined_is_counted(response):
    assert parse_selection(response, OPTIONS).outcome == CANNOT_DETERMINE


@pytest.mark.parametrize("response", ["I'm sorry, I can't help with that.", "As an AI, I am unable to see images."])
def test_refusals_are_counted(response):
    assert parse_selection(response, OPTIONS).outcome == REFUSAL


@pytest.mark.parametrize("response", ["", "   ", None, "hmm", "E", "90 degrees", "clockwise or counterclockwise",
                                      "(A) or (B)", 12, b"B"])
def test_unparseable(response):
    assert parse_selection(response, OPTIONS).outcome == UNPARSEABLE


def test_letters_beyond_the_options_are_not_selections():
    assert parse_selection("Answer: Z", OPTIONS[:2]).outcome == UNPARSEABLE
    assert parse_selection("C", OPTIONS[:2]).outcome == UNPARSEABLE


def test_no_options_is_unparseable():
    assert parse_selection("A", []).outcome == UNPARSEABLE


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.none(), st.integers()),
       st.lists(st.text(min_size=0, max_size=30), max_size=16))
def test_never_raises(response, options):
    parsed = parse_selection(response, options)
    assert parsed.outcome in (SELECTED, CANNOT_DETERMINE, REFUSAL, UNPARSEABLE)
    assert parsed.index is None or 0 <= parsed.index < len(options)


@settings(max_examples=1000, deadline=None)
@given(st.integers(min_value=0, max_value=3), st.text(max_size=60))
def test_a_leading_letter_with_any_reasoning_is_read(k, reason):
    letter = "ABCD"[k]
    assert parse_selection(f"{letter}. {reason}", OPTIONS).index == k
